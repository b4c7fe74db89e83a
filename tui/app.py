"""The Textual app. A placeholder until the TUI issue: it opens the database and says what is there."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Static

from core.store import Store

STYLES = Path(__file__).resolve().parent.parent / "styles"


class CairnApp(App):
    CSS_PATH = str(STYLES / "app.tcss")
    TITLE = "Cairn"
    BINDINGS = [("ctrl+q", "quit", "Quit")]

    def __init__(self, db: Path):
        super().__init__()
        self.db = Path(db)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="placeholder")
        yield Footer()

    def on_mount(self) -> None:
        with Store(self.db) as store:
            counts = store.counts()
        self.query_one("#placeholder", Static).update(
            f"Database: {self.db}\n\n{counts['nodes']} nodes, {counts['edges']} edges, "
            f"{counts['chunks']} chunks, {counts['pending']} pending.\n\n"
            "The full interface (node browser, Focus tabs, chat) is not built yet: this screen is a "
            "placeholder. Use the command line meanwhile: cairn --help"
        )


def run_app(db: Path) -> int:
    CairnApp(db).run()
    return 0
