"""The vector mirror's load from vec0's shadow tables (core/index/vec0_shadow.py): the same rows as a
scan of the virtual tables, on a real sqlite-vec file with holes, replaced rows and title-only nodes;
and the scan whenever the layout or the read does not check out."""

import logging

import numpy as np
import pytest

import core.index.vec0_shadow as shadow
import core.index.vector_mirror as vm

DIMS = 384


def _vector(rng) -> bytes:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32).tobytes()


def _fill(store, rng, nodes: int, chunks_per_node: int, orphans: int) -> None:
    """Nodes with chunk vectors (over several vec0 chunks of 1,024 slots), some deleted and some
    re-inserted under new rowids (holes in the validity bitmaps), and nodes without chunks whose only
    vector is their node vector."""
    db = store.db
    with db.transaction():
        for n in range(nodes + orphans):
            node_id = db.execute("INSERT INTO nodes(title, created_at, updated_at) VALUES (?, ?, ?) RETURNING id",
                                 (f"note {n}", "2026-12-02", "2026-12-02")).fetchone()[0]
            db.execute("INSERT INTO vec_nodes(rowid, embedding) VALUES (?, ?)", (node_id, _vector(rng)))
            if n >= nodes:
                continue  # an orphan: a node vector only
            for i in range(chunks_per_node):
                chunk = db.execute(
                    "INSERT INTO chunks(node_id, chunk_idx, text, start_char, end_char, content_hash, embedding_type,"
                    " created_at) VALUES (?, ?, 't', 0, 1, 'h', 'm', '2026-12-02') RETURNING id",
                    (node_id, i)).fetchone()[0]
                db.execute("INSERT INTO vec_chunks(rowid, node_id, embedding) VALUES (?, ?, ?)",
                           (chunk, node_id, _vector(rng)))
        rowids = [r[0] for r in db.execute("SELECT rowid FROM vec_chunks")]
        for rowid in rng.choice(rowids, size=len(rowids) // 7, replace=False).tolist():
            db.execute("DELETE FROM vec_chunks WHERE rowid = ?", (rowid,))
        for rowid in rng.choice(rowids, size=40, replace=False).tolist():  # replaced: a new vector
            row = db.execute("SELECT node_id FROM chunks WHERE id = ?", (rowid,)).fetchone()
            db.execute("DELETE FROM vec_chunks WHERE rowid = ?", (rowid,))
            db.execute("INSERT INTO vec_chunks(rowid, node_id, embedding) VALUES (?, ?, ?)",
                       (rowid, row[0], _vector(rng)))


def _sorted(rows):
    rowids, node_ids, matrix = rows
    order = np.lexsort((rowids, node_ids))
    return rowids[order], node_ids[order], matrix[order]


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(_sorted(a), _sorted(b)))


@pytest.mark.parametrize("orphans", [3, vm.ORPHAN_LOOKUPS + 5])
def test_the_shadow_read_gives_what_the_scan_gives(store, orphans):
    rng = np.random.default_rng(16)
    _fill(store, rng, nodes=900, chunks_per_node=3, orphans=orphans)
    assert store.db.execute("SELECT COUNT(*) FROM vec_chunks_chunks").fetchone()[0] >= 3  # several vec0 chunks
    mirror = vm.VectorMirror(store.db, DIMS)
    read = mirror._read_shadow()
    assert read is not None
    scan = mirror._scan()
    assert len(read[0]) == len(scan[0]) == store.db.execute("SELECT COUNT(*) FROM vec_chunks").fetchone()[0] + orphans
    assert _same(read, scan)
    assert (read[0] == 0).sum() == orphans  # node vectors carry chunk id 0


def test_a_search_after_the_shadow_read_is_exact(store):
    rng = np.random.default_rng(7)
    _fill(store, rng, nodes=400, chunks_per_node=4, orphans=2)
    mirror = vm.VectorMirror(store.db, DIMS)
    query = np.frombuffer(_vector(rng), dtype=np.float32)
    rows = store.db.execute("SELECT rowid, node_id, embedding FROM vec_chunks").fetchall()
    exact = sorted(((float(np.frombuffer(r[2], dtype=np.float32) @ query), r[0]) for r in rows), reverse=True)[:10]
    got = [g for g in mirror.top(query, 12) if g[0] != 0][:10]
    assert [g[0] for g in got] == [e[1] for e in exact]


def test_an_unknown_layout_is_read_through_the_virtual_table(store, monkeypatch):
    rng = np.random.default_rng(3)
    _fill(store, rng, nodes=50, chunks_per_node=2, orphans=1)
    monkeypatch.setitem(shadow._LAYOUT, "chunks", shadow._LAYOUT["chunks"] + " -- another version")
    mirror = vm.VectorMirror(store.db, DIMS)
    assert mirror._read_shadow() is None
    mirror.sync()  # falls back to the scan
    assert len(mirror.rowids) == store.db.execute("SELECT COUNT(*) FROM vec_chunks").fetchone()[0] + 1
    monkeypatch.undo()
    monkeypatch.setattr(store.db, "execute", _version_answer(store.db.execute, "v0.2.0"))
    assert shadow.layout_known(store.db, "vec_chunks", int_column=True) is False


def _version_answer(real, version):
    def execute(sql, *args):
        return real(f"SELECT '{version}'") if sql == "SELECT vec_version()" else real(sql, *args)
    return execute


def test_a_read_that_does_not_check_out_falls_back_and_says_so(store, monkeypatch, caplog):
    rng = np.random.default_rng(5)
    _fill(store, rng, nodes=60, chunks_per_node=2, orphans=0)
    real = store.db.execute

    def miscount(sql, *args):  # the rowids table says one more vector than the chunks hold
        if sql == 'SELECT COUNT(*) FROM "vec_chunks_rowids"':
            return real("SELECT COUNT(*) + 1 FROM vec_chunks_rowids")
        return real(sql, *args)

    monkeypatch.setattr(store.db, "execute", miscount)
    with caplog.at_level(logging.WARNING, logger="cairn.index"):
        assert shadow.read(store.db, "vec_chunks", DIMS, int_column="node_id") is None
    assert "reading through the virtual table" in caplog.text
    monkeypatch.undo()

    def corrupt(sql, *args):  # a chunk's vectors differ from what the virtual table answers
        cursor = real(sql, *args)
        if sql.startswith('SELECT vectors FROM "vec_chunks_vector_chunks00"'):
            blob = cursor.fetchone()[0]
            return real("SELECT ?", (bytes(len(blob)),))
        return cursor

    monkeypatch.setattr(store.db, "execute", corrupt)
    assert shadow.read(store.db, "vec_chunks", DIMS, int_column="node_id") is None
    monkeypatch.undo()
    assert not store.db.conn.in_transaction  # its read transaction ended either way


def test_the_mirror_reloads_after_a_write_and_reads_the_new_rows(store):
    rng = np.random.default_rng(9)
    _fill(store, rng, nodes=30, chunks_per_node=2, orphans=0)
    mirror = vm.VectorMirror(store.db, DIMS)
    mirror.sync()
    before = len(mirror.rowids)
    victim = int(mirror.rowids[0])
    with store.db.transaction():
        store.db.execute("DELETE FROM vec_chunks WHERE rowid = ?", (victim,))
        store.db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation'")
    mirror.sync()
    assert len(mirror.rowids) == before - 1 and victim not in mirror.rowids.tolist()
