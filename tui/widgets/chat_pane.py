"""Chat pane (right). CONTRACT (used by tui/app.py):
- ChatPane(services, id=...)
- focus_input(); set_focus(focus: core.chat.context.Focus) (the open tabs, for the next request's suffix).

A reply streams from a thread worker that opens its own Store (a Chat and its connection belong to
one thread) and forwards the provider's events as small messages; text deltas go through a shared
buffer and a coalescing message, then into `Markdown.get_stream`, so a flood of tokens never queues
one UI update per token. Escape stops a reply (the partial reply is kept, marked incomplete); while
the model checks the reply's citations (chat.check_citations = "model") it skips the check only.
ctrl+z moves the notes the model created in the latest reply that created any to Cairn's trash.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Markdown, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from core.chat.citations import CitationCheck, groups as citation_groups
from core.chat.cost import NO_PRICE, Cost, Pricer
from core.errors import CairnError, NotFound
from core.safe_text import printable
from tui.messages import NodesChanged, OpenNode
from tui.services import Services

if TYPE_CHECKING:
    from textual.screen import ModalScreen

# Escape waits this long before stopping a reply: over SSH a slow link can split alt+enter's ESC + CR
# into "escape" then "enter" (Textual merges them only when they arrive within ESCDELAY, 100 ms);
# an enter inside the grace period turns the pair back into alt+enter instead of a stop.
STOP_GRACE_S = 0.25
MAX_SHOWN_MESSAGES = 80  # a resumed chat shows its latest messages (the rest stay in the database)
NODE_HREF = "cairn:node/"

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>])")


def usage_line(usage: dict | None) -> str:
    u = usage or {}
    return (f"in {u.get('input', 0):,} (cache read {u.get('cache_read', 0):,}, write {u.get('cache_write', 0):,})"
            f" · out {u.get('output', 0):,}")


META_WIDTH = 80  # a reply's usage line stays one line in an 80-column terminal when it can
SIDE_LABELS = {"citation_check": ("citation check", "check"), "summary": ("summary", "summary")}


def _clip(text: str, width: int) -> str:
    """`text` cut to `width` characters, saying so with an ellipsis."""
    return text if len(text) <= width else text[:width - 1] + "…"


def _count(n, short: bool) -> str:
    n = int(n or 0)
    if short and n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if short and n >= 100_000:
        return f"{round(n / 1000)}k"
    if short and n >= 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n:,}"


def reply_meta_line(usage: dict | None, status: str, side: dict | None = None, cost: str = "") -> str:
    """A reply's usage line: its own request's tokens and status, then the side requests made for its
    turn (the citation check, the rolling summary: core.chat.usage_log), so what the turn cost is all under
    the reply, then `cost`: the money of the reply and its side requests (core.chat.cost). With side
    requests the cache figures are shortened, then the labels, then numbers written 12.3k, to fit
    META_WIDTH when that can be done."""
    u = usage or {}
    extras = [(key, side[key]) for key in SIDE_LABELS if (side or {}).get(key)]
    tail = [cost] if cost else []
    if not extras:
        return " · ".join([usage_line(u), status, *tail])
    line = ""
    for label_at, short in ((0, False), (1, False), (1, True)):
        parts = [f"in {_count(u.get('input'), short)} (cache r {_count(u.get('cache_read'), short)}"
                 f" w {_count(u.get('cache_write'), short)}) · out {_count(u.get('output'), short)}", status]
        for key, s in extras:
            parts.append(f"+ {SIDE_LABELS[key][label_at]} {_count(s.get('input'), short)} in/"
                         f"{_count(s.get('output'), short)} out")
        line = " · ".join(parts + tail)
        if len(line) <= META_WIDTH:
            break
    return line


def add_usage(total: dict, usage: dict | None) -> None:
    for key in total:
        total[key] += int((usage or {}).get(key, 0) or 0)


def linkify(text: str, passages: dict[str, int], broken: set[str] | frozenset = frozenset()) -> str:
    """Turn `[N]` (a retrieved passage) and `[NODE:id:"title"]` into links the pane opens as nodes
    (core.chat.citations finds them; not inside code). Citations in `broken` (labels such as "[7]" or
    "[NODE:42]", found dangling by the citation check) stay plain text, never links."""
    def escaped(title: str) -> str:
        return _MD_SPECIAL.sub(r"\\\1", title)

    def passage(c) -> str | None:
        node_id = passages.get(str(c.ref))
        return None if node_id is None or c.label in broken else f"{NODE_HREF}{node_id}"

    out, pos = [], 0
    for start, end, cites in citation_groups(text):
        out.append(text[pos:start])
        pos = end
        first = cites[0]
        if first.kind == "node":
            if first.label in broken:
                out.append(escaped(text[start:end]))
            else:
                out.append(f"[{escaped(first.title or f'node {first.ref}')}]({NODE_HREF}{first.ref})")
        elif len(cites) == 1:
            href = passage(first)
            out.append(f"[\\[{first.ref}\\]]({href})" if href else text[start:end])
        else:  # [1, 2]: each number its own link
            out.append("\\[" + ", ".join(f"[{c.ref}]({passage(c)})" if passage(c) else str(c.ref)
                                          for c in cites) + "\\]")
    out.append(text[pos:])
    return "".join(out)


def check_lines(check: dict | None) -> list[str]:
    """The citation check's problem lines (core.chat.citations), shown under a reply."""
    return CitationCheck.from_dict(check).lines() if check else []


def broken_citations(check: dict | None) -> set[str]:
    return {i["citation"] for i in (check or {}).get("items", []) if i.get("status") == "dangling"}


# -- messages from the worker thread (private to the pane) ---------------------------------------------
@dataclass
class _ChatReady(Message, bubble=False):
    turn: int
    chat_id: int
    agent: str
    model: str


@dataclass
class _Deltas(Message, bubble=False):
    """New text is in the pane's buffer; consecutive ones coalesce (the handler drains the buffer)."""

    turn: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, _Deltas) and message.turn == self.turn


@dataclass
class _Activity(Message, bubble=False):
    turn: int
    text: str


@dataclass
class _Phase(Message, bubble=False):
    """The reply is complete and stored; a side request for it starts ("citation_check")."""

    turn: int
    phase: str


@dataclass
class _TurnDone(Message, bubble=False):
    turn: int
    text: str
    status: str
    error: str | None
    usage: dict
    sources: list = field(default_factory=list)  # [(label, node_id | None)]
    passages: dict = field(default_factory=dict)
    created: list = field(default_factory=list)
    check: dict | None = None  # the citation check (core.chat.citations), if one ran
    side: dict = field(default_factory=dict)  # this turn's side requests' usage, by purpose (Reply.side_usage)
    cost: Cost = NO_PRICE  # the reply's and its side requests' money (core.chat.cost)


@dataclass
class _TurnFailed(Message, bubble=False):
    turn: int
    error: str
    stored: bool  # whether the user's message reached the database


@dataclass
class _ChatLoaded(Message, bubble=False):
    chat_id: int
    title: str
    agent: str
    model: str
    items: list
    hidden: int
    total: dict
    cost: Cost = NO_PRICE  # the chat's money, replies and side requests


@dataclass
class _LoadFailed(Message, bubble=False):
    error: str


@dataclass
class _CreatedBatch:
    """The notes the model created in one reply, and that reply's sources list (to mark them undone)."""

    node_ids: list
    sources: "SourceList | None"
    state: str = "ready"  # "ready", "moving" (to the trash, in a worker) or "undone"


@dataclass
class _Undone(Message, bubble=False):
    batch: _CreatedBatch
    moved: list
    missing: list  # already deleted by someone else
    error: str | None = None


# -- widgets ---------------------------------------------------------------------------------------------
class ChatLog(VerticalScroll):
    """The conversation, anchored to the bottom while a reply streams."""

    BINDINGS = [Binding("c", "copy_reply", "Copy reply", id="copy_reply")]

    def action_copy_reply(self) -> None:
        pane = self.parent
        if isinstance(pane, ChatPane):
            pane.copy_last_reply()


class ChatInput(TextArea):
    """The message editor: enter is a newline; ctrl+j / alt+enter send (bindings on the pane). While it
    is empty, ctrl+z is the pane's "undo created notes" rather than undoing typing (there is none)."""

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        pane = self.parent
        if action == "undo" and not self.text and isinstance(pane, ChatPane) and pane.undo_armed:
            return False  # the key passes on to the pane's undo_created
        if action == "cursor_up" and not self.text and isinstance(pane, ChatPane) and pane.can_edit_last:
            return False  # up in the empty input: the pane's edit_last_message
        return super().check_action(action, parameters)

    async def _on_key(self, event: events.Key) -> None:
        pane = self.parent
        if event.key == "enter" and isinstance(pane, ChatPane) and pane.stop_pending:
            # ESC + CR split by a slow link: this was alt+enter, not "stop" then a newline.
            event.stop()
            event.prevent_default()
            pane.cancel_pending_stop()
            pane.action_send_message()


class SourceList(OptionList):
    """A reply's sources: enter (or a click) opens the node in a Focus tab."""

    def __init__(self, sources: list[tuple[str, int | None]], **kwargs):
        super().__init__(*[Option(Text(printable(label)), disabled=node_id is None) for label, node_id in sources],
                         **kwargs)
        self.node_ids = [node_id for _, node_id in sources]


class ChatPane(Vertical):
    PANE_NAME = "the Chat pane"  # what f1 help calls it
    BINDINGS = [
        Binding("ctrl+j,alt+enter", "send_message", "Send", id="send_message"),
        Binding("escape", "stop_reply", "Stop reply", id="stop_reply"),
        Binding("escape", "skip_check", "Skip check", id="skip_citation_check"),  # the reply is complete
        Binding("ctrl+o", "chat_list", "Chats", id="chat_list"),
        Binding("f5", "new_chat", "New chat", id="new_chat"),
        Binding("ctrl+z", "undo_created", "Undo created notes", id="undo_created"),
        Binding("ctrl+t", "distil", "Distil", id="distil", tooltip="Distil this chat into notes"),
        # Not in the footer (full at 80 columns): f1 help, the palette and the README list them.
        Binding("ctrl+r", "regenerate", "Regenerate the last reply", id="regenerate_reply", show=False),
        Binding("up", "edit_last", "Edit your last message", id="edit_last_message", show=False),
        Binding("escape", "cancel_edit_last", "Cancel the edit", id="cancel_edit_last", show=False),
    ]

    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services
        # (config) -> Provider; tests may inject a provider here. Default: core.providers.factory.make_provider.
        self.make_provider: Callable | None = None
        self.chat_id: int | None = None
        self.chat_title = ""
        self.chat_agent: str | None = None
        self.last_reply_text = ""
        self.last_usage: dict | None = None
        self._focus = None
        self._turn = 0
        self._streaming = False
        self._phase = ""  # "citation_check" while the model checks the reply's citations
        self._cancel = threading.Event()
        self._buffer: list[str] = []
        self._buffer_lock = threading.Lock()
        self._stream = None
        self._reply_md: Markdown | None = None
        self._reply_text = ""
        self._activity: Static | None = None
        self._activity_lines: list[str] = []
        self._stop_timer: Timer | None = None
        self._last_message = ""
        self._editing_last = False  # the input holds the last message, to send in its place (up)
        self._last_unsent = False  # the last turn failed before its message was stored: nothing to send again
        self._total = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        self._cost = NO_PRICE  # the chat's money so far (core.chat.cost)
        self._created: _CreatedBatch | None = None  # the latest reply's created notes (ctrl+z)
        self._intro: Static | None = None  # the new chat's intro (it says whether the chat is offline)

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ChatLog(id="chat-log")
        yield Static(id="chat-status")
        yield ChatInput(id="chat-input", soft_wrap=True, tab_behavior="focus", show_line_numbers=False,
                        placeholder=self._placeholders()[0])

    def on_mount(self) -> None:
        # Not query_one: when the app closes while this pane is still mounting (a quit just after start),
        # its children are already gone and there is nothing to set up (tui/app.py's _mount_right stops too).
        if not (self.query(ChatLog) and self.query("#chat-status")):
            return
        self.query_one(ChatLog).anchor()
        self._show_intro()
        self._update_title()
        self._set_status("")

    def _keys_of(self, ident: str) -> str:
        """The keys of a binding id as the config's [keymap] gives them, else its default ('ctrl+j or
        alt+enter'; escape shown as esc): the intro and the input's hint name the keys that work."""
        keys = (self.services.config.keymap or {}).get(ident)
        if keys is None:
            bindings = (*ChatPane.BINDINGS, *ChatLog.BINDINGS, *getattr(self.app, "BINDINGS", ()))
            keys = next((b.key for b in bindings if isinstance(b, Binding) and b.id == ident), "")
        return " or ".join({"escape": "esc"}.get(k.strip(), k.strip()) for k in keys.split(",") if k.strip())

    def _placeholders(self) -> list[str]:
        """The input's hint, longest first; on_resize shows the longest that fits."""
        send = self._keys_of("send_message")
        if not send:  # (a keymap entry with no key)
            return ["Ask about your notes…"]
        return [f"Ask about your notes… ({send} sends)", f"Ask about your notes… ({send.split(' or ')[0]} sends)",
                "Ask about your notes…"]

    def on_resize(self) -> None:
        chat_input = self.query(ChatInput)
        if not chat_input or not chat_input.first().content_region.width:
            return
        room = chat_input.first().content_region.width - 1  # the cursor's cell after the text
        candidates = self._placeholders()
        chat_input.first().placeholder = next((c for c in candidates if len(c) <= room), candidates[-1])

    def _intro_text(self) -> Text:
        offline = self.services.config.chat.provider == "offline"
        key = self._keys_of
        lines = [f"Ask about your notes. {key('send_message')} sends, enter is a newline, {key('stop_reply')} "
                 "stops a reply.",
                 f"{key('chat_list')} earlier chats · {key('new_chat')} new chat · {key('toggle_viewer')} context "
                 f"and settings · {key('copy_reply')} copies the last reply."]
        if offline:
            lines.append("No LLM provider is configured: answers quote your most relevant notes (offline).")
        return Text("\n".join(lines))

    def _show_intro(self) -> None:
        self._intro = Static(self._intro_text(), classes="chat-intro")
        self.query_one(ChatLog).mount(self._intro)

    def on_show(self) -> None:
        self._update_title()
        focused = self.screen.focused
        if focused is not None and any(not n.display for n in focused.ancestors_with_self if hasattr(n, "display")):
            self.focus_input()  # the focus was left in a pane that is now hidden (e.g. the viewer)

    # -- contract ----------------------------------------------------------------------------------
    def focus_input(self) -> None:
        self.query_one(ChatInput).focus()

    def focus_default(self) -> None:
        self.focus_input()

    def set_focus(self, focus) -> None:
        """Remember the Focus tabs for the next request (applied in the worker: no I/O here)."""
        self._focus = focus

    # -- public helpers (also used by the context viewer) -------------------------------------------
    @property
    def draft(self) -> str:
        return self.query_one(ChatInput).text

    @property
    def streaming(self) -> bool:
        return self._streaming

    @property
    def stop_pending(self) -> bool:
        return self._stop_timer is not None

    def settings_changed(self) -> None:
        self._update_title()
        if self._intro is not None and self._intro.is_attached:
            self._intro.update(self._intro_text())  # a provider picked in f2 ends "no provider is configured"

    def copy_last_reply(self) -> None:
        if not self.last_reply_text.strip():
            self.notify("There is no reply to copy yet.", severity="warning")
            return
        self.app.copy_to_clipboard(self.last_reply_text)
        self.notify(f"Copied the last reply ({len(self.last_reply_text):,} characters) to the clipboard.")

    def _title_from_store(self) -> None:
        from core.chat.repository import ChatRepository

        with self.services.store_if_free() as store:
            row = ChatRepository(store).load_chat(self.chat_id) if store is not None and self.chat_id else None
        if row is not None and row["title"] != self.chat_title:
            self.chat_title = row["title"]
            self._update_title()

    def _update_title(self) -> None:
        cfg = self.services.config
        agent = self.chat_agent or cfg.chat.agent
        title = Text(printable(f"Chat · {agent} · {cfg.model()}"))
        if self.chat_title:
            title.append(printable(f" · {self.chat_title[:40]}"))
        if self.parent is not None and self.parent.has_class("pane"):
            if self.display:  # the viewer shares the pane and titles it while it is shown
                self.parent.border_title = title
        else:
            self.border_title = title

    def _set_status(self, text: str) -> None:
        if not text:
            total = self._total
            text = (f"chat #{self.chat_id} · total {usage_line(total)} · {self._cost.label()}" if self.chat_id is not None
                    else "new chat")
        self.query_one("#chat-status", Static).update(Text(printable(text)))

    # -- sending -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "stop_reply":
            return self._streaming and self._phase != "citation_check"
        if action == "skip_check":
            return self._streaming and self._phase == "citation_check"
        if action == "undo_created":
            return self.undo_armed
        if action == "edit_last":
            return self.can_edit_last
        if action == "cancel_edit_last":
            return self._editing_last and not self._streaming
        return True

    @property
    def can_edit_last(self) -> bool:
        """A chat with a message of yours in it, no reply streaming: `up` brings the message back to edit."""
        return (self.chat_id is not None and bool(self._last_message.strip()) and not self._streaming
                and not self._last_unsent)

    def action_edit_last(self) -> None:
        """up in the empty input: your last message, to edit and send in its place (its reply leaves the
        chat; both stay counted in the stats)."""
        if not self.can_edit_last:
            return
        editor = self.query_one(ChatInput)
        editor.text = self._last_message
        editor.move_cursor(editor.document.end)
        self._editing_last = True
        self._set_status("editing your last message: ctrl+j sends it in its place (the old reply leaves the chat) · "
                         "esc cancels")
        self.refresh_bindings()

    def action_cancel_edit_last(self) -> None:
        self._editing_last = False
        self.query_one(ChatInput).clear()
        self._set_status("")
        self.refresh_bindings()

    def action_regenerate(self) -> None:
        """ctrl+r: send your last message again for a new reply, in place of the last one."""
        if self._streaming:
            self.notify("A reply is still streaming: wait for it, or press escape to stop it.", severity="warning")
            return
        if self.chat_id is None or not self._last_message.strip() or self._last_unsent:
            self.notify("Nothing to regenerate yet: send a message first.", severity="warning")
            return
        self._editing_last = False
        self._start_turn(self._last_message, again=True)

    def action_send_message(self) -> None:
        editor = self.query_one(ChatInput)
        message = editor.text
        if not message.strip():
            self.notify("Type a message first.", severity="warning")
            return
        if self._streaming:
            self.notify("A reply is still streaming: wait for it, or press escape to stop it.", severity="warning")
            return
        editor.clear()
        again, self._editing_last = self._editing_last, False
        self._start_turn(message, again=again)

    def _start_turn(self, message: str, *, again: bool = False) -> None:
        """Show the message and stream its reply; `again`: in place of the last turn (its widgets go)."""
        self._last_message = message
        self._last_unsent = False
        log = self.query_one(ChatLog)
        if again:
            mine = [w for w in log.children if w.has_class("user-message")]
            if mine:
                children = list(log.children)
                for widget in children[children.index(mine[-1]):]:
                    widget.remove()
        self._turn += 1
        self._streaming = True
        self._phase = ""
        self._cancel = threading.Event()
        with self._buffer_lock:
            self._buffer.clear()
        self._reply_text = ""
        self._activity_lines = []
        self._reply_md = Markdown(classes="reply", open_links=False)
        self._activity = Static(classes="reply-activity")
        self._activity.display = False
        log.mount(Static(Text(printable(message)), classes="user-message"))
        log.mount(self._activity)
        log.mount(self._reply_md)
        self._stream = Markdown.get_stream(self._reply_md)
        log.anchor()
        log.scroll_end(animate=False)
        self._set_status("thinking… (esc stops)")
        self.refresh_bindings()
        self._send_worker(message, self._turn, self.chat_id, self._focus, self._cancel, again)

    @work(thread=True, exclusive=True, group="chat-send", exit_on_error=False)
    def _send_worker(self, message: str, turn: int, chat_id: int | None, focus, cancel: threading.Event,
                     again: bool = False) -> None:
        from core.chat.conversation import Chat
        from core.providers.base import ProviderError
        from core.graph.store import Store

        cfg = self.services.config
        stored = False
        try:
            provider = (self.make_provider or _default_provider)(cfg)
            with Store(self.services.db_path) as store:
                chat = Chat(store, cfg, provider, chat_id=chat_id, confirm=self._confirm_in_ui(cancel),
                            confirm_fetch=self._confirm_fetch_in_ui(cancel))
                self.post_message(_ChatReady(turn, chat.id, chat.agent.name, chat.provider.model))
                if focus is not None:
                    chat.set_focus(focus)
                for event in chat.send(message, cancel, again=again):
                    stored = True  # the user's message is stored before the first event
                    if event.type == "text" and event.text:
                        with self._buffer_lock:
                            self._buffer.append(event.text)
                        self.post_message(_Deltas(turn))
                    elif event.type == "tool_call" and event.tool_call is not None:
                        call = event.tool_call
                        args = call.raw_arguments if call.arguments is None else json.dumps(call.arguments,
                                                                                            ensure_ascii=False)
                        self.post_message(_Activity(turn, f"→ {call.name} {_clip(args, 120)}"))
                    elif event.type == "tool_result":
                        mark = "✗" if event.stop_reason == "error" else "←"
                        self.post_message(_Activity(turn, f"  {mark} {_clip(' '.join(event.text.split()), 120)}"))
                    elif event.type == "notice":  # e.g. what was cut to fit the context window
                        self.post_message(_Activity(turn, f"  ✂ {event.text}"))
                    elif event.type == "phase":
                        self.post_message(_Phase(turn, event.text))
                reply = chat.last_reply
                passages = dict(reply.citations.get("passages", {}))
                check = reply.citation_check.as_dict() if reply.citation_check else None
                sources = _sources(store, reply.citations, reply.created_nodes, check)
                pricer = Pricer.from_config(cfg)
                answered = chat.provider  # on the agent's model (the chat may run on another than cfg's)
                cost = pricer.for_provider(reply.usage, answered)
                for usage in reply.side_usage.values():
                    cost = cost + pricer.for_provider(usage, answered)
                self.post_message(_TurnDone(turn, reply.text, reply.status, reply.error, reply.usage.as_dict(),
                                            sources, passages, list(reply.created_nodes), check,
                                            dict(reply.side_usage), cost))
        except (ProviderError, CairnError) as exc:  # a sentence of ours: shown as it is
            self.post_message(_TurnFailed(turn, str(exc), stored))
        except Exception as exc:  # shown inline; the app never crashes on a failed reply
            self.post_message(_TurnFailed(turn, f"{type(exc).__name__}: {exc}", stored))

    def _confirm_in_ui(self, cancel: threading.Event) -> Callable[[str, dict], bool]:
        """A confirm callback for the model's edits: asks in a modal, from the worker thread."""
        from tui.screens.confirm import ConfirmScreen

        def confirm(action: str, detail: dict) -> bool:
            detail_text = json.dumps(detail, ensure_ascii=False, indent=1)  # whole, in a box that scrolls
            return self._ask_in_ui(cancel, lambda: ConfirmScreen(f"The model wants to {action}. Allow it?",
                                                                 detail=detail_text))

        return confirm

    def _confirm_fetch_in_ui(self, cancel: threading.Event) -> Callable[[str], bool]:
        """The egress rule's question (core/agent/egress.py), with the whole address shown."""
        from tui.screens.confirm import ConfirmScreen

        def confirm_fetch(url: str) -> bool:
            from core.agent.egress import on_the_wire

            host, wire = on_the_wire(url)  # as the request carries it: nothing invisible, no look-alike host
            return self._ask_in_ui(cancel, lambda: ConfirmScreen(
                f"The model wants to fetch a page from {host or 'an unknown host'}, at an address you did not "
                "write. Whatever is in it (its path, its query string) goes to that server. Allow it?",
                detail=wire))

        return confirm_fetch

    def _ask_in_ui(self, cancel: threading.Event, make_screen: Callable[[], "ModalScreen[bool]"]) -> bool:
        """Push the question's modal from the worker thread and wait for its answer; a stop answers no
        (and closes the modal)."""
        answered = threading.Event()
        answer = [False]
        screen_box: list = []

        def done(result) -> None:
            answer[0] = bool(result)
            answered.set()

        def ask() -> None:
            screen = make_screen()
            screen_box.append(screen)
            self.app.push_screen(screen, done)

        self.app.call_from_thread(ask)
        while not answered.wait(0.1):
            if cancel.is_set():
                if screen_box and screen_box[0].is_current:
                    self.app.call_from_thread(screen_box[0].dismiss, False)
                return False
        return answer[0]

    # -- worker messages ---------------------------------------------------------------------------
    @on(_ChatReady)
    def _chat_ready(self, message: _ChatReady) -> None:
        if message.turn != self._turn:
            return
        if self.chat_id != message.chat_id:
            self.chat_id = message.chat_id
            self._total = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
            self._cost = NO_PRICE
        self.chat_agent = message.agent
        if not self.chat_title and self._last_message.strip():
            self.chat_title = self._last_message.strip().splitlines()[0][:80]  # as core titles a new chat
        self._update_title()
        self._set_status("streaming… (esc stops)" if self._reply_text else "thinking… (esc stops)")

    @on(_Deltas)
    async def _deltas(self, message: _Deltas) -> None:
        if message.turn != self._turn or self._stream is None:
            return
        with self._buffer_lock:
            text = "".join(self._buffer)
            self._buffer.clear()
        if not text:
            return
        text = printable(text)
        if not self._reply_text and not self.stop_pending and not self._cancel.is_set():
            self._set_status("streaming… (esc stops)")
        if self._activity_lines and self._reply_text and not self._reply_text.endswith("\n\n"):
            text = "\n\n" + text  # a new step after tool calls
        self._reply_text += text
        await self._stream.write(text)

    @on(_Activity)
    def _activity_event(self, message: _Activity) -> None:
        if message.turn != self._turn or self._activity is None:
            return
        self._activity_lines.append(printable(message.text))
        self._activity.update(Text("\n".join(self._activity_lines[-12:])))
        self._activity.display = True

    @on(_Phase)
    async def _phase_started(self, message: _Phase) -> None:
        if message.turn != self._turn or message.phase != "citation_check":
            return
        await self._deltas(_Deltas(message.turn))  # the reply is complete: show all of it
        self._phase = message.phase
        self.refresh_bindings()  # the footer's escape now skips the check
        if not self.stop_pending and not self._cancel.is_set():
            self._set_status("checking citations… (esc skips)")

    @on(_TurnDone)
    async def _turn_done(self, message: _TurnDone) -> None:
        if message.turn != self._turn:
            return
        await self._deltas(_Deltas(message.turn))  # whatever is still in the buffer
        await self._end_stream()
        md = self._reply_md
        shown = self._reply_text
        if md is not None:
            if not shown.strip():
                md.display = False
            elif message.passages or "[NODE:" in shown:
                await md.update(linkify(shown, message.passages, broken_citations(message.check)))
        log = self.query_one(ChatLog)
        if message.error:
            log.mount(Static(Text(printable("⚠ " + message.error)), classes="chat-error"))
        if check_lines(message.check):
            log.mount(Static(Text(printable("\n".join(check_lines(message.check)))), classes="citation-check"))
        status = message.status
        if status == "incomplete" and not message.error:
            status = "incomplete (stopped)"
        log.mount(Static(Text(reply_meta_line(message.usage, status, message.side, message.cost.label())),
                         classes=f"reply-meta {message.status}"))
        sources = SourceList(message.sources, classes="sources") if message.sources else None
        if sources is not None:
            log.mount(sources)
        if message.created:
            self._created = _CreatedBatch(list(message.created), sources)
        add_usage(self._total, message.usage)
        for usage in message.side.values():
            add_usage(self._total, usage)
        self._cost = self._cost + message.cost
        self.last_reply_text = shown
        self.last_usage = message.usage
        self._finish()
        if message.created:
            self.post_message(NodesChanged(tuple(message.created)))

    @on(_TurnFailed)
    async def _turn_failed(self, message: _TurnFailed) -> None:
        if message.turn != self._turn:
            return
        await self._end_stream()
        if self._reply_md is not None and not self._reply_text.strip():
            self._reply_md.display = False
        self.query_one(ChatLog).mount(Static(Text(printable("⚠ " + message.error)), classes="chat-error"))
        editor = self.query_one(ChatInput)
        self._last_unsent = not message.stored
        if not message.stored and not editor.text:
            # Nothing was stored: give the message back so it can be sent once the problem is fixed,
            # with the cursor after it (where the user left it), not before its first word.
            editor.text = self._last_message
            editor.move_cursor(editor.document.end)
        self._finish()

    async def _end_stream(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    def _finish(self) -> None:
        self._streaming = False
        self._phase = ""
        self.cancel_pending_stop()
        self._set_status("")
        self.refresh_bindings()
        self.query_one(ChatLog).scroll_end(animate=False)

    # -- stopping ----------------------------------------------------------------------------------
    def action_stop_reply(self) -> None:
        if not self._streaming or self._cancel.is_set():
            return
        if self._stop_timer is None:
            self._stop_timer = self.set_timer(STOP_GRACE_S, self._stop_now)

    def action_skip_check(self) -> None:
        self.action_stop_reply()

    def cancel_pending_stop(self) -> None:
        if self._stop_timer is not None:
            self._stop_timer.stop()
            self._stop_timer = None

    def _stop_now(self) -> None:
        self._stop_timer = None
        if self._streaming:
            self._cancel.set()
            self._set_status("skipping the citation check… (the reply is kept)" if self._phase == "citation_check"
                             else "stopping… (the partial reply is kept)")

    def on_unmount(self) -> None:
        self._cancel.set()

    # -- undoing the model's created notes ---------------------------------------------------------
    @property
    def undo_armed(self) -> bool:
        """Whether ctrl+z means "undo created notes" here: the model created notes in this chat."""
        return self._created is not None

    def action_undo_created(self) -> None:
        batch = self._created
        if batch is None:
            self.notify("Nothing to undo: the model has not created notes in this chat.", severity="warning")
            return
        if batch.state == "undone":
            self.notify("Nothing left to undo: the notes the model created are already in the trash.",
                        severity="warning")
            return
        if batch.state == "moving":
            return
        if self._streaming:
            self.notify("A reply is still streaming: wait for it (or stop it with escape), then undo.",
                        severity="warning")
            return
        batch.state = "moving"
        self._undo_worker(batch)

    @work(thread=True, group="chat-undo", exit_on_error=False)
    def _undo_worker(self, batch: _CreatedBatch) -> None:
        moved: list[int] = []
        missing: list[int] = []
        try:
            with self.services.store() as store:
                for node_id in batch.node_ids:
                    try:
                        store.delete_node(node_id)
                        moved.append(node_id)
                    except NotFound:
                        missing.append(node_id)
        except Exception as exc:
            self.post_message(_Undone(batch, moved, missing, f"Could not move the created notes to the trash: {exc}"))
            return
        self.post_message(_Undone(batch, moved, missing))

    @on(_Undone)
    def _undone(self, message: _Undone) -> None:
        batch = message.batch
        done = set(message.moved) | set(message.missing)
        batch.node_ids = [n for n in batch.node_ids if n not in done]
        batch.state = "ready" if batch.node_ids else "undone"
        self._mark_undone(batch.sources, set(message.moved), set(message.missing))
        moved = message.moved
        if moved:
            plural = "s" if len(moved) != 1 else ""
            text = (f"Moved {len(moved)} note{plural} to the trash (cairn restore ID brings one back): "
                    + ", ".join(f"#{n}" for n in moved) + ".")
        else:
            text = "Nothing moved to the trash."
        if message.missing:
            text += f" {len(message.missing)} had already been deleted."
        if message.error:
            self.notify(printable(f"{message.error}. {text}"), severity="error", markup=False)
        else:
            self.notify(text, markup=False, timeout=8)
        if moved:
            self.post_message(NodesChanged(tuple(moved)))

    @staticmethod
    def _mark_undone(sources: "SourceList | None", moved: set, missing: set) -> None:
        """Mark the sources list's entries for these nodes as undone, and stop them opening."""
        if sources is None or not sources.is_attached:
            return
        for index, node_id in enumerate(sources.node_ids):
            if node_id is None or node_id not in moved | missing:
                continue
            prompt = sources.get_option_at_index(index).prompt
            label = prompt.copy() if isinstance(prompt, Text) else Text(str(prompt))
            label.append(" · undone, in the trash" if node_id in moved else " · already deleted", style="italic")
            sources.replace_option_prompt_at_index(index, label)
            sources.disable_option_at_index(index)
            sources.node_ids[index] = None

    # -- sources and links -------------------------------------------------------------------------
    @on(OptionList.OptionSelected, ".sources")
    def _source_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        sources = event.option_list
        if isinstance(sources, SourceList):
            node_id = sources.node_ids[event.option_index]
            if node_id is not None:
                self.post_message(OpenNode(node_id))

    @on(Markdown.LinkClicked)
    def _link_clicked(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        href = event.href
        if href.startswith(NODE_HREF):
            try:
                self.post_message(OpenNode(int(href[len(NODE_HREF):])))
            except ValueError:
                pass
        else:
            self.app.copy_to_clipboard(href)
            self.notify(f"Link copied to the clipboard: {printable(href)[:200]}", markup=False)

    # -- chats -------------------------------------------------------------------------------------
    def action_new_chat(self) -> None:
        if self._streaming:
            self.notify("Stop the streaming reply first (escape).", severity="warning")
            return
        self.chat_id = None
        self.chat_title = ""
        self.chat_agent = None
        self._last_message, self._editing_last = "", False
        self.last_reply_text = ""
        self.last_usage = None
        self._total = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        self._cost = NO_PRICE
        self._created = None  # undo applies to the chat on screen
        self.refresh_bindings()
        self.query_one(ChatLog).remove_children()
        self._show_intro()
        self._update_title()
        self._set_status("")
        self.focus_input()

    def action_distil(self) -> None:
        """Distil this chat into notes: the model proposes, a review screen applies what is accepted."""
        if self.chat_id is None:
            self.notify("Nothing to distil yet: this chat has no messages.", severity="warning")
            return
        if self._streaming:
            self.notify("A reply is still streaming: wait for it (or stop it with escape), then distil.",
                        severity="warning")
            return
        from tui.screens.distil_review import DistilReviewScreen

        def done(applied) -> None:
            if applied is not None:
                changed = (*applied.created, *applied.updated, *applied.retired)
                if changed:
                    self.post_message(NodesChanged(tuple(changed)))

        self.app.push_screen(DistilReviewScreen(self.services, self.chat_id, make_provider=self.make_provider), done)

    def action_chat_list(self) -> None:
        if self._streaming:
            self.notify("Stop the streaming reply first (escape).", severity="warning")
            return
        from tui.screens.chat_list import ChatListScreen

        def chosen(chat_id) -> None:
            if chat_id is not None:
                self.load_chat(int(chat_id))
            elif self.chat_id is not None:
                self._title_from_store()  # the open chat may have been renamed in the list

        self.app.push_screen(ChatListScreen(self.services, current=self.chat_id), chosen)

    def load_chat(self, chat_id: int) -> None:
        """Show an earlier chat and continue it with the next message."""
        self.query_one(ChatLog).loading = True
        self._load_worker(chat_id)

    @work(thread=True, exclusive=True, group="chat-load", exit_on_error=False)
    def _load_worker(self, chat_id: int) -> None:
        from core.chat import usage_log
        from core.chat.conversation import Chat
        from core.providers.offline import OfflineProvider
        from core.graph.store import Store

        try:
            with Store(self.services.db_path) as store:
                chat = Chat(store, self.services.config, OfflineProvider(), chat_id=chat_id)
                row = store.db.execute("SELECT title, provider, model FROM chats WHERE id = ?", (chat_id,)).fetchone()
                pricer = Pricer.from_config(self.services.config)

                def priced(usage) -> Cost:
                    return pricer.price(usage, row["provider"], row["model"])
                messages = chat.messages()
                hidden = max(0, len(messages) - MAX_SHOWN_MESSAGES)
                items = []
                total = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
                side = usage_log.turn_usage(store, chat_id)  # {user message id: {purpose: usage}}
                cost = NO_PRICE
                for m in messages:
                    add_usage(total, m["usage"])
                    if m["usage"] is not None:
                        cost = cost + priced(m["usage"])
                for by_purpose in side.values():
                    for usage in by_purpose.values():
                        add_usage(total, usage)
                        cost = cost + priced(usage)
                turn_of = {}  # each message's turn: the user message (with text) that began it
                turn = None
                for m in messages:
                    if m["role"] == "user" and any(b.get("type") == "text" for b in m["content"]):
                        turn = m["id"]
                    turn_of[m["id"]] = turn
                for m in messages[hidden:]:
                    item = {"role": m["role"], "text": m["text"], "status": m["status"], "error": m["error"],
                            "usage": m["usage"], "tools": [], "sources": [], "passages": {},
                            "check": m.get("citation_check"), "side": side.get(turn_of[m["id"]], {})}
                    if m["role"] == "assistant" and m["usage"] is not None:
                        item_cost = priced(m["usage"])
                        for usage in item["side"].values():
                            item_cost = item_cost + priced(usage)
                        item["cost"] = item_cost.label()
                    for block in m["content"]:
                        if block.get("type") == "tool_use":
                            args = json.dumps(block.get("input"), ensure_ascii=False)[:120]
                            item["tools"].append(f"→ {block.get('name')} {args}")
                    if m["role"] == "assistant" and m["citations"]:
                        item["passages"] = dict(m["citations"].get("passages", {}))
                        item["sources"] = _sources(store, m["citations"], [], m.get("citation_check"))
                    items.append(item)
            self.post_message(_ChatLoaded(chat_id, row["title"] or "", chat.agent.name, row["model"] or "",
                                          items, hidden, total, cost))
        except Exception as exc:
            self.post_message(_LoadFailed(f"Could not open chat {chat_id}: {exc}"))

    @on(_ChatLoaded)
    async def _chat_loaded(self, message: _ChatLoaded) -> None:
        log = self.query_one(ChatLog)
        await log.remove_children()
        widgets = []
        if message.hidden:
            widgets.append(Static(Text(f"… {message.hidden} earlier messages are not shown."), classes="chat-intro"))
        last_text = ""
        self._last_message = ""
        for item in message.items:
            if item["role"] == "user":
                if item["text"].strip():
                    widgets.append(Static(Text(printable(item["text"])), classes="user-message"))
                    self._last_message = item["text"]  # what up edits and ctrl+r sends again
                continue
            if item["tools"]:
                widgets.append(Static(Text(printable("\n".join(item["tools"]))), classes="reply-activity"))
            if item["text"].strip():
                text = printable(item["text"])
                widgets.append(Markdown(linkify(text, item["passages"], broken_citations(item["check"])),
                                        classes="reply", open_links=False))
                last_text = text
            if item["error"]:
                widgets.append(Static(Text(printable("⚠ " + item["error"])), classes="chat-error"))
            if check_lines(item["check"]):
                widgets.append(Static(Text(printable("\n".join(check_lines(item["check"])))), classes="citation-check"))
            if item["usage"] is not None:
                status = item["status"]
                widgets.append(Static(Text(reply_meta_line(item["usage"], status, item["side"], item.get("cost", ""))),
                                      classes=f"reply-meta {status}"))
                self.last_usage = item["usage"]
            if item["sources"]:
                widgets.append(SourceList(item["sources"], classes="sources"))
        await log.mount_all(widgets)
        log.loading = False
        self.chat_id = message.chat_id
        self.chat_title = message.title
        self.chat_agent = message.agent
        self.last_reply_text = last_text
        self._created = None  # undo applies to the replies of this session only
        self.refresh_bindings()
        self._total = message.total
        self._cost = message.cost
        self._update_title()
        self._set_status("")
        log.anchor()
        log.scroll_end(animate=False)
        self.focus_input()

    @on(_LoadFailed)
    def _load_failed(self, message: _LoadFailed) -> None:
        self.query_one(ChatLog).loading = False
        self.notify(printable(message.error), severity="error", markup=False)


# The offline answer's first line in the app: where to choose a provider here, not a command line's help.
APP_OFFLINE_LABEL = ("{offline}: press f2 and choose one under Provider in the settings (its API key must be set; "
                     "Save as defaults keeps the choice).")


def _default_provider(config):
    from core.providers.factory import make_provider
    from core.providers.offline import OFFLINE, OfflineProvider

    provider = make_provider(config)
    if isinstance(provider, OfflineProvider):
        provider = OfflineProvider(label=APP_OFFLINE_LABEL.format(offline=OFFLINE))
    return provider


def _sources(store, citations: dict, created: list[int], check: dict | None = None) -> list[tuple[str, int | None]]:
    """The reply's sources as (label, node id): "[N] Title" for passages, "[NODE:id] Title" for nodes
    the reply cites, "+ Title (created)" for nodes the model created. Deleted nodes are shown, disabled,
    and so are nodes the citation check found dangling (cited, but not in the context sent)."""
    passages = citations.get("passages") or {}
    dangling = {i["ref"]: i["why"] for i in (check or {}).get("items", [])
                if i.get("kind") == "node" and i.get("status") == "dangling"}
    nodes = [int(n) for n in citations.get("nodes") or []]
    ids = [int(v) for v in passages.values()] + nodes + [int(n) for n in created]
    titles = {n["id"]: n["title"] for n in store.get_nodes(ids)}
    out: list[tuple[str, int | None]] = []

    def entry(prefix: str, node_id: int, suffix: str = "") -> tuple[str, int | None]:
        title = titles.get(node_id)
        if title is None:
            return f"{prefix} (node {node_id} was deleted)", None
        return f"{prefix} {title}{suffix}", node_id

    pages = citations.get("pages") or {}  # a passage of a captured PDF: its page
    for n, node_id in sorted(passages.items(), key=lambda kv: int(kv[0])):
        out.append(entry(f"[{n}]", int(node_id), f", p. {pages[n]}" if n in pages else ""))
    passage_ids = {int(v) for v in passages.values()}
    for node_id in nodes:
        if node_id in dangling:
            out.append((f"[NODE:{node_id}] ⚠ {dangling[node_id]}", None))
        elif node_id not in passage_ids:
            out.append(entry(f"[NODE:{node_id}]", node_id))
    for node_id in created:
        out.append(entry("+", int(node_id), " (created by the model)"))
    return out
