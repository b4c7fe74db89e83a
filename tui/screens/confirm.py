"""A yes/no question as a small modal: `push_screen(ConfirmScreen(question), callback)` → callback(bool).

`y` or the Yes button answers True; `n`, escape or the No button answers False. The question is shown
as plain text (node titles in it are never read as markup).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from core.safe_text import printable


class ConfirmScreen(ModalScreen[bool]):
    """Ask one yes/no question; dismiss with the answer."""

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
    }
    ConfirmScreen > #confirm-dialog {
        width: 60;
        max-width: 95%;
        height: auto;
        max-height: 90%;
        padding: 1 2;
        border: thick $warning;
        background: $surface;
    }
    ConfirmScreen #confirm-question {
        width: 1fr;
        margin-bottom: 1;
    }
    ConfirmScreen > #confirm-dialog.-with-detail {
        width: 90;
    }
    ConfirmScreen #confirm-detail {
        height: auto;
        max-height: 40vh;
        margin-bottom: 1;
        background: $panel;
    }
    ConfirmScreen #confirm-buttons {
        height: auto;
        align-horizontal: right;
    }
    ConfirmScreen #confirm-buttons Button {
        margin-left: 2;
    }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm_yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm_no"),
    ]

    def __init__(self, question: str, *, yes: str = "Yes", no: str = "No", default: bool = False,
                 detail: str | None = None):
        """`detail`: text shown whole below the question, in a box that scrolls (a long web address)."""
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes_label = yes
        self.no_label = no
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="-with-detail" if self.detail is not None else ""):
            yield Static(Text(printable(self.question)), id="confirm-question")
            if self.detail is not None:
                with VerticalScroll(id="confirm-detail"):
                    yield Static(Text(printable(self.detail), overflow="fold"))
            with Horizontal(id="confirm-buttons"):
                yield Button(Text(self.yes_label), id="confirm-yes", variant="warning")
                yield Button(Text(self.no_label), id="confirm-no")
        yield Footer()  # its own keys (y Yes, n No), not the main screen's, which do nothing here

    def on_mount(self) -> None:
        self.query_one("#confirm-yes" if self.default else "#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(bool(answer))
