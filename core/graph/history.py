"""A history of every write to a node or an edge: the previous version, who made it, and when.

The store records a change inside the transaction that makes it (core.graph.store), so a change and its
record commit or roll back together; undoing and reverting live in core.graph.revert. A change holds
only the fields it changed: `before` their old values, `after` the new ones. A creation (and a
restore from the trash) records only the title in `after` — the node itself holds the rest, and the
text is not stored twice; a deletion keeps the whole node in `before`, as the trash does. Node fields are those of the node record (title, description,
source, link, event_date, type, dimensions, metadata); edge fields are from/to, explanation, context and
source.

Who made a change is the *actor*: "you (app)", "you (command line)", "MCP client Claude Desktop", "the
model in chat 12", "import of notes/a.md", "distil of chat 12". The process sets its default when it
starts (`set_process_actor`); the code that writes for someone else says so around the write
(`with acting_as(...)`). The actor is a context variable, so it is per thread: a worker thread that
writes for the model sets it in that thread.

`[history] keep_versions` bounds what is kept: `prune` leaves each node its newest N changes (edge
changes count for both ends); it runs when the app and the MCP server start and in `cairn doctor`.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

from core import clock
from core.errors import NotFound

NODE_FIELDS = ("title", "description", "source", "link", "event_date", "type", "dimensions", "metadata")
EDGE_FIELDS = ("from_node_id", "to_node_id", "explanation", "context", "source")
ACTIONS = ("create", "update", "delete", "restore")

# How the fields are named to a user (the node view calls a node's `source` the text; an edge's
# `source` is who made it).
FIELD_NAMES = {"source": "text", "event_date": "event date"}
EDGE_FIELD_NAMES = {"from_node_id": "from", "to_node_id": "to", "source": "made by", "context": "context"}


def field_name(kind: str, name: str) -> str:
    return (EDGE_FIELD_NAMES if kind == "edge" else FIELD_NAMES).get(name, name)

_ACTOR: ContextVar[str | None] = ContextVar("cairn_actor", default=None)
# The operation under way on this thread: a one-item list holding the id of its first change (None
# until that change is recorded).
_OPERATION: ContextVar[list | None] = ContextVar("cairn_operation", default=None)
_process_actor = "you"

# The actors Cairn itself names; the rest are built with the helpers below.
APP = "you (app)"
COMMAND_LINE = "you (command line)"
GETTING_STARTED = "Getting started"
MEMORY_RETENTION = "memory retention ([memory] policy)"


def model_in_chat(chat_id: int | None) -> str:
    return f"the model in chat {chat_id}" if chat_id is not None else "the model"


def mcp_client(name: str | None) -> str:
    return f"MCP client {name}" if name else "an MCP client"


def import_of(what: str) -> str:
    return f"import of {what}"


def distil_of(chat_id: int) -> str:
    return f"distil of chat {chat_id}"


def set_process_actor(name: str) -> None:
    """Who this process writes as when nothing more specific is said (the app, the command line)."""
    global _process_actor
    _process_actor = name


def current_actor() -> str:
    return _ACTOR.get() or _process_actor


@contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Writes in this block (on this thread) are recorded as made by `name`."""
    token = _ACTOR.set(name)
    try:
        yield
    finally:
        _ACTOR.reset(token)


@contextmanager
def operation() -> Iterator[None]:
    """The changes recorded in this block (on this thread) are one operation: undoing any of them
    undoes them all (a merge, a revert). Nested blocks join the outer operation."""
    if _OPERATION.get() is not None:
        yield
        return
    token = _OPERATION.set([None])
    try:
        yield
    finally:
        _OPERATION.reset(token)


def is_yours(actor: str) -> bool:
    return actor.startswith("you")


# -- recording (called by the store, inside its transaction) --------------------------------------------
def node_version(record: dict[str, Any]) -> dict[str, Any]:
    """The tracked fields of a node record (metadata without its dimensions, as the record has it)."""
    version = {k: record.get(k) for k in NODE_FIELDS}
    version["dimensions"] = list(record.get("dimensions") or [])
    version["metadata"] = dict(record.get("metadata") or {})
    return version


def edge_version(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record.get(k) for k in EDGE_FIELDS}


def record_node(conn, action: str, node_id: int, before: dict | None, after: dict | None) -> None:
    _insert(conn, action, node_id, None, None, before, after)


def record_edge(conn, action: str, edge: dict, before: dict | None, after: dict | None) -> None:
    _insert(conn, action, int(edge["from_node_id"]), int(edge["to_node_id"]), int(edge["id"]), before, after)


def _insert(conn, action, node_id, other_id, edge_id, before, after) -> None:
    assert action in ACTIONS, action
    group = _OPERATION.get()
    cur = conn.execute(
        "INSERT INTO history(node_id, other_id, edge_id, action, before, after, actor, operation, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (int(node_id), other_id, edge_id, action, _json(before), _json(after), current_actor(),
         group[0] if group else None, clock.now()),
    )
    if group is not None and group[0] is None:
        group[0] = cur.lastrowid
        conn.execute("UPDATE history SET operation = id WHERE id = ?", (cur.lastrowid,))


def _json(value: dict | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


# -- reading ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    id: int
    node_id: int  # the node changed; for an edge, its from end
    other_id: int | None  # an edge's to end
    edge_id: int | None
    action: str
    before: dict | None
    after: dict | None
    actor: str
    created_at: str
    operation: int | None = None  # the first change of the operation this one is part of

    @property
    def kind(self) -> str:
        return "edge" if self.edge_id is not None else "node"

    @property
    def fields(self) -> list[str]:
        """The fields this change touched, in the record's order."""
        keys = set(self.before or {}) | set(self.after or {})
        order = EDGE_FIELDS if self.kind == "edge" else NODE_FIELDS
        return [k for k in order if k in keys]

    def summary(self, titles: dict[int, str] | None = None, seen_from: int | None = None) -> str:
        """One line: what changed, e.g. "changed title, text", "linked to 12 Sleep". `seen_from`: the node
        whose history this is, so an edge names only its other end ("linked from 3 Water")."""
        if self.kind == "edge":
            def named(node_id):
                return f"{node_id}" + (f" {titles[node_id]}" if titles and node_id in titles else "")

            if seen_from == self.node_id:
                ends = f"to {named(self.other_id)}"
            elif seen_from == self.other_id:
                ends = f"from {named(self.node_id)}"
            else:
                ends = f"{named(self.node_id)} → {named(self.other_id)}"
            return {"create": f"linked {ends}", "delete": f"removed the link {ends}",
                    "restore": f"brought back the link {ends}",
                    "update": f"changed the {_names(self.kind, self.fields)} of the link {ends}"}[self.action]
        if self.action == "update":
            return f"changed {_names(self.kind, self.fields)}"
        return {"create": "created", "delete": "moved to the trash", "restore": "restored from the trash"}[self.action]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "node_id": self.node_id, "other_id": self.other_id, "edge_id": self.edge_id,
                "action": self.action, "kind": self.kind, "fields": self.fields, "actor": self.actor,
                "operation": self.operation, "created_at": self.created_at, "before": self.before,
                "after": self.after}


def _names(kind: str, fields: list[str]) -> str:
    return ", ".join(field_name(kind, f) for f in fields)


def _change(row) -> Change:
    return Change(row["id"], row["node_id"], row["other_id"], row["edge_id"], row["action"],
                  json.loads(row["before"]) if row["before"] is not None else None,
                  json.loads(row["after"]) if row["after"] is not None else None,
                  row["actor"], row["created_at"], row["operation"])


def changes(db, node_id: int, *, limit: int | None = None) -> list[Change]:
    """The changes that touched a node (its own, and those of its edges), newest first."""
    rows = db.execute(
        "SELECT * FROM history WHERE node_id = ?1 UNION SELECT * FROM history WHERE other_id = ?1"
        " ORDER BY id DESC LIMIT ?2", (int(node_id), -1 if limit is None else int(limit))).fetchall()
    return [_change(r) for r in rows]


def change(db, change_id: int) -> Change:
    row = db.execute("SELECT * FROM history WHERE id = ?", (int(change_id),)).fetchone()
    if row is None:
        raise NotFound(f"There is no change {change_id} in the history (it may have been pruned: "
                       "[history] keep_versions).")
    return _change(row)


def operation_changes(db, change: Change) -> list[Change]:
    """Every change of the operation `change` is part of, newest first (just it when it is alone)."""
    if change.operation is None:
        return [change]
    rows = db.execute("SELECT * FROM history WHERE operation = ? ORDER BY id DESC", (change.operation,)).fetchall()
    return [_change(r) for r in rows]


def touches(change: Change, node_id: int) -> bool:
    return node_id in (change.node_id, change.other_id)


# -- showing a change ------------------------------------------------------------------------------------
def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1 if isinstance(value, dict) and value else None)


def diff(change: Change) -> list[str]:
    """The change as unified-diff lines, field by field ("--- title (before)" / "+++ title (after)"). An
    edge's creation or deletion shows its explanation alone (its ends are in the summary)."""
    import difflib  # only when a diff is shown (the store imports this module at every start)

    out: list[str] = []
    fields = change.fields
    if change.kind == "edge" and change.action != "update":
        fields = ["explanation"]
    for name in fields:
        old = _text_of((change.before or {}).get(name)).splitlines()
        new = _text_of((change.after or {}).get(name)).splitlines()
        label = field_name(change.kind, name)
        lines = list(difflib.unified_diff(old, new, f"{label} (before)", f"{label} (after)", lineterm="", n=2))
        if not lines and old != new:  # e.g. "" vs nothing
            lines = [f"--- {label} (before)", f"+++ {label} (after)"]
        out.extend(lines)
    return out


# -- bounding -------------------------------------------------------------------------------------------
# The changes past the bound: not among the newest `keep` changes of either node they touch.
_PAST_BOUND = """WITH touching(change_id, node_id) AS (
                   SELECT id, node_id FROM history UNION ALL
                   SELECT id, other_id FROM history WHERE other_id IS NOT NULL),
               ranked AS (
                   SELECT change_id, ROW_NUMBER() OVER (PARTITION BY node_id ORDER BY change_id DESC) AS n
                   FROM touching)
               SELECT id FROM history WHERE id NOT IN (SELECT change_id FROM ranked WHERE n <= ?)"""


def _any_over(db, keep_versions: int) -> bool:
    """Cheaply (two scans of the indexes, no sort): has any node more changes than the bound?"""
    counts: dict[int, int] = {}
    for query in ("SELECT node_id, COUNT(*) FROM history GROUP BY node_id",
                  "SELECT other_id, COUNT(*) FROM history WHERE other_id IS NOT NULL GROUP BY other_id"):
        for node_id, n in db.execute(query):
            counts[node_id] = counts.get(node_id, 0) + n
    return any(n > keep_versions for n in counts.values())


def past_bound(db, keep_versions: int) -> int:
    """How many changes `prune` would remove."""
    if keep_versions <= 0 or not _any_over(db, keep_versions):
        return 0
    return db.execute(f"SELECT COUNT(*) FROM ({_PAST_BOUND})", (int(keep_versions),)).fetchone()[0]


def prune(db, keep_versions: int) -> int:
    """Leave each node its newest `keep_versions` changes (0: keep everything); the number removed. A
    change of an edge is kept while either end still keeps it."""
    if keep_versions <= 0 or not _any_over(db, keep_versions):
        return 0
    with db.transaction() as conn:
        return conn.execute(f"DELETE FROM history WHERE id IN ({_PAST_BOUND})", (int(keep_versions),)).rowcount
