"""`cairn stats` and core.ops.stats (issue 8): counts by type, edges, chunks, pending work, memory and
its policy, database size, tokens sent per provider over the last 7 days."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from core.ops import stats
from core.config import Config

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=timezone.utc)


def stamp(dt: datetime) -> str:
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def chat_row(store, provider: str | None, parent: int | None = None, model: str = "m") -> int:
    meta = json.dumps({"parent_chat_id": parent} if parent else {})
    cur = store.db.execute("INSERT INTO chats(title, provider, model, metadata, created_at, updated_at)"
                           " VALUES ('t', ?, ?, ?, ?, ?)", (provider, model, meta, stamp(NOW), stamp(NOW)))
    return cur.lastrowid


def reply(store, chat_id: int, days_ago: float, **usage) -> None:
    full = {"input": 0, "output": 0, "cache_write": 0, "cache_read": 0, **usage}
    store.db.execute("INSERT INTO messages(chat_id, role, content, usage, created_at)"
                     " VALUES (?, 'assistant', '[]', ?, ?)",
                     (chat_id, json.dumps(full), stamp(NOW - timedelta(days=days_ago))))


def test_counts_by_type_edges_chunks_and_pending(store, indexer):
    a = store.add_node("Note a", "Some text to chunk. " * 5)
    b = store.add_node("Note b", "More text.")
    store.add_node("A paper", "Paper text.", type="paper")
    m = store.add_node("Answered: x", "A memory.", type="memory")
    store.add_node("Answered: y", "Another memory.", type="memory")
    store.add_edge(a["id"], b["id"], "related")
    indexer.run()
    store.add_node("Pending note", "Waiting.")
    store.db.execute("UPDATE nodes SET chunk_status = 'error', index_error = 'boom' WHERE id = ?", (b["id"],))
    store.db.execute("INSERT INTO memory_access(node_id, access_count, last_accessed_at) VALUES (?, 4, ?)",
                     (m["id"], stamp(NOW)))
    result = stats.collect(store, Config(), NOW)
    assert result["nodes"] == {"total": 6, "note": 3, "memory": 2, "other": 1}
    assert result["edges"] == 1
    chunks = store.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    assert result["chunks"] == chunks and chunks >= 5
    # the failed note keeps the vectors of its earlier text: meaning search reaches 5 of the 6
    assert result["index"] == {"pending": 1, "errors": 1, "covered": 5}
    assert dict(stats.lines(result))["Pending work"] == ("1 node waiting to be indexed, 1 failed; "
                                                         "meaning search covers 5 of 6 nodes")
    assert result["memory"]["nodes"] == 2 and result["memory"]["used"] == 1 and result["memory"]["never_used"] == 1
    assert result["memory"]["uses"] == 4 and result["memory"]["last_used"] == stamp(NOW)
    assert result["memory"]["policy"] == {"max_age_days": 0, "max_count": 0, "active": False}


def test_database_size_is_the_main_file_plus_the_wal(store):
    store.add_node("Something", "x" * 5000)
    result = stats.collect(store)["database"]
    main, wal = Path(store.path), Path(str(store.path) + "-wal")
    assert result["bytes"] == main.stat().st_size and result["wal_bytes"] == wal.stat().st_size
    assert result["total_bytes"] == result["bytes"] + result["wal_bytes"] and result["wal_bytes"] > 0


def test_tokens_this_week_per_provider_leave_out_older_replies(store):
    anth, oai, unknown = chat_row(store, "anthropic"), chat_row(store, "openai"), chat_row(store, None)
    sub = chat_row(store, "anthropic", parent=anth)  # a delegated sub-chat: its tokens were spent too
    reply(store, anth, 1, input=1000, output=50, cache_read=800, cache_write=100)
    reply(store, anth, 6.9, input=500, output=20, cache_write=400)
    reply(store, sub, 0.1, input=10, output=5)
    reply(store, anth, 7.5, input=99_999, output=99_999)  # older than 7 days: left out
    reply(store, oai, 2, input=300, output=30, cache_read=256)
    reply(store, oai, 30, input=77_777)
    reply(store, unknown, 0, input=1, output=1)
    store.db.execute("INSERT INTO messages(chat_id, role, content, created_at) VALUES (?, 'user', '[]', ?)",
                     (anth, stamp(NOW)))  # no usage: a user message
    tokens = stats.collect(store, now=NOW)["tokens_this_week"]
    assert tokens["days"] == 7
    assert tokens["by_provider"] == {
        "anthropic": {"replies": 3, "input": 1510, "output": 75, "cache_read": 800, "cache_write": 500},
        "openai": {"replies": 1, "input": 300, "output": 30, "cache_read": 256, "cache_write": 0},
        "unknown": {"replies": 1, "input": 1, "output": 1, "cache_read": 0, "cache_write": 0},
    }
    assert tokens["total"] == {"replies": 5, "input": 1811, "output": 106, "cache_read": 1056, "cache_write": 500}
    assert stats.collect(store, now=NOW + timedelta(days=40))["tokens_this_week"]["by_provider"] == {}


def test_spending_this_week_per_provider_prices_replies_and_side_requests_by_model(store):
    haiku = chat_row(store, "anthropic", model="claude-haiku-4-5")  # $1 in, $1.25 5m write, $0.10 read, $5 out
    mini = chat_row(store, "openai", model="gpt-4.1-mini")  # $0.40 in, $0.10 cached, $1.60 out
    offline = chat_row(store, "offline", model="")
    reply(store, haiku, 1, input=31_000, output=2_000, cache_write=10_000, cache_read=20_000)
    reply(store, haiku, 8, input=9_999_999)  # older than the week
    reply(store, mini, 2, input=10_000, output=1_000, cache_read=5_000)
    reply(store, offline, 0, input=0, output=0)
    # a side request (the citation judge) on its sent_log row, under its own provider and model
    store.db.execute("INSERT INTO sent_log(chat_id, provider, model, node_ids, purpose, usage, created_at)"
                     " VALUES (?, 'anthropic', 'claude-haiku-4-5', '[]', 'citation_check', ?, ?)",
                     (haiku, json.dumps({"input": 4_000, "output": 100, "cache_write": 0, "cache_read": 0}),
                      stamp(NOW - timedelta(hours=1))))
    spend = stats.collect(store, Config(), NOW)["tokens_this_week"]["spend_by_provider"]
    # haiku: 1,000 x 1 + 10,000 x 1.25 + 20,000 x 0.10 + 2,000 x 5 = 25,500; judge 4,000 + 500 = 4,500
    assert spend["anthropic"]["label"] == "$0.0300" and round(spend["anthropic"]["usd"], 9) == 0.03
    # mini: 5,000 x 0.40 + 5,000 x 0.10 + 1,000 x 1.60 = 4,100
    assert spend["openai"]["label"] == "$0.004100"
    assert spend["offline"] == {"usd": None, "unknown_models": [], "label": "no price"}
    rows = dict(stats.lines(stats.collect(store, Config(), NOW)))
    assert rows["Spent, last 7 days, anthropic"] == "$0.0300" and rows["Spent, last 7 days, offline"] == "no price"


def test_lines_for_people():
    rows = dict(stats.lines({
        "nodes": {"total": 3, "note": 2, "memory": 1, "other": 0}, "edges": 1, "chunks": 4,
        "index": {"pending": 2, "errors": 0, "covered": 3}, "trash": 0, "chats": 1,
        "memory": {"nodes": 1, "used": 1, "never_used": 0, "uses": 3, "last_used": None,
                   "policy": {"max_age_days": 90, "max_count": 0, "active": True}, "past_policy": 1},
        "database": {"path": "x", "bytes": 2048, "wal_bytes": 0, "total_bytes": 2048},
        "tokens_this_week": {"days": 7, "by_provider": {"anthropic": {"replies": 2, "input": 1500, "output": 20,
                                                                       "cache_read": 1000, "cache_write": 0}},
                             "total": {}},
    }))
    assert rows["Nodes"] == "3 (2 notes, 1 memory, 0 other)"
    assert rows["Pending work"] == "2 nodes waiting to be indexed, 0 failed"
    assert rows["Retention"] == "max age 90 days; 1 past it now"
    assert rows["Database"] == "2.0 KB (2.0 KB + 0 bytes WAL)"
    assert rows["Tokens, last 7 days, anthropic"] == ("1,500 sent (1,000 read from cache, 0 written to it), "
                                                      "20 received, 2 replies")


def test_cairn_stats_json_and_text(cairn_cmd, cli_env):
    from core.graph.store import Store

    home = Path(cli_env["CAIRN_HOME"])
    home.mkdir(parents=True)
    with Store(home / "cairn.db") as s:
        s.add_node("One", "first")
        old = s.add_node("Answered: old", "memory", type="memory")
        s.db.execute("UPDATE nodes SET created_at = ?1, updated_at = ?1 WHERE id = ?2",
                     ("2020-01-01T00:00:00.000Z", old["id"]))
        c = chat_row(s, "openai")
        s.db.execute("INSERT INTO messages(chat_id, role, content, usage, created_at)"
                     " VALUES (?, 'assistant', '[]', ?, ?)",
                     (c, json.dumps({"input": 42, "output": 7, "cache_write": 0, "cache_read": 0}),
                      stamp(datetime.now(timezone.utc))))
    (home / "config.toml").write_text("[memory]\nmax_age_days = 30\n")
    os.chmod(home / "config.toml", 0o600)
    run = lambda *a: subprocess.run([*cairn_cmd, *a], env=cli_env, capture_output=True, text=True, timeout=120,
                                    stdin=subprocess.DEVNULL)
    r = run("stats", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["nodes"] == {"total": 2, "note": 1, "memory": 1, "other": 0}
    assert data["index"]["pending"] == 2
    assert data["memory"]["policy"]["max_age_days"] == 30 and data["memory"]["past_policy"] == 1
    assert data["tokens_this_week"]["by_provider"]["openai"]["input"] == 42
    assert data["database"]["total_bytes"] > 0
    r = run("stats")
    assert r.returncode == 0 and "Nodes" in r.stdout and "2 (1 note, 1 memory, 0 other)" in r.stdout
    assert "Tokens, last 7 days, openai" in r.stdout and "42 sent" in r.stdout
    assert data["tokens_this_week"]["spend_by_provider"]["openai"]["label"] == "price unknown (model m)"
    assert "Spent, last 7 days, openai" in r.stdout and "price unknown (model m)" in r.stdout
    with Store(home / "cairn.db") as s:  # stats only reads: the memory past the policy is still there
        assert s.get_node(old["id"])


def test_cairn_stats_without_a_database_says_so_and_creates_nothing(cairn_cmd, cli_env):
    r = subprocess.run([*cairn_cmd, "stats"], env=cli_env, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and "No database at" in r.stderr and "add a note first" in r.stderr
    assert not (Path(cli_env["CAIRN_HOME"]) / "cairn.db").exists()


async def test_the_viewer_shows_the_stats_section(store, db_path, embedder, monkeypatch):
    import time

    import core.index.embedder
    from rich.text import Text
    from textual.widgets import Collapsible

    from tui.app import CairnApp
    from tui.widgets.context_viewer import ContextViewer

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    store.add_node("A note", "Some text.")
    store.add_node("Answered: q", "A memory.", type="memory")

    class Quiet(CairnApp):
        def watch_database(self) -> None:
            pass

    app = Quiet(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        viewer = app.query_one(ContextViewer)
        section = viewer.query_one("#viewer-stats-section", Collapsible)
        assert section.collapsed  # out of the way until asked for
        section.collapsed = False
        stats_text = lambda: (lambda c: c.plain if isinstance(c, Text) else str(c))(
            viewer.query_one("#viewer-stats").content)
        deadline = time.monotonic() + 15
        while "Nodes" not in stats_text():
            assert time.monotonic() < deadline, "timed out waiting for the stats"
            await pilot.pause(0.05)
        shown = stats_text()
        assert "2 (1 note, 1 memory, 0 other)" in shown and "Retention" in shown and "Database" in shown
