"""New edge (ctrl+e in the Focus panel): find the other node by fuzzy title, say why they connect, link.

Titles are read once in a worker; each keystroke ranks them in an exclusive worker (core.search.fuzzy), so
typing never waits on the list. Enter on a match picks it, enter on the explanation links. Dismisses
with the new edge's record, or None when cancelled; errors (a duplicate edge) show inline.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from core.search import fuzzy
from core.errors import InvalidInput, NotFound
from core.safe_text import printable
from tui.services import Services

MATCH_LIMIT = 50
# Rows the dialog needs besides the matches list (border, heading, finder, picked line, label,
# explanation, a one-line error, buttons) plus the screen's footer and the dialog's 96 % cap.
DIALOG_ROWS = 19
MATCHES_MAX_ROWS = 12  # ten matches and the list's border


class EdgeModal(ModalScreen[dict | None]):
    """Link `from_id` to a node picked by title, with an explanation."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="cancel_edge"),
        Binding("down", "move(1)", "Next match", show=False, id="edge_next_match"),
        Binding("up", "move(-1)", "Previous match", show=False, id="edge_prev_match"),
    ]

    @dataclass
    class TitlesLoaded(Message):
        titles: list

    @dataclass
    class Matches(Message):
        query: str
        rows: list

    @dataclass
    class Linked(Message):
        edge: dict

    @dataclass
    class Failed(Message):
        error: str

    def __init__(self, services: Services, from_id: int, from_title: str):
        super().__init__()
        self.services = services
        self.from_id = int(from_id)
        self.from_title = from_title
        self.titles: list[tuple[int, str]] | None = None
        self.picked: tuple[int, str] | None = None
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical(id="edge-dialog"):
            heading = Text("Link ")
            heading.append(printable(self.from_title), style="bold")
            heading.append(" to another node")
            yield Static(heading, id="edge-heading")
            yield Input(placeholder="Type to find a node by title", id="edge-find")
            yield OptionList(id="edge-matches")
            yield Static(Text("Pick a node: enter on a match."), id="edge-picked")
            yield Label("Why are they connected?", classes="edge-label")
            yield Input(placeholder="e.g. “X was written by Y” (enter links)", id="edge-explanation")
            yield Static(id="edge-error")
            with Horizontal(id="edge-buttons"):
                yield Button("Link", id="edge-link", variant="primary")
                yield Button("Cancel", id="edge-cancel")
        # Its own footer covers the main screen's, which went on offering the Focus keys (e Edit, r Edit
        # link, x Delete link) that do nothing here.
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#edge-error", Static).display = False
        self.query_one("#edge-matches", OptionList).loading = True
        self._fit_matches(self.app.size.height)
        self.query_one("#edge-find", Input).focus()
        self.load_titles()

    def on_resize(self, event: events.Resize) -> None:
        self._fit_matches(event.size.height)

    def _fit_matches(self, screen_height: int) -> None:
        """Let the matches list take only the rows the rest of the dialog leaves: at 80×24 a full list
        pushed the error line and the buttons off the screen (an empty explanation then said nothing)."""
        rows = max(3, min(MATCHES_MAX_ROWS, screen_height - DIALOG_ROWS))
        self.query_one("#edge-matches", OptionList).styles.max_height = rows

    # -- finding -------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="edge-titles", exit_on_error=False)
    def load_titles(self) -> None:
        try:
            with self.services.store() as store:
                titles = fuzzy.node_titles(store, exclude=(self.from_id,))
        except Exception as exc:
            self.post_message(self.Failed(f"Could not read the node titles: {exc}"))
            titles = []
        self.post_message(self.TitlesLoaded(titles))

    @on(TitlesLoaded)
    def _titles_loaded(self, message: TitlesLoaded) -> None:
        self.titles = message.titles
        self.query_one("#edge-matches", OptionList).loading = False
        self.match(self.query_one("#edge-find", Input).value)

    @on(Input.Changed, "#edge-find")
    def _query_changed(self, event: Input.Changed) -> None:
        if self.titles is not None:
            self.match(event.value)

    @work(thread=True, exclusive=True, group="edge-match", exit_on_error=False)
    def match(self, query: str) -> None:
        worker = get_current_worker()
        rows = fuzzy.rank_titles(query, self.titles or [], MATCH_LIMIT)
        if not worker.is_cancelled:
            self.post_message(self.Matches(query, rows))

    @on(Matches)
    def _show_matches(self, message: Matches) -> None:
        if message.query != self.query_one("#edge-find", Input).value:
            return  # an older keystroke's answer
        options = self.query_one("#edge-matches", OptionList)
        options.clear_options()
        options.add_options(
            [Option(Text(printable(title)).append(f"  #{node_id}", style="dim"), id=f"n{node_id}")
             for node_id, title in message.rows]
        )
        if message.rows:
            options.highlighted = 0
        elif self.titles:
            options.add_option(Option(Text("No node title matches."), id="none", disabled=True))
        else:
            options.add_option(Option(Text("There are no other nodes to link to yet."), id="none", disabled=True))

    def action_move(self, step: int) -> None:
        options = self.query_one("#edge-matches", OptionList)
        (options.action_cursor_down if step > 0 else options.action_cursor_up)()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "move":  # arrows steer the matches only while typing in the finder
            return self.focused is not None and self.focused.id == "edge-find"
        return True

    @on(Input.Submitted, "#edge-find")
    def _find_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one("#edge-matches", OptionList)
        if options.highlighted is not None:
            self._pick(options.get_option_at_index(options.highlighted))

    @on(OptionList.OptionSelected, "#edge-matches")
    def _option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._pick(event.option)

    def _pick(self, option: Option) -> None:
        if option.disabled or not (option.id or "").startswith("n"):
            return
        node_id = int(option.id[1:])
        title = dict(self.titles or []).get(node_id, f"Node {node_id}")
        self.picked = (node_id, title)
        text = Text("→ ")
        text.append(printable(title), style="bold")
        text.append(f"  #{node_id}", style="dim")
        self.query_one("#edge-picked", Static).update(text)
        self._clear_error()
        self.query_one("#edge-explanation", Input).focus()

    # -- linking -------------------------------------------------------------------------------------
    @on(Input.Submitted, "#edge-explanation")
    def _explanation_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.confirm()

    @on(Button.Pressed, "#edge-link")
    def _link_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.confirm()

    @on(Button.Pressed, "#edge-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def confirm(self) -> None:
        if self.busy:
            return
        explanation = self.query_one("#edge-explanation", Input).value.strip()
        if self.picked is None:
            self._error("Pick the node to link to first (type in the finder, enter on a match).")
            self.query_one("#edge-find", Input).focus()
            return
        if not explanation:
            self._error("Say in a few words why these two nodes are connected.")
            self.query_one("#edge-explanation", Input).focus()
            return
        self.busy = True
        self.add_edge(self.picked[0], explanation)

    @work(thread=True, exclusive=True, group="edge-add", exit_on_error=False)
    def add_edge(self, to_id: int, explanation: str) -> None:
        try:
            with self.services.store() as store:
                edge = store.add_edge(self.from_id, to_id, explanation)
        except (InvalidInput, NotFound) as exc:
            self.post_message(self.Failed(str(exc)))
            return
        except Exception as exc:
            self.post_message(self.Failed(f"Could not link: {exc}"))
            return
        self.post_message(self.Linked(edge))

    @on(Linked)
    def _linked(self, message: Linked) -> None:
        to_title = self.picked[1] if self.picked else None
        self.dismiss({**message.edge, "to_title": message.edge.get("to_title") or to_title})

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self.busy = False
        self._error(message.error)

    def _error(self, message: str) -> None:
        error = self.query_one("#edge-error", Static)
        error.update(Text(printable(message)))
        error.display = True

    def _clear_error(self) -> None:
        self.query_one("#edge-error", Static).display = False

    def action_cancel(self) -> None:
        self.dismiss(None)
