"""The sync conflicts of a bound folder (f6, or the palette's "Sync: conflicts"), compared and resolved
in the app (core/vault/conflicts.py).

A conflict is a note both the file and Cairn changed on the same lines: the file's version stayed in
the note and its file, Cairn's went whole into a sibling conflict file. The list shows each open
conflict (the note's file, the conflict file, when); the highlighted one's two versions are shown below
as a diff (- the file's version, + Cairn's). `f` keeps the file's version, `c` keeps Cairn's; the one not
kept goes to the folder's .trash/, nothing is deleted. `escape` closes. Reads and writes run in workers
through Services; an error is a sentence in the dialog, and the list reloads after each resolve.
"""

from __future__ import annotations

from textual import on, work
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from core.errors import CairnError, disk_full
from core.safe_text import printable
from tui.messages import NodesChanged

WHICH = {"file": "the file's version", "cairn": "Cairn's version"}


def when(stamp: str) -> str:
    """"2025-03-14 09:41" (UTC, as the rest of the app shows times)."""
    return stamp[:16].replace("T", " ")


def conflict_line(conflict, show_root: bool = False) -> Content:
    """Two lines of the list: the note's file and when, then the file holding Cairn's version."""
    return Content.assemble(
        (printable(conflict.rel), "bold"), (f"  since {when(conflict.created_at)}", "dim"),
        (f"  in {printable(conflict.root)}" if show_root else "", "dim"),
        "\n", ("  Cairn's version: ", "dim"), printable(conflict.conflict_rel))


def versions_text(found) -> Content:
    """What the highlighted conflict holds: a line saying which side is which, then the diff, coloured."""
    conflict = found.conflict
    rel, other = printable(conflict.rel), printable(conflict.conflict_rel)
    if found.cairn_text is None:
        return Content.assemble(
            (f"Cairn's version ({other}) is no longer in the folder: ", "bold"),
            "the next round of the sync marks this conflict resolved; f resolves it now. The note's history "
            "still holds Cairn's version (h in Focus).")
    if found.file_text is None:
        return Content.assemble(
            (f"The note's file {rel} is no longer in the folder ", "bold"),
            f"(moved or deleted): f resolves the conflict keeping what is there, and Cairn's version stays in "
            f"{other} until you remove it.")
    lines = found.diff()
    if not lines:
        return Content.assemble((f"The two versions of {rel} are the same now: ", "bold"),
                                "either key resolves the conflict.")
    parts: list = [("- the file's version", "bold $text-error"), (" (in the note now) · ", "dim"),
                   ("+ Cairn's version", "bold $text-success"), ("\n", "")]
    for line in lines:
        style = ("bold" if line.startswith(("---", "+++")) else "$text-success" if line.startswith("+")
                 else "$text-error" if line.startswith("-") else "$text-accent" if line.startswith("@@") else "")
        parts.append((printable(line) + "\n", style))
    return Content.assemble(*parts)


class SyncConflicts(ModalScreen[None]):
    """The open sync conflicts; `f` keep the file's version, `c` keep Cairn's."""

    BINDINGS = [
        Binding("f", "keep('file')", "Keep the file's", id="conflict_keep_file"),
        Binding("c", "keep('cairn')", "Keep Cairn's", id="conflict_keep_cairn"),
        Binding("escape", "close", "Close", id="conflict_close"),
    ]

    class Loaded(Message):
        def __init__(self, conflicts: list) -> None:
            super().__init__()
            self.conflicts = conflicts

    class Shown(Message):
        def __init__(self, conflict_id: int, found, error: str = "") -> None:
            super().__init__()
            self.conflict_id = conflict_id
            self.found = found  # core.vault.conflicts.Versions, or None with an error
            self.error = error

    class Kept(Message):
        def __init__(self, text: str, error: bool) -> None:
            super().__init__()
            self.text = text
            self.error = error

    def __init__(self, services):
        super().__init__()
        self.services = services
        self.conflicts: list = []
        self._busy = False

    def compose(self):
        with Vertical(id="conflicts-box") as box:
            box.border_title = "Sync conflicts"
            yield OptionList(id="conflicts-list")
            with VerticalScroll(id="conflicts-diff-scroll"):
                yield Static(id="conflicts-diff")
            yield Static(id="conflicts-note")  # what the last keep did, or why it could not
            yield Static("Loading…", id="conflicts-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#conflicts-note", Static).display = False
        self.query_one(OptionList).focus()
        self.load()

    # -- reading -----------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="conflicts", exit_on_error=False)
    def load(self) -> None:
        from core.vault.conflicts import open_conflicts

        with self.services.store() as store:
            found = open_conflicts(store)
        self.post_message(self.Loaded(found))

    def on_sync_conflicts_loaded(self, event: Loaded) -> None:
        self.conflicts = event.conflicts
        options = self.query_one(OptionList)
        was = options.get_option_at_index(options.highlighted).id if options.highlighted is not None else None
        options.clear_options()
        show_root = len({c.root for c in self.conflicts}) > 1
        options.add_options([Option(conflict_line(c, show_root), id=str(c.id)) for c in self.conflicts])
        status = self.query_one("#conflicts-status", Static)
        if not self.conflicts:
            status.update("No sync conflict to resolve. esc closes.")
            self.query_one("#conflicts-diff", Static).update("")
            return
        count = len(self.conflicts)
        status.update(f"{count} conflict{'s' if count != 1 else ''} · f keep the file's version · c keep Cairn's "
                      "(the other goes to the folder's .trash/) · tab: the diff, to scroll it")
        ids = [str(c.id) for c in self.conflicts]
        options.highlighted = ids.index(was) if was in ids else 0
        self._show_highlighted()  # the same row may stay highlighted: no new OptionHighlighted

    @on(OptionList.OptionHighlighted, "#conflicts-list")
    def _highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self._show_highlighted()

    def _show_highlighted(self) -> None:
        conflict = self._highlighted_conflict()
        if conflict is not None:
            self.show_versions(conflict.id)

    def _highlighted_conflict(self):
        index = self.query_one(OptionList).highlighted
        return self.conflicts[index] if index is not None and 0 <= index < len(self.conflicts) else None

    @work(thread=True, exclusive=True, group="conflict-versions", exit_on_error=False)
    def show_versions(self, conflict_id: int) -> None:
        from core.vault.conflicts import versions

        try:
            with self.services.store() as store:
                found = versions(store, conflict_id)
        except (CairnError, OSError) as exc:
            self.post_message(self.Shown(conflict_id, None, _sentence(exc)))
            return
        self.post_message(self.Shown(conflict_id, found))

    def on_sync_conflicts_shown(self, event: Shown) -> None:
        conflict = self._highlighted_conflict()
        if conflict is None or conflict.id != event.conflict_id:
            return  # another row was highlighted meanwhile: its own versions are on the way
        shown = self.query_one("#conflicts-diff", Static)
        shown.update(versions_text(event.found) if event.found is not None
                     else Content.styled(printable(event.error), "bold $error"))
        self.query_one("#conflicts-diff-scroll", VerticalScroll).scroll_home(animate=False)

    # -- resolving ---------------------------------------------------------------------------------
    def action_keep(self, which: str) -> None:
        conflict = self._highlighted_conflict()
        if conflict is None or self._busy:
            return
        self._busy = True
        self._note(f"Keeping {WHICH[which]} of {conflict.rel}…")
        self.keep(conflict.id, conflict.rel, which)

    @work(thread=True, exclusive=True, group="conflict-keep", exit_on_error=False)
    def keep(self, conflict_id: int, rel: str, which: str) -> None:
        from core.vault import conflicts

        try:
            with self.services.store() as store:
                away = conflicts.keep(store, conflict_id, which)
        except (CairnError, OSError) as exc:
            self.post_message(self.Kept(_sentence(exc), True))
            return
        if which == "file":
            text = (f"Kept the file's version of {rel}; Cairn's is in {away}." if away
                    else f"Kept the file's version of {rel} (Cairn's file was already gone).")
        else:
            text = (f"Kept Cairn's version of {rel}: it is the note and its file now; the file's version is in "
                    f"{away}.")
        self.post_message(self.Kept(text, False))

    def on_sync_conflicts_kept(self, event: Kept) -> None:
        self._busy = False
        self._note(event.text, error=event.error)
        if not event.error:
            self.app.post_message(NodesChanged())  # keeping Cairn's version rewrote the note
        self.load()  # resolved, or resolved meanwhile by the sync (the error then says so): list again

    def _note(self, text: str, *, error: bool = False) -> None:
        note = self.query_one("#conflicts-note", Static)
        note.update(Content.styled(printable(text), "bold $error") if error else Content(printable(text)))
        note.display = True

    def action_close(self) -> None:
        self.dismiss(None)


def _sentence(exc: Exception) -> str:
    """An error as the user reads it: a CairnError's own sentence; a file error named as one."""
    if isinstance(exc, CairnError):
        return str(exc)
    full = disk_full(exc)
    if full is not None:
        return str(full)
    return f"The folder's files could not be changed ({exc}); the conflict stays open."
