"""E in the Focus panel: a node's source edited in $VISUAL / $EDITOR (else vi), one round at a time per app.

The panel posts EditInEditor; the app calls `start(app, node_id)`. The node is read and its source
written to a temporary .md file in a worker; the editor runs on the UI thread while the app is
suspended (App.suspend must); the file is read back and saved in a second worker, never over a change
made in the database meanwhile. The file lives in Cairn's data folder and is kept, and named, whenever
its text could not be saved (not UTF-8, the editor failed, the node changed or vanished meanwhile).
"""

from __future__ import annotations

import os
import shlex
import weakref
from dataclasses import dataclass
from pathlib import Path

from textual.app import App, SuspendNotSupported

from core.errors import NotFound
from core.safe_text import printable
from tui.messages import NodesChanged

GROUP = "external-edit"
_busy: "weakref.WeakSet[App]" = weakref.WeakSet()  # the apps with an $EDITOR round under way


@dataclass(frozen=True)
class _Edit:
    """What the round handed to the editor, to tell a change made meanwhile from the editor's."""

    node_id: int
    title: str
    path: Path
    original: str  # the source written to the file
    updated_at: str  # the node's updated_at when the edit began


def editor_argv(path: Path) -> list[str]:
    """The command that edits `path`: $VISUAL, else $EDITOR, else vi; split like a shell ("code -w")."""
    editor = os.environ.get("VISUAL", "").strip() or os.environ.get("EDITOR", "").strip() or "vi"
    return [*shlex.split(editor), str(path)]


def start(app: App, node_id: int) -> None:
    """Start an $EDITOR round for a node, unless one is still under way."""
    if app in _busy:
        app.notify("An $EDITOR edit is still being saved; try again in a moment.", severity="warning")
        return
    _busy.add(app)
    app.run_worker(lambda: _write_file(app, int(node_id)), thread=True, group=GROUP, exit_on_error=False,
                   name="prepare the $EDITOR file")


def run_editor(app: App, argv: list[str]) -> int:
    """Hand the terminal to the editor until it exits (the app is suspended); its exit status.
    Raises SuspendNotSupported where the app cannot suspend (headless, Textual Web)."""
    import subprocess

    with app.suspend():
        return subprocess.run(argv).returncode


def _write_file(app: App, node_id: int) -> None:
    """Worker: read the node as it is now and write its source to a fresh temporary .md file."""
    import tempfile

    from core.paths import data_dir

    try:
        with app.services.store() as store:
            node = store.get_node(node_id)
        folder = data_dir() / "tmp"
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"cairn-node-{node_id}-", suffix=".md", dir=folder)
        source = node.get("source") or ""
        with os.fdopen(fd, "wb") as fh:
            # A text file ends with a newline: without one, a line a tool appends (`echo >>`, a
            # script as $EDITOR) was glued to the note's last line. Reading back drops it again.
            fh.write((source if not source or source.endswith("\n") else source + "\n").encode("utf-8"))
    except Exception as exc:
        app.call_from_thread(_done, app, f"Could not prepare node {node_id} for $EDITOR: {exc}", "error")
        return
    app.call_from_thread(_hand_over, app, _Edit(node_id, node["title"], Path(name), source, node["updated_at"]))


def _hand_over(app: App, edit: _Edit) -> None:
    """On the UI thread: run the editor on the file, then save what it left in a worker."""
    path = edit.path
    try:
        argv = editor_argv(path)
    except ValueError as exc:  # unbalanced quotes in $EDITOR
        path.unlink(missing_ok=True)
        _done(app, f"Cannot read $VISUAL / $EDITOR ({exc}); fix it, or press e to edit here.", "error")
        return
    try:
        status = run_editor(app, argv)
    except SuspendNotSupported:
        path.unlink(missing_ok=True)
        _done(app, "This terminal cannot hand the screen to an external editor (the app cannot suspend here). "
                   "Press e to edit in Cairn instead.", "error")
        return
    except Exception as exc:  # the editor is not installed, not executable, ...
        path.unlink(missing_ok=True)
        _done(app, f"Could not run the editor {argv[0]!r}: {exc}. Set $VISUAL or $EDITOR, or press e to edit in "
                   "Cairn.", "error")
        return
    if status != 0:
        _done(app, f"The editor exited with status {status}; nothing was saved. Your text is kept in {path}",
              "warning")
        return
    app.run_worker(lambda: _save_file(app, edit), thread=True, group=GROUP, exit_on_error=False,
                   name="save the $EDITOR text")


def _save_file(app: App, edit: _Edit) -> None:
    """Worker: read the edited file back and save it, unless the node changed in the database meanwhile."""
    path, title = edit.path, printable(edit.title)

    def done(text: str, severity: str = "information", refresh: int | None = None) -> None:
        app.call_from_thread(_done, app, text, severity, refresh)

    try:
        raw = path.read_bytes()
    except OSError as exc:
        done(f"Could not read the edited file {path}: {exc}", "error")
        return
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        done(f"The edited file is not valid UTF-8 (byte {exc.start}); nothing was saved. Your text is kept "
             f"in {path}", "error")
        return
    if not edit.original.endswith("\n"):
        # most editors end the file with a newline; that alone is no change
        text = text.removesuffix("\r\n") if text.endswith("\r\n") else text.removesuffix("\n")
    if text == edit.original:
        path.unlink(missing_ok=True)
        done(f"“{title}” is unchanged.")
        return
    try:
        with app.services.store() as store:
            current = store.get_node(edit.node_id)
            if current["updated_at"] != edit.updated_at or (current.get("source") or "") != edit.original:
                done(f"“{title}” changed in Cairn while you were editing, so your text was not saved over it. "
                     f"Your text is kept in {path}", "warning", refresh=edit.node_id)
                return
            node = store.update_node(edit.node_id, source=text)
    except NotFound:
        done(f"“{title}” was deleted while you were editing; nothing was saved. Your text is kept in {path}",
             "warning", refresh=edit.node_id)
        return
    except Exception as exc:
        done(f"Could not save “{title}”: {exc}. Your text is kept in {path}", "error")
        return
    path.unlink(missing_ok=True)
    queued = " (queued for indexing)" if node.get("chunk_status") == "pending" else ""
    done(f"Saved the text of “{title}”{queued}.", refresh=edit.node_id)


def _done(app: App, text: str, severity: str = "information", refresh: int | None = None) -> None:
    """On the UI thread: how the round ended, shown; the node refreshed if it was saved or changed meanwhile."""
    _busy.discard(app)
    app.notify(printable(text), markup=False, severity=severity, timeout=3 if severity == "information" else 12)
    if refresh is not None:
        app.post_message(NodesChanged((refresh,)))
