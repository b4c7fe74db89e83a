"""Review what the model proposes to keep from a chat: `push_screen(DistilReviewScreen(services, chat_id),
callback)` → callback(core.assist.distil.Applied or None).

The model call runs in a worker (the dialog says "distilling…"; escape leaves and writes nothing).
Proposals are listed by kind, each with its source message; the highlighted one's detail (an update's
diff, an addition's text, a retirement's reason) shows below. Nothing is accepted until the user says
so: `a` accepts, `r` rejects, `e` edits (an addition's title and text, an update's new text),
enter or ctrl+s applies the accepted ones in one transaction. The keys, the workers and the list are
tui/screens/review.py's; this module says how proposals are made, shown, edited and applied. Note text
is shown as plain text, never as markup.
"""

from __future__ import annotations

import threading
from typing import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, Static, TextArea

from core.chat.cost import SpendGuard
from core.errors import CairnError
from core.safe_text import printable
from tui.screens.review import Found, Indented, Part, ReviewScreen, default_provider, mark, review_bindings
from tui.services import Services

NEEDS_MODEL_IN_APP = ("Distilling a chat needs a model provider; Cairn is offline. Pick one in the settings: f2, "
                      "Provider (anthropic or openai, with $ANTHROPIC_API_KEY / $OPENAI_API_KEY set), then ctrl+t "
                      "again; 'Save as defaults' keeps it.")

HEADINGS = {"addition": "Additions — new nodes", "update": "Updates — changes to existing nodes",
            "retirement": "Retirements — marked retired, not deleted"}


class DistilReviewScreen(ReviewScreen):
    BINDINGS = review_bindings("distil")
    PREFIX = "distil"
    WORKING = "distilling"
    # The detail scrolls when it has the keyboard (tab); a, r and e still act on the highlighted row.
    HINT = "enter applies the accepted · tab: the detail · escape writes nothing"
    EXTRA_HIDDEN = ("#distil-detail-scroll", "#distil-edit-title", "#distil-editor")
    NOTHING_FOUND = "The model proposed nothing to keep from this chat. Escape closes."
    FIND_FAILED = "Distilling failed"
    APPLY_FAILED = "Applying failed"

    def __init__(self, services: Services, chat_id: int, *, make_provider: Callable | None = None):
        super().__init__(services, make_provider=make_provider)
        self.chat_id = chat_id

    # -- layout ------------------------------------------------------------------------------------
    def _title(self) -> Text:
        title = Text(f"Distil chat #{self.chat_id} into notes")
        if self.usage:
            title.append(f"  ·  tokens in {self.usage.get('input', 0):,} out {self.usage.get('output', 0):,}",
                         style="not bold dim")
        return title

    def compose_editor(self) -> ComposeResult:
        with VerticalScroll(id="distil-detail-scroll"):
            yield Static(id="distil-detail")
        yield Input(id="distil-edit-title", placeholder="Title")
        yield TextArea(id="distil-editor", soft_wrap=True, show_line_numbers=False, tab_behavior="focus")

    def _working_status(self) -> str:
        return "distilling… the model is reading the chat (escape cancels; nothing is written)"

    def _show_list(self) -> None:
        self.query_one("#distil-proposals").display = True
        self.query_one("#distil-detail-scroll").display = True

    # -- the model call ----------------------------------------------------------------------------
    def find(self, cancel: threading.Event) -> Found:
        from core.assist import distil
        from core.search.searcher import Searcher
        from core.graph.store import Store

        cfg = self.services.config
        provider = (self.make_provider or default_provider)(cfg)
        # A store of its own: this worker's SQLite connection belongs to this thread.
        with Store(self.services.db_path) as store:
            try:
                result = distil.propose(store, self.chat_id, provider, never_send=cfg.privacy.never_send,
                                        searcher=Searcher(store), cancel=cancel,
                                        guard=SpendGuard(store, cfg, self.chat_id))
            except distil.DistilError as exc:
                if str(exc) == distil.NEEDS_MODEL:  # the core text names CLI commands; here f2 is nearer
                    raise distil.DistilError(NEEDS_MODEL_IN_APP) from exc
                raise
        return Found(list(result.proposals), list(result.warnings), dict(result.usage))

    # -- the list ----------------------------------------------------------------------------------
    def _heading(self, index: int) -> str | None:
        kind = self.proposals[index].kind
        if index == 0 or self.proposals[index - 1].kind != kind:
            return HEADINGS[kind]
        return None

    def _label(self, index: int) -> Indented:
        p = self.proposals[index]
        label = Text()
        if p.kind == "addition":
            label.append(printable(p.title), style="bold")
            if p.dimensions:
                label.append(printable("  #" + " #".join(p.dimensions)), style="dim")
        else:
            label.append(f"node {p.node_id} ")
            label.append(printable(p.title), style="bold")
            if p.kind == "update":
                label.append(f"  ({', '.join(sorted(p.changes))})", style="dim")
        # One line, cut with an ellipsis: the whole message is in the detail below the list.
        excerpt = " ".join(p.excerpt[:120].split())
        source = Text(printable(f"from message {p.source_message_id}: “{excerpt}”"), style="dim italic")
        return Indented(Part(label, 2, mark(self.decisions[index])), Part(source, 4, wrap=False))

    def _counts(self, accepted: int, rejected: int) -> str:
        # One line at 80 columns (the token usage is in the title; the hint says only accepted ones apply).
        return (f"{len(self.proposals)} proposals · {accepted} accepted · {rejected} rejected · "
                f"{len(self.proposals) - accepted - rejected} undecided")

    def _show_detail(self, index: int) -> None:
        self.query_one("#distil-detail", Static).update(self._detail(index))

    def _detail(self, index: int) -> Indented:
        """The highlighted proposal in full. A diff line that wraps goes on right of its +/- column."""
        p = self.proposals[index]
        parts: list[Part] = []
        out = Text()
        if p.kind == "addition":
            out.append("New node: ", style="bold")
            out.append(printable(p.title))
            if p.description:
                out.append("\n" + printable(p.description), style="italic")
            if p.dimensions:
                out.append("\n" + printable("#" + " #".join(p.dimensions)), style="dim")
            out.append("\n\n" + printable(p.source or "(no text)").rstrip("\n"))
        elif p.kind == "update":
            if p.reason:
                out.append("Why: ", style="bold")
                out.append(printable(p.reason))
                parts.append(Part(out))
            out = Text()
            for line in p.diff.splitlines():
                if line.startswith(("---", "+++")):
                    continue  # "node N field (now)/(proposed)": the row above names the node and field
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
                if line[:1] in ("+", "-", " "):
                    parts.append(Part(Text(printable(line[1:]), style=style), 1, Text(line[:1], style=style)))
                else:
                    parts.append(Part(Text(printable(line), style=style)))
        else:
            out.append(f"Retire node {p.node_id}: ", style="bold")
            out.append(printable(p.title) + "\n")
            out.append("Superseded: ", style="bold")
            out.append(printable(p.reason) + "\n")
            out.append("The node is kept with its text and links, marked with the dimension 'retired'.", style="dim")
        out.append(("\n" if out else "") + f"\nFrom message {p.source_message_id}: ", style="dim")
        out.append(printable(f"“{p.excerpt}”"), style="dim italic")
        parts.append(Part(out))
        return Indented(*parts)

    # -- editing -----------------------------------------------------------------------------------
    def _open_editor(self, index: int) -> tuple[str, str] | None:
        p = self.proposals[index]
        if p.kind == "retirement":
            self.notify("A retirement has no text to edit: accept or reject it.", severity="warning")
            return None
        title = self.query_one("#distil-edit-title", Input)
        editor = self.query_one("#distil-editor", TextArea)
        title.display = p.kind == "addition"
        # The model's text, escaped: an Input or a TextArea draws control characters raw (core/safe_text.py).
        title.value = printable(p.title) if p.kind == "addition" else ""
        editor.text = printable(p.source if p.kind == "addition" else p.changes.get(p.edit_field, ""))
        editor.display = True
        self.query_one("#distil-proposals").display = False
        self.query_one("#distil-detail-scroll").display = False
        (title if p.kind == "addition" else editor).focus()
        what = "the new note's title and text" if p.kind == "addition" else f"the node's new {p.edit_field}"
        return f"Editing {what}", self.EDIT_HINT

    def _close_editor(self) -> None:
        self.query_one("#distil-edit-title").display = False
        self.query_one("#distil-editor").display = False

    def _edited(self, index: int):
        p = self.proposals[index]
        editor = self.query_one("#distil-editor", TextArea)
        try:
            if p.kind == "addition":
                return p.edited(title=self.query_one("#distil-edit-title", Input).value, text=editor.text)
            return p.edited(text=editor.text)
        except CairnError as exc:
            self.notify(printable(str(exc)), severity="error", markup=False)
            return None

    @on(Input.Submitted, "#distil-edit-title")
    def _title_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#distil-editor", TextArea).focus()

    # -- applying ----------------------------------------------------------------------------------
    def write(self, accepted: list):
        from core.assist import distil

        with self.services.store() as store:
            return distil.apply(store, self.chat_id, accepted)

    def _announce(self, applied) -> None:
        self.notify(f"Distilled chat #{self.chat_id}: {applied.summary()}.", markup=False, timeout=8)
