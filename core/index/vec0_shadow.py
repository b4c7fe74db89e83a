"""Reading a vec0 table's vectors straight from its shadow tables, for the vector mirror's load.

A full scan of a vec0 table (`SELECT rowid, node_id, embedding FROM vec_chunks`) goes through the
virtual table row by row: 26 s for 1M chunk vectors (bench/store.py mirror_load_s), 6.2 s for 200k.
vec0 keeps its rows in chunks of slots (sqlite-vec's ARCHITECTURE.md, "Shadow Tables"):

  {t}_chunks(chunk_id, size, validity, rowids)  one row per chunk of `size` slots: a bitmap of the
                                                slots in use (bit i of byte i // 8, least significant
                                                first) and each slot's rowid (int64)
  {t}_vector_chunks00(rowid, vectors)           the chunk's vectors, `size` x dims float32
  {t}_metadatachunks00(rowid, data)             an integer metadata column: `size` int64
  {t}_rowids(rowid, id, chunk_id, chunk_offset) one row per stored vector

so one read per chunk of 1,024 vectors does the same work in a fraction of the time. These tables
are sqlite-vec's internals, not its interface: this reader runs only on the layout it was written
against (sqlite-vec 0.1.x, the shadow tables' CREATE statements as 0.1.9 writes them), checks every
blob's length and the number of slots in use against `{t}_rowids`, and compares a few rows with the
virtual table's own point lookups. Anything else and it returns None: the mirror then scans the
virtual table as before (slower, never wrong). tests/test_vector_mirror.py compares both reads on
tables with deleted and replaced rows.
"""

from __future__ import annotations

import logging

import numpy as np

from core.graph.db import Database

log = logging.getLogger("cairn.index")

# The shadow tables as sqlite-vec 0.1.9 creates them (sqlite_master.sql, read from a real database).
_LAYOUT = {
    "chunks": 'CREATE TABLE "{t}_chunks"(chunk_id INTEGER PRIMARY KEY AUTOINCREMENT,size INTEGER NOT NULL,'
              'validity BLOB NOT NULL,rowids BLOB NOT NULL)',
    "rowids": 'CREATE TABLE "{t}_rowids"(rowid INTEGER PRIMARY KEY AUTOINCREMENT,id,chunk_id INTEGER,chunk_offset INTEGER)',
    "vector_chunks00": 'CREATE TABLE "{t}_vector_chunks00"(rowid PRIMARY KEY,vectors BLOB NOT NULL)',
    "metadatachunks00": 'CREATE TABLE "{t}_metadatachunks00"(rowid PRIMARY KEY, data BLOB NOT NULL)',
}
SPOT_CHECKS = 3  # rows compared with the virtual table's point lookup after a read


class Vectors:
    """What was read: rowids, vectors (float32, n x dims) and the integer metadata column if asked."""

    def __init__(self, rowids: np.ndarray, matrix: np.ndarray, ints: np.ndarray | None):
        self.rowids, self.matrix, self.ints = rowids, matrix, ints


def layout_known(db: Database, table: str, *, int_column: bool) -> bool:
    version = db.execute("SELECT vec_version()").fetchone()[0]
    if not str(version).startswith("v0.1."):
        return False
    wanted = ["chunks", "rowids", "vector_chunks00"] + (["metadatachunks00"] if int_column else [])
    names = [f"{table}_{w}" for w in wanted]
    found = dict(db.execute(f"SELECT name, sql FROM sqlite_master WHERE name IN ({','.join('?' * len(names))})",
                            names).fetchall())
    return all(found.get(f"{table}_{w}") == _LAYOUT[w].format(t=table) for w in wanted)


def read(db: Database, table: str, dims: int, *, int_column: str | None = None,
         keep: np.ndarray | None = None, tail: Vectors | None = None) -> Vectors | None:
    """Every vector of `table` (or only the rowids in `keep`), in chunk order, then the rows of `tail`
    (in the same arrays, so the caller never joins two copies of the matrix); None when the layout is
    not the one known here or the read does not check out."""
    if not layout_known(db, table, int_column=int_column is not None):
        return None
    # One read transaction (WAL: a snapshot), so the count and every chunk agree though a writer
    # commits meanwhile; inside a transaction already, that one is the snapshot.
    own = not db.conn.in_transaction
    if own:
        db.execute("BEGIN")
    try:
        return _read(db, table, dims, int_column, keep, tail)
    finally:
        if own and db.conn.in_transaction:
            db.execute("COMMIT")


def _read(db: Database, table: str, dims: int, int_column: str | None, keep: np.ndarray | None,
          tail: Vectors | None) -> Vectors | None:
    expected = db.execute(f'SELECT COUNT(*) FROM "{table}_rowids"').fetchone()[0]
    extra = len(tail.rowids) if tail is not None else 0
    capacity = max((expected if keep is None else min(expected, len(keep))) + extra, 1)
    rowids = np.empty(capacity, dtype=np.int64)
    matrix = np.empty((capacity, dims), dtype=np.float32)
    ints = np.empty(capacity, dtype=np.int64) if int_column else None
    n = live = 0
    # A point lookup per chunk (SQLite's plan for a join of the three tables scanned one of them once
    # per chunk and sorted the 1.5 MB blobs in a temporary b-tree: 3x slower).
    for chunk_id, size, validity, slot_rowids in db.execute(
            f'SELECT chunk_id, size, validity, rowids FROM "{table}_chunks"').fetchall():
        vectors = _blob(db, f'SELECT vectors FROM "{table}_vector_chunks00" WHERE rowid = ?', chunk_id)
        data = _blob(db, f'SELECT data FROM "{table}_metadatachunks00" WHERE rowid = ?', chunk_id) if int_column else b""
        if (vectors is None or data is None or len(validity) != (size + 7) // 8 or len(slot_rowids) != size * 8
                or len(vectors) != size * dims * 4 or (int_column and len(data) != size * 8)):
            log.warning("%s: a vec0 chunk of unexpected size; reading through the virtual table", table)
            return None
        used = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        live += int(used.sum())
        chunk_rowids = np.frombuffer(slot_rowids, dtype=np.int64)
        if keep is not None:
            used &= np.isin(chunk_rowids, keep)
        k = int(used.sum())
        if not k:
            continue
        while n + k + extra > capacity:  # a writer added rows since the count
            capacity *= 2
            rowids, matrix = np.resize(rowids, capacity), np.resize(matrix, (capacity, dims))
            ints = np.resize(ints, capacity) if ints is not None else None
        rowids[n:n + k] = chunk_rowids[used]
        matrix[n:n + k] = np.frombuffer(vectors, dtype=np.float32).reshape(size, dims)[used]
        if ints is not None:
            ints[n:n + k] = np.frombuffer(data, dtype=np.int64)[used]
        n += k
    if live != expected:
        log.warning("%s: %d vectors in use in its chunks, %d in its rowids table; reading through the "
                    "virtual table", table, live, expected)
        return None
    read_rows = Vectors(rowids[:n], matrix[:n], ints[:n] if ints is not None else None)
    if not _spot_check(db, table, read_rows, int_column):
        log.warning("%s: the vectors read from its chunks differ from the table's; reading through the "
                    "virtual table", table)
        return None
    if extra:
        rowids[n:n + extra], matrix[n:n + extra] = tail.rowids, tail.matrix
        if ints is not None:
            ints[n:n + extra] = tail.ints
    m = n + extra
    return Vectors(rowids[:m], matrix[:m], ints[:m] if ints is not None else None)


def _blob(db: Database, sql: str, chunk_id: int) -> bytes | None:
    row = db.execute(sql, (chunk_id,)).fetchone()
    return None if row is None else row[0]


def _spot_check(db: Database, table: str, got: Vectors, int_column: str | None) -> bool:
    n = len(got.rowids)
    for i in sorted({0, n // 2, n - 1})[:SPOT_CHECKS] if n else []:
        columns = "embedding" + (f", {int_column}" if int_column else "")
        row = db.execute(f'SELECT {columns} FROM "{table}" WHERE rowid = ?', (int(got.rowids[i]),)).fetchone()
        if row is None:
            continue  # deleted since the read: the generation has moved and the mirror will reload
        if row[0] != got.matrix[i].tobytes() or (int_column and row[1] != int(got.ints[i])):
            return False
    return True
