"""An in-memory copy of `vec_chunks`, for processes that search many times (the app, benchmarks).

sqlite-vec is the store of record. Its brute-force k-NN over 100k 384-d vectors measured ~43 ms here
against ~5 ms for one numpy matrix-vector product, so a long-lived process keeps the vectors in a
float32 matrix. Consistency: every change to `vec_chunks` bumps `meta.vec_generation` in the same
transaction, and the mirror reloads whenever the generation it loaded is no longer current.
"""

from __future__ import annotations

import numpy as np

from core.graph.db import Database
from core.index import vec0_shadow


LOAD_BLOCK = 4096  # rows read and converted at a time while loading
ORPHAN_LOOKUPS = 2000  # nodes without chunks read by point lookups; more, from vec_nodes' chunks
FILTER_BLOCK = 8192  # rows scored at a time in a filtered search (8,192 x 384 x 4 bytes = 12.6 MB)


class VectorMirror:
    def __init__(self, db: Database, dimensions: int):
        self.db = db
        self.dimensions = dimensions
        self.generation: str | None = None
        self.rowids = np.zeros(0, dtype=np.int64)
        self.node_ids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, dimensions), dtype=np.float32)

    def _current_generation(self) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'vec_generation'").fetchone()
        return row[0] if row else None

    def sync(self) -> None:
        generation = self._current_generation()
        if generation == self.generation:
            return
        # The old vectors go first: a reload never holds two matrices (2 x ~150 MB at 100k vectors).
        self.rowids = np.zeros(0, dtype=np.int64)
        self.node_ids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, self.dimensions), dtype=np.float32)
        loaded = self._read_shadow() or self._scan()
        self.rowids, self.node_ids, self.matrix = loaded
        self.generation = generation

    # Chunk vectors, plus the node vectors of nodes without chunks (a title-only note), whose chunk id
    # is 0: such a node is found by meaning through its node-level vector.
    _ORPHANS = "FROM vec_nodes v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = v.rowid)"

    def _read_shadow(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """From vec0's chunk blobs (core/index/vec0_shadow.py: ~4x faster than the scan below)."""
        orphans = np.array([r[0] for r in self.db.execute(
            "SELECT n.id FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = n.id)")],
            dtype=np.int64)
        if len(orphans) <= ORPHAN_LOOKUPS:  # usually none or a few: one point lookup each
            found = [(r[0], r[1]) for i in orphans.tolist() for r in
                     self.db.execute("SELECT rowid, embedding FROM vec_nodes WHERE rowid = ?", (i,))]
            nodes = vec0_shadow.Vectors(np.array([r[0] for r in found], dtype=np.int64),
                                        np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32)
                                        .reshape(len(found), self.dimensions), None)
        else:
            nodes = vec0_shadow.read(self.db, "vec_nodes", self.dimensions, keep=orphans)
            if nodes is None:
                return None
        # A node vector's chunk id is 0, its node id the vec_nodes rowid.
        tail = vec0_shadow.Vectors(np.zeros(len(nodes.rowids), dtype=np.int64), nodes.matrix, nodes.rowids)
        chunks = vec0_shadow.read(self.db, "vec_chunks", self.dimensions, int_column="node_id", tail=tail)
        return None if chunks is None else (chunks.rowids, chunks.ints, chunks.matrix)

    def _scan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Through the virtual tables (any sqlite-vec layout)."""
        orphans = self._ORPHANS
        expected = (self.db.execute("SELECT COUNT(*) FROM vec_chunks").fetchone()[0]
                    + self.db.execute(f"SELECT COUNT(*) {orphans}").fetchone()[0])
        # Streamed into preallocated arrays, row by row from the cursor: no list of rows and no joined
        # buffer beside the matrix (those were ~130 MB at 100k vectors). A writer between the count and
        # the read can change the number of rows: the arrays grow or are cut to what was read.
        capacity = max(expected, 1)
        rowids = np.empty(capacity, dtype=np.int64)
        node_ids = np.empty(capacity, dtype=np.int64)
        matrix = np.empty((capacity, self.dimensions), dtype=np.float32)
        n = 0
        cursor = self.db.execute(f"SELECT rowid, node_id, embedding FROM vec_chunks UNION ALL "
                                 f"SELECT 0, v.rowid, v.embedding {orphans}")
        while block := cursor.fetchmany(LOAD_BLOCK):  # ~6 MB of rows at a time, converted in bulk
            k = len(block)
            while n + k > capacity:
                capacity *= 2
                rowids, node_ids = np.resize(rowids, capacity), np.resize(node_ids, capacity)
                matrix = np.resize(matrix, (capacity, self.dimensions))
            rowids[n:n + k] = [r[0] for r in block]
            node_ids[n:n + k] = [r[1] for r in block]
            matrix[n:n + k] = np.frombuffer(b"".join(r[2] for r in block), dtype=np.float32).reshape(k, -1)
            n += k
        if n < capacity:  # views, not copies: the spare rows are a few at most
            rowids, node_ids, matrix = rowids[:n], node_ids[:n], matrix[:n]
        return rowids, node_ids, matrix

    def top(self, query: np.ndarray, k: int, *, node_ids: np.ndarray | None = None) -> list[tuple[int, int, float]]:
        """(chunk id, node id, cosine) of the k nearest vectors; exact, optionally only among node_ids.
        A chunk id of 0 is the node vector of a node that has no chunks."""
        self.sync()
        if not len(self.rowids) or k <= 0:
            return []
        if node_ids is not None:
            idx = np.flatnonzero(np.isin(self.node_ids, node_ids))
            if not len(idx):
                return []
            # In blocks: `matrix[idx]` at once copied up to every row (146 MB at 100k vectors).
            scores = np.concatenate([self.matrix[idx[i:i + FILTER_BLOCK]] @ query
                                     for i in range(0, len(idx), FILTER_BLOCK)])
        else:
            idx = None
            scores = self.matrix @ query
        k = min(k, len(scores))
        # The k largest without negating every score first (a copy of them all: ~15 % of a search
        # at 100k vectors, bench/store.py hybrid_stages); then only those k are sorted.
        best = np.argpartition(scores, len(scores) - k)[len(scores) - k:]
        best = best[np.argsort(-scores[best], kind="stable")]
        rows = best if idx is None else idx[best]
        return [(int(self.rowids[r]), int(self.node_ids[r]), float(s)) for r, s in zip(rows, scores[best])]
