"""The `cairn` command line: argparse verbs over `core`, Rich for people, `--json` for programs.

Each verb module declares its verbs in register(); this module puts them together in help order and
turns errors into exit statuses. Textual is imported only when the app starts (bare `cairn`), and
onnxruntime only by verbs that embed, so `cairn add` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Sequence

from core.errors import CairnError, disk_full
from core.safe_text import printable
from tui.cli import (app, chat, chats, completion, config, distil, evaluate, history, index, mcp, merge, nodes, ops,
                     retire, search, skills, vault, workflows)
from tui.cli.common import CairnParser, Out, UsageError, Verbs, path_arg

log = logging.getLogger("cairn.cli")

# The order `cairn --help` lists the verbs in.
VERB_MODULES = (nodes, history, merge, search, index, ops, vault, chat, config, chats, skills, distil, retire, workflows,
                mcp, evaluate, completion)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cairn")
    except PackageNotFoundError:  # running from a checkout without install
        return "0+unknown"


class _VersionAction(argparse.Action):
    """--version, resolved only when asked (importlib.metadata costs ~35 ms at every start)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help="show the version"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"cairn {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--db", metavar="PATH", type=path_arg, default=argparse.SUPPRESS, help="database file (default: see README)")
    shared.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    reader = argparse.ArgumentParser(add_help=False)
    reader.add_argument("--json", action="store_true", help="print JSON")

    parser = CairnParser(
        prog="cairn", parents=[shared],
        description="Cairn: a terminal-first knowledge graph. Run without a verb to open the app.",
    )
    parser.add_argument("--version", action=_VersionAction)
    verbs = Verbs(parser.add_subparsers(dest="verb", metavar="VERB"), shared, reader, root=parser)
    for module in VERB_MODULES:
        module.register(verbs)
    return parser


# Verbs that can change notes: afterwards their files in the bound folder follow (core/vault/write_back.py).
# `sync`, `watch` and the app keep the folder themselves; `import` of another folder writes nothing there.
WRITING_VERBS = frozenset({"add", "today", "edit", "rm", "restore", "link", "unlink", "revert", "merge", "import",
                           "ask", "distil", "chats", "links", "skills"})


def _write_back(args) -> None:
    """Write what the command changed to the bound folder's files. The notes are saved whatever happens
    here: a failure is said on stderr and the next `cairn sync` (or the app) finishes the job."""
    from core import config as config_module
    from core.errors import CairnError
    from core.paths import db_path
    from core.vault.write_back import write_back

    try:
        config = config_module.load()
        write_back(db_path(getattr(args, "db", None)), config)
    except (CairnError, OSError) as exc:
        log.warning("cairn: writing back to the bound folder: %s", exc)
        print(f"cairn: saved in Cairn, but not yet in the bound folder's files: {printable(str(exc))} "
              "(cairn sync retries)", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False) or bool(os.environ.get("CAIRN_DEBUG"))
    out = Out(getattr(args, "json", False))
    func = getattr(args, "func", app.open_app)
    from core import logfile

    logfile.setup()  # opened at the first line logged; a home that cannot be written says so once
    verb = getattr(args, "verb", None) or "app"
    from core.graph import history

    history.set_process_actor(history.APP if verb == "app" else history.COMMAND_LINE)
    try:
        status = func(args, out)
        if verb in WRITING_VERBS:
            _write_back(args)
        return status
    except UsageError as exc:
        if debug:
            raise
        print(f"cairn: {printable(str(exc))}", file=sys.stderr)
        return 2
    except CairnError as exc:
        log.warning("cairn %s: %s: %s", verb, type(exc).__name__, exc)
        if debug:
            raise
        print(f"cairn: {printable(str(exc))}", file=sys.stderr)  # a provider's error can carry server text
        return 1
    except KeyboardInterrupt:
        print("cairn: interrupted; committed work is kept (run the command again to resume).", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: a sentence, not a traceback
        full = disk_full(exc)  # ENOSPC from a file write: the same sentence as SQLite's full disk
        if full is not None:
            log.warning("cairn %s: %s", verb, exc)
            if debug:
                raise
            print(f"cairn: {full}", file=sys.stderr)
            return 1
        log.error("cairn %s: unexpected error", verb, exc_info=exc)
        if debug:
            raise
        print(f"cairn: unexpected error: {type(exc).__name__}: {printable(str(exc))} (the traceback is in "
              f"{logfile.log_path()}; --debug shows it here)", file=sys.stderr)
        return 1
