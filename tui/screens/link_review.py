"""Review proposed edges from one node: `push_screen(LinkReviewScreen(services, node_id, title, mode), callback)`
→ callback(the written edges, or None when cancelled).

mode "integrate": core.assist.integrate.propose (hybrid search + neighbours of neighbours + mentions, drafts
from the configured model when there is one); mode "mention": core.assist.integrate.mention_proposals (the
node's text names these nodes; the sentence is the draft). The search and the model call run in a
worker with its own database connection while the dialog says "finding…"; escape then stops it and
writes nothing.

Each proposal shows the target, its confidence, the reasons and the editable explanation. Nothing is
written until the user says so: `a` accepts (refused while the explanation is empty: edges are
explained), `r` rejects, `e` edits the explanation (enter or ctrl+s keeps the edit and accepts it,
escape drops it), enter or ctrl+s applies the accepted ones in one transaction, escape cancels.
The keys, the workers and the list are tui/screens/review.py's; this module says how links are
found, shown, edited and written. Note text is shown as plain text, never as markup.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Input

from core.chat.cost import SpendGuard
from core.errors import CairnError
from core.safe_text import printable
from tui.screens.review import Found, Indented, Part, ReviewScreen, default_provider, mark, review_bindings
from tui.services import Services

NO_EXPLANATION = "An edge needs an explanation: press e to write one (edges say why two things connect)."
MODES = {"integrate": "Integrate", "mention": "Link suggestions for"}


class LinkReviewScreen(ReviewScreen):
    BINDINGS = review_bindings("links")
    PREFIX = "links"
    WORKING = "finding"
    HINT = "enter or ctrl+s writes the accepted links · escape writes nothing"
    EDIT_HINT = "enter or ctrl+s keeps the edit (and accepts it) · escape drops it"
    EXTRA_HIDDEN = ("#links-edit",)
    FIND_FAILED = "Finding links failed"
    APPLY_FAILED = "Writing the links failed"
    APPLY_FAILED_KEPT = " Nothing was written; your choices are kept."
    ITEM = "link"
    APPLYING = "writing"

    def __init__(self, services: Services, node_id: int, title: str, mode: str = "integrate", *,
                 make_provider: Callable | None = None):
        if mode not in MODES:
            raise ValueError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
        super().__init__(services, make_provider=make_provider)
        self.node_id = int(node_id)
        self.node_title = title
        self.mode = mode

    # -- layout ------------------------------------------------------------------------------------
    def _title(self) -> Text:
        heading = Text(f"{MODES[self.mode]} ")
        heading.append(printable(f"“{self.node_title}”"), style="bold")
        return heading

    def compose_editor(self) -> ComposeResult:
        yield Input(id="links-edit", placeholder="Why are they connected? (enter keeps, escape drops)")

    def _working_status(self) -> str:
        what = "searching and asking the model" if self.mode == "integrate" else "reading the text for mentions"
        return f"finding… {what} (escape cancels; nothing is written)"

    def _working_hint(self) -> str:
        return "escape cancel"

    def _nothing_found(self) -> str:
        return ("No related nodes found to link." if self.mode == "integrate"
                else "The text mentions no other node's title or alias. Escape closes.")

    # -- finding -----------------------------------------------------------------------------------
    def find(self, cancel: threading.Event) -> Found:
        from core.assist import integrate
        from core.graph.store import Store

        warnings: list[str] = []
        # A connection of its own: this worker's SQLite connection belongs to this thread, and the
        # model call must not hold the app's shared one.
        with Store(self.services.db_path) as store:
            if self.mode == "mention":
                return Found(list(integrate.mention_proposals(store, self.node_id)))
            from core.search.searcher import Searcher

            provider = None
            try:
                provider = (self.make_provider or default_provider)(self.services.config)
            except CairnError as exc:
                warnings.append(f"{exc} Showing the search proposals without drafted explanations.")
            offline = provider is None or provider.name == "offline"
            if offline:
                provider = None
            proposals = integrate.propose(store, Searcher(store), self.node_id, provider=provider,
                                          never_send=self.services.config.privacy.never_send, cancel=cancel,
                                          guard=SpendGuard(store, self.services.config))
            if offline and not warnings and proposals:  # with nothing proposed, "press e" has nothing to edit
                warnings.append("Offline: explanations are not drafted without a model; press e to "
                                "write one.")
            if proposals.warning:
                warnings.append(proposals.warning)
        return Found(list(proposals), warnings)

    # -- the list ----------------------------------------------------------------------------------
    def _label(self, index: int) -> Indented:
        p = self.proposals[index]
        title = Text(printable(p.target_title), style="bold")
        title.append(f"  #{p.target_id}  ", style="dim")
        title.append(f"{p.confidence:.2f}", style="bold")
        explanation = (Text(printable(f"“{p.explanation}”"), style="italic") if p.explanation
                       else Text("(no explanation yet: e writes one)", style="dim italic"))
        return Indented(Part(title, 2, mark(self.decisions[index])),
                        Part(Text(printable(" · ".join(p.reasons)), style="dim"), 4),
                        Part(explanation, 4))

    def _counts(self, accepted: int, rejected: int) -> str:
        # One line at 80 columns; the hint says that only accepted links are written.
        return (f"{len(self.proposals)} proposed · {accepted} accepted · {rejected} rejected · "
                f"{len(self.proposals) - accepted - rejected} undecided")

    def _refuse_accept(self, index: int) -> bool:
        if self.proposals[index].explanation.strip():
            return False
        self.notify(NO_EXPLANATION, severity="warning", markup=False)
        return True

    # -- editing an explanation --------------------------------------------------------------------
    def _open_editor(self, index: int) -> tuple[str, str]:
        field = self.query_one("#links-edit", Input)
        field.value = printable(self.proposals[index].explanation)  # the model's draft: an Input draws controls raw
        field.display = True
        field.focus()
        return printable(f"Explain the link to “{self.proposals[index].target_title}”"), self.EDIT_HINT

    def _close_editor(self) -> None:
        self.query_one("#links-edit").display = False

    def _edited(self, index: int):
        text = " ".join(self.query_one("#links-edit", Input).value.split())
        if not text:
            self.notify(NO_EXPLANATION.replace("press e to write one", "write one, or escape to drop the edit"),
                        severity="warning", markup=False)
            return None
        return replace(self.proposals[index], explanation=text)

    @on(Input.Submitted, "#links-edit")
    def _edit_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.state == "editing":
            self._keep_edit()

    # -- writing -----------------------------------------------------------------------------------
    def write(self, accepted: list) -> list:
        from core.assist import integrate

        with self.services.store() as store:
            return integrate.apply(store, self.node_id, accepted)

    def _announce(self, edges: list) -> None:
        titles = {p.target_id: p.target_title for p in self.proposals}
        names = ", ".join(f"“{titles.get(e['to_node_id'], e['to_node_id'])}”" for e in edges)
        count = len(edges)
        self.app.notify(printable(f"Linked “{self.node_title}” to {count} node{'s' if count != 1 else ''}: {names}."),
                        markup=False, timeout=8)
