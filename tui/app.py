"""The Textual app. A placeholder until the TUI issue: it opens the database and says what is there."""

from __future__ import annotations

from pathlib import Path


def run_app(db: Path) -> int:
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Header, Static

    from core.store import Store

    class CairnApp(App):
        CSS_PATH = str(Path(__file__).resolve().parent.parent / "styles" / "app.tcss")
        TITLE = "Cairn"
        BINDINGS = [("ctrl+q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Header()
            with Store(db) as store:
                counts = store.counts()
            yield Static(
                f"Database: {db}\n\n{counts['nodes']} nodes, {counts['edges']} edges, "
                f"{counts['chunks']} chunks, {counts['pending']} pending.\n\n"
                "The full interface (node browser, Focus tabs, chat) is not built yet: this screen is a "
                "placeholder. Use the command line meanwhile: cairn --help",
                id="placeholder",
            )
            yield Footer()

    CairnApp().run()
    return 0
