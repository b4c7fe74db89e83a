"""Quick capture modal (ctrl+n). CONTRACT: QuickCapture(services); on save posts NodesChanged((id,))
to the app and dismisses with the new node's id (the app opens it in Focus).

Fields: title (defaults to the text's first line), text (the node's source), dimensions (comma
separated), link and event date. `ctrl+s` saves in a worker; an error (empty note, a bad date, a NUL
byte, a locked database) shows inline and the modal stays open with everything typed. `escape`
closes; when something was typed it asks for a second `escape` so a stray key loses nothing. While
typing, a line names the notes the title and text mention (tui/widgets/mention_hint.py).

Capture from the web: a link with no title and no text (or a title or text that is one http(s)
address and nothing else) saves the page instead (core/capture/web.py): fetched in a worker, the
hint line shows how far it got, a failure shows its sentence inline with everything kept, `escape`
stops waiting (nothing is written after a stop), and an address captured before names its node and
opens it. The modal stays open while the page is fetched, so the note opens as soon as it lands.
"""

from __future__ import annotations

import re
import threading

from textual import on, work
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static, TextArea

from core.safe_text import printable
from tui.messages import NodesChanged, OpenNode
from tui.typed_keys import typed_keys_handled
from tui.widgets.mention_hint import MentionHint

HINT = "tab next field · ctrl+s save (a link alone: its page) · esc close"  # one line at 80 columns
_LONE_URL = re.compile(r"\s*(https?://\S+)\s*", re.I)


class _Stopped(Exception):
    """The user closed the modal while the page was being fetched: the worker ends, writing nothing."""


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

    class Fetching(Message):
        """How far the page's capture got (the hint line shows it)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class CapturedBefore(Message):
        """The address is some node's link already; nothing was written."""

        def __init__(self, node_id: int, title: str, url: str) -> None:
            super().__init__()
            self.node_id, self.title, self.url = node_id, title, url

    def __init__(self, services):
        super().__init__()
        self.services = services
        self._saving = False
        self._confirm_close = False
        # A web capture: the worker asks under this lock before it writes; a stop after that waits.
        self._fetch_lock = threading.Lock()
        self._fetch_stopped = False
        self._fetch_writing = False
        self._fetching = False

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
            yield Static(Content(HINT), id="capture-hint")

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

    def web_address(self, values: dict) -> str | None:
        """The page to capture: the link when there is no title and no text, or a title or text that
        is one http(s) address alone; None when this is a note to save as typed."""
        title, source, link = values["title"], values["source"].strip(), values["link"]
        if link and not title and not source:
            return link
        if not link:
            for one, other in ((title, source), (source, title)):
                m = _LONE_URL.fullmatch(one)
                if m and not other:
                    return m.group(1)
        return None

    def _has_text(self) -> bool:
        v = self.values()
        return bool(v["title"] or v["source"].strip() or v["dimensions"] or v["link"] or v["event_date"])

    def show_error(self, text: str) -> None:
        error = self.query_one("#capture-error", Static)
        error.update(Content.assemble(("⚠ ", "bold"), printable(text)) if text else Content(""))
        error.set_class(not text, "-empty")

    # -- actions -------------------------------------------------------------------------------
    async def action_save(self) -> None:
        if self._saving:
            return
        await typed_keys_handled(self)  # the letters typed before ctrl+s (tui/typed_keys.py)
        if self._saving:
            return
        values = self.values()
        url = self.web_address(values)
        if url is not None:
            self._start_fetch(url, values)
            return
        if not values["title"] and not values["source"].strip():
            self.show_error("Nothing to save: type a title or some text, or a link alone to save its web page.")
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

    # -- capture from the web --------------------------------------------------------------------
    def _start_fetch(self, url: str, values: dict) -> None:
        self._saving = self._fetching = True
        self._fetch_stopped = self._fetch_writing = False
        self.show_error("")
        self.query_one("#capture-hint", Static).update(Content(f"fetching {url} … · esc stops"))
        self._fetch(url, values)

    def _fetch_progress(self, text: str) -> None:
        """Called by core.capture.web from the worker thread, last with web.SAVING just before it writes."""
        from core.capture import web

        with self._fetch_lock:
            if self._fetch_stopped:
                raise _Stopped()
            if text == web.SAVING:
                self._fetch_writing = True
        self.post_message(self.Fetching(text))

    @work(thread=True, exclusive=True, group="capture", exit_on_error=False)
    def _fetch(self, url: str, values: dict) -> None:
        from core.capture import web
        from core.errors import CairnError

        try:
            with self.services.store() as store:
                result = web.capture(store, url, dimensions=values["dimensions"], event_date=values["event_date"],
                                     progress=self._fetch_progress)
        except _Stopped:  # the user pressed escape: the modal is gone and nothing was written
            return
        except Exception as exc:  # a fetch failure (offline, 404, not HTML ...) or a database problem: say so
            self.post_message(self.SaveFailed(str(exc) if isinstance(exc, CairnError) else f"{type(exc).__name__}: {exc}"))
            return
        if result.existing:
            self.post_message(self.CapturedBefore(result.node["id"], result.node["title"], url))
        else:
            self.post_message(self.Saved(result.node["id"]))

    @on(Fetching)
    def _fetch_progressed(self, message: Fetching) -> None:
        message.stop()
        if self._fetching:
            self.query_one("#capture-hint", Static).update(Content(f"{printable(message.text)} · esc stops"))

    @on(CapturedBefore)
    def _captured_before(self, message: CapturedBefore) -> None:
        message.stop()
        self._saving = self._fetching = False
        self.app.notify(f"{printable(message.url)} was captured before as node {message.node_id} "
                        f"({printable(message.title)}); nothing new was saved. It is open in Focus.", timeout=6,
                        markup=False)  # a page's title: its [brackets] are text, not markup
        self.app.post_message(OpenNode(message.node_id, message.title))
        self.dismiss(None)

    @on(Saved)
    def _saved(self, message: Saved) -> None:
        message.stop()
        self.app.post_message(NodesChanged((message.node_id,)))
        self.app.notify(f"Saved node {message.node_id}.", timeout=3)
        self.dismiss(message.node_id)

    @on(SaveFailed)
    def _save_failed(self, message: SaveFailed) -> None:
        message.stop()
        self._saving = self._fetching = False
        self.query_one("#capture-hint", Static).update(Content(HINT))
        self.show_error(message.error)

    def action_close(self) -> None:
        if self._fetching:
            with self._fetch_lock:
                writing = self._fetch_writing
                self._fetch_stopped = not writing
            if not writing:  # the worker stops at its next step and writes nothing
                self.app.notify("Stopped fetching the page; nothing was saved.", timeout=3)
                self.dismiss(None)
                return
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
    async def _next_field(self, event: Input.Submitted) -> None:
        """Enter in a one-line field moves on (enter in the last one saves)."""
        event.stop()
        if event.input.id == "capture-date":
            await self.action_save()
        else:
            self.focus_next()
