"""Quick capture modal (ctrl+n). CONTRACT: QuickCapture(services); on save posts NodesChanged((id,))
to the app and dismisses."""

from textual.screen import ModalScreen
from textual.widgets import Static


class QuickCapture(ModalScreen):
    BINDINGS = [("escape", "dismiss", "Close")]

    def __init__(self, services):
        super().__init__()
        self.services = services

    def compose(self):
        yield Static("(quick capture: not built yet)")
