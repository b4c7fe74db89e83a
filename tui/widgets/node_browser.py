"""Nodes pane (left). CONTRACT (used by tui/app.py):
- NodeBrowser(services, id=..., classes=...)
- focus_search(): focus the search box.
- reload(): re-run the current query/sort/filter (nodes changed).
- posts tui.messages.OpenNode(node_id) when the user presses enter on a node.
"""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import Input, Static

from tui.services import Services


class NodeBrowser(Vertical):
    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services

    def compose(self):
        yield Input(placeholder="/ search nodes", id="node-search")
        yield Static("(node list: not built yet)", id="node-list")

    def focus_search(self) -> None:
        self.query_one("#node-search", Input).focus()

    def focus_default(self) -> None:
        self.focus_search()

    def reload(self) -> None:
        pass
