"""The sent_log rows: every request's record of the nodes that left the machine and where they went.
Each request of a chat turn writes one (`log_turn`); so does each side request: a model request that is
not a chat reply (the rolling summary, the citation judge, distil, integrate's drafts), with the tokens
it cost (`log_request`, `record_usage`).

A chat reply's tokens are stored on its assistant message (messages.usage); a side request has no
message of its own, so its normalised usage (core.providers.base.Usage) goes on its sent_log row
(migration 3), next to what it sent and where. The row is written before the request (the log says
what left the machine even if the request never returns) and its usage after, also when the request
failed part way: the provider counted those tokens. `cairn stats` (core.ops.stats) sums both. The rolling
summary and the citation judge also name their turn's user message (message_id), so the chat pane can
show their tokens beside that turn's reply (`turn_usage`).
"""

from __future__ import annotations

import json
from typing import Iterable

from core import clock

PURPOSES = ("summary", "citation_check", "distil", "integrate")


def log_request(store, *, purpose: str, provider: str, model: str | None, node_ids: Iterable[int] = (),
                chat_id: int | None = None, message_id: int | None = None) -> int:
    """Write the sent_log row of a side request about to be sent; returns its id (for `record_usage`)."""
    if purpose not in PURPOSES:
        raise ValueError(f"Unknown side-request purpose {purpose!r} (expected one of {', '.join(PURPOSES)}).")
    ids = list(dict.fromkeys(int(i) for i in node_ids))
    with store.db.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO sent_log(chat_id, message_id, provider, model, node_ids, purpose, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (chat_id, message_id, provider, model, json.dumps(ids), purpose, clock.now()))
        return cur.lastrowid


def log_turn(store, *, chat_id: int, message_id: int, provider: str, model: str | None,
             node_ids: Iterable[int]) -> None:
    """Write the sent_log row of one request of a chat turn (no purpose: its tokens go on the reply's
    assistant message), naming the turn's user message."""
    with store.db.transaction() as conn:
        conn.execute(
            "INSERT INTO sent_log(chat_id, message_id, provider, model, node_ids, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (chat_id, message_id, provider, model, json.dumps(list(dict.fromkeys(node_ids))), clock.now()))


def record_usage(store, row_id: int, usage) -> None:
    """Put a side request's usage (a Usage, or its as_dict()) on its sent_log row."""
    data = usage.as_dict() if hasattr(usage, "as_dict") else dict(usage)
    with store.db.transaction() as conn:
        conn.execute("UPDATE sent_log SET usage = ? WHERE id = ?", (json.dumps(data), int(row_id)))


def attach_message(store, row_id: int, message_id: int) -> None:
    """Name the chat message a side request was made for, once that message exists (the rolling summary
    runs before its turn's user message is stored)."""
    with store.db.transaction() as conn:
        conn.execute("UPDATE sent_log SET message_id = ? WHERE id = ?", (int(message_id), int(row_id)))


def turn_usage(store, chat_id: int) -> dict[int, dict[str, dict]]:
    """{user message id: {purpose: usage}} of a chat's side requests made for a turn (the rolling summary
    and the citation judge name their turn's user message), summed per purpose: what the chat pane shows
    beside each reply's own tokens when a chat is reopened."""
    out: dict[int, dict[str, dict]] = {}
    for row in store.db.execute(
            "SELECT message_id, purpose, usage FROM sent_log WHERE chat_id = ? AND message_id IS NOT NULL"
            " AND purpose IS NOT NULL AND usage IS NOT NULL ORDER BY id", (int(chat_id),)):
        into = out.setdefault(row["message_id"], {}).setdefault(row["purpose"], {})
        for key, value in json.loads(row["usage"]).items():
            into[key] = into.get(key, 0) + int(value or 0)
    return out
