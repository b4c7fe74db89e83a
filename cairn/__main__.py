"""`python -m cairn`: the `cairn` command without its console script."""

import sys

from cairn import main

if __name__ == "__main__":
    sys.exit(main())
