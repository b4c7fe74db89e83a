"""Settings / Context viewer (toggled over the chat with f2). CONTRACT (used by tui/app.py):
- ContextViewer(services, id=...); set_focus(focus: core.chat.context.Focus): re-render at once.

Top: the chat settings (auto-context, provider, model, agent, where the API key comes from — never
the key). Below: the blocks of the next request exactly as the context engine builds them, with
cached / not cached marks and token estimates. The prefix blocks are built in a worker and kept; a
Focus change re-renders only the focus block (a few rows read, no retrieval, no prefix rebuild).
When retrieval falls back to keyword search (no embedding model, a large indexing backlog), the
engine's note says so above the retrieved block. At the bottom, a collapsed Stats section (counts,
memory, database size, tokens this week: core.ops.stats), computed in a worker each time the pane shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Collapsible, Label, Select, Static, Switch

from core.safe_text import printable
from core.providers.factory import preview_provider
from tui.services import Services

SHOWN_CHARS = 6000  # a block's text is truncated for display beyond this (the request is not)
MODEL_CHOICES = {
    "offline": ("offline",),
    "anthropic": ("claude-sonnet-4-6", "claude-opus-4-7", "claude-haiku-4-5"),  # none deprecated (models.py [A-retire])
    "openai": ("gpt-4.1-mini", "gpt-4.1", "gpt-4o-mini"),
}
BLOCK_ORDER = ("tools", "system", "skills", "core_notes", "background", "history", "user", "focus", "retrieved",
               "datetime")
BLOCK_HELP = {
    "tools": "the agent's tool schemas",
    "system": "base context and the agent's instructions",
    "skills": "the skill catalog (names and descriptions; activateSkill loads one) and the workflows",
    "core_notes": "notes marked always-on",
    "background": "the most-connected hub nodes (auto-context)",
    "history": "earlier turns as they were sent",
    "user": "the message being typed",
    "focus": "the nodes open in the Focus panel",
    "retrieved": "passages found for the message",
    "datetime": "the current date and time",
}


def model_facts(provider_name: str, model: str):
    """The model table's row (core/providers/models.py), before a provider has said more (its facts
    come with the blocks: a local server's window is the provider's to find out)."""
    from core.providers.models import facts

    return facts(model, provider_name)


def _shown(text: str) -> str:
    text = printable(text)
    if len(text) > SHOWN_CHARS:
        return text[:SHOWN_CHARS] + f"\n… ({len(text) - SHOWN_CHARS:,} more characters not shown)"
    return text


def _block_title(name: str, cached: bool, tokens: int) -> Content:
    """One short line: it must fit the right pane at 120 columns (~38 characters), where a longer title
    was cut mid-word. The summary above says the counts are estimates; the body says the rest."""
    mark = "cached" if cached else "not cached"
    if name == "user" and cached:
        # The new message ends the cached prefix: this request writes it to the cache and the
        # next turn reads it; on this request it is not a cache hit (USER_CACHE_NOTE, in the body).
        mark = "cache write"
    return Content(f"{name} · {mark} · ~{tokens:,} tokens")


USER_CACHE_NOTE = "it ends the cached prefix: this request writes it to the cache, the next turn reads it"


def _block_body(name: str, text: str, cached: bool = False) -> Text:
    empty = {"focus": "(no focused nodes)", "user": "(empty message)"}.get(name, "(empty)")
    help_text = BLOCK_HELP.get(name, name)
    if name == "user" and cached:
        help_text += f"; {USER_CACHE_NOTE}"
    body = Text(help_text + "\n", style="italic")
    body.append(_shown(text) or empty)
    return body


STATS_INDENT = 5  # the Stats section's text starts this far into the pane (collapsible contents + padding)
STATS_STACKED_VALUE = 24  # narrower than this beside the labels, each value goes under its label


def stats_text(rows: list[tuple[str, str]], width: int) -> Text:
    """core.ops.stats rows as label / value columns whose values wrap under themselves; in a narrow pane
    (the 120-column layout) each label on its line and its value indented below it."""
    import textwrap

    label_width = max(len(label) for label, _ in rows)
    stacked = width - label_width - 2 < STATS_STACKED_VALUE
    text = Text()
    for i, (label, value) in enumerate(rows):
        if i:
            text.append("\n")
        if stacked:
            text.append(label, style="bold")
            for line in textwrap.wrap(printable(value), max(10, width - 2)) or [""]:
                text.append("\n  " + line)
        else:
            lines = textwrap.wrap(printable(value), max(10, width - label_width - 2)) or [""]
            text.append(f"{label:<{label_width}}  ", style="bold")
            text.append(lines[0])
            for line in lines[1:]:
                text.append("\n" + " " * (label_width + 2) + line)
    return text


def hidden(widget) -> bool:
    """Whether the widget, or one of its ancestors, is not displayed."""
    return any(not node.display for node in widget.ancestors_with_self if hasattr(node, "display"))


@dataclass
class _Blocks(Message, bubble=False):
    seq: int
    focus_seq: int
    blocks: list  # [(name, cached, tokens_est, text)]
    provider: str
    model: str
    chat_id: int | None
    node_count: int
    error: str | None = None
    retrieval_note: str | None = None
    agent_line: str = ""  # the agent, its model and its two scopes (core/agent/profiles.py facts_line)
    window: object = None  # what the context-window policy would do (core/chat/window.py Prediction)
    facts: object = None  # the model's facts, from the provider that would send (core/providers/models.py)
    cache_note: str = ""  # how long the cache keeps the prefix, and why (core/chat/cache_policy.py)


@dataclass
class _Stats(Message, bubble=False):
    rows: list  # [(label, value)] from core.ops.stats.lines
    error: str | None = None


@dataclass
class _FocusText(Message, bubble=False):
    seq: int
    text: str


@dataclass
class _Saved(Message, bubble=False):
    text: str
    ok: bool = True
    extra: dict = field(default_factory=dict)


class ContextViewer(VerticalScroll):
    PANE_NAME = "the Settings / Context viewer"  # what f1 help calls it
    BINDINGS = [
        Binding("r", "refresh_context", "Refresh", id="refresh_context"),
        Binding("e", "toggle_blocks", "Expand/collapse blocks", id="toggle_blocks"),
    ]

    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services
        self.current_focus = None
        self.focus_text = ""
        self.focus_rendered_at: float | None = None  # perf_counter when the focus block was last updated
        self.blocks: list[tuple[str, bool, int, str]] = []
        self._seq = 0
        self._focus_seq = 0
        self._expanded: set[str] = set()
        self._updating = False
        # What each settings control was last set to from the config: a Changed carrying that value is
        # the control's echo (a Select re-announces its first value when it mounts), not a choice; obeyed,
        # it would undo a change made to the shared config meanwhile.
        self._shown: dict[str, object] = {}
        self._focus_engine = None
        self._focus_engine_key = None
        self._chat_pane = None  # the ChatPane beside this viewer (see _last_usage)
        self._stats_rows: list[tuple[str, str]] = []
        self._stats_error: str | None = None

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        cfg = self.services.config
        self._shown = {"viewer-background": cfg.chat.background_context, "viewer-provider": cfg.chat.provider,
                       "viewer-model": cfg.model(), "viewer-agent": cfg.chat.agent}
        with Vertical(id="viewer-settings"):
            yield Static(Text("Settings"), classes="viewer-heading")
            with Horizontal(classes="viewer-row"):
                yield Label(Text("Auto-context (hubs)"), classes="viewer-label")
                yield Switch(value=cfg.chat.background_context, id="viewer-background")
            with Horizontal(classes="viewer-row"):
                yield Label(Text("Provider"), classes="viewer-label")
                yield Select([(p, p) for p in ("offline", "anthropic", "openai")], value=cfg.chat.provider,
                             allow_blank=False, compact=True, id="viewer-provider")
            with Horizontal(classes="viewer-row"):
                yield Label(Text("Model"), classes="viewer-label")
                yield Select(self._model_options(), value=cfg.model(), allow_blank=False, compact=True,
                             id="viewer-model")
            with Horizontal(classes="viewer-row"):
                yield Label(Text("Agent"), classes="viewer-label")
                yield Select(self._agent_options(), value=cfg.chat.agent, allow_blank=False, compact=True,
                             id="viewer-agent")
            yield Static(id="viewer-key")
            yield Static(Text("Provider and model apply from the next message; agent and auto-context from the "
                              "next chat (f5). Save keeps them in the config file."), classes="viewer-note")
            yield Button(Text("Save as defaults"), id="viewer-save")
        yield Static(Text("Next request"), classes="viewer-heading")
        yield Static(id="viewer-summary")
        yield Vertical(id="viewer-blocks")
        # Collapsed by default and last: its figures (sizes, tokens) change with the database, so the
        # rest of the pane never moves when they do.
        yield Collapsible(Static(Text("…"), id="viewer-stats"), title="Stats · counts, size, weekly tokens",
                          collapsed=True, id="viewer-stats-section")

    def _model_options(self) -> list[tuple[str, str]]:
        cfg = self.services.config
        models = list(MODEL_CHOICES.get(cfg.chat.provider, ()))
        current = cfg.model()
        if current not in models:
            models.insert(0, current)
        return [(printable(m), m) for m in models]

    def _agent_options(self) -> list[tuple[str, str]]:
        from core.agent.profiles import BUILT_IN

        return [(a.name, a.name) for a in BUILT_IN.values()]

    def on_mount(self) -> None:
        self._show_key_status()

    def on_show(self) -> None:
        focused = self.screen.focused
        if focused is None or hidden(focused):
            self.focus()
        self.show_title()
        self._sync_settings()
        self.refresh_blocks()
        self._load_stats()

    def show_title(self) -> None:
        """Title the pane it shares with the chat (the App calls this when f2 shows it)."""
        if self.parent is not None and self.parent.has_class("pane"):
            self.parent.border_title = Text("Settings · next request")

    def _sync_settings(self) -> None:
        """Show the settings as they are now (the config object is shared and may have changed)."""
        cfg = self.services.config
        self._shown = {"viewer-background": cfg.chat.background_context, "viewer-provider": cfg.chat.provider,
                       "viewer-model": cfg.model(), "viewer-agent": cfg.chat.agent}
        self.query_one("#viewer-background", Switch).value = cfg.chat.background_context
        self.query_one("#viewer-provider", Select).value = cfg.chat.provider
        model = self.query_one("#viewer-model", Select)
        model.set_options(self._model_options())
        model.value = cfg.model()
        self.query_one("#viewer-agent", Select).value = cfg.chat.agent
        self._show_key_status()

    def _echo(self, event: Select.Changed | Switch.Changed) -> bool:
        """True when the event only repeats what the control was last set to (see `_shown`)."""
        control = event.select if isinstance(event, Select.Changed) else event.switch
        if self._shown.get(control.id) == event.value:
            return True
        self._shown[control.id] = event.value
        return False

    # -- contract ----------------------------------------------------------------------------------
    def set_focus(self, focus) -> None:
        """The Focus tabs changed: re-render the focus block only (the prefix is kept as it is)."""
        self.current_focus = focus
        self._focus_seq += 1
        # The focus block is cheap (one indexed read of the open nodes; each node's line is cached by
        # its updated_at), so it is rendered here, at once, unless a worker holds the store; a worker
        # hop would queue the result behind the screen's relayout of the newly shown tab.
        with self.services.store_if_free() as store:
            if store is not None:
                try:
                    text = self._engine_for_focus(store).set_focus(focus)
                except Exception as exc:  # shown in the block, never a crash
                    text = f"(could not render the focus block: {exc})"
                self._show_focus(text)
                return
        self._render_focus(focus, self._focus_seq)

    @work(thread=True, exclusive=True, group="viewer-focus", exit_on_error=False)
    def _render_focus(self, focus, seq: int) -> None:
        try:
            with self.services.store() as store:
                engine = self._engine_for_focus(store)
                text = engine.set_focus(focus)
        except Exception as exc:
            text = f"(could not render the focus block: {exc})"
        self.post_message(_FocusText(seq, text))

    def _engine_for_focus(self, store):
        """A light engine on the shared store, only for the focus block (its lines are cached per node)."""
        from core.agent import profiles
        from core.chat import request as chat_request

        cfg = self.services.config
        provider = preview_provider(cfg)
        key = (chat_request.policy(cfg, provider), cfg.chat.agent)
        if self._focus_engine is None or self._focus_engine_key != key:
            self._focus_engine = chat_request.engine(store, None, profiles.get(cfg.chat.agent, cfg), cfg, provider)
            self._focus_engine_key = key
        return self._focus_engine

    @on(_FocusText)
    def _focus_ready(self, message: _FocusText) -> None:
        if message.seq != self._focus_seq:
            return
        self._show_focus(message.text)

    def _show_focus(self, text: str) -> None:
        from core.providers.request import estimate_tokens

        self.focus_text = text
        self.blocks = [b if b[0] != "focus" else ("focus", False, estimate_tokens(text), text) for b in self.blocks]
        try:
            block = self.query_one("#block-focus", Collapsible)
        except Exception:
            return
        block.title = _block_title("focus", False, estimate_tokens(text))
        block.query_one(".block-text", Static).update(_block_body("focus", text))
        self._show_summary()
        self.focus_rendered_at = time.perf_counter()

    # -- the next request --------------------------------------------------------------------------
    def action_refresh_context(self) -> None:
        self.refresh_blocks()

    def refresh_blocks(self) -> None:
        """Rebuild every block for the current draft (in a worker: retrieval embeds the draft)."""
        from tui.widgets.chat_pane import ChatPane

        draft, chat_id = "", None
        for pane in self.screen.query(ChatPane):
            draft, chat_id = pane.draft, pane.chat_id
        self._seq += 1
        if not self.blocks:
            self.query_one("#viewer-blocks").loading = True
        self._build(self._seq, self._focus_seq, draft, chat_id, self.current_focus)

    @work(thread=True, exclusive=True, group="viewer-blocks", exit_on_error=False)
    def _build(self, seq: int, focus_seq: int, draft: str, chat_id: int | None, focus) -> None:
        from core.chat.preview import next_request
        from core.chat.request import cache_note
        from core.graph.store import Store

        cfg = self.services.config
        provider = preview_provider(cfg)
        try:
            with Store(self.services.db_path) as store:
                preview = next_request(store, cfg, provider, draft, focus=focus, chat_id=chat_id)
                request, note = preview.request, preview.retrieval_note
                blocks = [(b.name, b.cached, b.tokens_est, b.text) for b in request.blocks()]
                if not any(b[0] == "focus" for b in blocks):
                    blocks.append(("focus", False, 0, ""))
                blocks.sort(key=lambda b: BLOCK_ORDER.index(b[0]) if b[0] in BLOCK_ORDER else len(BLOCK_ORDER))
                provider = preview.provider  # on the agent's model (core/chat/request.py model_for)
                self.post_message(_Blocks(seq, focus_seq, blocks, provider.name, provider.model, chat_id,
                                          len(request.node_ids), retrieval_note=note, agent_line=preview.agent_line,
                                          window=preview.window(draft), facts=provider.facts,
                                          cache_note=cache_note(request, provider)))
        except Exception as exc:
            self.post_message(_Blocks(seq, focus_seq, [], provider.name, provider.model, chat_id, 0,
                                      error=f"{type(exc).__name__}: {exc}"))

    @on(_Blocks)
    async def _blocks_ready(self, message: _Blocks) -> None:
        if message.seq != self._seq:
            return
        container = self.query_one("#viewer-blocks")
        container.loading = False
        if message.error:
            self.blocks = []
            await container.remove_children()
            await container.mount(Static(Text(printable("Could not build the request: " + message.error)),
                                         classes="chat-error"))
            return
        blocks = message.blocks
        if message.focus_seq != self._focus_seq:
            # The Focus changed while this was built: keep the newer focus block.
            from core.providers.request import estimate_tokens

            blocks = [b if b[0] != "focus" else ("focus", False, estimate_tokens(self.focus_text), self.focus_text)
                      for b in blocks]
        else:
            self.focus_text = next((b[3] for b in blocks if b[0] == "focus"), "")
        self.blocks = blocks
        self._provider, self._model, self._chat_id = message.provider, message.model, message.chat_id
        self._node_count = message.node_count
        self._agent_line = message.agent_line
        self._window = message.window
        self._facts = message.facts
        self._cache_note = message.cache_note
        widgets = []
        for name, cached, tokens, text in blocks:
            if message.retrieval_note and name in ("retrieved", "datetime") and not any(
                    w.id == "viewer-retrieval-note" for w in widgets):
                widgets.append(Static(Text(printable(message.retrieval_note)), id="viewer-retrieval-note"))
            widgets.append(Collapsible(Static(_block_body(name, text, cached), classes="block-text"),
                                       title=_block_title(name, cached, tokens), collapsed=name not in self._expanded,
                                       id=f"block-{name}", classes="block " + ("cached" if cached else "volatile")))
        await container.remove_children()
        await container.mount_all(widgets)
        self._show_summary()
        self.focus_rendered_at = time.perf_counter()

    def _show_summary(self) -> None:
        if not self.blocks:
            return
        provider, model = getattr(self, "_provider", "offline"), getattr(self, "_model", "offline")
        prefix = sum(b[2] for b in self.blocks if b[1])
        total = sum(b[2] for b in self.blocks)
        facts = getattr(self, "_facts", None) or model_facts(provider, model)
        if facts.provider == "local" and facts.model:
            model = facts.model  # the model the local server serves (its /v1/models), not the configured name
        minimum = facts.min_cacheable
        where = f"chat #{self._chat_id}" if self._chat_id is not None else "a new chat"
        text = Text()
        text.append(printable(f"{provider} · {model} · {where} · {self._node_count} nodes in the context\n"))
        if getattr(self, "_agent_line", ""):
            text.append(printable(self._agent_line) + "\n", style="dim")
        text.append(f"total ~{total:,} tokens (estimate) · cached prefix ~{prefix:,} tokens\n")
        if provider == "offline":
            # Nothing is sent, so nothing is cached: no line about a cache minimum, which would read as
            # if the offline answers were cached.
            text.append("Offline: nothing is sent or cached; this is what a provider would receive.",
                        style="dim")
        elif not minimum:
            text.append(f"{printable(model)} on a local server reuses any common prefix; its window: "
                        f"{facts.context_window:,} tokens ({printable(facts.window_source or 'assumed')}).")
        else:
            long_enough = prefix >= minimum
            text.append(f"{printable(model)} caches prefixes from {minimum:,} tokens: ",
                        style="" if long_enough else "bold")
            text.append("the prefix is long enough." if long_enough else "this prefix is too short to be cached.",
                        style="" if long_enough else "bold")
        if provider != "offline" and getattr(self, "_cache_note", ""):
            text.append("\n" + printable(self._cache_note))
        if provider != "offline" and facts.assumed:
            text.append(f"\n{facts.assumed}", style="bold")
        if provider != "offline" and facts.retirement():
            text.append(f"\n{facts.retirement()}", style="bold")
        prediction = getattr(self, "_window", None)
        if provider != "offline" and prediction is not None:
            text.append("\n" + printable(prediction.line), style="bold" if prediction.cuts or prediction.refusal else "")
        last = self._last_usage()
        if last:
            from tui.widgets.chat_pane import usage_line

            text.append(f"\nlast reply, as reported: {usage_line(last)}", style="dim")
        self.query_one("#viewer-summary", Static).update(text)

    def _last_usage(self) -> dict | None:
        # The chat pane is held once found: this runs on every Focus tab switch, and a query of the
        # whole screen was ~2 ms of the ~25 a switch takes (bench/tui.py).
        pane = self._chat_pane
        if pane is None or not pane.is_attached:
            from tui.widgets.chat_pane import ChatPane

            pane = self._chat_pane = next(iter(self.screen.query(ChatPane)), None)
        if pane is not None and pane.chat_id is not None and pane.chat_id == getattr(self, "_chat_id", None):
            return pane.last_usage
        return None

    # -- stats -------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="viewer-stats", exit_on_error=False)
    def _load_stats(self) -> None:
        from core.ops import stats

        try:
            with self.services.store() as store:
                rows = stats.lines(stats.collect(store, self.services.config))
        except Exception as exc:  # shown in the section, never a crash
            self.post_message(_Stats([], f"Could not read the stats: {exc}"))
            return
        self.post_message(_Stats(rows))

    @on(_Stats)
    def _stats_ready(self, message: _Stats) -> None:
        self._stats_rows, self._stats_error = message.rows, message.error
        self._show_stats()

    def _show_stats(self) -> None:
        """Lay the rows out for the pane's width now (values wrap under themselves, never at the edge)."""
        if self._stats_error is not None:
            self.query_one("#viewer-stats", Static).update(Text(printable(self._stats_error)))
        elif self._stats_rows:
            # The section's text width: the pane's, less the collapsible's indent and the Static's padding.
            width = self.scrollable_content_region.width - STATS_INDENT
            self.query_one("#viewer-stats", Static).update(stats_text(self._stats_rows, width))

    def on_resize(self) -> None:
        self._show_stats()

    @on(Collapsible.Expanded)
    def _expanded_block(self, event: Collapsible.Expanded) -> None:
        if event.collapsible.id and event.collapsible.id.startswith("block-"):
            self._expanded.add(event.collapsible.id[len("block-"):])

    @on(Collapsible.Collapsed)
    def _collapsed_block(self, event: Collapsible.Collapsed) -> None:
        if event.collapsible.id and event.collapsible.id.startswith("block-"):
            self._expanded.discard(event.collapsible.id[len("block-"):])

    def action_toggle_blocks(self) -> None:
        blocks = list(self.query(".block").results(Collapsible))
        expand = any(b.collapsed for b in blocks)
        for b in blocks:
            b.collapsed = not expand
        self._expanded = {b.id[len("block-"):] for b in blocks if b.id} if expand else set()

    # -- settings ----------------------------------------------------------------------------------
    def _show_key_status(self) -> None:
        from urllib.parse import urlparse

        cfg = self.services.config
        provider = cfg.chat.provider
        text = Text(f"API key: {cfg.key_status(provider)}")
        base = cfg.base_url(provider)
        if base:
            parsed = urlparse(base)
            host = parsed.hostname or "?"
            port = f":{parsed.port}" if parsed.port else ""
            text.append(printable(f" · server: {host}{port}"))
        # Not query_one: when the app closes while this pane is still mounting (just after start), its
        # children are already gone, and there is nothing to show the status in.
        for widget in self.query("#viewer-key").results(Static):
            widget.update(text)

    def _settings_changed(self) -> None:
        from tui.widgets.chat_pane import ChatPane

        self._show_key_status()
        for pane in self.screen.query(ChatPane):
            pane.settings_changed()
        self._focus_engine = None
        self.refresh_blocks()
        if self.current_focus is not None:
            self.set_focus(self.current_focus)

    @on(Switch.Changed, "#viewer-background")
    def _background_changed(self, event: Switch.Changed) -> None:
        event.stop()
        if self._echo(event) or bool(event.value) == self.services.config.chat.background_context:
            return
        self.services.config.chat.background_context = bool(event.value)
        self._settings_changed()

    @on(Select.Changed, "#viewer-provider")
    def _provider_changed(self, event: Select.Changed) -> None:
        event.stop()
        cfg = self.services.config
        if self._updating or event.value == Select.BLANK or self._echo(event) or event.value == cfg.chat.provider:
            return
        cfg.chat.provider = str(event.value)
        cfg.chat.model = ""  # the provider's default model
        model = self.query_one("#viewer-model", Select)
        self._updating = True
        try:
            model.set_options(self._model_options())
            model.value = self._shown["viewer-model"] = cfg.model()
        finally:
            self._updating = False
        self._settings_changed()

    @on(Select.Changed, "#viewer-model")
    def _model_changed(self, event: Select.Changed) -> None:
        event.stop()
        cfg = self.services.config
        if self._updating or event.value == Select.BLANK or self._echo(event) or event.value == cfg.model():
            return
        cfg.chat.model = str(event.value)
        self._settings_changed()

    @on(Select.Changed, "#viewer-agent")
    def _agent_changed(self, event: Select.Changed) -> None:
        event.stop()
        cfg = self.services.config
        if self._updating or event.value == Select.BLANK or self._echo(event) or event.value == cfg.chat.agent:
            return
        cfg.chat.agent = str(event.value)
        self._settings_changed()

    @on(Button.Pressed, "#viewer-save")
    def _save_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        cfg = self.services.config
        self._save({"chat.provider": cfg.chat.provider, "chat.model": cfg.chat.model, "chat.agent": cfg.chat.agent,
                    "chat.background_context": cfg.chat.background_context})

    @work(thread=True, exclusive=True, group="viewer-save", exit_on_error=False)
    def _save(self, values: dict) -> None:
        from core import config as config_module

        try:
            path = config_module.set_values(values, self.services.config.path)  # one write: all or none
            self.post_message(_Saved(f"Saved the chat settings to {path}."))
        except Exception as exc:
            self.post_message(_Saved(f"Could not save the settings: {exc}", ok=False))

    @on(_Saved)
    def _saved(self, message: _Saved) -> None:
        self.notify(printable(message.text), severity="information" if message.ok else "error", markup=False)
