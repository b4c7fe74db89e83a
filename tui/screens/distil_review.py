"""Review what the model proposes to keep from a chat: `push_screen(DistilReviewScreen(services, chat_id),
callback)` → callback(core.distil.Applied or None).

The model call runs in a worker (the dialog says "distilling…"; escape leaves and writes nothing).
Proposals are listed by kind, each with its source message; the highlighted one's detail (an update's
diff, an addition's text, a retirement's reason) shows below. Nothing is accepted until the user says
so: `a` accepts, `r` rejects, `e` edits (an addition's title and text, an update's new text),
enter or ctrl+s applies the accepted ones in one transaction. Note text is shown as plain text, never
as markup.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from core.errors import CairnError
from core.safe_text import printable
from tui.services import Services

HEADINGS = {"addition": "Additions — new nodes", "update": "Updates — changes to existing nodes",
            "retirement": "Retirements — marked retired, not deleted"}
MARKS = {"accepted": ("✓ ", "bold green"), "rejected": ("✗ ", "red"), None: ("· ", "dim")}


@dataclass
class _Proposed(Message, bubble=False):
    result: object  # core.distil.DistilResult


@dataclass
class _Failed(Message, bubble=False):
    error: str
    applying: bool


@dataclass
class _Applied(Message, bubble=False):
    applied: object  # core.distil.Applied


class DistilReviewScreen(ModalScreen):
    CSS_PATH = str(Path(__file__).resolve().parent.parent.parent / "styles" / "distil.tcss")
    BINDINGS = [
        Binding("a", "accept", "Accept", id="distil_accept"),
        Binding("r", "reject", "Reject", id="distil_reject"),
        Binding("e", "edit", "Edit", id="distil_edit"),
        Binding("ctrl+s", "save_or_apply", "Apply accepted", id="distil_apply", priority=True),
        Binding("escape", "close", "Cancel", id="distil_cancel"),
    ]

    def __init__(self, services: Services, chat_id: int, *, make_provider: Callable | None = None):
        super().__init__()
        self.services = services
        self.chat_id = chat_id
        self.make_provider = make_provider
        self.proposals: list = []
        self.decisions: list[str | None] = []
        self.warnings: list[str] = []
        self.state = "distilling"  # distilling | review | editing | applying | failed
        self._rows: list[int | None] = []  # option index → proposal index (None: a heading)
        self._editing: int | None = None
        self._cancel = threading.Event()
        self.usage: dict = {}

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="distil-dialog", classes="dialog"):
            yield Static(Text(f"Distil chat #{self.chat_id} into notes"), classes="dialog-title")
            yield Static(id="distil-status")
            with VerticalScroll(id="distil-warnings"):
                yield Static(id="distil-warnings-text")
            yield OptionList(id="distil-proposals")
            with VerticalScroll(id="distil-detail-scroll"):
                yield Static(id="distil-detail")
            yield Input(id="distil-edit-title", placeholder="Title")
            yield TextArea(id="distil-editor", soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
            yield Static(id="distil-hint", classes="help-note")

    def on_mount(self) -> None:
        for selector in ("#distil-warnings", "#distil-proposals", "#distil-detail-scroll", "#distil-edit-title",
                         "#distil-editor"):
            self.query_one(selector).display = False
        self._status("distilling… the model is reading the chat (escape cancels; nothing is written)")
        self._hint("")
        self._propose(self._cancel)

    def _status(self, text: str, style: str = "") -> None:
        self.query_one("#distil-status", Static).update(Text(printable(text), style=style))

    def _hint(self, text: str) -> None:
        self.query_one("#distil-hint", Static).update(Text(text))

    # -- the model call ----------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="distil", exit_on_error=False)
    def _propose(self, cancel: threading.Event) -> None:
        from core import distil
        from core.search import Searcher
        from core.store import Store

        cfg = self.services.config
        try:
            provider = (self.make_provider or _default_provider)(cfg)
            # A store of its own: this worker's SQLite connection belongs to this thread.
            with Store(self.services.db_path) as store:
                result = distil.propose(store, self.chat_id, provider, never_send=cfg.never_send,
                                        searcher=Searcher(store), cancel=cancel)
        except CairnError as exc:
            self.post_message(_Failed(str(exc), applying=False))
            return
        except Exception as exc:  # shown, never swallowed: the dialog stays open with the error
            self.post_message(_Failed(f"Distilling failed: {type(exc).__name__}: {exc}", applying=False))
            return
        self.post_message(_Proposed(result))

    @on(_Proposed)
    def _proposed(self, message: _Proposed) -> None:
        if self._cancel.is_set():
            return
        result = message.result
        self.proposals = list(result.proposals)
        self.decisions = [None] * len(self.proposals)
        self.warnings = list(result.warnings)
        self.state = "review"
        self.usage = dict(result.usage)
        if self.warnings:
            # In the dialog (they explain what is missing from the list), not a pile of toasts.
            self.query_one("#distil-warnings-text", Static).update(
                Text(printable("\n".join(f"⚠ {w}" for w in self.warnings))))
            self.query_one("#distil-warnings").display = True
        if not self.proposals:
            self._status("The model proposed nothing to keep from this chat. Escape closes.")
            self._hint("escape close")
            return
        self._fill()
        options = self.query_one("#distil-proposals", OptionList)
        options.display = True
        self.query_one("#distil-detail-scroll").display = True
        options.highlighted = self._rows.index(0)
        options.focus()
        self._show_counts()
        self._hint("a accept · r reject · e edit · enter/ctrl+s apply accepted · escape cancel (writes nothing)")
        self.refresh_bindings()

    @on(_Failed)
    def _failed(self, message: _Failed) -> None:
        self.notify(printable(message.error), severity="error", markup=False, timeout=12)
        if message.applying:
            self.state = "review"
            self._show_counts()
            self._status(message.error + " Your choices are kept.", style="bold")
        else:
            self.state = "failed"
            self._status(message.error, style="bold")
            self._hint("escape close")
        self.refresh_bindings()

    # -- the list ----------------------------------------------------------------------------------
    def _label(self, index: int) -> Text:
        p = self.proposals[index]
        mark, style = MARKS[self.decisions[index]]
        label = Text(mark, style=style)
        if p.kind == "addition":
            label.append(printable(p.title), style="bold")
            if p.dimensions:
                label.append(printable("  #" + " #".join(p.dimensions)), style="dim")
        else:
            label.append(f"node {p.node_id} ")
            label.append(printable(p.title), style="bold")
            if p.kind == "update":
                label.append(f"  ({', '.join(sorted(p.changes))})", style="dim")
        label.append(printable(f"\n    from message {p.source_message_id}: “{p.excerpt[:120]}”"), style="dim italic")
        return label

    def _fill(self) -> None:
        options = self.query_one("#distil-proposals", OptionList)
        options.clear_options()
        self._rows = []
        rows: list[Option] = []
        kind = None
        for i, p in enumerate(self.proposals):
            if p.kind != kind:
                kind = p.kind
                rows.append(Option(Text(HEADINGS[kind], style="bold underline"), disabled=True))
                self._rows.append(None)
            rows.append(Option(self._label(i)))
            self._rows.append(i)
        options.add_options(rows)

    def _current(self) -> int | None:
        options = self.query_one("#distil-proposals", OptionList)
        if options.highlighted is None or options.highlighted >= len(self._rows):
            return None
        return self._rows[options.highlighted]

    def _show_counts(self) -> None:
        accepted = self.decisions.count("accepted")
        rejected = self.decisions.count("rejected")
        tokens = (f" · tokens in {self.usage.get('input', 0):,} out {self.usage.get('output', 0):,}"
                  if self.usage else "")
        self._status(f"{len(self.proposals)} proposals · {accepted} accepted · {rejected} rejected · "
                     f"{len(self.proposals) - accepted - rejected} undecided (only accepted ones are applied)"
                     + tokens)

    @on(OptionList.OptionHighlighted, "#distil-proposals")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        index = self._current()
        if index is not None:
            self.query_one("#distil-detail", Static).update(self._detail(index))

    def _detail(self, index: int) -> Text:
        p = self.proposals[index]
        out = Text()
        if p.kind == "addition":
            out.append("New node: ", style="bold")
            out.append(printable(p.title) + "\n")
            if p.description:
                out.append(printable(p.description) + "\n", style="italic")
            if p.dimensions:
                out.append(printable("#" + " #".join(p.dimensions)) + "\n", style="dim")
            out.append("\n" + printable(p.source or "(no text)") + "\n")
        elif p.kind == "update":
            if p.reason:
                out.append("Why: ", style="bold")
                out.append(printable(p.reason) + "\n")
            for line in p.diff.splitlines():
                style = ("green" if line.startswith("+") and not line.startswith("+++") else
                         "red" if line.startswith("-") and not line.startswith("---") else "dim")
                out.append(printable(line) + "\n", style=style)
        else:
            out.append(f"Retire node {p.node_id}: ", style="bold")
            out.append(printable(p.title) + "\n")
            out.append("Superseded: ", style="bold")
            out.append(printable(p.reason) + "\n")
            out.append("The node is kept with its text and links, marked with the dimension 'retired'.\n", style="dim")
        out.append(f"\nFrom message {p.source_message_id}: ", style="dim")
        out.append(printable(f"“{p.excerpt}”"), style="dim italic")
        return out

    def _decide(self, decision: str) -> None:
        index = self._current()
        if index is None:
            return
        self.decisions[index] = decision
        options = self.query_one("#distil-proposals", OptionList)
        row = options.highlighted
        options.replace_option_prompt_at_index(row, self._label(index))
        self._show_counts()
        later = [r for r in range(row + 1, len(self._rows)) if self._rows[r] is not None]
        if later:
            options.highlighted = later[0]

    # -- actions -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("accept", "reject", "edit"):
            return self.state == "review" and bool(self.proposals)
        return True

    def action_accept(self) -> None:
        self._decide("accepted")

    def action_reject(self) -> None:
        self._decide("rejected")

    def action_edit(self) -> None:
        index = self._current()
        if index is None:
            return
        p = self.proposals[index]
        if p.kind == "retirement":
            self.notify("A retirement has no text to edit: accept or reject it.", severity="warning")
            return
        self._editing = index
        self.state = "editing"
        title = self.query_one("#distil-edit-title", Input)
        editor = self.query_one("#distil-editor", TextArea)
        title.display = p.kind == "addition"
        title.value = p.title if p.kind == "addition" else ""
        editor.text = p.source if p.kind == "addition" else p.changes.get(p.edit_field, "")
        editor.display = True
        self.query_one("#distil-proposals").display = False
        self.query_one("#distil-detail-scroll").display = False
        what = "the new note's title and text" if p.kind == "addition" else f"the node's new {p.edit_field}"
        self._status(f"Editing {what} · ctrl+s keeps the edit (and accepts it) · escape drops it")
        self._hint("ctrl+s keep the edit · escape drop it")
        (title if p.kind == "addition" else editor).focus()
        self.refresh_bindings()

    def _end_edit(self) -> None:
        self._editing = None
        self.state = "review"
        self.query_one("#distil-edit-title").display = False
        self.query_one("#distil-editor").display = False
        self.query_one("#distil-proposals").display = True
        self.query_one("#distil-detail-scroll").display = True
        self.query_one("#distil-proposals").focus()
        self._show_counts()
        self._hint("a accept · r reject · e edit · enter/ctrl+s apply accepted · escape cancel (writes nothing)")
        self.refresh_bindings()

    def _keep_edit(self) -> None:
        index = self._editing
        p = self.proposals[index]
        editor = self.query_one("#distil-editor", TextArea)
        try:
            if p.kind == "addition":
                edited = p.edited(title=self.query_one("#distil-edit-title", Input).value, text=editor.text)
            else:
                edited = p.edited(text=editor.text)
        except CairnError as exc:
            self.notify(printable(str(exc)), severity="error", markup=False)
            return
        self.proposals[index] = edited
        self.decisions[index] = "accepted"
        options = self.query_one("#distil-proposals", OptionList)
        row = self._rows.index(index)
        options.replace_option_prompt_at_index(row, self._label(index))
        self._end_edit()
        options.highlighted = row
        self.query_one("#distil-detail", Static).update(self._detail(index))

    def action_save_or_apply(self) -> None:
        if self.state == "editing":
            self._keep_edit()
        elif self.state == "review":
            self.apply_accepted()

    @on(Input.Submitted, "#distil-edit-title")
    def _title_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#distil-editor", TextArea).focus()

    @on(OptionList.OptionSelected, "#distil-proposals")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.state == "review":
            self.apply_accepted()

    def apply_accepted(self) -> None:
        accepted = [p for p, d in zip(self.proposals, self.decisions) if d == "accepted"]
        if not accepted:
            self.notify("Nothing accepted yet: press a on the proposals to keep (or escape to close; nothing is "
                        "written).", severity="warning")
            return
        self.state = "applying"
        self._status(f"applying {len(accepted)} proposal{'s' if len(accepted) != 1 else ''}…")
        self.refresh_bindings()
        self._apply(accepted)

    @work(thread=True, exclusive=True, group="distil-apply", exit_on_error=False)
    def _apply(self, accepted: list) -> None:
        from core import distil

        try:
            with self.services.store() as store:
                applied = distil.apply(store, self.chat_id, accepted)
        except CairnError as exc:
            self.post_message(_Failed(str(exc), applying=True))
            return
        except Exception as exc:
            self.post_message(_Failed(f"Applying failed: {type(exc).__name__}: {exc}; nothing was written.",
                                      applying=True))
            return
        self.post_message(_Applied(applied))

    @on(_Applied)
    def _applied(self, message: _Applied) -> None:
        applied = message.applied
        self.notify(f"Distilled chat #{self.chat_id}: {applied.summary()}.", markup=False, timeout=8)
        self.dismiss(applied)

    def action_close(self) -> None:
        if self.state == "editing":
            self._end_edit()
            return
        if self.state == "applying":
            return  # one transaction is running: it lands whole or not at all; wait for it
        self._cancel.set()
        self.dismiss(None)


def _default_provider(config):
    from core.providers import make_provider

    return make_provider(config)
