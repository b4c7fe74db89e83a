"""Review proposed edges from one node: `push_screen(LinkReviewScreen(services, node_id, title, mode), callback)`
→ callback(the written edges, or None when cancelled).

mode "integrate": core.integrate.propose (hybrid search + neighbours of neighbours + mentions, drafts
from the configured model when there is one); mode "mention": core.integrate.mention_proposals (the
node's text names these nodes; the sentence is the draft). The search and the model call run in a
worker with its own database connection while the dialog says "finding…"; escape then stops it and
writes nothing.

Each proposal shows the target, its confidence, the reasons and the editable explanation. Nothing is
written until the user says so: `a` accepts (refused while the explanation is empty: edges are
explained), `r` rejects, `e` edits the explanation (enter or ctrl+s keeps the edit and accepts it,
escape drops it), enter or ctrl+s applies the accepted ones in one transaction, escape cancels.
Note text is shown as plain text, never as markup.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from core.errors import CairnError
from core.safe_text import printable
from tui.services import Services

MARKS = {"accepted": ("✓ ", "bold green"), "rejected": ("✗ ", "red"), None: ("· ", "dim")}
HINT = "a accept · r reject · e edit explanation · enter/ctrl+s apply accepted · escape cancel (writes nothing)"
NO_EXPLANATION = "An edge needs an explanation: press e to write one (edges say why two things connect)."
MODES = {"integrate": "Integrate", "mention": "Link suggestions for"}


@dataclass
class _Found(Message, bubble=False):
    proposals: list
    warnings: list


@dataclass
class _Failed(Message, bubble=False):
    error: str
    applying: bool


@dataclass
class _Applied(Message, bubble=False):
    edges: list


class LinkReviewScreen(ModalScreen):
    CSS_PATH = str(Path(__file__).resolve().parent.parent.parent / "styles" / "link_review.tcss")
    BINDINGS = [
        Binding("a", "accept", "Accept", id="links_accept"),
        Binding("r", "reject", "Reject", id="links_reject"),
        Binding("e", "edit", "Edit", id="links_edit"),
        Binding("ctrl+s", "save_or_apply", "Apply accepted", id="links_apply", priority=True),
        Binding("escape", "close", "Cancel", id="links_cancel"),
    ]

    def __init__(self, services: Services, node_id: int, title: str, mode: str = "integrate", *,
                 make_provider: Callable | None = None):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
        self.services = services
        self.node_id = int(node_id)
        self.node_title = title
        self.mode = mode
        self.make_provider = make_provider
        self.proposals: list = []
        self.decisions: list[str | None] = []
        self.warnings: list[str] = []
        self.state = "finding"  # finding | review | editing | applying | failed
        self._editing: int | None = None
        self._cancel = threading.Event()

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="links-dialog", classes="dialog"):
            heading = Text(f"{MODES[self.mode]} ")
            heading.append(printable(f"“{self.node_title}”"), style="bold")
            yield Static(heading, classes="dialog-title")
            yield Static(id="links-status")
            with VerticalScroll(id="links-warnings"):
                yield Static(id="links-warnings-text")
            yield OptionList(id="links-proposals")
            yield Input(id="links-edit", placeholder="Why are they connected? (enter keeps, escape drops)")
            yield Static(id="links-hint", classes="help-note")

    def on_mount(self) -> None:
        for selector in ("#links-warnings", "#links-proposals", "#links-edit"):
            self.query_one(selector).display = False
        what = "searching and asking the model" if self.mode == "integrate" else "reading the text for mentions"
        self._status(f"finding… {what} (escape cancels; nothing is written)")
        self._hint("escape cancel")
        self._find(self._cancel)

    def _status(self, text: str, style: str = "") -> None:
        self.query_one("#links-status", Static).update(Text(printable(text), style=style))

    def _hint(self, text: str) -> None:
        self.query_one("#links-hint", Static).update(Text(text))

    # -- finding -----------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="links-find", exit_on_error=False)
    def _find(self, cancel: threading.Event) -> None:
        from core import integrate
        from core.store import Store

        warnings: list[str] = []
        try:
            # A connection of its own: this worker's SQLite connection belongs to this thread, and the
            # model call must not hold the app's shared one.
            with Store(self.services.db_path) as store:
                if self.mode == "mention":
                    proposals = integrate.mention_proposals(store, self.node_id)
                else:
                    from core.search import Searcher

                    provider = None
                    try:
                        provider = (self.make_provider or _default_provider)(self.services.config)
                    except CairnError as exc:
                        warnings.append(f"{exc} Showing the search proposals without drafted explanations.")
                    if provider is None or provider.name == "offline":
                        if not warnings:
                            warnings.append("Offline: explanations are not drafted without a model; press e to "
                                            "write one.")
                        provider = None
                    proposals = integrate.propose(store, Searcher(store), self.node_id, provider=provider,
                                                  never_send=self.services.config.never_send, cancel=cancel)
                    if proposals.warning:
                        warnings.append(proposals.warning)
        except CairnError as exc:
            self.post_message(_Failed(str(exc), applying=False))
            return
        except Exception as exc:  # shown, never swallowed: the dialog stays open with the error
            self.post_message(_Failed(f"Finding links failed: {type(exc).__name__}: {exc}", applying=False))
            return
        self.post_message(_Found(list(proposals), warnings))

    @on(_Found)
    def _found(self, message: _Found) -> None:
        if self._cancel.is_set():
            return
        self.proposals = message.proposals
        self.decisions = [None] * len(self.proposals)
        self.warnings = message.warnings
        self.state = "review"
        if self.warnings:
            self.query_one("#links-warnings-text", Static).update(
                Text(printable("\n".join(f"⚠ {w}" for w in self.warnings))))
            self.query_one("#links-warnings").display = True
        if not self.proposals:
            self._status("No related nodes found to link." if self.mode == "integrate"
                         else "The text mentions no other node's title or alias. Escape closes.")
            self._hint("escape close")
            self.refresh_bindings()
            return
        options = self.query_one("#links-proposals", OptionList)
        options.add_options([Option(self._label(i)) for i in range(len(self.proposals))])
        options.display = True
        options.highlighted = 0
        options.focus()
        self._show_counts()
        self._hint(HINT)
        self.refresh_bindings()

    @on(_Failed)
    def _failed(self, message: _Failed) -> None:
        self.notify(printable(message.error), severity="error", markup=False, timeout=12)
        if message.applying:
            self.state = "review"
            self._status(message.error + " Nothing was written; your choices are kept.", style="bold")
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
        label.append(printable(p.target_title), style="bold")
        label.append(f"  #{p.target_id}  ", style="dim")
        label.append(f"{p.confidence:.2f}", style="bold")
        label.append(printable("\n    " + " · ".join(p.reasons)), style="dim")
        if p.explanation:
            label.append(printable(f"\n    “{p.explanation}”"), style="italic")
        else:
            label.append("\n    (no explanation yet: e writes one)", style="dim italic")
        return label

    def _current(self) -> int | None:
        options = self.query_one("#links-proposals", OptionList)
        if options.highlighted is None or not self.proposals:
            return None
        return options.highlighted

    def _show_counts(self) -> None:
        accepted = self.decisions.count("accepted")
        rejected = self.decisions.count("rejected")
        self._status(f"{len(self.proposals)} proposed · {accepted} accepted · {rejected} rejected · "
                     f"{len(self.proposals) - accepted - rejected} undecided (only accepted ones are written)")

    def _relabel(self, index: int) -> None:
        self.query_one("#links-proposals", OptionList).replace_option_prompt_at_index(index, self._label(index))

    def _decide(self, decision: str) -> None:
        index = self._current()
        if index is None:
            return
        if decision == "accepted" and not self.proposals[index].explanation.strip():
            self.notify(NO_EXPLANATION, severity="warning", markup=False)
            return
        self.decisions[index] = decision
        self._relabel(index)
        self._show_counts()
        options = self.query_one("#links-proposals", OptionList)
        if index + 1 < len(self.proposals):
            options.highlighted = index + 1

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
        self._editing = index
        self.state = "editing"
        field = self.query_one("#links-edit", Input)
        field.value = self.proposals[index].explanation
        field.display = True
        field.focus()
        self._status(printable(f"Explain the link to “{self.proposals[index].target_title}” · enter keeps the edit "
                               "(and accepts it) · escape drops it"))
        self._hint("enter/ctrl+s keep the edit · escape drop it")
        self.refresh_bindings()

    def _end_edit(self) -> None:
        index = self._editing
        self._editing = None
        self.state = "review"
        self.query_one("#links-edit").display = False
        options = self.query_one("#links-proposals", OptionList)
        options.focus()
        if index is not None:
            options.highlighted = index
        self._show_counts()
        self._hint(HINT)
        self.refresh_bindings()

    def _keep_edit(self) -> None:
        index = self._editing
        text = " ".join(self.query_one("#links-edit", Input).value.split())
        if not text:
            self.notify(NO_EXPLANATION.replace("press e to write one", "write one, or escape to drop the edit"),
                        severity="warning", markup=False)
            return
        self.proposals[index] = replace(self.proposals[index], explanation=text)
        self.decisions[index] = "accepted"
        self._relabel(index)
        self._end_edit()

    @on(Input.Submitted, "#links-edit")
    def _edit_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.state == "editing":
            self._keep_edit()

    def action_save_or_apply(self) -> None:
        if self.state == "editing":
            self._keep_edit()
        elif self.state == "review":
            self.apply_accepted()

    @on(OptionList.OptionSelected, "#links-proposals")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.state == "review":
            self.apply_accepted()

    def apply_accepted(self) -> None:
        accepted = [p for p, d in zip(self.proposals, self.decisions) if d == "accepted"]
        if not accepted:
            self.notify("Nothing accepted yet: press a on the links to keep (or escape to close; nothing is "
                        "written).", severity="warning")
            return
        self.state = "applying"
        self._status(f"writing {len(accepted)} link{'s' if len(accepted) != 1 else ''}…")
        self.refresh_bindings()
        self._apply(accepted)

    @work(thread=True, exclusive=True, group="links-apply", exit_on_error=False)
    def _apply(self, accepted: list) -> None:
        from core import integrate

        try:
            with self.services.store() as store:
                edges = integrate.apply(store, self.node_id, accepted)
        except CairnError as exc:
            self.post_message(_Failed(str(exc), applying=True))
            return
        except Exception as exc:
            self.post_message(_Failed(f"Writing the links failed: {type(exc).__name__}: {exc}; nothing was "
                                      "written.", applying=True))
            return
        self.post_message(_Applied(edges))

    @on(_Applied)
    def _applied(self, message: _Applied) -> None:
        titles = {p.target_id: p.target_title for p in self.proposals}
        names = ", ".join(f"“{titles.get(e['to_node_id'], e['to_node_id'])}”" for e in message.edges)
        count = len(message.edges)
        self.app.notify(printable(f"Linked “{self.node_title}” to {count} node{'s' if count != 1 else ''}: {names}."),
                        markup=False, timeout=8)
        self.dismiss(message.edges)

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
