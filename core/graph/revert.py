"""Undoing a change and reverting a node to a version, through the store (so each is itself recorded in
the history, as made by whoever asked, "undoing change N").

`undo` takes back one change — with the rest of its operation, when it was part of one (a merge, a
revert) — and refuses when what it changed has been changed again since (it would silently throw that
later edit away): the user reverts to a version instead. An undo and a revert are operations
themselves, so one undo takes either back whole. `revert_to` brings a
node back to how it was right after change N by undoing, newest first and in one transaction, every
later change that touched it — its own and those of its edges.
"""

from __future__ import annotations

from core.errors import InvalidInput, NotFound
from core.graph import history
from core.graph.history import Change


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
    """Bring node `node_id` back to how it was right after change `change_id`: the changes undone, newest
    first (none when it is already there)."""
    target = history.change(store.db, change_id)
    if not history.touches(target, int(node_id)):
        raise InvalidInput(f"Change {change_id} is not a change of node {node_id}; `cairn history {node_id}` "
                           "lists its changes.")
    later = [c for c in history.changes(store.db, int(node_id)) if c.id > target.id]
    with history.acting_as(f"{history.current_actor()}, reverting node {node_id} to change {target.id}"), \
            history.operation():
        with store.db.transaction():
            for c in later:
                _undo(store, c, check=False)
    return later


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
    raise InvalidInput(f"The {names} of {what} changed again since change {c.id}{by}; undoing it would throw that "
                       f"away. Revert the node to a version instead (cairn revert {c.node_id} --to N).")
