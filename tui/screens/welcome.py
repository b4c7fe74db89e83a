"""First run on an empty database. CONTRACT: WelcomeScreen(services); load or skip the Getting
started graph; after loading, posts NodesChanged to the app."""

from textual.screen import ModalScreen
from textual.widgets import Static


class WelcomeScreen(ModalScreen):
    BINDINGS = [("escape", "dismiss", "Close")]

    def __init__(self, services):
        super().__init__()
        self.services = services

    def compose(self):
        yield Static("(welcome: not built yet)")
