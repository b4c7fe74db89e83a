"""Quick capture modal (ctrl+n). CONTRACT: QuickCapture(services); on save posts NodesChanged((id,))
to the app and dismisses.

Fields: title (defaults to the text's first line), text (the node's source), dimensions (comma
separated), link and event date. `ctrl+s` saves in a worker; an error (empty note, a bad date, a NUL
byte, a locked database) shows inline and the modal stays open with everything typed. `escape`
closes; when something was typed it asks for a second `escape` so a stray key loses nothing. While
typing, a line names the notes the title and text mention (tui/widgets/mention_hint.py).
"""

from __future__ import annotations

from textual import on, work
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static, TextArea

from core.safe_text import printable
from tui.messages import NodesChanged
from tui.widgets.mention_hint import MentionHint


class QuickCapture(ModalScreen[int | None]):
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="capture_save", priority=True),
        Binding("escape", "close", "Close", id="capture_close"),
        # Priority: the field changes before the next key is delivered. As a plain (bubbling) binding,
        # keys that arrive together ("T", tab, "B") all went to the field the tab left.
        Binding("tab", "app.focus_next", "Next field", id="capture_next_field", show=False, priority=True),
        Binding("shift+tab", "app.focus_previous", "Previous field", id="capture_previous_field", show=False,
                priority=True),
    ]

    class Saved(Message):
        def __init__(self, node_id: int) -> None:
            super().__init__()
            self.node_id = node_id

    class SaveFailed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, services):
        super().__init__()
        self.services = services
        self._saving = False
        self._confirm_close = False

    def compose(self):
        with Vertical(id="capture") as box:
            box.border_title = "Quick capture"
            yield Input(placeholder="Title (empty: the text's first line)", id="capture-title")
            yield TextArea(id="capture-body", soft_wrap=True, show_line_numbers=False,
                           placeholder="Text (markdown)…")
            with Horizontal(id="capture-meta"):
                yield Input(placeholder="dimensions, comma separated", id="capture-dimensions")
                yield Input(placeholder="link", id="capture-link")
                yield Input(placeholder="date YYYY-MM-DD", id="capture-date")
            yield Static("", id="capture-error", classes="-empty")
            yield MentionHint(self.services, None)
            yield Static(Content("tab next field · ctrl+s save · esc close"), id="capture-hint")

    def on_mount(self) -> None:
        self.query_one("#capture-title", Input).focus()

    # -- reading the form ----------------------------------------------------------------------
    def values(self) -> dict:
        title = self.query_one("#capture-title", Input).value
        body = self.query_one("#capture-body", TextArea).text
        dims = [d.strip() for d in self.query_one("#capture-dimensions", Input).value.split(",")]
        return {
            "title": title.strip(),
            "source": body,
            "dimensions": [d for d in dims if d],
            "link": self.query_one("#capture-link", Input).value.strip() or None,
            "event_date": self.query_one("#capture-date", Input).value.strip() or None,
        }

    def _has_text(self) -> bool:
        v = self.values()
        return bool(v["title"] or v["source"].strip() or v["dimensions"] or v["link"] or v["event_date"])

    def show_error(self, text: str) -> None:
        error = self.query_one("#capture-error", Static)
        error.update(Content.assemble(("⚠ ", "bold"), printable(text)) if text else Content(""))
        error.set_class(not text, "-empty")

    # -- actions -------------------------------------------------------------------------------
    def action_save(self) -> None:
        if self._saving:
            return
        values = self.values()
        if not values["title"] and not values["source"].strip():
            self.show_error("Nothing to save: type a title or some text.")
            self.query_one("#capture-title", Input).focus()
            return
        if not values["title"]:
            from core.graph.store import title_from_text

            values["title"] = title_from_text(values["source"])
        self._saving = True
        self.show_error("")
        self.query_one("#capture-hint", Static).update(Content("saving…"))
        self._save(values)

    @work(thread=True, exclusive=True, group="capture", exit_on_error=False)
    def _save(self, values: dict) -> None:
        try:
            with self.services.store() as store:
                node = store.add_node(
                    values["title"], values["source"], dimensions=values["dimensions"],
                    link=values["link"], event_date=values["event_date"],
                )
        except Exception as exc:  # invalid input or a database problem: say so, keep the text
            from core.errors import CairnError

            self.post_message(self.SaveFailed(str(exc) if isinstance(exc, CairnError) else f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Saved(node["id"]))

    @on(Saved)
    def _saved(self, message: Saved) -> None:
        message.stop()
        self.app.post_message(NodesChanged((message.node_id,)))
        self.app.notify(f"Saved node {message.node_id}.", timeout=3)
        self.dismiss(message.node_id)

    @on(SaveFailed)
    def _save_failed(self, message: SaveFailed) -> None:
        message.stop()
        self._saving = False
        self.query_one("#capture-hint", Static).update(Content("tab next field · ctrl+s save · esc close"))
        self.show_error(message.error)

    def action_close(self) -> None:
        if self._saving:  # the note is being written: closing now would call a saved note discarded
            self.show_error("Saving… the window closes when the note is saved.")
            return
        if self._has_text() and not self._confirm_close:
            self._confirm_close = True
            self.show_error("Unsaved note: press esc again to discard it, ctrl+s to save.")
            return
        self.dismiss(None)

    @on(Input.Changed)
    @on(TextArea.Changed)
    def _edited(self, event: Input.Changed | TextArea.Changed) -> None:
        if self._confirm_close:
            self._confirm_close = False
            self.show_error("")
        control = event.input if isinstance(event, Input.Changed) else event.text_area
        if control.id in ("capture-title", "capture-body"):  # mentions are looked for while typing
            values = self.values()
            self.query_one(MentionHint).draft_changed([values["title"], values["source"]])

    @on(Input.Submitted)
    def _next_field(self, event: Input.Submitted) -> None:
        """Enter in a one-line field moves on (enter in the last one saves)."""
        event.stop()
        if event.input.id == "capture-date":
            self.action_save()
        else:
            self.focus_next()
