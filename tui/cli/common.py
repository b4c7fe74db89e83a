"""What several `cairn` verbs share: output, argument types, the store and config, confirmation, stdin
and $EDITOR, progress bars, `--accept N,N`, and the table verbs register into.

The argument checks turn input that used to be accepted with a surprising result into one clear
sentence: `-n -1` listed everything, an empty PATH meant the current folder (`cairn import ""`
imported whatever lay there). This module imports nothing from the other tui.cli modules.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from core.config import PROVIDERS
from core.errors import CairnError, InvalidInput
from core.safe_text import printable

MAX_STDIN_BYTES = 10_000_000


class UsageError(InvalidInput):
    """Arguments that do not form a command (exit 2, as argparse's own usage errors)."""


# -- output --------------------------------------------------------------------------------------
class Out:
    """Rich output on stdout; plain when piped or with NO_COLOR (Rich honours both)."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self._console = None

    @property
    def console(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False, soft_wrap=True)
        return self._console

    def json(self, value: Any) -> None:
        # json.dumps escapes only C0 controls; C1 controls (U+009B is CSI), DEL and bidi controls
        # would reach the terminal raw. They only occur inside strings, so \uXXXX keeps the data exact.
        text = json.dumps(value, ensure_ascii=False, indent=2)
        text = re.sub(r"[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m.group()):04x}", text)
        sys.stdout.write(text + "\n")

    def text(self, *parts, style: str | None = None) -> None:
        from rich.text import Text

        line = Text()
        for part in parts:
            if isinstance(part, tuple):
                line.append(printable(str(part[0])), style=part[1])
            else:
                line.append(printable(str(part)), style=style)
        self.console.print(line)


def plural(count: int, noun: str) -> str:
    """`1 node`, `2,000 nodes`."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


class Progress:
    """A Rich progress bar on stderr with count, rate and ETA; core calls it as progress(done, total)."""

    def __init__(self, out: Out, label: str, unit: str):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        class Rate(TextColumn):
            def render(self, task):
                from rich.text import Text

                speed = task.finished_speed or task.speed
                return Text(f"{speed:.1f} {unit}/s" if speed else f"– {unit}/s", style="progress.data.speed")

        self.bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), Rate(""),
                            TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True),
                            transient=False)
        self.task = None

    def __enter__(self):
        self.bar.start()
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc):
        self.bar.stop()


class LazyProgress(Progress):
    """The progress bar, shown from the first count on: an early error prints no empty bar."""

    def __enter__(self):
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.task is None:
            if not total:  # nothing to do: no 0/0 bar
                return
            self.bar.start()
        super().__call__(done, total)

    def __exit__(self, *exc):
        if self.task is not None:
            self.bar.stop()
            self.bar.remove_task(self.task)
            self.task = None


# -- argument types ------------------------------------------------------------------------------
def id_arg(text: str) -> int:
    """An id argument: a whole number SQLite can hold (a larger one was an OverflowError traceback)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an id (a whole number)") from None
    if not -(2**63) <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{text} is out of range for an id")
    return value


def positive_int(text: str) -> int:
    """A count such as --limit: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def event_date_arg(text: str) -> str:
    """--event-date: YYYY-MM-DD, YYYY-MM or YYYY (empty clears it in `edit`); a date that is not one is a
    usage error (exit 2), caught before anything is opened."""
    from core.graph.store import partial_date

    if text and partial_date(text) is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date in the form YYYY-MM-DD (or YYYY-MM, or YYYY "
                                         "when only the month or the year is known)")
    return text


def path_arg(text: str) -> str:
    """A file or folder argument; an empty one would silently mean the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not a file or folder (use . for the current folder)")
    return text


def accept_numbers(text: str) -> list[int]:
    """`--accept 1,3` of the verbs that print a numbered list and write the chosen items on a second run:
    the numbers in the order given, each once; anything else is a clear error."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise InvalidInput(f"--accept takes proposal numbers such as 1,3; {part!r} is not one.")
        out.append(int(part))
    if not out:
        raise InvalidInput("--accept takes proposal numbers such as 1,3.")
    return list(dict.fromkeys(out))


def add_provider_options(p: argparse.ArgumentParser, provider_help: str, model_help: str) -> None:
    """--provider and --model: this run's choice over chat.provider and chat.model in the config."""
    p.add_argument("--provider", choices=PROVIDERS, help=provider_help)
    p.add_argument("--model", help=model_help)


class CairnParser(argparse.ArgumentParser):
    """argparse's parser, whose "invalid choice" for an unknown verb leaves out the verbs for Cairn's own
    scripts (`__complete`)."""

    def _check_value(self, action, value):
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            shown = ", ".join(repr(name) for name in action.choices if not str(name).startswith("__"))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {shown})")
        super()._check_value(action, value)


class Verbs:
    """The `cairn` subcommands: each verb module's register() adds its verbs here, in help order."""

    def __init__(self, sub, shared: argparse.ArgumentParser, reader: argparse.ArgumentParser,
                 root: argparse.ArgumentParser | None = None):
        self.root = root  # the whole `cairn` parser (the shell completion reads it)
        self._sub = sub
        self._shared = shared  # --db, --debug
        self._reader = reader  # --json

    def add(self, name: str, func: Callable[[argparse.Namespace, Out], int], help: str, *,
            with_json: bool = True) -> argparse.ArgumentParser:
        p = self._sub.add_parser(name, parents=[self._shared, self._reader] if with_json else [self._shared],
                                 help=help, description=help)
        p.set_defaults(func=func)
        if not with_json:
            p.set_defaults(json=False)
        return p

    def add_hidden(self, name: str, func: Callable[[argparse.Namespace, Out], int]) -> argparse.ArgumentParser:
        """A verb for Cairn's own scripts (the shell completion's `__complete`), left out of --help."""
        p = self._sub.add_parser(name, add_help=False)
        p.set_defaults(func=func, json=False)
        return p


# -- the store, the config, the user -------------------------------------------------------------
def open_store(args, *, readonly: bool = False):
    """The Store at --db (else the default path); `readonly` verbs refuse a database not made yet."""
    from core.graph.store import Store
    from core.paths import db_path

    path = db_path(getattr(args, "db", None))
    if readonly and not path.exists():
        raise CairnError(f"No database at {path} yet; add a note first (cairn add \"...\").")
    return Store(path)


def load_config(args):
    """The config, its warnings printed, with this run's --provider/--model/--agent applied."""
    from core import config as config_module

    cfg = config_module.load()
    for warning in cfg.warnings:
        print(f"cairn: warning: {printable(warning)}", file=sys.stderr)
    if getattr(args, "provider", None):
        cfg.chat.provider = args.provider
    if getattr(args, "model", None):
        cfg.chat.model = args.model
    if getattr(args, "agent", None):
        cfg.chat.agent = args.agent
    if getattr(args, "model", None) and hasattr(cfg.agents, cfg.chat.agent):
        setattr(cfg.agents, cfg.chat.agent, "")  # --model is this chat's agent's model, over agents.<name>
    return cfg


def confirm(args, question: str) -> None:
    """Ask y/N at a terminal (--yes answers for the user); anything but yes cancels."""
    if getattr(args, "yes", False):
        return
    if not sys.stdin.isatty():
        raise CairnError(f"{question} Pass --yes to confirm when not at a terminal.")
    try:
        answer = input(f"{printable(question)} [y/N] ").strip().lower()
    except EOFError:  # Ctrl-D at the prompt: a no, not an "unexpected error"
        print(file=sys.stderr)
        answer = ""
    if answer not in ("y", "yes"):
        raise CairnError("Cancelled; nothing was changed.")


def decode(data: bytes, what: str) -> str:
    """UTF-8 text from stdin or a file; binary data or another encoding is refused, not mangled."""
    if b"\x00" in data:
        raise InvalidInput(f"{what} contains NUL bytes (binary data?); nothing was saved.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{what} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); nothing was saved."
        ) from None


def read_stdin() -> str:
    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise InvalidInput(f"Standard input is larger than {MAX_STDIN_BYTES // 1_000_000} MB; nothing was saved.")
    return decode(data, "Standard input")


def text_arg(value: str | None) -> str | None:
    """A text argument, where `-` means standard input."""
    if value == "-":
        return read_stdin()
    return value


def editor() -> str | None:
    return os.environ.get("VISUAL") or os.environ.get("EDITOR")


@contextmanager
def edited_in_editor(text: str) -> Iterator[str]:
    """`text` edited in $VISUAL/$EDITOR (a temp file under the data dir), as the editor saved it, for the
    block that uses it. The file goes once that block has ended well. An edit is never lost: when the
    editor exits with a failure, or the block raises (a refused value, a locked database, a "no", Ctrl-C),
    a file that holds an edit is kept and its path said."""
    import shlex
    import subprocess

    from core.paths import editor_file

    command = editor()
    if not command:
        raise InvalidInput("Nothing to change: pass --title/--text/... or set $EDITOR to edit the text.")
    path = editor_file("cairn-edit-", text)
    try:
        result = subprocess.run([*shlex.split(command), str(path)])
        data = path.read_bytes()
    except BaseException:
        _keep_and_say(path, text)
        raise
    if result.returncode != 0:
        kept = _keep_if_edited(path, text)
        raise CairnError(f"The editor exited with status {result.returncode}; nothing was changed"
                         + (f" (the text it left is kept in {kept})." if kept else "."))
    try:
        edited = decode(data, "The edited file")
        yield edited
    except BaseException:
        _keep_and_say(path, text)
        raise
    path.unlink(missing_ok=True)


def _keep_and_say(path: Path, text: str) -> None:
    """On the way out of a failure: a file holding an edit is kept, and where it is said."""
    kept = _keep_if_edited(path, text)
    if kept:
        print(f"cairn: the edited text is kept in {kept}", file=sys.stderr)


def _keep_if_edited(path: Path, text: str) -> Path | None:
    """`path` when it holds something other than `text` (an edit worth keeping), else removed: None."""
    try:
        if path.read_bytes() != text.encode("utf-8"):
            return path
    except OSError:
        return None
    path.unlink(missing_ok=True)
    return None
