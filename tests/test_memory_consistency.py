"""Two memory loose ends (core/graph/memory.py): a memory node restored from the trash gets its use count back
(core/graph/store.py keeps it in the trash payload), and the recency/use boost applies exactly where the
docstring says: the chat's retrieved block and everything that previews it (`cairn context`, the
Context viewer's engine) on the chat's clock, never `cairn search` or the searchContent tool."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from chat_support import FIXED_NOW, _no_proxies, config, searcher  # noqa: F401  (fixtures)
from core.agent import profiles
from core.graph import memory
from core.graph import retention
from core.chat.context import ContextEngine
from core.graph.retention import Policy
from test_memory import access_rows, days_ago, make, stamp, used
from tui.cli.main import main

FERRY = "The ferry to the island leaves at seven and the last one returns at nine. " * 3
MESSAGE = "when does the island ferry leave?"


def cli(capsys, db_path, *argv) -> tuple[int, str, str]:
    rc = main([*map(str, argv), "--db", str(db_path)])
    out, err = capsys.readouterr()
    return rc, out, err


def access_of(store, node_id: int) -> dict:
    row = store.db.execute("SELECT access_count, last_accessed_at FROM memory_access WHERE node_id = ?",
                           (node_id,)).fetchone()
    return dict(row) if row else {}


@pytest.fixture
def cli_embedder(monkeypatch, embedder):
    import core.index.embedder

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)  # the CLI's searcher: the session's embedder


# -- a restored memory keeps its use count -----------------------------------------------------------
def test_a_trashed_memory_comes_back_with_its_use_count(store):
    mem = make(store, "Answered: ferry", FERRY, type="memory")
    last = stamp(FIXED_NOW - timedelta(days=3))
    used(store, mem, 7, last)
    store.delete_node(mem)
    assert access_rows(store) == {}  # the row goes with the node (ON DELETE CASCADE) ...
    payload = json.loads(store.db.execute("SELECT payload FROM trash WHERE node_id = ?", (mem,)).fetchone()[0])
    assert payload["memory_access"] == {"access_count": 7, "last_accessed_at": last}  # ... a copy stays in the trash
    store.restore_node(mem)
    assert access_of(store, mem) == {"access_count": 7, "last_accessed_at": last}
    assert memory.access(store, [mem])[mem]["access_count"] == 7


def test_a_node_without_uses_restores_without_a_use_row(store):
    note = make(store, "A note", "Plain text.")
    unused = make(store, "Answered: never used", "Nobody asked.", type="memory")
    for node_id in (note, unused):
        store.delete_node(node_id)
        payload = json.loads(store.db.execute("SELECT payload FROM trash WHERE node_id = ?", (node_id,)).fetchone()[0])
        assert "memory_access" not in payload
        store.restore_node(node_id)
    assert access_rows(store) == {}


def test_a_memory_the_retention_policy_trashed_is_restored_with_its_uses_and_not_trashed_again(store):
    real_now = datetime.now(timezone.utc)
    old = make(store, "Answered: stale", "Old answer.", type="memory", created=stamp(real_now - timedelta(days=200)))
    last = stamp(real_now - timedelta(days=90))
    used(store, old, 4, last)
    policy = Policy(max_age_days=30)
    assert [m["id"] for m in retention.apply(store, policy)] == [old]
    assert access_rows(store) == {}
    store.restore_node(old)
    assert access_of(store, old) == {"access_count": 4, "last_accessed_at": last}
    assert retention.plan(store, policy) == []  # restoring counts as an edit (core.graph.retention)


def test_cairn_rm_and_restore_keep_the_use_count_and_the_boost(store, indexer, searcher, capsys, db_path):
    first = make(store, "Answered: ferry times", FERRY, type="memory", created=days_ago(200))
    second = make(store, "Answered: ferry times", FERRY, type="memory", created=days_ago(200))
    indexer.run()
    used(store, second, 12, stamp(FIXED_NOW - timedelta(days=1)))
    eng = ContextEngine(store, searcher, profiles.get("orchestrator"))
    before = {h["id"]: h["boost"] for _, h in eng.scored_hits(MESSAGE, FIXED_NOW)}
    assert [p.node_id for p in eng.retrieve(MESSAGE, FIXED_NOW)][:2] == [second, first]

    assert cli(capsys, db_path, "rm", second, "--yes")[0] == 0
    rc, out, err = cli(capsys, db_path, "restore", second)
    assert rc == 0, err
    indexer.run()  # a restored node is indexed again
    assert access_of(store, second)["access_count"] == 12
    after = {h["id"]: h["boost"] for _, h in eng.scored_hits(MESSAGE, FIXED_NOW)}
    assert after == before
    assert [p.node_id for p in eng.retrieve(MESSAGE, FIXED_NOW)][:2] == [second, first]


# -- where the boost applies ------------------------------------------------------------------------
@pytest.fixture
def ferries(store, indexer):
    """Two identical memories (a tie for search, ordered by id); the second is the one used often."""
    first = make(store, "Answered: ferry times", FERRY, type="memory", created=days_ago(200))
    second = make(store, "Answered: ferry times", FERRY, type="memory", created=days_ago(200))
    indexer.run()
    used(store, second, 12, stamp(datetime.now(timezone.utc) - timedelta(days=1)))
    return first, second


def _order_in(text: str, ids: tuple[int, ...]) -> list[int]:
    found = {int(m.group(1)): m.start() for m in re.finditer(r"\[NODE:(\d+):", text)}
    return sorted((i for i in ids if i in found), key=found.get)


def test_cairn_context_shows_the_chats_ranking_and_previewing_is_not_a_use(store, ferries, searcher, cli_embedder,
                                                                           capsys, db_path):
    from core.chat.conversation import Chat
    from core.providers.factory import preview_provider

    first, second = ferries
    uses = access_rows(store)
    rc, out, err = cli(capsys, db_path, "context", MESSAGE)
    assert rc == 0, err
    retrieved = out[out.index("[Retrieved passages"):]
    assert _order_in(retrieved, ferries) == [second, first]  # boosted, as the chat ranks them

    cfg = config()
    chat = Chat(store, cfg, preview_provider(cfg), searcher=searcher)
    request = chat.request(MESSAGE)
    assert [p.node_id for p in request.suffix.passages][:2] == [second, first]
    rc, out, err = cli(capsys, db_path, "context", MESSAGE, "--chat", chat.id)
    assert rc == 0, err
    assert _order_in(out[out.index("[Retrieved passages"):], ferries) == [second, first]
    assert access_rows(store) == uses  # two previews later, still the same uses: the ranking shown holds


def test_cairn_search_and_the_search_tool_do_not_boost(store, ferries, embedder, cli_embedder, capsys, db_path):
    from core.agent.mcp_server import CairnTools

    first, second = ferries
    rc, out, err = cli(capsys, db_path, "search", MESSAGE, "--json")
    assert rc == 0, err
    hits = [h for h in json.loads(out) if h["id"] in ferries]
    assert [h["id"] for h in hits] == [first, second]  # the search's own tie order, the used one second
    assert hits[0]["score"] == hits[1]["score"] and not any("boost" in h for h in hits)

    tools = CairnTools(db_path, embedder=embedder)
    try:
        value, _notes = tools.call("searchContent", {"query": MESSAGE})
    finally:
        tools.close()
    found = [h for h in value if h["node_id"] in ferries]
    assert [h["node_id"] for h in found] == [first, second] and found[0]["score"] == found[1]["score"]


def test_the_boost_is_measured_on_the_chats_clock(store, indexer, searcher):
    """A memory used often long ago against one used once lately: which wins depends on when 'now' is,
    and the chat's clock (Chat(now=...)) decides it, in the request and in the engine's preview alike."""
    from core.chat.conversation import Chat
    from core.providers.factory import preview_provider

    often = make(store, "Answered: ferry times", FERRY, type="memory", created=stamp(FIXED_NOW - timedelta(days=900)))
    lately = make(store, "Answered: ferry times", FERRY, type="memory", created=stamp(FIXED_NOW - timedelta(days=900)))
    indexer.run()
    used(store, often, 20, stamp(FIXED_NOW - timedelta(days=400)))
    used(store, lately, 1, stamp(FIXED_NOW))
    cfg = config()
    for clock, expect in ((FIXED_NOW, [lately, often]), (FIXED_NOW + timedelta(days=3650), [often, lately])):
        chat = Chat(store, cfg, preview_provider(cfg), searcher=searcher, now=lambda c=clock: c)
        assert [p.node_id for p in chat.request(MESSAGE).suffix.passages][:2] == expect, clock
        eng = ContextEngine(store, searcher, profiles.get(cfg.chat.agent))
        assert [p.node_id for p in eng.suffix(MESSAGE, now=clock).passages][:2] == expect
