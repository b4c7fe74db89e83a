"""F1 help for the focused pane. CONTRACT: HelpScreen(focused_widget)."""

from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen):
    BINDINGS = [("escape", "dismiss", "Close")]

    def __init__(self, focused=None):
        super().__init__()
        self.focused_widget = focused

    def compose(self):
        yield Static("(help: not built yet)")
