"""`python -m tui.cli`: the `cairn` command without its console script."""

import sys

from tui.cli.main import main

sys.exit(main())
