"""The mechanics shared by the review dialogs (distil_review.py, link_review.py): a worker produces
proposals while the dialog says so (escape then stops it and writes nothing), the proposals are listed
as rows of one OptionList, and nothing is written until the user says so: `a` accepts, `r` rejects,
`e` edits the highlighted one (ctrl+s keeps the edit and accepts it, escape drops it), enter or ctrl+s
applies the accepted ones in a second worker (one transaction), escape cancels.

A subclass says only what differs: how proposals are found (`find`, in a worker thread), how a row
reads (`_label`), how one is edited (`_open_editor`, `_close_editor`, `_edited`), how the accepted ones
are written (`write`, in a worker thread) and announced (`_announce`). Widget ids are `<PREFIX>-status`,
`<PREFIX>-warnings`, `<PREFIX>-warnings-text`, `<PREFIX>-proposals`, `<PREFIX>-hint`; binding ids are
`<PREFIX>_accept` … `<PREFIX>_cancel`, `<PREFIX>_keep_edit`, `<PREFIX>_drop_edit`. Note text is shown as
plain text, never as markup.

The dialog has a Footer of its own: under a modal the main screen's footer would go on offering the
main screen's keys (`e Edit` meant the node, not the proposal), so the dialog's footer covers it and
shows only the keys that act in the dialog's current state (while editing: keep / drop the edit).
A proposal's row is an `Indented` visual: its wrapped lines stay under their own text at any width.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.css.styles import RulesMap
from textual.message import Message
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from core.errors import CairnError
from core.safe_text import printable
from tui.services import Services
from tui.typed_keys import typed_keys_handled

MARKS = {"accepted": ("✓ ", "bold green"), "rejected": ("✗ ", "red"), None: ("· ", "dim")}


def mark(decision: str | None) -> Text:
    """The start of a proposal's row: ✓ accepted, ✗ rejected, · undecided."""
    text, style = MARKS[decision]
    return Text(text, style=style)


@dataclass(frozen=True)
class Part:
    """One piece of an `Indented` row: `text` starts `indent` columns in, and so does every line it
    wraps onto; `lead` (a mark) fills the indent of its first line. `wrap=False` keeps it to one line,
    cut with an ellipsis."""

    text: Text
    indent: int = 0
    lead: Text | None = None
    wrap: bool = True


class Indented(Visual):
    """Rows of text with hanging indents (a Rich Text wraps its continuation lines to column 0, which
    at 80 columns put a proposal's reasons under its title's mark). `str()` gives the plain text."""

    def __init__(self, *parts: Part):
        self.parts = parts
        # An empty part still takes its line (a blank Content would measure and draw differently).
        self._content = [(Content.from_rich_text(p.text) or Content(" "),
                          Content.from_rich_text(p.lead) if p.lead is not None else None) for p in parts]

    def __str__(self) -> str:
        return "\n".join((p.lead.plain if p.lead is not None else "").ljust(p.indent) + p.text.plain
                         for p in self.parts)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return max((p.indent + c.get_optimal_width(rules, container_width - p.indent)
                    for p, (c, _) in zip(self.parts, self._content)), default=0)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return sum(c.get_height(rules, max(1, width - p.indent)) if p.wrap else 1
                   for p, (c, _) in zip(self.parts, self._content))

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        strips: list[Strip] = []
        blank_style = style.rich_style
        for part, (content, lead) in zip(self.parts, self._content):
            room = max(1, width - part.indent)
            if not part.wrap:
                content = content.split("\n")[0].truncate(room, ellipsis=True)
            lines = content.render_strips(room, None, style, options)
            for n, line in enumerate(lines if part.wrap else lines[:1]):
                gutter = Strip.blank(part.indent, blank_style)
                if n == 0 and lead is not None and part.indent:
                    drawn = lead.truncate(part.indent).render_strips(part.indent, 1, style, options)
                    if drawn:
                        gutter = drawn[0].extend_cell_length(part.indent, blank_style)
                strips.append(Strip.join([gutter, line]) if part.indent else line)
        return strips if height is None else strips[:height]


def review_bindings(prefix: str) -> list[Binding]:
    """The dialog's keys, with binding ids of its own (`<prefix>_accept` …) for keymaps. ctrl+s and
    escape each have two bindings, one for the list and one for the editor, so the footer names what
    the key does now; `check_action` enables one of each pair."""
    return [
        Binding("a", "accept", "Accept", id=f"{prefix}_accept"),
        Binding("r", "reject", "Reject", id=f"{prefix}_reject"),
        Binding("e", "edit", "Edit", id=f"{prefix}_edit"),
        Binding("ctrl+s", "keep_edit", "Keep the edit", id=f"{prefix}_keep_edit", priority=True),
        Binding("ctrl+s", "save_or_apply", "Apply accepted", id=f"{prefix}_apply", priority=True),
        Binding("escape", "drop_edit", "Drop the edit", id=f"{prefix}_drop_edit"),
        Binding("escape", "close", "Cancel", id=f"{prefix}_cancel"),
    ]


@dataclass
class Found:
    """What `find` returns: the proposals, warnings to show above them, and the model's token usage."""

    proposals: list
    warnings: list[str] = field(default_factory=list)
    usage: dict = field(default_factory=dict)


@dataclass
class _Found(Message, bubble=False):
    found: Found


@dataclass
class _Failed(Message, bubble=False):
    error: str
    applying: bool


@dataclass
class _Applied(Message, bubble=False):
    result: object


class ReviewScreen(ModalScreen):
    CSS_PATH = str(Path(__file__).resolve().parent.parent.parent / "styles" / "review.tcss")

    PREFIX = "review"
    WORKING = "finding"  # the state (and the word) while `find` runs
    # One line at 80 columns: the keys themselves are in the dialog's footer.
    HINT = "enter or ctrl+s applies the accepted proposals · escape writes nothing"
    EDIT_HINT = "ctrl+s keeps the edit (and accepts it) · escape drops it"
    EXTRA_HIDDEN: tuple[str, ...] = ()  # the subclass's own widgets hidden until they are needed
    NOTHING_FOUND = "Nothing was found. Escape closes."
    FIND_FAILED = "Finding failed"
    APPLY_FAILED = "Applying failed"
    APPLY_FAILED_KEPT = " Your choices are kept."
    ITEM = "proposal"  # "press a on the proposals to keep", "applying 2 proposals…"
    APPLYING = "applying"

    def __init__(self, services: Services, *, make_provider: Callable | None = None):
        super().__init__()
        self.services = services
        self.make_provider = make_provider
        self.proposals: list = []
        self.decisions: list[str | None] = []
        self.warnings: list[str] = []
        self.usage: dict = {}
        self.state = self.WORKING  # WORKING | review | editing | applying | failed
        self._rows: list[int | None] = []  # option index → proposal index (None: a heading)
        self._editing: int | None = None
        self._cancel = threading.Event()

    # -- what a subclass says ----------------------------------------------------------------------
    def _title(self) -> Text:
        raise NotImplementedError

    def compose_editor(self) -> ComposeResult:
        """The subclass's widgets between the list and the hint (an editor, a detail view)."""
        yield from ()

    def _working_status(self) -> str:
        raise NotImplementedError

    def _working_hint(self) -> str:
        return ""

    def find(self, cancel: threading.Event) -> Found:
        """Runs in a worker thread: the proposals (CairnError → the dialog shows it)."""
        raise NotImplementedError

    def _nothing_found(self) -> str:
        return self.NOTHING_FOUND

    def _label(self, index: int) -> Text:
        raise NotImplementedError

    def _heading(self, index: int) -> str | None:
        """A heading to put above proposal `index` (a disabled row), or None."""
        return None

    def _counts(self, accepted: int, rejected: int) -> str:
        raise NotImplementedError

    def _refuse_accept(self, index: int) -> bool:
        """True (having told the user why) when proposal `index` cannot be accepted as it is."""
        return False

    def _open_editor(self, index: int) -> tuple[str, str] | None:
        """Show and focus the editor for proposal `index`; the status and hint to show, or None (refused)."""
        raise NotImplementedError

    def _close_editor(self) -> None:
        raise NotImplementedError

    def _edited(self, index: int):
        """The proposal as edited, or None (having told the user why the edit is not kept)."""
        raise NotImplementedError

    def _show_detail(self, index: int) -> None:
        """Show more of the highlighted proposal, where the dialog has room for it."""

    def write(self, accepted: list):
        """Runs in a worker thread: write the accepted proposals in one transaction; the result."""
        raise NotImplementedError

    def _announce(self, result) -> None:
        raise NotImplementedError

    # -- layout ------------------------------------------------------------------------------------
    def _sel(self, name: str) -> str:
        return f"#{self.PREFIX}-{name}"

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.PREFIX}-dialog", classes="dialog"):
            yield Static(self._title(), classes="dialog-title")
            yield Static(id=f"{self.PREFIX}-status")
            with VerticalScroll(id=f"{self.PREFIX}-warnings"):
                yield Static(id=f"{self.PREFIX}-warnings-text")
            yield OptionList(id=f"{self.PREFIX}-proposals")
            yield from self.compose_editor()
            yield Static(id=f"{self.PREFIX}-hint", classes="help-note")
        yield Footer()

    def on_mount(self) -> None:
        for selector in (self._sel("warnings"), self._sel("proposals"), *self.EXTRA_HIDDEN):
            self.query_one(selector).display = False
        self._status(self._working_status())
        self._hint(self._working_hint())
        self._find(self._cancel)

    def _status(self, text: str, style: str = "") -> None:
        self.query_one(self._sel("status"), Static).update(Text(printable(text), style=style))

    def _hint(self, text: str) -> None:
        self.query_one(self._sel("hint"), Static).update(Text(text))

    def _options(self) -> OptionList:
        return self.query_one(self._sel("proposals"), OptionList)

    # -- finding -----------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="review-find", exit_on_error=False)
    def _find(self, cancel: threading.Event) -> None:
        try:
            found = self.find(cancel)
        except CairnError as exc:
            self.post_message(_Failed(str(exc), applying=False))
            return
        except Exception as exc:  # shown, never swallowed: the dialog stays open with the error
            self.post_message(_Failed(f"{self.FIND_FAILED}: {type(exc).__name__}: {exc}", applying=False))
            return
        self.post_message(_Found(found))

    @on(_Found)
    def _found(self, message: _Found) -> None:
        if self._cancel.is_set():
            return
        found = message.found
        self.proposals = list(found.proposals)
        self.decisions = [None] * len(self.proposals)
        self.warnings = list(found.warnings)
        self.usage = dict(found.usage)
        self.state = "review"
        self.query_one(".dialog-title", Static).update(self._title())  # it may name the usage now
        if self.warnings:
            # In the dialog (they explain what is missing from the list), not a pile of toasts.
            self.query_one(self._sel("warnings-text"), Static).update(
                Indented(*(Part(Text(printable(w)), 2, Text("⚠")) for w in self.warnings)))
            self.query_one(self._sel("warnings")).display = True
        if not self.proposals:
            self._status(self._nothing_found())
            self._hint("escape close")
            self.refresh_bindings()
            return
        self._fill()
        options = self._options()
        options.display = True
        self._show_list()
        options.highlighted = self._rows.index(0)
        options.focus()
        self._show_counts()
        self._hint(self.HINT)
        self.refresh_bindings()

    def _show_list(self) -> None:
        """Show the subclass's widgets that go with the list (after finding, after an edit)."""

    @on(_Failed)
    def _failed(self, message: _Failed) -> None:
        # A failure to find proposals is said once, in the dialog's status line (a toast as well covered
        # the dialog at 80x24); a failed apply is also a toast, since the list stays on screen.
        if message.applying:
            self.notify(printable(message.error), severity="error", markup=False, timeout=12)
            self.state = "review"
            self._status(message.error + self.APPLY_FAILED_KEPT, style="bold")
        else:
            self.state = "failed"
            self._status(message.error, style="bold")
            self._hint("escape close")
        self.refresh_bindings()

    # -- the list ----------------------------------------------------------------------------------
    def _fill(self) -> None:
        options = self._options()
        options.clear_options()
        self._rows = []
        rows: list[Option] = []
        for i in range(len(self.proposals)):
            heading = self._heading(i)
            if heading is not None:
                rows.append(Option(Text(heading, style="bold underline"), disabled=True))
                self._rows.append(None)
            rows.append(Option(self._label(i)))
            self._rows.append(i)
        options.add_options(rows)

    def _current(self) -> int | None:
        options = self._options()
        if options.highlighted is None or options.highlighted >= len(self._rows):
            return None
        return self._rows[options.highlighted]

    def _show_counts(self) -> None:
        self._status(self._counts(self.decisions.count("accepted"), self.decisions.count("rejected")))

    def _relabel(self, index: int) -> None:
        self._options().replace_option_prompt_at_index(self._rows.index(index), self._label(index))

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        index = self._current()
        if index is not None:
            self._show_detail(index)

    def _decide(self, decision: str) -> None:
        index = self._current()
        if index is None:
            return
        if decision == "accepted" and self._refuse_accept(index):
            return
        self.decisions[index] = decision
        self._relabel(index)
        self._show_counts()
        row = self._rows.index(index)
        later = [r for r in range(row + 1, len(self._rows)) if self._rows[r] is not None]
        if later:
            self._options().highlighted = later[0]

    # -- actions -----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # False hides the key from the dialog's footer (and lets a key's other binding act).
        if action in ("accept", "reject", "edit"):
            return self.state == "review" and bool(self.proposals)
        if action == "save_or_apply":
            return self.state == "review" and bool(self.proposals)
        if action in ("keep_edit", "drop_edit"):
            return self.state == "editing"
        if action == "close":  # while applying, one transaction runs: it lands whole or not at all
            return self.state not in ("editing", "applying")
        return True

    def action_accept(self) -> None:
        self._decide("accepted")

    def action_reject(self) -> None:
        self._decide("rejected")

    def action_edit(self) -> None:
        index = self._current()
        if index is None:
            return
        opened = self._open_editor(index)
        if opened is None:
            return
        self._editing = index
        self.state = "editing"
        status, hint = opened
        self._status(status)
        self._hint(hint)
        self.refresh_bindings()

    def _end_edit(self) -> None:
        index = self._editing
        self._editing = None
        self.state = "review"
        self._close_editor()
        self._show_list()
        options = self._options()
        options.focus()
        if index is not None:
            options.highlighted = self._rows.index(index)
        self._show_counts()
        self._hint(self.HINT)
        self.refresh_bindings()

    def _keep_edit(self) -> None:
        index = self._editing
        edited = self._edited(index)
        if edited is None:
            return
        self.proposals[index] = edited
        self.decisions[index] = "accepted"
        self._relabel(index)
        self._end_edit()
        self._show_detail(index)

    def action_save_or_apply(self) -> None:
        if self.state == "review":
            self.apply_accepted()

    async def action_keep_edit(self) -> None:
        if self.state == "editing":
            await typed_keys_handled(self)  # the letters typed before ctrl+s (tui/typed_keys.py)
            if self.state == "editing":
                self._keep_edit()

    def action_drop_edit(self) -> None:
        if self.state == "editing":
            self._end_edit()

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.state == "review":
            self.apply_accepted()

    def apply_accepted(self) -> None:
        accepted = [p for p, d in zip(self.proposals, self.decisions) if d == "accepted"]
        if not accepted:
            self.notify(f"Nothing accepted yet: press a on the {self.ITEM}s to keep (or escape to close; nothing "
                        "is written).", severity="warning")
            return
        self.state = "applying"
        self._status(f"{self.APPLYING} {len(accepted)} {self.ITEM}{'s' if len(accepted) != 1 else ''}…")
        self.refresh_bindings()
        self._apply(accepted)

    @work(thread=True, exclusive=True, group="review-apply", exit_on_error=False)
    def _apply(self, accepted: list) -> None:
        try:
            result = self.write(accepted)
        except CairnError as exc:
            self.post_message(_Failed(str(exc), applying=True))
            return
        except Exception as exc:
            self.post_message(_Failed(f"{self.APPLY_FAILED}: {type(exc).__name__}: {exc}; nothing was written.",
                                      applying=True))
            return
        self.post_message(_Applied(result))

    @on(_Applied)
    def _applied(self, message: _Applied) -> None:
        self._announce(message.result)
        self.dismiss(message.result)

    def action_close(self) -> None:
        if self.state == "editing":
            self._end_edit()
            return
        if self.state == "applying":
            return  # one transaction is running: it lands whole or not at all; wait for it
        self._cancel.set()
        self.dismiss(None)


def default_provider(config):
    from core.providers.factory import make_provider

    return make_provider(config)
