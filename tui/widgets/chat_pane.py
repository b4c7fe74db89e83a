"""Chat pane (right). CONTRACT (used by tui/app.py):
- ChatPane(services, id=...)
- focus_input(); set_focus(focus: core.context.Focus) (the open tabs, for the next request's suffix).
"""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import Static, TextArea

from tui.services import Services


class ChatPane(Vertical):
    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services

    def compose(self):
        yield Static("(chat: not built yet)")
        yield TextArea(id="chat-input")

    def focus_input(self) -> None:
        self.query_one("#chat-input", TextArea).focus()

    def focus_default(self) -> None:
        self.focus_input()

    def set_focus(self, focus) -> None:
        pass
