"""First run on an empty database. CONTRACT: WelcomeScreen(services); load or skip the Getting
started graph; after loading, posts NodesChanged to the app.

`g` (or the first button) loads the guide in a worker (`core.graph.getting_started.load`), posts
NodesChanged with the new ids, opens the "Welcome to Cairn" node and dismisses with the ids;
`escape` / `s` (or the second button) dismisses with None and leaves the database empty.
"""

from __future__ import annotations

from textual import on, work
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Markdown, Static

from tui.messages import NodesChanged, OpenNode

WELCOME = """\
**Cairn** keeps what you know as a graph: **nodes** (notes, papers, people, ideas) joined by
**edges** that say in words why two things connect. It searches them by words and by meaning, and
its chat answers from your notes, with a model or fully offline.

- `ctrl+n` capture a note from anywhere · `/` search nodes
- `enter` open a node in a Focus tab · `ctrl+l` chat · `F2` what the chat will send
- `F3` next pane (small terminals show one at a time) · `F1` keys of this pane

Your database is empty. Load a small **Getting started** graph (a dozen notes about Cairn itself,
linked by explained edges) to explore, or start from a blank page.
"""


class WelcomeScreen(ModalScreen[list[int] | None]):
    BINDINGS = [
        Binding("g", "load", "Load the guide", id="welcome_load"),
        Binding("s,escape", "skip", "Skip", id="welcome_skip"),
    ]

    class Loaded(Message):
        def __init__(self, node_ids: list[int]) -> None:
            super().__init__()
            self.node_ids = node_ids

    class LoadFailed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, services):
        super().__init__()
        self.services = services
        self._loading = False

    def compose(self):
        with Vertical(id="welcome") as box:
            box.border_title = "Welcome to Cairn"
            yield Markdown(WELCOME, id="welcome-text")
            with Horizontal(id="welcome-buttons"):
                yield Button("Load Getting started (g)", id="welcome-load", variant="primary")
                yield Button("Skip (s)", id="welcome-skip")
            yield Static("", id="welcome-status")

    def on_mount(self) -> None:
        self.query_one("#welcome-load", Button).focus()

    @on(Button.Pressed, "#welcome-load")
    def action_load(self) -> None:
        if self._loading:
            return
        self._loading = True
        self.query_one("#welcome-status", Static).update(Content("Loading the guide…"))
        self._load()

    @on(Button.Pressed, "#welcome-skip")
    def action_skip(self) -> None:
        if not self._loading:
            self.dismiss(None)

    @work(thread=True, exclusive=True, group="welcome", exit_on_error=False)
    def _load(self) -> None:
        from core.graph import getting_started

        try:
            with self.services.store() as store:
                ids = getting_started.load(store)
        except Exception as exc:  # e.g. a locked or read-only database: say so, stay open
            from core.errors import CairnError

            self.post_message(self.LoadFailed(str(exc) if isinstance(exc, CairnError) else f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Loaded(ids))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        message.stop()
        if message.node_ids:
            self.app.post_message(NodesChanged(tuple(message.node_ids)))
            self.app.post_message(OpenNode(message.node_ids[0]))
            self.app.notify("Getting started loaded: open a node with enter, follow its edges.", timeout=5)
        self.dismiss(message.node_ids)

    @on(LoadFailed)
    def _load_failed(self, message: LoadFailed) -> None:
        message.stop()
        from core.safe_text import printable

        self._loading = False
        self.query_one("#welcome-status", Static).update(
            Content.assemble(("⚠ Could not load the guide: ", "$error"), printable(message.error)))
