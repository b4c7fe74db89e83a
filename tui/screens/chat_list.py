"""Earlier chats, to resume one: `push_screen(ChatListScreen(services, current=id), callback)` →
callback(chat_id or None). Type to find a chat by its title or by the text of its messages (full text,
core/chat/manage.py: the matching message's words shown under the chat); enter opens; escape closes.
The highlighted chat: ctrl+r renames it (in the box, enter saves, escape cancels), f8 moves it to the
trash (`cairn chats restore ID`), ctrl+s saves it as a node, ctrl+y copies it as markdown."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from core.errors import CairnError
from core.safe_text import printable
from tui.messages import NodesChanged
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
        Binding("ctrl+r", "rename", "Rename", id="chat_list_rename"),
        Binding("f8", "delete", "To trash", id="chat_list_delete"),
        Binding("ctrl+s", "save_as_node", "Save as node", id="chat_list_save_node", priority=True),
        Binding("ctrl+y", "copy_markdown", "Copy markdown", id="chat_list_copy"),
    ]

    def __init__(self, services: Services, *, current: int | None = None):
        super().__init__()
        self.services = services
        self.current = current
        self.chats: list[dict] = []
        self.shown: list[dict] = []
        self._laid_out = False
        self.found: dict[int, str] = {}  # chat id -> the snippet of its best matching message
        self._found_for = ""  # the query `found` answers
        self.renaming: int | None = None  # the chat whose title the rename box edits

    def compose(self) -> ComposeResult:
        with Vertical(id="chat-list-dialog", classes="dialog"):
            yield Static(Text("Earlier chats — type to find (title or messages), enter opens, escape closes"),
                         classes="dialog-title")
            yield Input(placeholder="Find by title or by what was said…", id="chat-list-filter")
            yield Input(id="chat-list-rename")
            yield OptionList(id="chat-list-options")
            yield Static(id="chat-list-empty")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#chat-list-rename", Input).display = False
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
        snippet = self.found.get(chat["id"])
        if chat["id"] == self.current:
            parts.append(OPEN_NOW)
        for line in _wrap_parts(parts, width - META_INDENT if width > 0 else 0):
            label.append("\n" + " " * META_INDENT)
            if line.endswith(OPEN_NOW):
                label.append(line[:-len(OPEN_NOW)], style="dim")
                label.append(OPEN_NOW, style="italic")
            else:
                label.append(line, style="dim")
        if snippet:
            from core.chat import manage

            label.append("\n" + " " * META_INDENT)
            flat = " ".join(snippet.split())
            pieces = flat.replace(manage.HIT_END, manage.HIT_START).split(manage.HIT_START)
            for i, piece in enumerate(pieces):
                label.append(printable(piece), style="bold" if i % 2 else "italic")
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
        if event.value.strip():
            self._search(event.value)

    @work(thread=True, exclusive=True, group="chat-search", exit_on_error=False)
    def _search(self, query: str) -> None:
        """The chats whose messages match `query` (full text); the titles were filtered already."""
        from core.chat import manage

        try:
            with self.services.store() as store:
                hits = manage.search(store, query, limit=LIMIT)
        except CairnError:  # nothing searchable in it yet ("-", a stopword): the title filter stands
            hits = []
        self.app.call_from_thread(self._found, query, {h["chat_id"]: h["snippet"] for h in hits})

    def _found(self, query: str, found: dict[int, str]) -> None:
        filter_box = self.query_one("#chat-list-filter", Input)
        if filter_box.value != query:
            return  # typed on since: a newer search follows
        self.found, self._found_for = found, query
        self._filter(query)

    def _filter(self, text: str) -> None:
        needle = text.strip().lower()
        if needle != self._found_for.strip().lower():
            self.found = {}
        titled = [c for c in self.chats if needle in (c["title"] or "").lower()] if needle else list(self.chats)
        said = [c for c in self.chats if c["id"] in self.found and c not in titled]
        self.shown = titled + said
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

    # -- managing the highlighted chat -------------------------------------------------------------------
    def _highlighted(self) -> dict | None:
        options = self.query_one("#chat-list-options", OptionList)
        if not self.shown or options.highlighted is None:
            return None
        return self.shown[options.highlighted]

    def action_rename(self) -> None:
        chat = self._highlighted()
        if chat is None:
            return
        box = self.query_one("#chat-list-rename", Input)
        self.renaming = chat["id"]
        box.value = printable(chat["title"] or "")  # an Input draws control characters raw: shown escaped
        box.border_title = f"Rename chat #{chat['id']} — enter saves, escape cancels"
        box.display = True
        box.focus()

    @on(Input.Submitted, "#chat-list-rename")
    def _rename_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.renaming is not None:
            self._manage("rename", self.renaming, event.value)

    def _end_rename(self) -> None:
        self.renaming = None
        self.query_one("#chat-list-rename", Input).display = False
        self.query_one("#chat-list-filter", Input).focus()

    def action_delete(self) -> None:
        chat = self._highlighted()
        if chat is None:
            return
        if chat["id"] == self.current:
            self.notify("This chat is open: start a new chat (f5) first, then move it to the trash.",
                        severity="warning")
            return
        self._manage("delete", chat["id"])

    def action_save_as_node(self) -> None:
        chat = self._highlighted()
        if chat is not None:
            self._manage("save_as_node", chat["id"])

    def action_copy_markdown(self) -> None:
        chat = self._highlighted()
        if chat is not None:
            self._manage("markdown", chat["id"])

    @work(thread=True, group="chat-manage", exit_on_error=False)
    def _manage(self, what: str, chat_id: int, value: str = "") -> None:
        from core.chat import manage

        try:
            with self.services.store() as store:
                if what == "rename":
                    result = manage.rename(store, chat_id, value)
                elif what == "delete":
                    result = manage.delete(store, chat_id)
                elif what == "save_as_node":
                    result = manage.export_node(store, chat_id)  # (node, new)
                else:
                    result = manage.markdown(store, chat_id)
        except CairnError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error", markup=False)
            return
        self.app.call_from_thread(self._managed, what, chat_id, result)

    def _managed(self, what: str, chat_id: int, result) -> None:
        if what == "rename":
            self._end_rename()
            for chat in self.chats:
                if chat["id"] == chat_id:
                    chat["title"] = result["title"]
            self.notify(f"Renamed chat {chat_id}.", timeout=3)
        elif what == "delete":
            self.chats = [c for c in self.chats if c["id"] != chat_id]
            self.notify(f"Moved chat {chat_id} to the trash (cairn chats restore {chat_id} brings it back).",
                        timeout=6)
        elif what == "save_as_node":
            node, new = result
            self.app.post_message(NodesChanged((node["id"],)))
            self.notify(f"Saved chat {chat_id} as node {node['id']} (dimension chat)." if new else
                        f"Brought node {node['id']}, where chat {chat_id} was saved before, up to date.", timeout=4)
            return
        else:
            self.app.copy_to_clipboard(result)
            self.notify(f"Copied chat {chat_id} as markdown ({len(result):,} characters).", timeout=3)
            return
        highlighted = self.query_one("#chat-list-options", OptionList).highlighted
        self._filter(self.query_one("#chat-list-filter", Input).value)
        if highlighted is not None and self.shown:
            self.query_one("#chat-list-options", OptionList).highlighted = min(highlighted, len(self.shown) - 1)

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
        if self.renaming is not None:
            self._end_rename()  # escape in the rename box cancels the rename, not the list
            return
        self.dismiss(None)
