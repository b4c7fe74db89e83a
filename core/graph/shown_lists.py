"""The numbered list a command last showed, kept in the database's meta table so that a later
`--accept N,N` picks from exactly what was shown, not from a new search or model reply.

Used by `cairn distil` (core.assist.distil.save_pending …) and `cairn integrate` / `cairn links`
(tui/cli/workflows.py); each caller owns its key and turns the stored dicts back into its proposals.
The entry is {"at": when it was shown, "proposals": [dict, …], "warnings": [str, …],
"owner": {"kind": "chat" | "node", "id", "title", "created_at"}}: the chat or node the list belongs to.

A list outlives nothing it belongs to. When its chat or node is gone, `load` discards the list and
raises OwnerDeleted, naming what was deleted, so a later `--accept` can never apply proposals made for
a deleted chat or node; `save` also sweeps away every other list whose owner is gone. The check is
made lazily, at use, rather than when the owner is deleted, because:

- a chat is deleted by no code in Cairn today: a chat disappears by means outside it (the sqlite3
  shell, a restored backup, a future delete verb), which no delete hook would see;
- a check at use also catches an owner *replaced* under the same id (a backup restored over the
  database): the owner's created_at is kept with the list and must still match;
- store.delete_node stays ignorant of which workflows keep lists, and under which keys.

A node deleted and then restored (`cairn restore`) comes back with its id and created_at: it is the
same node, so its list still applies. A list saved before owners were recorded is checked against
the owner its caller names.
"""

from __future__ import annotations

import json
from typing import Iterable

from core import clock
from core.errors import InvalidInput, NotFound

KINDS = ("chat", "node")


class OwnerDeleted(NotFound):
    """The chat or node a kept list belongs to was deleted; the list has been discarded."""


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InvalidInput(f"A kept list belongs to a chat or a node, not a {kind!r}.")


def _owner_row(conn, kind: str, owner_id: int):
    table = "chats" if kind == "chat" else "nodes"
    return conn.execute(f"SELECT id, title, created_at FROM {table} WHERE id = ?", (int(owner_id),)).fetchone()


def _gone(conn, owner: dict) -> bool:
    """Whether the recorded owner no longer exists (or another row now holds its id)."""
    row = _owner_row(conn, owner["kind"], owner["id"])
    return row is None or (owner.get("created_at") is not None and row["created_at"] != owner["created_at"])


def save(store, key: str, proposals: Iterable[dict], warnings: Iterable[str], *, owner: tuple[str, int]) -> None:
    """Keep the list just shown for `owner` ("chat" or "node", id), replacing an earlier one under the
    same key, and discard every kept list whose owner is gone."""
    kind, owner_id = owner
    _check_kind(kind)
    with store.db.transaction() as conn:
        row = _owner_row(conn, kind, owner_id)
        if row is None:
            raise NotFound(f"There is no {kind} {owner_id}.")
        entry = {"at": clock.now(), "proposals": list(proposals), "warnings": list(warnings),
                 "owner": {"kind": kind, "id": int(owner_id), "title": row["title"], "created_at": row["created_at"]}}
        _sweep(conn, keep=key)
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     (key, json.dumps(entry, ensure_ascii=False)))


def _describe(owner: dict, at: str, count: int, trashed: bool) -> str:
    kind, owner_id, title = owner["kind"], owner["id"], owner.get("title")
    name = f"{kind.capitalize()} {owner_id}" + (f" (“{title}”)" if title else "")
    shown = f" at {at[:16].replace('T', ' ')} UTC" if at else ""
    what = f"{count} proposal was" if count == 1 else f"{count} proposals were"
    text = (f"{name} was deleted after its {what} listed{shown}; the kept list was discarded and nothing "
            "was written.")
    if trashed:
        text += f" `cairn restore {owner_id}` brings the node back; list its proposals again after that."
    return text


def load(store, key: str, *, owner: tuple[str, int]) -> tuple[list[dict], list[str], str] | None:
    """(proposals as dicts, warnings, when it was shown), or None when nothing is kept under the key.

    Raises OwnerDeleted (after discarding the list) when the chat or node it belongs to is gone."""
    kind, owner_id = owner
    _check_kind(kind)
    raw = store.meta(key)
    if not raw:
        return None
    data = json.loads(raw)
    recorded = data.get("owner") or {"kind": kind, "id": int(owner_id)}
    if _gone(store.db, recorded):
        clear(store, key)
        trashed = recorded["kind"] == "node" and store.db.execute(
            "SELECT 1 FROM trash WHERE node_id = ?", (int(recorded["id"]),)).fetchone() is not None
        raise OwnerDeleted(_describe(recorded, data.get("at") or "", len(data.get("proposals") or []), trashed))
    return list(data["proposals"]), list(data.get("warnings") or []), data["at"]


def _sweep(conn, keep: str | None = None) -> list[str]:
    """Delete the kept lists whose owner is gone (the list under `keep` is about to be replaced)."""
    # CASE: json_type raises on text that is not JSON, and AND does not promise to short-circuit.
    rows = conn.execute("SELECT key, value FROM meta"
                        " WHERE CASE WHEN json_valid(value) THEN json_type(value, '$.owner') END = 'object'").fetchall()
    gone = []
    for row in rows:
        if row["key"] == keep:
            continue
        owner = json.loads(row["value"])["owner"]
        if owner.get("kind") in KINDS and _gone(conn, owner):
            gone.append(row["key"])
    for key in gone:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    return gone


def sweep(store) -> list[str]:
    """Discard every kept list whose chat or node is gone; returns their keys."""
    with store.db.transaction() as conn:
        return _sweep(conn)


def clear(store, key: str) -> None:
    """Forget the list (it has been used, or what it belongs to is gone)."""
    with store.db.transaction() as conn:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
