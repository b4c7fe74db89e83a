"""The picture of a node's neighbourhood: boxes for nodes, box-drawing lines for edges, on a character
canvas (core/graph/neighbourhood.py gives the nodes).

Columns, left to right: ring 2 in, ring 1 in, the centre, ring 1 out, ring 2 out — the two ring-2
columns only when the width leaves each box room for a readable title (WIDE); narrower, each ring-1 box
says how many nodes lie beyond it, and `enter` centres the picture on it. An edge runs from the side of
one box to the side of the next, through a vertical trunk in the gutter between them; where lines
meet, the canvas joins them (├ ┼ ┤). An arrowhead marks which way the edge points. The highlighted box
is drawn in reverse video and its edge in bold, which read the same without colour (NO_COLOR) and over
SSH; only box-drawing characters from the common WGL4 set are used.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from core.graph.neighbourhood import Neighbour, Neighbourhood
from core.safe_text import printable

WIDE = 110  # columns from which ring 2 is drawn
GUTTER = 6
BOX_MAX = 30
BOX_MIN = 10

# Box-drawing characters by the directions a cell's lines take (N, E, S, W).
_JOIN = {
    frozenset("EW"): "─", frozenset("NS"): "│", frozenset("ES"): "┌", frozenset("SW"): "┐",
    frozenset("NE"): "└", frozenset("NW"): "┘", frozenset("NES"): "├", frozenset("NSW"): "┤",
    frozenset("ESW"): "┬", frozenset("NEW"): "┴", frozenset("NESW"): "┼",
    frozenset("E"): "─", frozenset("W"): "─", frozenset("N"): "│", frozenset("S"): "│",
}


@dataclass
class Placed:
    """A box on the canvas: its node (None: the "+N more" box), column, row in the column, position."""

    node: Neighbour | dict | None
    column: str  # "in2" | "in1" | "center" | "out1" | "out2"
    index: int
    x: int
    y: int
    width: int
    label: str
    more: int = 0

    @property
    def node_id(self) -> int | None:
        if isinstance(self.node, Neighbour):
            return self.node.node_id
        if isinstance(self.node, dict):
            return self.node["id"]
        return None

    @property
    def mid(self) -> int:
        return self.y + 1


class Canvas:
    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.chars = [[" "] * width for _ in range(height)]
        self.styles: list[list[str | None]] = [[None] * width for _ in range(height)]
        self.dirs: dict[tuple[int, int], set[str]] = {}
        self.line_style: dict[tuple[int, int], str] = {}

    def _in(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height

    def link(self, x: int, y: int, direction: str, style: str | None) -> None:
        if self._in(x, y):
            self.dirs.setdefault((x, y), set()).add(direction)
            if style:
                self.line_style[(x, y)] = style

    def route(self, xa: int, ya: int, xb: int, yb: int, style: str | None) -> None:
        """From the cell right of a box at (xa, ya) to the cell left of a box at (xb, yb), xa < xb."""
        trunk = xa + (xb - xa) // 2
        for x in range(xa, trunk):
            self.link(x, ya, "E", style)
            self.link(x + 1, ya, "W", style)
        step = 1 if yb >= ya else -1
        for y in range(ya, yb, step):
            self.link(trunk, y, "S" if step > 0 else "N", style)
            self.link(trunk, y + step, "N" if step > 0 else "S", style)
        for x in range(trunk, xb):
            self.link(x, yb, "E", style)
            self.link(x + 1, yb, "W", style)

    def put(self, x: int, y: int, text: str, style: str | None = None) -> None:
        for i, ch in enumerate(text):
            if self._in(x + i, y):
                self.chars[y][x + i] = ch
                self.styles[y][x + i] = style
                self.dirs.pop((x + i, y), None)

    def box(self, x: int, y: int, width: int, label: str, style: str | None) -> None:
        inner = width - 2
        self.put(x, y, "┌" + "─" * inner + "┐", style)
        self.put(x, y + 1, "│" + label[:inner].center(inner) + "│", style)
        self.put(x, y + 2, "└" + "─" * inner + "┘", style)

    def lines(self) -> list[Text]:
        for (x, y), ways in self.dirs.items():
            self.chars[y][x] = _JOIN.get(frozenset(ways), "┼")
            self.styles[y][x] = self.line_style.get((x, y))
        out = []
        for row, styles in zip(self.chars, self.styles):
            text = Text(no_wrap=True, overflow="crop")
            run, run_style = "", None
            for ch, style in zip(row, styles):
                if style != run_style and run:
                    text.append(run, style=run_style or "")
                    run = ""
                run_style = style
                run += ch
            if run:
                text.append(run, style=run_style or "")
            out.append(text)
        return out


def _label(title: str, width: int, suffix: str = "") -> str:
    title = " ".join(printable(title).split()) or "Untitled"
    room = width - 4 - len(suffix)
    if len(title) > room:
        title = title[: max(room - 1, 1)].rstrip() + "…"
    return title + suffix


def _stack(items: list, more: int, capacity: int) -> tuple[list, int]:
    """What fits in a column of `capacity` boxes: the items, and how many a "+N more" box stands for."""
    if len(items) + (1 if more else 0) <= capacity:
        return items, more
    keep = max(capacity - 1, 0)
    return items[:keep], more + len(items) - keep


def layout(hood: Neighbourhood, width: int, height: int) -> list[Placed]:
    """Where each box goes for a canvas of width × height."""
    wide = width >= WIDE
    columns = ["in2", "in1", "center", "out1", "out2"] if wide else ["in1", "center", "out1"]
    n = len(columns)
    box = max(BOX_MIN, min(BOX_MAX, (width - GUTTER * (n - 1)) // n))
    spare = max(0, width - box * n - GUTTER * (n - 1))
    x0 = spare // 2
    xs = {c: x0 + i * (box + GUTTER) for i, c in enumerate(columns)}
    capacity = max(1, height // 3)
    placed: list[Placed] = []
    content = {
        "in1": (hood.ring1["in"], hood.more1["in"]), "out1": (hood.ring1["out"], hood.more1["out"]),
        "in2": (hood.ring2["in"], hood.more2["in"]), "out2": (hood.ring2["out"], hood.more2["out"]),
    }
    for column in columns:
        if column == "center":
            items, more = [hood.center], 0
        else:
            items, more = _stack(*content[column], capacity)
        count = len(items) + (1 if more else 0)
        gap = 1 if count * 4 - 1 <= height else 0
        total = count * 3 + (count - 1) * gap
        y = max(0, (height - total) // 2)
        for i, item in enumerate(items):
            if column == "center":
                label = _label(item["title"], box)
            else:
                beyond = hood.through.get(item.node_id, 0) if not wide and column.endswith("1") else 0
                label = _label(item.title, box, (" ⇄" if item.both else "") + (f" +{beyond}" if beyond else ""))
            placed.append(Placed(item, column, i, xs[column], y, box, label))
            y += 3 + gap
        if more:
            placed.append(Placed(None, column, len(items), xs[column], y, box, f"+{more} more", more=more))
    return placed


def _edge_ends(p: Placed, placed: list[Placed]) -> tuple[Placed, Placed, str] | None:
    """The box `p`'s edge joins it to (the centre, or its ring-1 parent), left box first, and which way
    the edge points: "right" or "left"."""
    if not isinstance(p.node, Neighbour):
        return None
    n = p.node
    if p.column in ("in1", "out1"):
        other = next(q for q in placed if q.column == "center")
    else:
        other = next((q for q in placed if q.node_id == n.parent and q.column.endswith("1")), None)
        if other is None:
            return None
    left, right = (p, other) if p.x < other.x else (other, p)
    pointing_right = n.edge["from_node_id"] == left.node_id
    return left, right, "right" if pointing_right else "left"


def draw(hood: Neighbourhood, width: int, height: int, selected: int | None = None) -> tuple[list[Text], list[Placed]]:
    """The picture as lines of text, and the boxes it placed; `selected` indexes the boxes."""
    canvas = Canvas(width, height)
    placed = layout(hood, width, height)
    chosen = placed[selected] if selected is not None and 0 <= selected < len(placed) else None
    for p in placed:
        ends = _edge_ends(p, placed)
        if ends is None:
            continue
        left, right, way = ends
        style = "bold" if p is chosen else None
        canvas.route(left.x + left.width, left.mid, right.x - 1, right.mid, style)
        if way == "right":
            canvas.put(right.x - 1, right.mid, "►", style)
        else:
            canvas.put(left.x + left.width, left.mid, "◄", style)
    for p in placed:
        style = "reverse" if p is chosen else ("bold" if p.column == "center" else ("dim" if p.node is None else None))
        canvas.box(p.x, p.y, p.width, p.label, style)
    return canvas.lines(), placed


def describe(hood: Neighbourhood, p: Placed | None) -> str:
    """What the highlighted box is: its edge and explanation, or, for the centre, the counts."""
    if p is None:
        return ""
    center = hood.center
    if p.node is None:
        return (f"{p.more} more not drawn here (the busiest are); the node's Edges list in Focus has every link.")
    if isinstance(p.node, dict):
        ins, outs = len(hood.ring1["in"]) + hood.more1["in"], len(hood.ring1["out"]) + hood.more1["out"]
        both = sum(1 for n in hood.ring1["out"] if n.both)
        far = sum(len(v) for v in hood.ring2.values()) + sum(hood.more2.values())
        ways = f" ({both} of them linked both ways, drawn on the right ⇄)" if both else ""
        return (f"{printable(center['title'])} — {ins + outs} neighbour{'s' if ins + outs != 1 else ''}: {ins} "
                f"linking in, {outs} linked to{ways}; {far} node{'s' if far != 1 else ''} two links away.")
    n = p.node
    e = n.edge
    ends = f"{printable(e.get('from_title') or str(e['from_node_id']))} → {printable(e.get('to_title') or str(e['to_node_id']))}"
    explanation = printable(e["explanation"]) if e["explanation"] else "no explanation yet"
    both = " (linked both ways)" if n.both else ""
    beyond = hood.through.get(n.node_id, 0) if n.parent is None else 0
    further = f" · beyond it: {beyond} more two links out (enter centres on it)" if beyond else ""
    return f"{ends}{both}: “{explanation}”{further}"
