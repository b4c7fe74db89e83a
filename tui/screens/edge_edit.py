"""Edit an edge's explanation (r in a Focus tab's edges list): one Input, prefilled.

Enter saves through Store.update_edge in a worker, escape cancels; an empty explanation, or an edge
deleted meanwhile, is refused inline and the modal stays open. Dismisses with the updated edge, or None.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from core.errors import InvalidInput, NotFound
from core.safe_text import printable
from tui.services import Services


class EdgeEditModal(ModalScreen[dict | None]):
    """Change the explanation of one edge."""

    DEFAULT_CSS = """
    EdgeEditModal {
        align: center middle;
    }
    EdgeEditModal > #edge-edit-dialog {
        width: 80;
        max-width: 96%;
        height: auto;
        max-height: 96%;
        padding: 0 1;
        border: thick $accent;
        background: $surface;
    }
    EdgeEditModal #edge-edit-heading {
        margin-bottom: 1;
    }
    EdgeEditModal #edge-edit-error {
        color: $error;
    }
    EdgeEditModal #edge-edit-buttons {
        height: auto;
        align-horizontal: right;
    }
    EdgeEditModal #edge-edit-buttons Button {
        margin-left: 2;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel_edge_edit")]

    @dataclass
    class Saved(Message):
        edge: dict

    @dataclass
    class Failed(Message):
        error: str

    def __init__(self, services: Services, edge: dict):
        super().__init__()
        self.services = services
        self.edge = edge
        self.busy = False

    def compose(self) -> ComposeResult:
        edge = self.edge
        with Vertical(id="edge-edit-dialog"):
            heading = Text("Edit the link ")
            heading.append(printable(str(edge.get("from_title") or edge["from_node_id"])), style="bold")
            heading.append(" → ")
            heading.append(printable(str(edge.get("to_title") or edge["to_node_id"])), style="bold")
            yield Static(heading, id="edge-edit-heading")
            yield Label("Why are they connected?")
            # escaped: an explanation can be the model's, and an Input draws control characters raw
            yield Input(printable(edge.get("explanation") or ""), id="edge-edit-explanation",
                        placeholder="e.g. “X was written by Y” (enter saves)")
            yield Static(id="edge-edit-error")
            with Horizontal(id="edge-edit-buttons"):
                yield Button("Save", id="edge-edit-save", variant="primary")
                yield Button("Cancel", id="edge-edit-cancel")
        yield Footer()  # covers the main screen's, whose Focus keys (r Edit link, x Delete link) do nothing here

    def on_mount(self) -> None:
        self.query_one("#edge-edit-error", Static).display = False
        self.query_one("#edge-edit-explanation", Input).focus()

    @on(Input.Submitted, "#edge-edit-explanation")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.confirm()

    @on(Button.Pressed, "#edge-edit-save")
    def _save_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.confirm()

    @on(Button.Pressed, "#edge-edit-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def confirm(self) -> None:
        if self.busy:
            return
        explanation = self.query_one("#edge-edit-explanation", Input).value.strip()
        if not explanation:
            self._error("Say in a few words why these two nodes are connected (or escape to keep it as it was).")
            return
        self.busy = True
        self.save(explanation)

    @work(thread=True, exclusive=True, group="edge-edit", exit_on_error=False)
    def save(self, explanation: str) -> None:
        try:
            with self.services.store() as store:
                edge = store.update_edge(self.edge["id"], explanation=explanation)
        except NotFound:
            self.post_message(self.Failed("This link no longer exists (deleted elsewhere); escape closes."))
            return
        except InvalidInput as exc:
            self.post_message(self.Failed(str(exc)))
            return
        except Exception as exc:
            self.post_message(self.Failed(f"Could not save the link: {exc}"))
            return
        self.post_message(self.Saved(edge))

    @on(Saved)
    def _saved(self, message: Saved) -> None:
        self.dismiss({**self.edge, **message.edge})

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self.busy = False
        self._error(message.error)

    def _error(self, message: str) -> None:
        error = self.query_one("#edge-edit-error", Static)
        error.update(Text(printable(message)))
        error.display = True

    def action_cancel(self) -> None:
        self.dismiss(None)
