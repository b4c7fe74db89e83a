"""The spending caps' check, once per model request: how long it takes as chats pile up.

Run:  .venv/bin/python bench/spend_cap.py [--chats 2600]
The last line of stdout is one JSON object. A real Store in a temp folder gets N chats (a fifth of them
with a delegated sub-chat and a sub-sub-chat), two replies with usage each, and a sent_log row with usage
per chat, spread over 30 days. Then `SpendGuard` (both caps: the day's spend and this chat's tree) is
timed for a chat with delegates, with the indexes of migration 7 and, in the same run, with them dropped
(the code before them). The in-run reference: one `SELECT count(*) FROM messages` (a full scan of the
table), so the ratio compares across machines.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.chat.cost import SpendGuard  # noqa: E402
from core.config import Config  # noqa: E402
from core.graph.store import Store  # noqa: E402
from core.providers.base import Turn  # noqa: E402

INDEXES = ["messages_spent", "sent_log_spent", "sent_log_chat", "chats_parent"]


class _Provider:
    """Enough of a provider for the caps: a known Anthropic model; the estimate is a small body."""

    name = "anthropic"
    model = "claude-sonnet-4-6"
    cache_ttl = "5m"

    def __init__(self):
        from core.providers import models

        self.facts = models.facts(self.model, "anthropic")

    def body(self, turn):
        return {"messages": [{"role": "user", "content": "hello"}]}


def _fill_tree(store: Store, chats: int) -> int:
    """One chat whose one message fanned out into `chats` delegated sub-chats (five per level, as the
    runaway of issue 22 did before the turn budget): the cap's tree walk is what grows."""
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    usage = json.dumps({"input": 1200, "output": 300, "cache_read": 800, "cache_write": 0})
    conn = store.db.conn
    with store.db.transaction():
        top = conn.execute("INSERT INTO chats(title, agent, provider, model, metadata, created_at, updated_at)"
                           " VALUES ('top', 'orchestrator', 'anthropic', 'claude-sonnet-4-6', '{}', ?, ?)",
                           (now, now)).lastrowid
        ids = [top]
        for i in range(chats):
            parent = ids[i // 5]
            cid = conn.execute("INSERT INTO chats(title, agent, provider, model, metadata, created_at, updated_at)"
                               " VALUES ('', 'worker', 'anthropic', 'claude-sonnet-4-6', ?, ?, ?)",
                               (json.dumps({"parent_chat_id": parent}), now, now)).lastrowid
            ids.append(cid)
            conn.execute("INSERT INTO messages(chat_id, role, content, usage, created_at) VALUES (?, 'assistant', '[]', ?, ?)",
                         (cid, usage, now))
    return ids[-1]


def _fill(store: Store, chats: int) -> int:
    now = datetime.now(timezone.utc)
    usage = json.dumps({"input": 1200, "output": 300, "cache_read": 800, "cache_write": 0})
    conn = store.db.conn
    target = None
    with store.db.transaction():
        for i in range(chats):
            when = (now - timedelta(days=i % 30, minutes=i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            top = conn.execute("INSERT INTO chats(title, agent, provider, model, metadata, created_at, updated_at)"
                               " VALUES (?, 'orchestrator', 'anthropic', 'claude-sonnet-4-6', '{}', ?, ?)",
                               (f"chat {i}", when, when)).lastrowid
            ids = [top]
            if i % 5 == 0:
                parent = top
                for _ in range(2):
                    parent = conn.execute(
                        "INSERT INTO chats(title, agent, provider, model, metadata, created_at, updated_at)"
                        " VALUES ('', 'worker', 'anthropic', 'claude-sonnet-4-6', ?, ?, ?)",
                        (json.dumps({"parent_chat_id": parent}), when, when)).lastrowid
                    ids.append(parent)
                target = target or top
            for cid in ids:
                for role in ("user", "assistant"):
                    conn.execute("INSERT INTO messages(chat_id, role, content, usage, created_at) VALUES (?, ?, '[]', ?, ?)",
                                 (cid, role, usage if role == "assistant" else None, when))
                conn.execute("INSERT INTO sent_log(chat_id, provider, model, node_ids, usage, purpose, created_at)"
                             " VALUES (?, 'anthropic', 'claude-sonnet-4-6', '[]', ?, 'summary', ?)", (cid, usage, when))
    return target


def _time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chats", type=int, default=2600)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cfg = Config()
    cfg.chat.max_usd_per_day = 1000.0
    cfg.chat.max_usd_per_chat = 1000.0
    provider = _Provider()
    turn = Turn(None, [], "bench")
    result = {shape: _run(fill, args, cfg, provider, turn) for shape, fill in
              (("many_chats", _fill), ("one_fanned_out_tree", _fill_tree))}
    print(json.dumps(result))


def _run(fill, args, cfg, provider, turn) -> dict:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "cairn.db") as store:
        chat_id = fill(store, args.chats)
        guard = SpendGuard(store, cfg, chat_id)
        assert guard(provider, turn) is None
        scan = _time(lambda: store.db.execute("SELECT count(*), sum(length(usage)) FROM messages").fetchone(), args.repeat)
        indexed = _time(lambda: guard(provider, turn), args.repeat)
        for name in INDEXES:
            store.db.execute(f"DROP INDEX {name}")
        unindexed = _time(lambda: guard(provider, turn), max(1, args.repeat // 2))
        messages = store.db.execute("SELECT count(*) FROM messages").fetchone()[0]
    return {"chats": args.chats, "messages": messages, "check_ms_indexed": round(indexed * 1000, 2),
              "check_ms_without_indexes": round(unindexed * 1000, 2),
              "reference_full_scan_ms": round(scan * 1000, 2),
              "indexed_over_reference": round(indexed / scan, 2),
              "without_over_reference": round(unindexed / scan, 2),
              "speedup": round(unindexed / indexed, 1)}


if __name__ == "__main__":
    main()
