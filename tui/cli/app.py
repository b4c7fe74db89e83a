"""`cairn` with no verb: the Textual app (Textual is imported here only, when it starts)."""

from __future__ import annotations

import sys

from core.errors import CairnError
from tui.cli.common import Out


def open_app(args, out: Out) -> int:
    import gc

    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # else the app draws escape codes into a pipe and waits
        raise CairnError("The app needs a terminal (standard input and output are not one here); in a script or "
                         "pipe use a verb, e.g. `cairn list` (`cairn --help` lists them).")

    # Startup allocates long-lived objects only (modules, classes, widgets): collecting them is wasted
    # work (~25 ms of the first frame, bench/tui.py). The app (manage_gc) freezes them and turns the
    # collector back on after its first frame (CairnApp._first_frame).
    gc.disable()
    from tui.app import run_app

    from core.paths import db_path

    return run_app(db_path(getattr(args, "db", None)))
