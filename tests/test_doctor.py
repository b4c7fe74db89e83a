"""`cairn doctor`: each kind of damage is found, `--repair` fixes it, and afterwards the index is clean."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from core.ops import doctor
from core.graph.db import Database
from core.index.indexer import Indexer
from core.search.searcher import Searcher

SECTIONED = "\n\n".join(
    f"## Part {i}\n\n" + " ".join(f"Line {k} of part {i} about lighthouses and keepers." for k in range(6))
    for i in range(3)
)


@contextlib.contextmanager
def raw(db_path, *, foreign_keys: bool = True):
    """A second, independent connection with sqlite-vec loaded, as another process would have."""
    db = Database(db_path, migrate=False)
    try:
        if not foreign_keys:
            db.conn.execute("PRAGMA foreign_keys = OFF")
        yield db.conn
    finally:
        db.close()


def _vector(seed: int) -> bytes:
    v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return (v / np.linalg.norm(v)).tobytes()


def _fts_count(store, table: str, word: str) -> int:
    return store.db.execute(f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?", (f'"{word}"',)).fetchone()[0]


def _by_check(report) -> dict[str, int]:
    return {f.check: f.count for f in report.findings}


@pytest.fixture
def indexed(store, embedder):
    ids = {
        "plain": store.add_node("Plain note", "A short note about herons and wading birds.")["id"],
        "long": store.add_node("Lighthouse log", SECTIONED, description="Keepers")["id"],
        "other": store.add_node("Other note", "Trains, timetables and platforms.")["id"],
    }
    Indexer(store, embedder).run()
    return ids


def _repair(store, embedder):
    return doctor.check(
        store, repair=True, embedder_name=embedder.name, reindex=lambda: Indexer(store, embedder).run().indexed
    )


def _assert_clean(store, embedder):
    report = doctor.check(store, embedder_name=embedder.name)
    assert report.clean, report.as_dict()
    assert all(f.count == 0 for f in report.findings), report.as_dict()


def test_a_healthy_index_is_clean(store, embedder, indexed):
    report = doctor.check(store, embedder_name=embedder.name)
    assert report.clean
    names = set(_by_check(report))
    assert names >= {"sqlite_integrity", "orphan_chunks", "orphan_chunk_vectors", "orphan_node_vectors",
                     "missing_vectors", "stale_vectors", "nodes_fts_integrity", "chunks_fts_integrity",
                     "index_errors", "pending"}
    assert all(count == 0 for count in _by_check(report).values())


# -- each fault --------------------------------------------------------------------------------------
def fault_orphan_chunk(store, db_path, ids):
    with raw(db_path, foreign_keys=False) as conn:
        conn.execute(
            "INSERT INTO chunks(node_id, chunk_idx, text, start_char, end_char, heading_path, content_hash,"
            " embedding_type, created_at) VALUES (424242, 0, 'ghostly orphaned passage', 0, 24, '[]', 'x', 'm', 't')"
        )
    assert _fts_count(store, "chunks_fts", "ghostly") == 1


def check_orphan_chunk(store, ids):
    assert store.db.execute("SELECT COUNT(*) FROM chunks WHERE node_id = 424242").fetchone()[0] == 0
    assert _fts_count(store, "chunks_fts", "ghostly") == 0


def fault_orphan_chunk_vector(store, db_path, ids):
    with raw(db_path) as conn:
        conn.execute("INSERT INTO vec_chunks(rowid, node_id, embedding) VALUES (777777, ?, ?)",
                     (ids["plain"], _vector(1)))


def check_orphan_chunk_vector(store, ids):
    assert store.db.execute("SELECT COUNT(*) FROM vec_chunks WHERE rowid = 777777").fetchone()[0] == 0


def fault_orphan_node_vector(store, db_path, ids):
    with raw(db_path) as conn:
        conn.execute("INSERT INTO vec_nodes(rowid, embedding) VALUES (888888, ?)", (_vector(2),))


def check_orphan_node_vector(store, ids):
    assert store.db.execute("SELECT COUNT(*) FROM vec_nodes WHERE rowid = 888888").fetchone()[0] == 0


def fault_missing_node_vector(store, db_path, ids):
    with raw(db_path) as conn:
        conn.execute("DELETE FROM vec_nodes WHERE rowid = ?", (ids["plain"],))


def check_missing_node_vector(store, ids):
    assert store.db.execute("SELECT COUNT(*) FROM vec_nodes WHERE rowid = ?", (ids["plain"],)).fetchone()[0] == 1


def fault_missing_chunk_vector(store, db_path, ids):
    with raw(db_path) as conn:
        conn.execute("DELETE FROM vec_chunks WHERE rowid = (SELECT MIN(id) FROM chunks WHERE node_id = ?)",
                     (ids["long"],))


def check_missing_chunk_vector(store, ids):
    n = store.db.execute(
        "SELECT COUNT(*) FROM chunks c WHERE c.node_id = ? AND c.id NOT IN (SELECT rowid FROM vec_chunks)",
        (ids["long"],)).fetchone()[0]
    assert n == 0


def fault_stale_vector(store, db_path, ids):
    # another tool rewrote the text behind Cairn's back, without marking the node pending
    with raw(db_path) as conn:
        conn.execute("UPDATE nodes SET source = 'Now this note is about kingfishers.' WHERE id = ?", (ids["plain"],))


def check_stale_vector(store, ids):
    texts = [r[0] for r in store.db.execute("SELECT text FROM chunks WHERE node_id = ?", (ids["plain"],))]
    assert texts == ["Now this note is about kingfishers."]
    hits = Searcher(store).search("kingfishers", mode="fts")
    assert [h["id"] for h in hits] == [ids["plain"]] and "kingfishers" in hits[0]["chunk"]["text"]


def fault_other_embedder(store, db_path, ids):
    with raw(db_path) as conn:
        conn.execute("UPDATE chunks SET embedding_type = 'some-older-model' WHERE node_id = ?", (ids["other"],))


def check_other_embedder(store, ids):
    kinds = {r[0] for r in store.db.execute("SELECT embedding_type FROM chunks")}
    assert kinds == {Indexer(store).embedder.name}


def fault_nodes_fts_desync(store, db_path, ids):
    node = store.get_node(ids["long"])
    with raw(db_path) as conn:
        conn.execute(
            "INSERT INTO nodes_fts(nodes_fts, rowid, title, description, source) VALUES ('delete', ?, ?, ?, ?)",
            (node["id"], node["title"], node["description"], node["source"]),
        )
    assert _fts_count(store, "nodes_fts", "keepers") == 0  # the note can no longer be found by its words


def check_nodes_fts_desync(store, ids):
    assert _fts_count(store, "nodes_fts", "keepers") == 1
    assert [h["id"] for h in Searcher(store).search("keepers", mode="fts")] == [ids["long"]]


def fault_nodes_fts_extra_row(store, db_path, ids):
    with raw(db_path) as conn:
        conn.execute("INSERT INTO nodes_fts(rowid, title, description, source) VALUES (?, 'phantom', '', '')",
                     (ids["other"],))
    assert _fts_count(store, "nodes_fts", "phantom") == 1


def check_nodes_fts_extra_row(store, ids):
    assert _fts_count(store, "nodes_fts", "phantom") == 0
    assert _fts_count(store, "nodes_fts", "timetables") == 1


def fault_chunks_fts_desync(store, db_path, ids):
    with raw(db_path) as conn:
        row = conn.execute("SELECT id, text FROM chunks WHERE node_id = ?", (ids["other"],)).fetchone()
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', ?, ?)", (row[0], row[1]))
    assert _fts_count(store, "chunks_fts", "timetables") == 0


def check_chunks_fts_desync(store, ids):
    assert _fts_count(store, "chunks_fts", "timetables") == 1


def fault_error_node(store, db_path, ids):
    with raw(db_path) as conn:
        conn.execute("UPDATE nodes SET chunk_status = 'error', index_error = 'boom' WHERE id = ?", (ids["other"],))


def check_error_node(store, ids):
    assert store.get_node(ids["other"])["chunk_status"] == "indexed"


def fault_pending_node(store, db_path, ids):
    ids["new"] = store.add_node("Fresh capture", "Written but not yet indexed: about otters.")["id"]


def check_pending_node(store, ids):
    assert store.get_node(ids["new"])["chunk_status"] == "indexed"
    assert store.db.execute("SELECT COUNT(*) FROM vec_nodes WHERE rowid = ?", (ids["new"],)).fetchone()[0] == 1


FAULTS = [
    ("orphan_chunks", fault_orphan_chunk, check_orphan_chunk),
    ("orphan_chunk_vectors", fault_orphan_chunk_vector, check_orphan_chunk_vector),
    ("orphan_node_vectors", fault_orphan_node_vector, check_orphan_node_vector),
    ("missing_vectors", fault_missing_node_vector, check_missing_node_vector),
    ("missing_vectors", fault_missing_chunk_vector, check_missing_chunk_vector),
    ("stale_vectors", fault_stale_vector, check_stale_vector),
    ("stale_vectors", fault_other_embedder, check_other_embedder),
    ("nodes_fts_integrity", fault_nodes_fts_desync, check_nodes_fts_desync),
    ("nodes_fts_integrity", fault_nodes_fts_extra_row, check_nodes_fts_extra_row),
    ("chunks_fts_integrity", fault_chunks_fts_desync, check_chunks_fts_desync),
    ("index_errors", fault_error_node, check_error_node),
    ("pending", fault_pending_node, check_pending_node),
]


@pytest.mark.parametrize("name, inject, verify", FAULTS, ids=[f[1].__name__[6:] for f in FAULTS])
def test_doctor_finds_and_repairs(store, embedder, indexed, db_path, name, inject, verify):
    inject(store, db_path, indexed)

    found = doctor.check(store, embedder_name=embedder.name)
    assert not found.clean
    assert _by_check(found)[name] >= 1, found.as_dict()
    # a check alone changes nothing: the damage is still there
    assert _by_check(doctor.check(store, embedder_name=embedder.name))[name] >= 1

    repaired = _repair(store, embedder)
    assert repaired.clean, repaired.as_dict()
    assert any(f.check == name and f.count and f.repaired for f in repaired.findings)
    verify(store, indexed)
    _assert_clean(store, embedder)


def test_doctor_repairs_everything_at_once(store, embedder, indexed, db_path):
    for _, inject, _ in FAULTS:
        inject(store, db_path, indexed)
    found = _by_check(doctor.check(store, embedder_name=embedder.name))
    for name in {f[0] for f in FAULTS}:
        assert found[name] >= 1, (name, found)

    repaired = _repair(store, embedder)
    assert repaired.clean, repaired.as_dict()
    assert repaired.reindexed >= 1
    for _, _, verify in FAULTS:
        verify(store, indexed)
    _assert_clean(store, embedder)


def test_repair_keeps_the_vector_mirror_consistent(store, embedder, indexed, db_path):
    searcher = Searcher(store, embedder, mirror=True)
    fault_orphan_chunk_vector(store, db_path, indexed)
    searcher.search("herons", mode="vector")  # loads the mirror, orphan included
    assert 777777 in searcher.mirror.rowids.tolist()
    _repair(store, embedder)
    searcher.search("herons", mode="vector")
    live = {r[0] for r in store.db.execute("SELECT rowid FROM vec_chunks")}
    assert set(searcher.mirror.rowids.tolist()) == live
    assert 777777 not in live


def test_without_a_reindexer_repair_does_not_claim_vectors_are_fixed(store, embedder, indexed, db_path):
    fault_missing_node_vector(store, db_path, indexed)
    report = doctor.check(store, repair=True, embedder_name=embedder.name)
    assert not report.clean
    missing = next(f for f in report.findings if f.check == "missing_vectors")
    assert missing.count == 1 and not missing.repaired
    # the node was re-queued, so `cairn index` finishes the job
    assert store.get_node(indexed["plain"])["chunk_status"] == "pending"
    Indexer(store, embedder).run()
    _assert_clean(store, embedder)


def test_repair_is_offered_only_for_what_it_can_fix(store, db_path, monkeypatch, capsys):
    from core.assist import mentions
    from core.errors import EmbedderError
    from tui.cli.main import main

    report = doctor.DoctorReport([doctor.Finding("link_dictionary", 1, "missing"), doctor.Finding("pending", 0, "")])
    assert not report.clean and report.repairable == []
    report.findings.append(doctor.Finding("orphan_chunks", 2, "2 chunks whose node was deleted"))
    assert [f.check for f in report.repairable] == ["orphan_chunks"]

    def missing():
        raise EmbedderError("tokenizer.json is missing; reinstall it.")

    monkeypatch.setattr(mentions, "_vocabulary_file", missing)
    monkeypatch.setattr(mentions, "_dictionary", None)
    monkeypatch.setattr(mentions, "_dictionary_problem", None)
    assert main(["doctor", "--db", str(db_path)]) == 1
    out = capsys.readouterr().out
    assert "link_dictionary" in out and "tokenizer.json is missing" in out
    assert "--repair" not in out  # it cannot fix a missing file: the finding says what does
