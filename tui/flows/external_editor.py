"""E in the Focus panel: a node's source edited in $VISUAL / $EDITOR (else vi), one round at a time per app;
N anywhere: a new note written there (`start_new`; the file is read by core/capture/editor_note.py, as
`cairn add --edit` reads it), opened in Focus once saved.

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
from tui.messages import NodesChanged, OpenNode

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
    from core.paths import editor_file

    try:
        with app.services.store() as store:
            node = store.get_node(node_id)
        source = node.get("source") or ""
        # A text file ends with a newline: without one, a line a tool appends (`echo >>`, a script as
        # $EDITOR) was glued to the note's last line. Reading back drops it again.
        path = editor_file(f"cairn-node-{node_id}-", source if not source or source.endswith("\n") else source + "\n")
    except Exception as exc:
        app.call_from_thread(_done, app, f"Could not prepare node {node_id} for $EDITOR: {exc}", "error")
        return
    app.call_from_thread(_hand_over, app, _Edit(node_id, node["title"], path, source, node["updated_at"]))


def _edited(app: App, path: Path, instead: str, handed: str | None) -> bool:
    """On the UI thread: run the editor on the file; whether it exited well. Otherwise the round is over
    and said so (`instead`: what else the user can do); after a failed exit the file is kept when it
    holds more than `handed` (None: always)."""
    try:
        argv = editor_argv(path)
    except ValueError as exc:  # unbalanced quotes in $EDITOR
        path.unlink(missing_ok=True)
        _done(app, f"Cannot read $VISUAL / $EDITOR ({exc}); fix it, or {instead}.", "error")
        return False
    try:
        status = run_editor(app, argv)
    except SuspendNotSupported:
        path.unlink(missing_ok=True)
        _done(app, "This terminal cannot hand the screen to an external editor (the app cannot suspend here). "
                   f"{instead[0].upper()}{instead[1:]} instead.", "error")
        return False
    except Exception as exc:  # the editor is not installed, not executable, ...
        path.unlink(missing_ok=True)
        _done(app, f"Could not run the editor {argv[0]!r}: {exc}. Set $VISUAL or $EDITOR, or {instead}.", "error")
        return False
    if status != 0:
        if handed is None or _holds(path, handed):
            _done(app, f"The editor exited with status {status}; nothing was saved. Your text is kept in {path}",
                  "warning")
        else:
            path.unlink(missing_ok=True)
            _done(app, f"The editor exited with status {status}; nothing was saved.", "warning")
        return False
    return True


def _holds(path: Path, handed: str) -> bool:
    """Whether the file holds more than what was handed to the editor (so it is worth keeping)."""
    try:
        return path.read_bytes().decode("utf-8", "replace").strip() != handed.strip()
    except OSError:
        return True  # unreadable now: kept rather than lost


def _hand_over(app: App, edit: _Edit) -> None:
    """On the UI thread: run the editor on the file, then save what it left in a worker."""
    if not _edited(app, edit.path, "press e to edit in Cairn", None):  # an edit's file is always kept
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


def _done(app: App, text: str, severity: str = "information", refresh: int | None = None,
          open_node: int | None = None) -> None:
    """On the UI thread: how the round ended, shown; the node refreshed if it was saved or changed
    meanwhile, and a new note opened in Focus."""
    _busy.discard(app)
    app.notify(printable(text), markup=False, severity=severity, timeout=3 if severity == "information" else 12)
    if refresh is not None:
        app.post_message(NodesChanged((refresh,)))
    if open_node is not None:
        from tui.flows.link_review import after_save

        app.post_message(OpenNode(open_node))
        after_save(app, open_node)  # "N link suggestions — press L" when the note mentions others


# -- N: a new note ------------------------------------------------------------------------------------
def start_new(app: App) -> None:
    """Start an $EDITOR round for a new note, unless one is still under way."""
    if app in _busy:
        app.notify("An $EDITOR edit is still being saved; try again in a moment.", severity="warning")
        return
    _busy.add(app)
    app.run_worker(lambda: _write_template(app), thread=True, group=GROUP, exit_on_error=False,
                   name="prepare the $EDITOR file")


def _write_template(app: App) -> None:
    from core.capture import editor_note
    from core.paths import editor_file

    handed = editor_note.template()
    try:
        path = editor_file("cairn-new-", handed)
    except OSError as exc:
        app.call_from_thread(_done, app, f"Could not prepare a file for $EDITOR: {exc}", "error")
        return
    app.call_from_thread(_hand_over_new, app, path, handed)


def _hand_over_new(app: App, path: Path, handed: str) -> None:
    if not _edited(app, path, "press ctrl+n to write it here", handed):
        return
    app.run_worker(lambda: _save_new(app, path, handed), thread=True, group=GROUP, exit_on_error=False,
                   name="save the new note")


def _save_new(app: App, path: Path, handed: str) -> None:
    """Worker: the file the editor left, read as a note (core/capture/editor_note.py) and saved."""
    from core.capture import editor_note
    from core.errors import CairnError

    def done(text: str, severity: str = "information", open_node: int | None = None) -> None:
        # refresh=open_node: the new note goes into the node list and to the indexer (NodesChanged)
        app.call_from_thread(_done, app, text, severity, open_node, open_node)

    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        done(f"Could not read the file the editor left ({path}): {exc}", "error")
        return
    except UnicodeDecodeError as exc:
        done(f"The file is not valid UTF-8 (byte {exc.start}); nothing was saved. Your text is kept in {path}",
             "error")
        return
    try:
        note = editor_note.read(text, handed)
        if note is None:
            path.unlink(missing_ok=True)
            done("Nothing was written in the editor, so no note was saved.")
            return
        with app.services.store() as store:
            node = store.add_node(note.title, note.source, description=note.description, link=note.link,
                                  event_date=note.event_date, dimensions=note.dimensions)
    except CairnError as exc:  # a frontmatter it cannot take, a bad date, a locked database ...
        done(f"{exc} Your text is kept in {path}", "error")
        return
    except Exception as exc:
        done(f"Could not save the new note: {exc}. Your text is kept in {path}", "error")
        return
    path.unlink(missing_ok=True)
    done(f"Saved “{printable(node['title'])}” as a new note.", open_node=node["id"])
