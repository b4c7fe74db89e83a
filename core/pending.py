"""The numbered list a command last showed, kept in the database's meta table so that a later
`--accept N,N` picks from exactly what was shown, not from a new search or model reply.

Used by `cairn distil` (core.distil.save_pending …) and `cairn integrate` / `cairn links`
(tui/cli_workflows.py); each caller owns its key and turns the stored dicts back into its proposals.
The entry is {"at": when it was shown, "proposals": [dict, …], "warnings": [str, …]}.
"""

from __future__ import annotations

import json
from typing import Iterable

from core import clock


def save(store, key: str, proposals: Iterable[dict], warnings: Iterable[str]) -> None:
    """Keep the list just shown (replacing an earlier one under the same key)."""
    store.set_meta(key, json.dumps({"at": clock.now(), "proposals": list(proposals), "warnings": list(warnings)},
                                   ensure_ascii=False))


def load(store, key: str) -> tuple[list[dict], list[str], str] | None:
    """(proposals as dicts, warnings, when it was shown), or None when nothing is kept under the key."""
    raw = store.meta(key)
    if not raw:
        return None
    data = json.loads(raw)
    return list(data["proposals"]), list(data.get("warnings") or []), data["at"]


def clear(store, key: str) -> None:
    """Forget the list (it has been used)."""
    with store.db.transaction() as conn:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
