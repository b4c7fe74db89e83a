"""A node's one- and two-hop neighbourhood, for the picture in Focus (tui/widgets/neighbourhood_map.py).

Ring 1 holds the nodes joined to the centre by an edge, on the side the edge points: `in` (the edge
comes to the centre) or `out` (it leaves it; a node joined both ways is `out`, marked `both`). Ring 2
holds the nodes joined to a ring-1 node and to neither the centre nor ring 1, on the side of the
ring-1 node they came through (its `parent`). Each ring is capped; what the cap left out is counted,
so the picture can say "+N more". Every entry carries the edge that put it there, with its explanation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

RING1_MAX = 12  # per side
RING2_MAX = 24  # per side


@dataclass
class Neighbour:
    node_id: int
    title: str
    side: str  # "in" | "out"
    edge: dict  # the edge that joins it to the centre (ring 1) or to its parent (ring 2)
    parent: int | None = None  # ring 2: the ring-1 node it is joined to
    both: bool = False  # ring 1: joined to the centre in both directions
    degree: int = 0  # how many edges it has in all


@dataclass
class Neighbourhood:
    center: dict
    ring1: dict[str, list[Neighbour]] = field(default_factory=lambda: {"in": [], "out": []})
    ring2: dict[str, list[Neighbour]] = field(default_factory=lambda: {"in": [], "out": []})
    more1: dict[str, int] = field(default_factory=lambda: {"in": 0, "out": 0})
    more2: dict[str, int] = field(default_factory=lambda: {"in": 0, "out": 0})
    through: dict[int, int] = field(default_factory=dict)  # ring-1 node id -> ring-2 nodes reached through it


def _degrees(store, ids: list[int]) -> dict[int, int]:
    if not ids:
        return {}
    rows = store.db.execute(
        "SELECT n, COUNT(*) FROM (SELECT from_node_id AS n FROM edges UNION ALL SELECT to_node_id FROM edges)"
        " WHERE n IN (SELECT value FROM json_each(?)) GROUP BY n", (json.dumps(list(ids)),)).fetchall()
    return {r[0]: r[1] for r in rows}


def neighbourhood(store, node_id: int, *, ring1_max: int = RING1_MAX, ring2_max: int = RING2_MAX) -> Neighbourhood:
    center = store.get_node(node_id)
    hood = Neighbourhood(center)
    first: dict[int, Neighbour] = {}
    for e in store.edges(node_id):  # newest first
        outgoing = e["from_node_id"] == center["id"]
        other = e["to_node_id"] if outgoing else e["from_node_id"]
        title = e["to_title"] if outgoing else e["from_title"]
        if other in first:
            first[other].both = True
            if outgoing:  # joined both ways: shown on the out side, by its outgoing edge
                first[other].side, first[other].edge = "out", e
            continue
        first[other] = Neighbour(other, title, "out" if outgoing else "in", e)
    degrees = _degrees(store, list(first))
    for n in first.values():
        n.degree = degrees.get(n.node_id, 0)
    for side in ("in", "out"):
        ranked = sorted((n for n in first.values() if n.side == side), key=lambda n: -n.degree)
        hood.ring1[side] = ranked[:ring1_max]
        hood.more1[side] = max(0, len(ranked) - ring1_max)
    seen = {center["id"], *first}
    second: dict[str, list[Neighbour]] = {"in": [], "out": []}
    for side in ("in", "out"):
        for parent in hood.ring1[side]:
            for e in store.edges(parent.node_id):
                other = e["to_node_id"] if e["from_node_id"] == parent.node_id else e["from_node_id"]
                if other in seen:
                    continue
                seen.add(other)
                title = e["to_title"] if e["from_node_id"] == parent.node_id else e["from_title"]
                second[side].append(Neighbour(other, title, side, e, parent=parent.node_id))
                hood.through[parent.node_id] = hood.through.get(parent.node_id, 0) + 1
    degrees = _degrees(store, [n.node_id for side in second.values() for n in side])
    for side in ("in", "out"):
        for n in second[side]:
            n.degree = degrees.get(n.node_id, 0)
        hood.ring2[side] = second[side][:ring2_max]
        hood.more2[side] = max(0, len(second[side]) - ring2_max)
    return hood
