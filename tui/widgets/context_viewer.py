"""Settings / Context viewer (toggled over the chat with f2). CONTRACT (used by tui/app.py):
- ContextViewer(services, id=...); set_focus(focus: core.context.Focus): re-render at once.
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.services import Services


class ContextViewer(VerticalScroll):
    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services

    def compose(self):
        yield Static("(context viewer: not built yet)")

    def set_focus(self, focus) -> None:
        pass
