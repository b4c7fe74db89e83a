"""`python -m tui.cli`: the `cairn` command without its console script."""

import sys

from tui.cli.main import main

if __name__ == "__main__":  # importing the module (a test walking every module) runs nothing
    sys.exit(main())
