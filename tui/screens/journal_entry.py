"""Today's journal entry (f4): a text field for one entry of today's note (core/graph/journal.py).

`ctrl+s` appends it with its time and dismisses with the note's id (the app opens it in Focus);
an error (a locked database, an empty entry) shows inline with the text kept. `escape` closes; with
something typed it asks for a second `escape`, as quick capture does.
"""

from __future__ import annotations

from textual import work
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from core.safe_text import printable
from tui.messages import NodesChanged
from tui.typed_keys import typed_keys_handled

HINT = "ctrl+s add to today's note · esc close"


class JournalEntry(ModalScreen[int | None]):
    BINDINGS = [
        Binding("ctrl+s", "save", "Add", id="journal_save", priority=True),
        Binding("escape", "close", "Close", id="journal_close"),
    ]

    class Saved(Message):
        def __init__(self, node_id: int) -> None:
            super().__init__()
            self.node_id = node_id

    class Failed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, services):
        super().__init__()
        self.services = services
        self._saving = False
        self._confirm_close = False

    def compose(self):
        from core.graph import journal

        with Vertical(id="journal-box") as box:
            box.border_title = f"Today · {journal.title_for(journal.local_now().date())}"
            yield TextArea(id="journal-text", soft_wrap=True)
            yield Static(HINT, id="journal-hint")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    async def action_save(self) -> None:
        if self._saving:
            return
        await typed_keys_handled(self)  # the letters typed before ctrl+s (tui/typed_keys.py)
        if self._saving:
            return
        text = self.query_one(TextArea).text
        if not text.strip():
            self._say("Type the entry first (escape closes).")
            return
        self._saving = True
        self._say("Adding…")
        self._append(text)

    @work(thread=True, exclusive=True, group="journal-append", exit_on_error=False)
    def _append(self, text: str) -> None:
        from core.errors import CairnError
        from core.graph import journal

        try:
            with self.services.store() as store:
                node, _created = journal.append(store, text)
        except CairnError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        self.post_message(self.Saved(node["id"]))

    def on_journal_entry_saved(self, message: Saved) -> None:
        self.app.post_message(NodesChanged((message.node_id,)))
        self.dismiss(message.node_id)

    def on_journal_entry_failed(self, message: Failed) -> None:
        self._saving = False
        self._say(f"⚠ {message.error}")

    def action_close(self) -> None:
        if self._saving:
            self._say("Adding the entry: a moment.")
            return
        if self.query_one(TextArea).text.strip() and not self._confirm_close:
            self._confirm_close = True
            self._say("Unsaved entry: press esc again to discard it, ctrl+s to add it.")
            return
        self.dismiss(None)

    def _say(self, text: str) -> None:
        self.query_one("#journal-hint", Static).update(printable(text))
