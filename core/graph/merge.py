"""Merging a duplicate node into the one kept: `plan` shows what would happen, `apply` writes it.

The plan combines the two: the kept node's title stays and the other's title (and aliases) become
aliases; the texts are joined under a rule naming the other title (one text alone when the other is
empty or already contained in it); descriptions likewise; dimensions are the union; a link or an event
date the kept node lacks comes from the other. Every edge of the other node moves to the kept one: an
edge the kept node already has to the same node in the same direction is collapsed into it, the
explanations joined when they differ; an edge between the two is dropped (it would join the node to
itself). The user reviews the plan — and may edit the combined text — before `apply` writes it, in one
transaction and one history operation (core.graph.history), so one undo takes the whole merge back. The
other node goes to the trash with `metadata.merged_into` naming the node kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import InvalidInput
from core.graph import history, provenance

JOIN_RULE = "\n\n---\n\n"  # between the kept text and the other's, with the other's title under it


@dataclass
class EdgeMove:
    """One edge of the other node, and what the merge does with it."""

    edge: dict  # the other node's edge as it is now
    from_id: int  # its ends after the merge
    to_id: int
    outcome: str  # "moved" | "collapsed" (into an edge the kept node has) | "dropped" (between the two)
    into: dict | None = None  # the kept node's edge it collapses into
    explanation: str = ""  # the explanation the moved or collapsed edge will have

    def describe(self, keep_id: int, titles: dict[int, str]) -> str:
        """For the review: "moved → 12 Sleep", "collapsed ← 4 Rest: “...”", "dropped: ..."."""
        if self.outcome == "dropped":
            return f"dropped: the link between the two (“{self.edge['explanation']}”)"
        outgoing = self.from_id == keep_id
        far = self.to_id if outgoing else self.from_id
        where = f"{'→' if outgoing else '←'} {far} {titles.get(far, '')}".rstrip()
        if self.outcome == "collapsed":
            return f"collapsed into the kept node's link {where}: “{self.explanation}”"
        return f"moved {where}"


@dataclass
class MergePlan:
    keep: dict
    other: dict
    title: str
    description: str
    source: str
    dimensions: list[str]
    aliases: list[str]
    link: str | None
    event_date: str | None
    edges: list[EdgeMove] = field(default_factory=list)
    links_seen: tuple = ()  # both nodes' edges when planned: a link made or changed since refuses the merge

    def summary(self) -> list[str]:
        """What the merge does, a line each, for the review."""
        keep, other = self.keep, self.other
        lines = [f"Keep {keep['id']} “{keep['title']}”; {other['id']} “{other['title']}” goes to the trash "
                 f"(merged_into {keep['id']})."]
        if self.aliases != list((keep.get("metadata") or {}).get("aliases") or []):
            lines.append("Aliases: " + ", ".join(self.aliases))
        if self.dimensions != keep["dimensions"]:
            lines.append("Dimensions: " + ", ".join(self.dimensions))
        if self.link != keep["link"]:
            lines.append(f"Link: {self.link}")
        if self.event_date != keep["event_date"]:
            lines.append(f"Event date: {self.event_date}")
        counts = {o: sum(1 for m in self.edges if m.outcome == o) for o in ("moved", "collapsed", "dropped")}
        lines.append(f"Edges: {counts['moved']} moved, {counts['collapsed']} collapsed into the kept node's own, "
                     f"{counts['dropped']} dropped (between the two).")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"keep": self.keep["id"], "other": self.other["id"], "title": self.title,
                "description": self.description, "source": self.source, "dimensions": self.dimensions,
                "aliases": self.aliases, "link": self.link, "event_date": self.event_date,
                "edges": [{"edge": m.edge["id"], "outcome": m.outcome, "from_node_id": m.from_id,
                           "to_node_id": m.to_id, "into": m.into["id"] if m.into else None,
                           "explanation": m.explanation} for m in self.edges]}


def _join(kept: str, other: str, other_title: str) -> str:
    if not other.strip() or other.strip() in kept:
        return kept
    if not kept.strip() or kept.strip() in other:
        return other
    return f"{kept.rstrip()}{JOIN_RULE}*Merged from “{other_title}”:*\n\n{other.strip()}\n"


def _join_short(kept: str, other: str, between: str = " ") -> str:
    if not other.strip() or other.strip() in kept:
        return kept
    if not kept.strip():
        return other
    return f"{kept.rstrip()}{between}{other.strip()}"


def plan(store, keep_id: int, other_id: int) -> MergePlan:
    """What merging node `other_id` into node `keep_id` would write (nothing is written)."""
    if int(keep_id) == int(other_id):
        raise InvalidInput("A node cannot be merged into itself; give two different ids.")
    keep, other = store.get_node(keep_id), store.get_node(other_id)
    keep_meta, other_meta = keep.get("metadata") or {}, other.get("metadata") or {}
    aliases: list[str] = []
    for name in [*(keep_meta.get("aliases") or []), other["title"], *(other_meta.get("aliases") or [])]:
        if isinstance(name, str) and name.strip() and name.casefold() != keep["title"].casefold() \
                and name.casefold() not in {a.casefold() for a in aliases}:
            aliases.append(name)
    dims = list(keep["dimensions"])
    for d in other["dimensions"]:
        if d.casefold() not in {x.casefold() for x in dims}:
            dims.append(d)
    result = MergePlan(
        keep=keep, other=other, title=keep["title"],
        description=_join_short(keep["description"], other["description"]),
        source=_join(keep["source"], other["source"], other["title"]),
        dimensions=dims, aliases=aliases, link=keep["link"] or other["link"],
        event_date=keep["event_date"] or other["event_date"])
    kept_edges = {(e["from_node_id"], e["to_node_id"]): e for e in store.edges(keep["id"])}
    for e in store.edges(other["id"]):
        a = keep["id"] if e["from_node_id"] == other["id"] else e["from_node_id"]
        b = keep["id"] if e["to_node_id"] == other["id"] else e["to_node_id"]
        move = EdgeMove(e, a, b, "moved", explanation=e["explanation"])
        if a == b:
            move.outcome = "dropped"
        elif (a, b) in kept_edges:
            into = kept_edges[(a, b)]
            move.outcome, move.into = "collapsed", into
            move.explanation = _join_short(into["explanation"], e["explanation"], "; ") \
                if e["explanation"].strip().casefold() != into["explanation"].strip().casefold() else into["explanation"]
        result.edges.append(move)
    result.links_seen = _links(store, keep["id"], other["id"])
    return result


def _links(store, *node_ids: int) -> tuple:
    return tuple(sorted({(e["id"], e["from_node_id"], e["to_node_id"], e["explanation"])
                         for nid in node_ids for e in store.edges(nid)}))


def apply(store, merge: MergePlan, *, source: str | None = None) -> dict:
    """Write the plan (with the reviewed text, when given): the kept node as it is now. Refused when
    either node changed since the plan was made."""
    keep_id, other_id = merge.keep["id"], merge.other["id"]
    with history.acting_as(f"{history.current_actor()}, merging {other_id} into {keep_id}"), \
            history.operation(), store.db.transaction():
        for node, what in ((merge.keep, "kept"), (merge.other, "other")):
            now = store.get_node(node["id"])
            if now["updated_at"] != node["updated_at"]:
                raise InvalidInput(f"Node {node['id']} (the {what} one) changed after the merge was prepared; "
                                   "nothing was merged. Prepare it again.")
        if _links(store, keep_id, other_id) != merge.links_seen:
            raise InvalidInput("The links of the two nodes changed after the merge was prepared; nothing was "
                               "merged. Prepare it again.")
        meta = dict(merge.keep.get("metadata") or {})
        if merge.aliases:
            meta["aliases"] = merge.aliases
        store.update_node(keep_id, title=merge.title, description=merge.description,
                          source=merge.source if source is None else source, dimensions=merge.dimensions,
                          link=merge.link, event_date=merge.event_date, metadata=meta,
                          origin=provenance.least_trusted(*(store.origins([keep_id, other_id]).get(i)
                                                            for i in (keep_id, other_id))))
        for move in merge.edges:
            if move.outcome == "dropped":
                continue
            if move.outcome == "collapsed":
                if move.explanation != move.into["explanation"]:
                    store.update_edge(move.into["id"], explanation=move.explanation, allow_empty=True)
                continue
            context = dict(move.edge.get("context") or {})
            context["merged_from"] = other_id
            store.add_edge(move.from_id, move.to_id, move.edge["explanation"], context=context,
                           source=move.edge["source"], allow_empty=True)
        other_meta = dict(merge.other.get("metadata") or {})
        other_meta["merged_into"] = keep_id
        store.update_node(other_id, metadata=other_meta)
        store.delete_node(other_id)  # its edges go with it: each was moved, collapsed or dropped above
    return store.get_node(keep_id)
