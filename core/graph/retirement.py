"""Retired nodes: which they are, why they were retired, and bringing one back.

A node is retired exactly when it carries the `retired` dimension (`RETIRED`); `metadata.retired`
is the record a distilled chat left (core.assist.distil: `{reason, chat_id, message_id, via, at}`), missing when the
dimension was added by hand. Retired nodes stay in the graph but are neither hubs nor retrieved
(core.chat.context); `restore()` undoes that through `unretire`, which keeps the retirement in
`metadata.provenance_log` next to an `unretired` entry, so the history survives the undo.
"""

from __future__ import annotations

from typing import Any

from core import clock
from core.errors import InvalidInput, NotFound
from core.graph.store import Store

RETIRED = "retired"  # the dimension that marks a node retired


def is_retired(node: dict) -> bool:
    return any(d.lower() == RETIRED for d in node.get("dimensions") or [])


def record(node: dict) -> dict[str, Any] | None:
    """Why a retired node was retired (metadata.retired), or None: not retired, or retired by hand."""
    if not is_retired(node):
        return None
    value = (node.get("metadata") or {}).get("retired")
    return value if isinstance(value, dict) else None


def describe(rec: dict | None, chat_title: str | None = None) -> str:
    """One phrase for a retirement record (`record(node)`): "superseded in chat 12 on 2026-11-28"."""
    if rec is None:
        return "marked retired by hand (no record of a chat)"
    parts = ["superseded"]
    if rec.get("chat_id") is not None:
        parts.append(f"in chat {rec['chat_id']}" + (f" “{chat_title}”" if chat_title else ""))
    if rec.get("at"):
        parts.append(f"on {str(rec['at'])[:10]}")
    return " ".join(parts)


def chat_titles(store: Store, chat_ids) -> dict[int, str]:
    """Titles of the chats that still exist (an empty title is left out)."""
    ids = sorted({int(i) for i in chat_ids if i is not None})
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = store.db.execute(f"SELECT id, title FROM chats WHERE id IN ({marks})", ids).fetchall()
    return {r["id"]: r["title"] for r in rows if r["title"]}


def retired_nodes(store: Store, limit: int | None = None) -> list[dict[str, Any]]:
    """Every retired node, most recently retired first, each with `retirement`: the record plus the
    chat's title (`chat_title`, None when the chat is gone or untitled), or None when retired by hand."""
    rows = store.db.execute("SELECT node_id FROM node_dimensions WHERE dimension = ?", (RETIRED,)).fetchall()
    nodes = store.get_nodes(r["node_id"] for r in rows)
    titles = chat_titles(store, ((record(n) or {}).get("chat_id") for n in nodes))
    out = []
    for node in nodes:
        rec = record(node)
        retirement = None
        if rec is not None:
            chat_id = rec.get("chat_id")
            retirement = {**rec, "chat_title": titles.get(chat_id) if chat_id is not None else None}
        out.append({**node, "retirement": retirement})
    # When retired: the record's time, else (by hand) the node's last change; newest first.
    out.sort(key=lambda n: ((n["retirement"] or {}).get("at") or n["updated_at"], n["id"]), reverse=True)
    return out if limit is None else out[:limit]


def restore(store: Store, node_id: int, *, via: str) -> dict[str, Any]:
    """Un-retire a node (`via`: "cli", "app" ... for its provenance log); the node as it is now.
    A node in the trash is named as such: it has to be restored from there first."""
    try:
        return unretire(store, node_id, via=via)
    except NotFound:
        if any(t["node_id"] == int(node_id) for t in store.trash()):
            raise NotFound(f"Node {node_id} is in the trash: `cairn restore {node_id}` brings it back "
                           "(still retired), then un-retire it.") from None
        raise


def unretire(store: Store, node_id: int, *, via: str | None = None) -> dict:
    """Undo a retirement: the `retired` dimension and metadata.retired go; provenance_log keeps the record
    (`{kind: "unretired", at, was, via}`: `was` is the retirement undone, None if it was added by hand)."""
    with store.db.transaction():  # read and write as one: a concurrent edit cannot slip in between
        node = store.get_node(node_id)
        if RETIRED not in [d.lower() for d in node["dimensions"]]:
            raise InvalidInput(f"Node {node_id} ({node['title']!r}) is not retired; nothing was changed.")
        meta = dict(node.get("metadata") or {})
        record = meta.pop("retired", None)
        entry = {"kind": "unretired", "at": clock.now(), "was": record}
        if via:
            entry["via"] = via
        meta["provenance_log"] = list(meta.get("provenance_log") or []) + [entry]
        return store.update_node(node_id, metadata=meta,
                                 dimensions=[d for d in node["dimensions"] if d.lower() != RETIRED])
