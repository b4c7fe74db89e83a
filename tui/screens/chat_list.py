"""Earlier chats, to resume one: `push_screen(ChatListScreen(services, current=id), callback)` →
callback(chat_id or None). Type to filter by title; enter opens; escape closes."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from core.safe_text import printable
from tui.services import Services

LIMIT = 500
META_INDENT = 2
OPEN_NOW = "(open now)"


def _wrap_parts(parts: list[str], width: int) -> list[str]:
    """Join parts with " · " into lines of at most `width` (0: one line), breaking only between parts."""
    lines: list[str] = []
    for part in parts:
        if lines and (width <= 0 or len(lines[-1]) + 3 + len(part) <= width):
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


class ChatListScreen(ModalScreen[int | None]):
    BINDINGS = [
        Binding("escape", "close", "Close", id="close_chat_list"),
        Binding("down", "move(1)", "Next", show=False, id="chat_list_next"),
        Binding("up", "move(-1)", "Previous", show=False, id="chat_list_previous"),
    ]

    def __init__(self, services: Services, *, current: int | None = None):
        super().__init__()
        self.services = services
        self.current = current
        self.chats: list[dict] = []
        self.shown: list[dict] = []
        self._laid_out = False

    def compose(self) -> ComposeResult:
        with Vertical(id="chat-list-dialog", classes="dialog"):
            yield Static(Text("Earlier chats — type to filter, enter opens, escape closes"), classes="dialog-title")
            yield Input(placeholder="Filter by title…", id="chat-list-filter")
            yield OptionList(id="chat-list-options")
            yield Static(id="chat-list-empty")

    def on_mount(self) -> None:
        self.query_one("#chat-list-options", OptionList).loading = True
        self.query_one("#chat-list-filter", Input).focus()
        self._load()

    @work(thread=True, exclusive=True, group="chat-list", exit_on_error=False)
    def _load(self) -> None:
        from core.chat.cost import Pricer
        from core.chat.repository import ChatRepository

        try:
            with self.services.store() as store:
                chats = ChatRepository(store).list_chats(LIMIT)
            pricer = Pricer.from_config(self.services.config)
            for chat in chats:  # the chat's summed usage, priced for its provider and model (core.chat.cost)
                chat["cost"] = pricer.price(chat["usage"], chat["provider"], chat["model"]).label()
        except Exception as exc:
            self.app.call_from_thread(self.notify, f"Could not list chats: {exc}", severity="error", markup=False)
            chats = []
        self.app.call_from_thread(self._show, chats)

    def _show(self, chats: list[dict]) -> None:
        self.chats = chats
        self.query_one("#chat-list-options", OptionList).loading = False
        self._filter(self.query_one("#chat-list-filter", Input).value)

    def _label(self, chat: dict, width: int = 0) -> Text:
        """The title, then its facts on indented lines. The facts wrap between parts, each continuation
        indented too: at 80 columns a line wrapped by the list began at the left edge, under the titles."""
        title = printable(chat["title"] or "(untitled)")
        label = Text(title, style="bold" if chat["id"] == self.current else "")
        usage = chat["usage"]
        when = (chat["updated_at"] or "")[:16].replace("T", " ")
        parts = [f"#{chat['id']}", f"{chat['replies']} repl{'y' if chat['replies'] == 1 else 'ies'}", chat["agent"],
                 chat["model"], when, f"in {usage['input']:,} out {usage['output']:,}", chat.get("cost", "")]
        parts = [p for p in parts if p]
        parts = [printable(p) for p in parts]
        if chat["id"] == self.current:
            parts.append(OPEN_NOW)
        for line in _wrap_parts(parts, width - META_INDENT if width > 0 else 0):
            label.append("\n" + " " * META_INDENT)
            if line.endswith(OPEN_NOW):
                label.append(line[:-len(OPEN_NOW)], style="dim")
                label.append(OPEN_NOW, style="italic")
            else:
                label.append(line, style="dim")
        return label

    def on_resize(self) -> None:
        if self.chats:  # re-wrap the facts for the new width, keeping the highlighted chat
            options = self.query_one("#chat-list-options", OptionList)
            highlighted = options.highlighted
            self._filter(self.query_one("#chat-list-filter", Input).value)
            if highlighted is not None and highlighted < len(self.shown):
                options.highlighted = highlighted

    @on(Input.Changed, "#chat-list-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._filter(event.value)

    def _filter(self, text: str) -> None:
        needle = text.strip().lower()
        self.shown = [c for c in self.chats if needle in (c["title"] or "").lower()] if needle else list(self.chats)
        options = self.query_one("#chat-list-options", OptionList)
        options.clear_options()
        # The options' text width: the list less its scrollbar and the options' padding.
        width = options.scrollable_content_region.width - 2
        if width <= 0 and not self._laid_out:  # the list has no size before its first layout: once more after it
            self._laid_out = True
            self.call_after_refresh(lambda: self._filter(self.query_one("#chat-list-filter", Input).value))
        options.add_options([Option(self._label(c, width)) for c in self.shown])
        if self.shown:
            options.highlighted = 0
        empty = self.query_one("#chat-list-empty", Static)
        empty.update(Text("" if self.shown else ("No chat matches." if self.chats else "No chats yet.")))

    def action_move(self, step: int) -> None:
        options = self.query_one("#chat-list-options", OptionList)
        if not self.shown:
            return
        current = options.highlighted if options.highlighted is not None else -step
        options.highlighted = max(0, min(len(self.shown) - 1, current + step))

    @on(Input.Submitted, "#chat-list-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one("#chat-list-options", OptionList)
        if self.shown and options.highlighted is not None:
            self.dismiss(self.shown[options.highlighted]["id"])

    @on(OptionList.OptionSelected, "#chat-list-options")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.shown[event.option_index]["id"])

    def action_close(self) -> None:
        self.dismiss(None)
