"""Undoing a change and reverting a node to a version, through the store (so each is itself recorded in
the history, as made by whoever asked, "undoing change N").

`undo` takes back one change — with the rest of its operation, when it was part of one (a merge, a
revert) — and refuses when what it changed has been changed again since (it would silently throw that
later edit away): the user reverts to a version instead. `revert_to` writes the net difference between
now and the version asked for. An undo and a revert are operations themselves, so one undo takes
either back whole.
"""

from __future__ import annotations

from core.errors import InvalidInput, NotFound
from core.graph import history
from core.graph.history import Change


class ChangedSince(InvalidInput):
    """An undo refused because what it set changed again later. `reason` says so without the way out,
    which each surface names its own way (the command line's message: `cairn revert ID --to N`; the
    app's History: its revert key)."""

    def __init__(self, reason: str, node_id: int):
        super().__init__(f"{reason} Revert the node to a version instead (cairn revert {node_id} --to N).")
        self.reason = reason


def undo(store, change_id: int) -> list[Change]:
    """Take back one change, and the other changes of its operation; the changes undone, newest first."""
    c = history.change(store.db, change_id)
    group = history.operation_changes(store.db, c)
    with history.acting_as(f"{history.current_actor()}, undoing change {c.id}"), history.operation():
        with store.db.transaction():
            for each in group:
                _undo(store, each, check=True)
    return group


def revert_to(store, node_id: int, change_id: int) -> list[Change]:
    """Bring node `node_id` back to how it was right after change `change_id`: its fields, whether it
    exists, and each of its edges changed since. Written as the net difference — one change per field
    set, per edge — not as a replay of every step. Returns the later changes it took back, newest first
    (none when the node is already there)."""
    nid = int(node_id)
    target = history.change(store.db, change_id)
    if not history.touches(target, nid):
        raise InvalidInput(f"Change {change_id} is not a change of node {node_id}; `cairn history {node_id}` "
                           "lists its changes.")
    later = [c for c in history.changes(store.db, nid) if c.id > target.id]
    if not later:
        return []
    oldest_first = list(reversed(later))
    with history.acting_as(f"{history.current_actor()}, reverting node {node_id} to change {target.id}"), \
            history.operation():
        with store.db.transaction():
            existed = not (target.kind == "node" and target.node_id == nid and target.action == "delete")
            exists = _exists(store, nid)
            if existed and not exists:
                try:
                    store.restore_node(nid)
                except NotFound:
                    raise InvalidInput(f"Node {nid} is no longer in the trash (it was emptied), so it cannot be "
                                       f"brought back to change {target.id}.") from None
            if existed:
                fields: dict = {}
                for c in oldest_first:
                    if c.kind == "node" and c.node_id == nid and c.action == "update":
                        for k in c.fields:
                            fields.setdefault(k, c.before[k])
                if "metadata" in fields and "dimensions" not in fields:
                    fields["dimensions"] = store.get_node(nid)["dimensions"]
                if fields:
                    store.update_node(nid, **fields)
            first_of_edge: dict[int, Change] = {}
            for c in oldest_first:
                if c.kind == "edge":
                    first_of_edge.setdefault(c.edge_id, c)
            for edge_id, c in first_of_edge.items():
                _edge_as_before(store, edge_id, c)
            if not existed and _exists(store, nid):
                store.delete_node(nid)
    return later


def _exists(store, node_id: int) -> bool:
    return store.db.execute("SELECT 1 FROM nodes WHERE id = ?", (int(node_id),)).fetchone() is not None


def _edge_as_before(store, edge_id: int, first: Change) -> None:
    """Put an edge back as it was before `first`, the oldest of its changes being reverted."""
    try:
        now = store.get_edge(edge_id)
    except NotFound:
        now = None
    if first.action in ("create", "restore"):  # it did not exist then
        if now is not None:
            store.delete_edge(edge_id)
        return
    was = first.before if first.action == "delete" else {**history.edge_version(now or {}), **first.before}
    if now is None:
        if first.action != "delete":
            return  # changed, then deleted along with a node that is not coming back: nothing to restore onto
        for end in (was["from_node_id"], was["to_node_id"]):
            if not _exists(store, end):
                return  # its other end is gone (in the trash): the link comes back with that node's restore
        store.add_edge(was["from_node_id"], was["to_node_id"], was["explanation"], context=was["context"],
                       source=was["source"], allow_empty=True, edge_id=edge_id)
        return
    if (now["explanation"], now["context"]) != (was["explanation"], was["context"]):
        store.update_edge(edge_id, explanation=was["explanation"], context=was["context"], replace_context=True,
                          allow_empty=True)


def _undo(store, c: Change, *, check: bool) -> None:
    if c.kind == "edge":
        _undo_edge(store, c, check=check)
    else:
        _undo_node(store, c, check=check)


def _undo_node(store, c: Change, *, check: bool) -> None:
    nid = c.node_id
    if c.action in ("create", "restore"):
        _existing_node(store, nid, c)
        store.delete_node(nid)
    elif c.action == "delete":
        try:
            store.restore_node(nid)
        except NotFound:
            raise InvalidInput(f"Node {nid} is no longer in the trash (it was emptied), so change {c.id} cannot be "
                               "undone.") from None
    else:
        current = history.node_version(_existing_node(store, nid, c))
        if check:
            _unchanged_since(store, c, {k: current[k] for k in c.fields}, f"node {nid}")
        old = {k: c.before[k] for k in c.fields}
        if "metadata" in old and "dimensions" not in old:
            old["dimensions"] = current["dimensions"]  # update_node's metadata replaces the dimensions too
        store.update_node(nid, **old)


def _undo_edge(store, c: Change, *, check: bool) -> None:
    if c.action in ("create", "restore"):
        try:
            store.delete_edge(c.edge_id)
        except NotFound:
            if check:
                raise InvalidInput(f"The edge of change {c.id} is already gone; nothing to undo.") from None
    elif c.action == "delete":
        e = c.before
        for nid in (e["from_node_id"], e["to_node_id"]):
            try:
                store.get_node(nid)
            except NotFound:
                raise InvalidInput(f"Node {nid} is gone, so the edge of change {c.id} cannot come back; restore "
                                   f"the node first (cairn restore {nid}).") from None
        store.add_edge(e["from_node_id"], e["to_node_id"], e["explanation"], context=e["context"],
                       source=e["source"], allow_empty=True, edge_id=c.edge_id)
    else:
        try:
            current = history.edge_version(store.get_edge(c.edge_id))
        except NotFound:
            raise InvalidInput(f"The edge of change {c.id} is gone; nothing to undo.") from None
        if check:
            _unchanged_since(store, c, {k: current[k] for k in c.fields}, f"the edge {c.edge_id}")
        store.update_edge(c.edge_id, explanation=c.before.get("explanation"), context=c.before.get("context"),
                          replace_context="context" in c.fields, allow_empty=True)


def _existing_node(store, nid: int, c: Change) -> dict:
    try:
        return store.get_node(nid)
    except NotFound:
        raise InvalidInput(f"Node {nid} is in the trash, so change {c.id} cannot be undone; restore it first "
                           f"(cairn restore {nid}).") from None


def _unchanged_since(store, c: Change, current: dict, what: str) -> None:
    """Refuse to undo `c` when the fields it set hold something else now (a later change)."""
    moved = [k for k in c.fields if current[k] != c.after[k]]
    if not moved:
        return
    later = next((x for x in reversed(history.changes(store.db, c.node_id))
                  if x.id > c.id and x.kind == c.kind and set(x.fields) & set(moved)
                  and (c.kind == "node" or x.edge_id == c.edge_id)), None)
    by = f" by change {later.id} ({later.actor})" if later else ""
    names = ", ".join(history.field_name(c.kind, k) for k in moved)
    raise ChangedSince(f"The {names} of {what} changed again since change {c.id}{by}; undoing it would throw that "
                       "away.", c.node_id)
