"""The store over a real SQLite file: schema, pragmas, migrations, nodes, edges, trash, hubs."""

from __future__ import annotations

import json

import pytest

import core.graph.db
from core.graph.db import Database
from core.errors import DatabaseError, InvalidInput, NotFound
from core.graph.migrations import MIGRATIONS
from core.graph.store import MAX_TITLE, Store

NODE_KEYS = {
    "id", "title", "description", "source", "link", "event_date", "type", "dimensions",
    "chunk_status", "created_at", "updated_at",
}
OLD_STAMP = "2000-01-01T00:00:00.000Z"


def _set_updated(store: Store, node_id: int, stamp: str) -> None:
    with store.db.transaction() as conn:
        conn.execute("UPDATE nodes SET updated_at = ? WHERE id = ?", (stamp, node_id))


def _counts(store: Store) -> tuple[int, int, int]:
    row = store.db.execute(
        "SELECT (SELECT COUNT(*) FROM nodes), (SELECT COUNT(*) FROM edges), (SELECT COUNT(*) FROM node_dimensions)"
    ).fetchone()
    return tuple(row)


# -- schema, pragmas, migrations ---------------------------------------------------------------
def test_pragmas_and_schema_version(store):
    conn = store.db.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    # synchronous=NORMAL is 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_fresh_install_creates_the_designed_tables(store):
    names = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    for table in ("nodes", "edges", "chunks", "nodes_fts", "chunks_fts", "vec_nodes", "vec_chunks",
                  "chats", "messages", "sent_log", "meta", "trash"):
        assert table in names, table


def test_reopening_is_idempotent(db_path):
    with Store(db_path) as s:
        node = s.add_node("Persisted", "kept across opens", dimensions=["x"])
        schema = sorted(tuple(r) for r in s.db.execute("SELECT type, name, sql FROM sqlite_master"))
    for _ in range(2):
        with Store(db_path) as s:
            assert s.db.user_version == len(MIGRATIONS)
            assert sorted(tuple(r) for r in s.db.execute("SELECT type, name, sql FROM sqlite_master")) == schema
            assert s.get_node(node["id"]) == node
            assert s.counts()["nodes"] == 1
    # an open of an up-to-date database makes no migration backup
    assert not list(db_path.parent.glob("*.bak"))


def test_newer_schema_is_refused_with_a_clear_message(db_path):
    Store(db_path).close()
    db = Database(db_path, migrate=False)
    db.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    db.close()
    with pytest.raises(DatabaseError) as info:
        Store(db_path)
    message = str(info.value)
    assert "newer" in message.lower()
    assert str(len(MIGRATIONS) + 5) in message
    assert "Upgrade" in message


def test_migration_backs_up_the_database_first(db_path, monkeypatch):
    with Store(db_path) as s:
        s.add_node("Before the upgrade", "old data")
    # A future migration: the same list plus one more step.
    monkeypatch.setattr(core.graph.db, "MIGRATIONS", [*MIGRATIONS, ["CREATE TABLE added_later (x INTEGER)"]])
    with Store(db_path) as s:
        assert s.db.user_version == len(MIGRATIONS) + 1
        assert s.db.execute("SELECT COUNT(*) FROM added_later").fetchone()[0] == 0
        assert s.counts()["nodes"] == 1
    backups = list(db_path.parent.glob("*.bak"))
    assert len(backups) == 1, backups
    raw = core.graph.db.sqlite.connect(str(backups[0]))
    try:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert raw.execute("SELECT title FROM nodes").fetchall() == [("Before the upgrade",)]
        assert not raw.execute("SELECT 1 FROM sqlite_master WHERE name = 'added_later'").fetchall()
    finally:
        raw.close()


# -- nodes -------------------------------------------------------------------------------------
def test_node_crud_has_one_shape(store):
    node = store.add_node(
        "  Graph theory  ",
        "Graphs are made of vertices and edges.",
        description="Intro notes",
        link=" https://example.org/graphs ",
        event_date="2024-03-05",
        dimensions=["math", "research"],
    )
    assert set(node) == NODE_KEYS
    assert node["title"] == "Graph theory"
    assert node["link"] == "https://example.org/graphs"
    assert node["event_date"] == "2024-03-05"
    assert node["type"] == "note"
    assert node["dimensions"] == ["math", "research"]
    assert node["chunk_status"] == "pending"
    assert node["created_at"] == node["updated_at"]
    assert node["created_at"].endswith("Z")

    assert store.get_node(node["id"]) == node
    assert store.get_nodes([node["id"], 999_999, node["id"]]) == [node, node]

    updated = store.update_node(node["id"], description="Better intro", dimensions=["math"])
    assert set(updated) == NODE_KEYS
    assert updated["description"] == "Better intro"
    assert updated["dimensions"] == ["math"]
    assert updated["created_at"] == node["created_at"]
    assert store.get_node(node["id"]) == updated

    deleted = store.delete_node(node["id"])
    assert set(deleted) == NODE_KEYS
    with pytest.raises(NotFound):
        store.get_node(node["id"])
    with pytest.raises(NotFound):
        store.update_node(node["id"], title="gone")
    with pytest.raises(NotFound):
        store.delete_node(node["id"])


def test_updated_at_changes_on_update_but_not_on_noop(store):
    node = store.add_node("Stamped", "text", link="https://a.example", dimensions=["a"])
    _set_updated(store, node["id"], OLD_STAMP)

    same = store.update_node(node["id"], title="Stamped", source="text", link="https://a.example", dimensions=["a"])
    assert same["updated_at"] == OLD_STAMP

    changed = store.update_node(node["id"], link="https://b.example")
    assert changed["updated_at"] > OLD_STAMP
    assert store.get_node(node["id"])["updated_at"] == changed["updated_at"]


def test_text_changes_requeue_indexing_but_link_changes_do_not(store, indexer):
    node = store.add_node("Indexed note", "Some text to index.")
    indexer.run()
    assert store.get_node(node["id"])["chunk_status"] == "indexed"

    assert store.update_node(node["id"], link="https://x.example")["chunk_status"] == "indexed"
    assert store.update_node(node["id"], event_date="2020-02-02")["chunk_status"] == "indexed"
    assert store.update_node(node["id"], dimensions=["new"])["chunk_status"] == "indexed"

    assert store.update_node(node["id"], title="Renamed note")["chunk_status"] == "pending"
    indexer.run()
    assert store.update_node(node["id"], source="Different text.")["chunk_status"] == "pending"
    indexer.run()
    assert store.update_node(node["id"], description="Now described")["chunk_status"] == "pending"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"title": ""},
        {"title": "   \n\t "},
        {"title": "bad\x00title"},
        {"title": "x" * (MAX_TITLE + 1)},
        {"title": "ok", "source": "binary\x00data"},
        {"title": "ok", "description": "nul\x00"},
        {"title": "ok", "event_date": "2024-13-01"},
        {"title": "ok", "event_date": "yesterday"},
        {"title": "ok", "type": ""},
        {"title": "ok", "dimensions": ["y" * 65]},
        {"title": 42},
    ],
)
def test_invalid_node_input_is_refused_and_writes_nothing(store, kwargs):
    keep = store.add_node("Existing", "untouched", dimensions=["kept"])
    before = _counts(store)
    with pytest.raises(InvalidInput) as info:
        store.add_node(**kwargs)
    assert str(info.value)  # a sentence the user can read
    assert _counts(store) == before
    update = {k: v for k, v in kwargs.items()}
    with pytest.raises(InvalidInput):
        store.update_node(keep["id"], **update)
    assert store.get_node(keep["id"]) == keep
    assert _counts(store) == before


def test_max_length_title_is_accepted(store):
    node = store.add_node("t" * MAX_TITLE)
    assert len(node["title"]) == MAX_TITLE


def test_unknown_update_field_is_refused(store):
    node = store.add_node("A")
    with pytest.raises(InvalidInput):
        store.update_node(node["id"], chunk_status="indexed")
    assert store.get_node(node["id"]) == node


# -- dimensions ----------------------------------------------------------------------------------
def test_dimensions_are_cleaned_deduplicated_and_filterable(store):
    a = store.add_node("Alpha", dimensions=[" #AI ", "ai", "Machine   learning", "", "  ", "research"])
    assert a["dimensions"] == ["AI", "Machine learning", "research"]
    b = store.add_node("Beta", dimensions=["ai"])
    c = store.add_node("Gamma", dimensions=["cooking"])
    store.add_node("Delta")

    ai = store.recent(dimension="ai")
    assert {n["id"] for n in ai} == {a["id"], b["id"]}
    assert {n["id"] for n in store.nodes_by_dimension("AI")} == {a["id"], b["id"]}
    assert [n["id"] for n in store.nodes_by_dimension("cooking")] == [c["id"]]
    assert store.nodes_by_dimension("nothing-here") == []

    dims = {d["dimension"].lower(): d["count"] for d in store.dimensions()}
    assert dims == {"ai": 2, "machine learning": 1, "research": 1, "cooking": 1}
    assert store.dimensions()[0]["count"] == 2  # most used first

    store.update_node(b["id"], dimensions=["cooking"])
    assert {n["id"] for n in store.nodes_by_dimension("ai")} == {a["id"]}
    assert {n["id"] for n in store.nodes_by_dimension("cooking")} == {b["id"], c["id"]}
    store.delete_node(a["id"])
    assert store.nodes_by_dimension("ai") == []
    assert "ai" not in {d["dimension"].lower() for d in store.dimensions()}


# -- delete leaves nothing behind --------------------------------------------------------------
def _rows_for(store: Store, node_id: int, chunk_ids: list[int], word: str) -> dict[str, int]:
    q = store.db.execute
    ids = json.dumps(chunk_ids)
    return {
        "nodes": q("SELECT COUNT(*) FROM nodes WHERE id = ?", (node_id,)).fetchone()[0],
        "edges": q("SELECT COUNT(*) FROM edges WHERE from_node_id = ?1 OR to_node_id = ?1", (node_id,)).fetchone()[0],
        "chunks": q("SELECT COUNT(*) FROM chunks WHERE node_id = ?", (node_id,)).fetchone()[0],
        "node_dimensions": q("SELECT COUNT(*) FROM node_dimensions WHERE node_id = ?", (node_id,)).fetchone()[0],
        "nodes_fts": q("SELECT COUNT(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (f'"{word}"',)).fetchone()[0],
        "chunks_fts": q("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{word}"',)).fetchone()[0],
        "vec_nodes": q("SELECT COUNT(*) FROM vec_nodes WHERE rowid = ?", (node_id,)).fetchone()[0],
        "vec_chunks": q("SELECT COUNT(*) FROM vec_chunks WHERE rowid IN (SELECT value FROM json_each(?))",
                        (ids,)).fetchone()[0],
        "vec_chunks_by_node": q("SELECT COUNT(*) FROM vec_chunks WHERE node_id = ?", (node_id,)).fetchone()[0],
    }


def test_delete_leaves_no_row_behind_in_any_table(store, indexer):
    body = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"Zygomorphic flowers sentence {i}.{j} about petals." for j in range(30))
        for i in range(4)
    )
    doomed = store.add_node("Zygomorphic flowers", body, dimensions=["botany"])
    other = store.add_node("Neighbour", "Unrelated text about trains.")
    store.add_edge(doomed["id"], other["id"], "mentions")
    store.add_edge(other["id"], doomed["id"], "is mentioned by")
    indexer.run()
    chunk_ids = [r[0] for r in store.db.execute("SELECT id FROM chunks WHERE node_id = ?", (doomed["id"],))]
    assert len(chunk_ids) > 1

    before = _rows_for(store, doomed["id"], chunk_ids, "zygomorphic")
    assert all(v > 0 for v in before.values()), before

    store.delete_node(doomed["id"])
    after = _rows_for(store, doomed["id"], chunk_ids, "zygomorphic")
    assert after == {k: 0 for k in after}
    # the neighbour and its own index are untouched
    assert store.get_node(other["id"])["chunk_status"] == "indexed"
    assert _rows_for(store, other["id"], [], "trains")["nodes_fts"] == 1
    assert store.db.execute("SELECT COUNT(*) FROM vec_nodes WHERE rowid = ?", (other["id"],)).fetchone()[0] == 1
    assert store.db.execute("SELECT COUNT(*) FROM vec_chunks WHERE node_id = ?", (other["id"],)).fetchone()[0] == 1


def test_trash_and_restore_bring_node_and_edges_back(store, indexer):
    a = store.add_node("Paper", "About ferns.", link="https://f.example", event_date="2023-01-02",
                       dimensions=["botany", "reading"], metadata={"doi": "10.1/x"})
    b = store.add_node("Author")
    c = store.add_node("Venue")
    e1 = store.add_edge(a["id"], b["id"], "Paper was written by Author", context={"confidence": 0.5})
    e2 = store.add_edge(c["id"], a["id"], "Venue published Paper")
    indexer.run()
    original = store.get_node(a["id"])

    store.delete_node(a["id"])
    assert store.edges(b["id"]) == [] and store.edges(c["id"]) == []
    listing = store.trash()
    assert len(listing) == 1
    assert listing[0]["node_id"] == a["id"] and listing[0]["title"] == "Paper" and listing[0]["edges"] == 2

    restored = store.restore_node(a["id"])
    for key in ("id", "title", "description", "source", "link", "event_date", "type", "dimensions", "created_at"):
        assert restored[key] == original[key], key
    assert restored["chunk_status"] == "pending"  # re-indexed on the next run
    assert store.get_node(a["id"]).get("metadata") == {"doi": "10.1/x"}
    assert {e["id"] for e in store.edges(a["id"])} == {e1["id"], e2["id"]}
    assert store.get_edge(e1["id"])["explanation"] == "Paper was written by Author"
    assert store.get_edge(e1["id"])["context"]["confidence"] == 0.5
    assert {n["id"] for n in store.nodes_by_dimension("botany")} == {a["id"]}
    assert store.trash() == []
    with pytest.raises(NotFound):
        store.restore_node(a["id"])

    indexer.run()
    hits = store.db.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH 'ferns'").fetchall()
    assert [h[0] for h in hits] == [a["id"]]


def test_restore_skips_edges_whose_other_end_is_gone(store):
    a = store.add_node("A")
    b = store.add_node("B")
    c = store.add_node("C")
    store.add_edge(a["id"], b["id"], "a to b")
    keep = store.add_edge(a["id"], c["id"], "a to c")
    store.delete_node(a["id"])
    store.delete_node(b["id"])
    store.restore_node(a["id"])
    assert [e["id"] for e in store.edges(a["id"])] == [keep["id"]]


# -- edges ---------------------------------------------------------------------------------------
def test_edges_in_both_directions_with_titles(store):
    a = store.add_node("Alice")
    b = store.add_node("Bob")
    c = store.add_node("Carol")
    ab = store.add_edge(a["id"], b["id"], "Alice mentors Bob")
    ca = store.add_edge(c["id"], a["id"], "Carol cites Alice")
    assert ab["context"]["type"] == "related"
    assert set(ab["context"]) >= {"type", "confidence", "created_via", "inferred_at"}

    out = store.edges(a["id"], "out")
    assert [(e["id"], e["from_title"], e["to_title"]) for e in out] == [(ab["id"], "Alice", "Bob")]
    inc = store.edges(a["id"], "in")
    assert [(e["id"], e["from_title"], e["to_title"]) for e in inc] == [(ca["id"], "Carol", "Alice")]
    assert {e["id"] for e in store.edges(a["id"])} == {ab["id"], ca["id"]}
    assert [e["id"] for e in store.edges(b["id"], "in")] == [ab["id"]]
    assert store.edges(b["id"], "out") == []
    with pytest.raises(InvalidInput):
        store.edges(a["id"], "sideways")

    store.update_node(b["id"], title="Robert")
    assert store.edges(a["id"], "out")[0]["to_title"] == "Robert"

    edited = store.update_edge(ab["id"], explanation="Alice taught Bob", context={"confidence": 0.9})
    assert edited["explanation"] == "Alice taught Bob" and edited["context"]["confidence"] == 0.9
    store.delete_edge(ab["id"])
    assert store.edges(a["id"], "out") == []


def test_duplicate_self_and_dangling_edges_are_refused(store):
    a = store.add_node("A")
    b = store.add_node("B")
    first = store.add_edge(a["id"], b["id"], "first")
    with pytest.raises(InvalidInput) as info:
        store.add_edge(a["id"], b["id"], "again")
    assert str(first["id"]) in str(info.value)
    with pytest.raises(InvalidInput):
        store.add_edge(a["id"], a["id"], "myself")
    with pytest.raises(InvalidInput):
        store.add_edge(a["id"], b["id"], "   ")
    with pytest.raises(NotFound):
        store.add_edge(a["id"], 987_654, "nobody")
    assert store.counts()["edges"] == 1
    # the reverse direction is a different edge
    store.add_edge(b["id"], a["id"], "back")
    assert store.counts()["edges"] == 2


# -- hubs ----------------------------------------------------------------------------------------
def test_hubs_count_distinct_edges_both_ways_exclude_memory_and_break_ties_by_recency(store):
    hub = store.add_node("Hub")
    spokes = [store.add_node(f"Spoke {i}") for i in range(4)]
    older = store.add_node("Older tie")
    newer = store.add_node("Newer tie")
    memory = store.add_node("Memory blob", type="memory")

    # hub: 2 out + 2 in + a pair of opposite edges to one spoke + one from memory = 6 distinct edges
    store.add_edge(hub["id"], spokes[0]["id"], "h->0")
    store.add_edge(hub["id"], spokes[1]["id"], "h->1")
    store.add_edge(spokes[2]["id"], hub["id"], "2->h")
    store.add_edge(spokes[3]["id"], hub["id"], "3->h")
    store.add_edge(spokes[0]["id"], hub["id"], "0->h")
    # two nodes tied at 4 edges; a memory node with more edges (7) than anyone
    for n in (older, newer):
        for s in spokes[:3]:
            store.add_edge(n["id"], s["id"], "tie")
    for s in [*spokes, older, newer, hub]:
        store.add_edge(memory["id"], s["id"], "memory link")

    _set_updated(store, newer["id"], "2030-01-01T00:00:00.000Z")
    _set_updated(store, older["id"], "2001-01-01T00:00:00.000Z")

    hubs = store.hubs(limit=10)
    assert memory["id"] not in {h["id"] for h in hubs}
    assert hubs[0]["id"] == hub["id"] and hubs[0]["edge_count"] == 6
    ranked = [(h["title"], h["edge_count"]) for h in hubs]
    # spoke 0: h->0, 0->h, older, newer, memory = 5 (edges to a memory node still count for the spoke)
    assert ("Spoke 0", 5) in ranked
    assert ranked.index(("Newer tie", 4)) < ranked.index(("Older tie", 4))
    counts = [h["edge_count"] for h in hubs]
    assert counts == sorted(counts, reverse=True)
    assert set(hubs[0]) >= NODE_KEYS | {"edge_count"}

    # flip the recency: the tie order flips
    _set_updated(store, older["id"], "2040-01-01T00:00:00.000Z")
    ranked = [h["title"] for h in store.hubs(limit=10)]
    assert ranked.index("Older tie") < ranked.index("Newer tie")

    top2 = store.hubs(limit=2)
    assert len(top2) == 2
    assert [h["id"] for h in top2] == [h["id"] for h in store.hubs(limit=10)[:2]]


def test_nodes_without_edges_are_not_hubs(store):
    store.add_node("Lonely")
    assert store.hubs() == []


def test_undecodable_text_is_refused_with_a_clear_error(store):
    """Text read with errors='surrogateescape' (e.g. `cat file | cairn add` under a C locale) carries lone
    surrogates that SQLite cannot store; the user should get InvalidInput, not a UnicodeEncodeError."""
    keep = store.add_node("Existing")
    before = _counts(store)
    for kwargs in ({"title": "bad \udc80 bytes"}, {"title": "ok", "source": "caf\udce9"}):
        with pytest.raises(InvalidInput):
            store.add_node(**kwargs)
        with pytest.raises(InvalidInput):
            store.update_node(keep["id"], **kwargs)
    assert _counts(store) == before
    assert store.get_node(keep["id"]) == keep
