"""`cairn add FILE` and the PDFs and text files of `cairn import FOLDER`, through core/capture/files.py.

`cairn add` with a text that names an existing file captures that file (tui/cli/nodes.py hands it
here). `cairn import FOLDER` imports the folder's markdown as a vault (core/vault) and its PDFs and
.txt files here. A long import shows count, rate and ETA: a Rich bar on a terminal, else one line per
file on stderr (`a.pdf: created, 4 pages · 3/200 files · 2.5 files/s · ETA 1 min 19 s`), and a rerun after a
kill skips the files already captured (core.capture.files keeps each file's path and hash).
"""

from __future__ import annotations

import errno
import sys
import time
from pathlib import Path
from typing import Callable

from core.safe_text import printable
from tui.cli.common import LazyProgress, Out, open_store, plural

LIST_CAP = 20


def names_a_file(text: str) -> bool:
    """Whether a `cairn add` text is the path of an existing file. A note's text (several lines, or
    longer than any path can be, or holding a NUL) is not a path: asking the file system about it
    would fail with "File name too long"."""
    if "\n" in text or "\x00" in text or len(text.encode("utf-8", "surrogatepass")) > 4096:
        return False
    try:
        return Path(text).expanduser().is_file()
    except (OSError, ValueError) as exc:  # ENAMETOOLONG for one path part, an unencodable name
        if isinstance(exc, OSError) and exc.errno not in (errno.ENAMETOOLONG, errno.EACCES, errno.EINVAL):
            raise
        return False


def add_file(args, out: Out) -> int:
    """`cairn add FILE`: the file as a node (or the node it already is); prints the node's id."""
    from core.capture.files import capture_file

    path = Path(args.text).expanduser()
    with open_store(args) as store:
        outcome = capture_file(store, path, title=args.title, description=args.description or "",
                               link=args.link, event_date=args.event_date, dimensions=args.dimension or [],
                               type=args.type)
    node, captured = outcome.node, outcome.captured
    if out.as_json:
        out.json(node)
    else:
        print(node["id"])
    if outcome.status == "unchanged":
        _note(f"{path.name} is unchanged since it was captured as node {node['id']}; nothing was written.")
    else:
        pages = f"{plural(captured.pages, 'page')}, " if captured.pages else ""
        _note(f"{'Captured' if outcome.status == 'created' else 'Updated'} {path.name} as node {node['id']} "
              f"({pages}{len(captured.source):,} characters, {captured.extractor}); `cairn index` makes it searchable.")
        for warning in captured.warnings:
            _note(f"warning: {path.name}: {warning}.")
    return 0


def _note(text: str) -> None:
    """A line about the capture on stderr, so stdout stays the node's id (or its JSON); a file's name
    is anyone's text, so control characters are shown, never sent to the terminal (core/safe_text.py)."""
    print(printable(text), file=sys.stderr)


# -- progress --------------------------------------------------------------------------------------
def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


class RateLine:
    """Count, rate and ETA as one line of text, on a clock that a test can set."""

    def __init__(self, unit: str = "files", clock: Callable[[], float] = time.monotonic):
        self.unit = unit
        self.clock = clock
        self.started = clock()

    def text(self, done: int, total: int) -> str:
        elapsed = self.clock() - self.started
        parts = [f"{done:,}/{total:,} {self.unit}"]
        if done and elapsed > 0:
            rate = done / elapsed
            parts.append(f"{rate:.1f} {self.unit}/s" if rate >= 0.1 else f"{rate * 60:.1f} {self.unit}/min")
            parts.append("done" if done >= total else f"ETA {_duration((total - done) / rate)}")
        else:
            parts.append(f"– {self.unit}/s")
        return " · ".join(parts)


# -- a folder's PDFs and text files ---------------------------------------------------------------
def import_folder_files(out: Out, store, folder: Path, *, interactive: bool | None = None):
    """Capture the PDFs and .txt files under folder, showing progress; returns the core FolderReport
    (print_folder_report prints it, with the symbolic links left out), or None when the folder holds
    none and no link to one."""
    from core.capture.files import capture_folder, folder_scan

    files, left_out = folder_scan(folder)
    if not files and not left_out:
        return None
    if not files and all(rel.endswith("/") for rel, _why in left_out):  # (folders: the vault report's too)
        return None
    interactive = sys.stderr.isatty() if interactive is None else interactive
    if interactive:
        with LazyProgress(out, "Capturing", "files") as progress:
            report = capture_folder(store, folder, progress)
    else:
        line = RateLine()
        seen = {"done": 0, "total": 0}

        def progress(done: int, total: int) -> None:
            seen.update(done=done, total=total)

        def on_file(rel: str, status: str, detail: str) -> None:
            n, total = seen["done"] + 1, seen["total"]  # progress(done) follows on_file
            what = f"skipped: {detail}" if status == "skipped" else f"{status}, {detail}" if detail else status
            print(printable(f"{rel}: {what} · {line.text(n, total)}"), file=sys.stderr, flush=True)

        report = capture_folder(store, folder, progress, on_file=on_file)
    return report


def print_folder_report(out: Out, r) -> None:
    pages = f"{plural(r.pages, 'page')}; " if r.pages else ""
    if r.files:  # (none: only what was left out is listed below)
        # skipped: those of r.files that failed; r.skipped also lists what the scan left out (no type read)
        failed = r.files - r.created - r.updated - r.unchanged
        out.text(f"{plural(r.files, 'PDF, text or HTML file')} in {r.folder}: ", (f"{r.created:,} created", "green"),
                 f", {r.updated:,} updated, {r.unchanged:,} unchanged, {failed:,} skipped "
                 f"({pages}{r.seconds:.1f} s).")
    for title, items, style in (("Not imported", r.skipped, "yellow"), ("Warnings", r.warnings, "yellow")):
        if not items:
            continue
        out.text(f"{title} ({len(items):,}):", style=style)
        for where, what in items[:LIST_CAP]:
            out.text(f"  {where}: {what}", style="dim")
        if len(items) > LIST_CAP:
            out.text(f"  … and {len(items) - LIST_CAP:,} more (--json lists them all)", style="dim")
