"""Focus pane (centre). CONTRACT (used by tui/app.py):
- FocusPanel(services, id=..., classes=...)
- open_node(node_id): open in a new tab or switch to its tab; posts tui.messages.FocusChanged(focus).
- reload(node_ids): refresh open tabs showing these nodes (empty tuple: all).
- posts FocusChanged whenever tabs open/close or the active tab changes.
"""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import Static

from tui.services import Services


class FocusPanel(Vertical):
    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services

    def compose(self):
        yield Static("(focus tabs: not built yet)")

    def open_node(self, node_id: int) -> None:
        pass

    def reload(self, node_ids=()) -> None:
        pass
