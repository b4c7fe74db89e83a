"""The picture of a node's neighbourhood (g in Focus): its one- and two-hop neighbours as boxes and
lines (tui/widgets/neighbourhood_map.py), the highlighted edge's explanation under it.

Arrows move the highlight (up/down in a column, left/right across); `enter` centres the picture on the
highlighted node, `backspace` goes back to the node centred before; `o` opens the highlighted node in a
Focus tab; `escape` closes. The graph is read in a worker; a resize draws it again for the new size.
The explanation line has a fixed height (the picture must not move): a longer text ends at a whole
word with an ellipsis (the node's Edges list in Focus has it all).
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, Static

from core.errors import CairnError
from core.graph.neighbourhood import Neighbourhood
from core.safe_text import printable
from tui.fit_text import clip_lines
from tui.messages import OpenNode
from tui.widgets import neighbourhood_map as picture


class NeighbourhoodMap(Widget, can_focus=True):
    """Draws the picture at its own size; `selected` indexes the placed boxes."""

    DEFAULT_CSS = "NeighbourhoodMap { height: 1fr; }"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hood: Neighbourhood | None = None
        self.placed: list[picture.Placed] = []
        self.selected = 0

    def show(self, hood: Neighbourhood) -> None:
        self.hood = hood
        self._place()
        self.selected = next(i for i, p in enumerate(self.placed) if p.column == "center")
        self.refresh()

    def _place(self) -> None:
        if self.hood is not None and self.size.width and self.size.height:
            self.placed = picture.layout(self.hood, self.size.width, self.size.height)

    def on_resize(self) -> None:
        center = self.current
        self._place()
        if center is not None:  # keep the same box highlighted if it is still drawn
            self.selected = next((i for i, p in enumerate(self.placed) if p.node_id == center.node_id
                                  and p.column == center.column), self._center_index())
        self.refresh()

    def _center_index(self) -> int:
        return next((i for i, p in enumerate(self.placed) if p.column == "center"), 0)

    @property
    def current(self) -> picture.Placed | None:
        return self.placed[self.selected] if 0 <= self.selected < len(self.placed) else None

    def render(self) -> Text:
        if self.hood is None:
            return Text("Drawing the neighbourhood…")
        lines, self.placed = picture.draw(self.hood, self.size.width, self.size.height, self.selected)
        return Text("\n").join(lines)

    def move(self, rows: int = 0, columns: int = 0) -> None:
        here = self.current
        if here is None:
            return
        order = [c for c in ("in2", "in1", "center", "out1", "out2") if any(p.column == c for p in self.placed)]
        if rows:
            same = [i for i, p in enumerate(self.placed) if p.column == here.column]
            at = same.index(self.selected)
            self.selected = same[max(0, min(len(same) - 1, at + rows))]
        elif columns:
            target = order.index(here.column) + columns
            if 0 <= target < len(order):
                there = [i for i, p in enumerate(self.placed) if p.column == order[target]]
                self.selected = min(there, key=lambda i: abs(self.placed[i].mid - here.mid))
        self.refresh()


class NeighbourhoodScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("up", "move(-1, 0)", "Up", show=False, id="map_up"),
        Binding("down", "move(1, 0)", "Down", show=False, id="map_down"),
        Binding("left", "move(0, -1)", "Left", show=False, id="map_left"),
        Binding("right", "move(0, 1)", "Right", show=False, id="map_right"),
        Binding("enter", "centre", "Centre on it", id="map_centre"),
        Binding("backspace", "back", "Back", id="map_back"),
        Binding("o", "open", "Open in a tab", id="map_open"),
        Binding("escape", "close", "Close", id="map_close"),
    ]

    class Loaded(Message):
        def __init__(self, hood: Neighbourhood) -> None:
            super().__init__()
            self.hood = hood

    class Failed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, services, node_id: int):
        super().__init__()
        self.services = services
        self.node_id = int(node_id)
        self.trail: list[int] = []  # the nodes centred before, for backspace

    def compose(self):
        with Vertical(id="map-box") as box:
            box.border_title = "Neighbourhood"
            yield NeighbourhoodMap(id="map")
            yield Static(id="map-edge")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(NeighbourhoodMap).focus()
        self.load(self.node_id)

    @work(thread=True, exclusive=True, group="neighbourhood", exit_on_error=False)
    def load(self, node_id: int) -> None:
        from core.graph.neighbourhood import neighbourhood

        try:
            with self.services.store() as store:
                hood = neighbourhood(store, node_id)
        except CairnError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        self.post_message(self.Loaded(hood))

    def on_neighbourhood_screen_loaded(self, event: Loaded) -> None:
        self.node_id = event.hood.center["id"]
        self.query_one("#map-box").border_title = f"Neighbourhood · {printable(event.hood.center['title'])}"
        self.query_one(NeighbourhoodMap).show(event.hood)
        self._describe()

    def on_neighbourhood_screen_failed(self, event: Failed) -> None:
        self.query_one("#map-edge", Static).update(Text(printable(event.error), style="bold"))

    def _describe(self) -> None:
        canvas = self.query_one(NeighbourhoodMap)
        if canvas.hood is not None:
            line = self.query_one("#map-edge", Static)
            text = picture.describe(canvas.hood, canvas.current)
            room = line.content_size
            if room.width and room.height:
                text = "\n".join(clip_lines(text, room.width, room.height))
            line.update(Text(text))

    def on_resize(self) -> None:
        self.call_after_refresh(self._describe)  # the line's new width, once laid out

    def action_move(self, rows: int, columns: int) -> None:
        self.query_one(NeighbourhoodMap).move(rows, columns)
        self._describe()

    def action_centre(self) -> None:
        here = self.query_one(NeighbourhoodMap).current
        if here is not None and here.node_id is not None and here.node_id != self.node_id:
            self.trail.append(self.node_id)
            self.load(here.node_id)

    def action_back(self) -> None:
        if self.trail:
            self.load(self.trail.pop())

    def action_open(self) -> None:
        here = self.query_one(NeighbourhoodMap).current
        if here is not None and here.node_id is not None:
            title = here.node["title"] if isinstance(here.node, dict) else here.node.title
            self.app.post_message(OpenNode(here.node_id, title))
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
