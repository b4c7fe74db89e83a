"""Search: full-text (FTS5 + BM25), vector (cosine over chunk embeddings) and hybrid (fusion).

Results are nodes, each with the chunk that matched best. A node-scoped search ranks that node's own
chunks directly (exact), never a global top-k filtered afterwards.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from core.search import fts_query
from core.errors import InvalidInput
from core.graph.store import Store, node_record

MODES = ("hybrid", "fts", "vector")
# Hybrid ranking, tuned on SciFact's train split in issue 6 (bench/retrieval.py; ablation table in
# bench/retrieval.md). Measured there (train nDCG@10): BM25 alone 0.700, chunk vectors alone 0.685,
# reciprocal rank fusion 0.730 (k=60) / 0.736 (k=10), and a weighted blend of normalised scores
# 0.747, so the blend is the default:
#     score = FTS_WEIGHT * bm25 / best bm25  +  (1 - FTS_WEIGHT) * cosine / best cosine
# Dividing by the query's best score (not min-max) keeps each side's absolute spread: a query whose
# keywords barely match gives BM25 a flat, low contribution. The cosine is computed exactly for
# every candidate (a keyword-only candidate gets its best chunk's cosine, not a missing value:
# recall@100 0.939 -> 0.964). Min-max or z-score normalisation reached 0.744 / 0.746 at best.
# FTS_WEIGHT 0.35-0.40 is a plateau; 0.5 loses 0.004, 0.3 0.003, 0.6 0.010.
# A candidate with no vector at all (its note is not indexed yet) is scored on BM25 alone, so an
# exact keyword match ranks first rather than tying with the best vector-only hit.
FUSION = "blend"  # or "rrf"
FTS_WEIGHT = 0.4
# Candidate depths: 100 from each side; 200 changed nDCG@10 by +0.0005 (recall@100 -0.006), 50
# by -0.0014 (analysis pass; a search never fuses fewer candidates than it returns).
FTS_CANDIDATES = 100
VECTOR_CANDIDATES = 100
# Reciprocal rank fusion: score = sum over rankings of 1 / (RRF_K + rank). Used by node-scoped search,
# the Nodes pane and FUSION = "rrf". 60 is the RRF paper's value (k=10 measured +0.005 on SciFact).
RRF_K = 60
# BM25 column weights for nodes_fts(title, description, source). Title weight 3 against 1, 2, 5:
# 0.700 against 0.691, 0.696, 0.697 (BM25 alone); in the blend 5 gave 0.749 against 0.747, within
# noise, so 3 stays. The porter tokenizer beat plain unicode61 by 0.032 (BM25) and 0.015 (hybrid).
BM25_WEIGHTS = (3.0, 2.0, 1.0)
# "or": terms OR-ed, BM25 ranks (default). "and": documents with every term first, then the OR
# matches (AND with fallback): 0.700 either way on SciFact, whose long claims rarely match in full.
FTS_MODE = "or"
# Graph expansion (DESIGN.md: "optionally expand by graph neighbours of the top hits"): after fusion,
# every neighbour (an edge in either direction) of the GRAPH_SEEDS best hits gets GRAPH_WEIGHT x the
# best linking hit's score; a node already ranked keeps max(own, that) ("max") or adds it ("sum").
# OFF by default (0), because it did not win (bench/graph_expansion.py; table in bench/retrieval.md):
# on the Obsidian Tasks docs vault (118 notes, 604 links; 75 notes queried by title and by first
# paragraph, their own links hidden, the notes they link to as relevant, nDCG@10 0.380 / 0.385 off),
# "max" changes nothing up to w=0.3 (a neighbour never passes the 10th hit) and loses from 0.5 on
# (w=0.7: -0.026 / -0.016); "sum" gains at most +0.011 (w=0.1 N=5, titles) with a paired SE of
# 0.007, the best setting for one query kind does not carry to the other, and the only settings
# positive on both (w=0.1-0.2, N=10, "sum": +0.006..+0.008) are within about 1 SE, picked among 28.
# SciFact has no edges, so expansion cannot change it (50 train queries: identical top 100). Cost
# when on: one indexed query (edges' UNIQUE(from, to) index + edges_to), 0.11 ms for 10 seeds at
# 100k nodes / 340k edges, 9 ms if all 10 seeds are 2,000-link hubs; hybrid p50 15.6 -> 16.0 ms.
GRAPH_WEIGHT = 0.0
GRAPH_SEEDS = 10
GRAPH_COMBINE = "sum"  # the one that moved anything; used only when GRAPH_WEIGHT > 0
MAX_LIMIT = 1000
# The most chunks a vector search takes to find its distinct nodes: sqlite-vec's k-NN limit.
MAX_NEAREST_CHUNKS = 4096


@dataclass(frozen=True)
class Tuning:
    """Query-time ranking settings; the defaults are the module constants (benchmarks sweep them)."""

    fusion: str = FUSION
    fts_weight: float = FTS_WEIGHT
    rrf_k: int = RRF_K
    fts_candidates: int = FTS_CANDIDATES
    vector_candidates: int = VECTOR_CANDIDATES
    bm25_weights: tuple[float, ...] = BM25_WEIGHTS
    fts_mode: str = FTS_MODE
    graph_weight: float = GRAPH_WEIGHT
    graph_seeds: int = GRAPH_SEEDS
    graph_combine: str = GRAPH_COMBINE


def rrf(ranks, k: int | None = None) -> float:
    """Reciprocal rank fusion of a document's ranks (1-based; None where a ranking missed it)."""
    k = RRF_K if k is None else k
    return sum(1.0 / (k + r) for r in ranks if r is not None)


def blend(fts: float | None, cosine: float | None, best_fts: float | None, best_cosine: float | None,
          fts_weight: float = FTS_WEIGHT) -> float:
    """The hybrid score of one candidate: its BM25 and cosine, each divided by the query's best.

    A candidate without a vector (not indexed yet) is scored on BM25 alone."""
    f = fts / best_fts if fts is not None and best_fts and best_fts > 0 else 0.0
    if cosine is None:
        return f
    v = cosine / best_cosine if best_cosine and best_cosine > 0 else 0.0
    return fts_weight * f + (1.0 - fts_weight) * v


@dataclass
class Candidate:
    node_id: int
    fts: float | None = None  # BM25, higher is better (FTS5's rank negated)
    fts_rank: int | None = None
    cosine: float | None = None
    vector_rank: int | None = None
    chunk_id: int | None = None
    score: float = 0.0
    extra: dict = field(default_factory=dict)


class Searcher:
    def __init__(self, store: Store, embedder=None, *, mirror: bool = False, tuning: Tuning | None = None):
        self.store = store
        self.tuning = tuning or Tuning()
        self.db = store.db
        self._embedder = embedder
        self._mirror = None
        self._mirror_order = None
        self.use_mirror = mirror
        self._query_vectors: OrderedDict[str, Any] = OrderedDict()

    # -- parts -------------------------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from core.index.embedder import shared_embedder

            self._embedder = shared_embedder()
        return self._embedder

    @property
    def mirror(self):
        if self._mirror is None:
            from core.index.vector_mirror import VectorMirror

            self._mirror = VectorMirror(self.db, self.embedder.dimensions)
        return self._mirror

    def query_vector(self, text: str):
        """Embedding of a query, cached (search-as-you-type asks for the same text repeatedly)."""
        vec = self._query_vectors.get(text)
        if vec is None:
            vec = self.embedder.embed_one(text)
            self._query_vectors[text] = vec
            if len(self._query_vectors) > 256:
                self._query_vectors.popitem(last=False)
        else:
            self._query_vectors.move_to_end(text)
        return vec

    # -- full text ---------------------------------------------------------------------------------
    def fts_candidates(self, query: str, limit: int, dimension: str | None = None) -> list[Candidate]:
        if self.tuning.fts_mode == "and":
            out = self._fts_ranked(fts_query.build(query, mode="and"), limit, dimension)
            if len(out) < limit:
                seen = {c.node_id for c in out}
                more = [c for c in self._fts_ranked(fts_query.build(query), limit, dimension) if c.node_id not in seen]
                out += more[: limit - len(out)]
            for i, c in enumerate(out):
                c.fts_rank = i + 1
            return out
        return self._fts_ranked(fts_query.build(query), limit, dimension)

    def _fts_ranked(self, expr: str | None, limit: int, dimension: str | None = None) -> list[Candidate]:
        if expr is None:
            return []
        weights = ", ".join(str(w) for w in self.tuning.bm25_weights)
        if dimension:
            # Match first, then filter: a rowid-IN next to MATCH makes SQLite run the full-text query
            # once per node of the dimension (measured 9.2 s against 10 ms at 100k nodes).
            sql = (f"WITH m AS MATERIALIZED (SELECT rowid AS id, bm25(nodes_fts, {weights}) AS rank FROM nodes_fts"
                   " WHERE nodes_fts MATCH ?) SELECT id, rank FROM m"
                   " WHERE id IN (SELECT node_id FROM node_dimensions WHERE dimension = ?) ORDER BY rank LIMIT ?")
            params: list[Any] = [expr, dimension, limit]
        else:
            sql = f"SELECT rowid, bm25(nodes_fts, {weights}) AS rank FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY rank LIMIT ?"
            params = [expr, limit]
        rows = self.db.execute(sql, params).fetchall()
        return [Candidate(r[0], fts=-r[1], fts_rank=i + 1) for i, r in enumerate(rows)]

    def _chunk_spans(self, node_ids: list[int]) -> list[tuple[int, int, int, int]]:
        """(node id, lowest chunk id, highest chunk id, chunk count) of each node: one indexed read. A
        full-text match bounded to a node's rowid range is how one node's chunks are matched cheaply."""
        return [tuple(r) for r in self.db.execute(
            "SELECT node_id, MIN(id), MAX(id), COUNT(*) FROM chunks WHERE node_id IN"
            " (SELECT value FROM json_each(?)) GROUP BY node_id", (json.dumps(node_ids),))]

    def _best_fts_chunks(self, query: str, node_ids: list[int]) -> dict[int, int]:
        """The chunk to show for each keyword hit: a node's only chunk as it is; among several, the
        one ranked best for the query. One indexed read of the nodes' chunk ids, then per node with
        several chunks a full-text match bounded to its chunks' rowids (FTS5 seeks a rowid range in
        each term's list). A match over all chunks filtered afterwards cost ~8 ms a search at 100k
        nodes (issue 16, bench/store.py hybrid_stages)."""
        if not node_ids:
            return {}
        spans = self._chunk_spans(node_ids)
        best = {node_id: lo for node_id, lo, _hi, count in spans if count == 1}
        several = [(node_id, lo, hi) for node_id, lo, hi, count in spans if count > 1]
        expr = fts_query.build(query) if several else None
        for node_id, lo, hi in several if expr is not None else ():
            # Chunk ids of one node are usually consecutive, but a range may hold another node's
            # chunks (a re-index interleaved): the join keeps this node's.
            row = self.db.execute(
                "SELECT f.rowid FROM chunks_fts f JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ?"
                " AND f.rowid BETWEEN ? AND ? AND c.node_id = ? ORDER BY f.rank LIMIT 1",
                (expr, lo, hi, node_id)).fetchone()
            if row is not None:
                best[node_id] = row[0]
        return best

    # -- vectors -----------------------------------------------------------------------------------
    def vectors_match(self) -> bool:
        """False while the stored vectors were made by another model than the one embedding the query
        (an upgrade changed the graph; the next index run re-embeds): meaning search would compare
        two spaces, so it finds nothing until then and keyword search carries on."""
        name = self.store.meta("embedder")
        return name is None or name == self.embedder.name

    def _nearest_chunks(self, qvec, k: int, dimension: str | None = None, node_id: int | None = None):
        """(chunk id, node id, cosine), best first, exact."""
        import numpy as np

        if not self.vectors_match():
            return []
        scope = None
        if node_id is not None:
            scope = [node_id]
        elif dimension:
            scope = [r[0] for r in self.db.execute(
                "SELECT node_id FROM node_dimensions WHERE dimension = ?", (dimension,))]
            if not scope:
                return []
        if self.use_mirror:
            return self.mirror.top(qvec, k, node_ids=None if scope is None else np.asarray(scope, dtype=np.int64))
        blob = np.asarray(qvec, dtype=np.float32).tobytes()
        if scope is None:
            rows = self.db.execute(
                "SELECT rowid, node_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ?",
                (blob, min(k, MAX_NEAREST_CHUNKS)),  # sqlite-vec's k-NN limit
            ).fetchall()
            scope_sql, params = "", (blob, k)
        else:
            rows = self.db.execute(
                "SELECT v.rowid, c.node_id, vec_distance_cosine(v.embedding, ?) AS distance FROM vec_chunks v"
                " JOIN chunks c ON c.id = v.rowid WHERE v.rowid IN (SELECT id FROM chunks WHERE node_id IN"
                " (SELECT value FROM json_each(?))) ORDER BY distance LIMIT ?",
                (blob, json.dumps(scope), k),
            ).fetchall()
            scope_sql, params = " AND n.id IN (SELECT value FROM json_each(?))", (blob, json.dumps(scope), k)
        # Nodes without chunks (title-only notes) are found through their node-level vector. The
        # query starts from `nodes` so sqlite-vec is read by rowid, not scanned.
        rows += self.db.execute(
            "SELECT 0, n.id, vec_distance_cosine(v.embedding, ?) AS distance FROM nodes n"
            " CROSS JOIN vec_nodes v ON v.rowid = n.id"
            f" WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = n.id){scope_sql}"
            " ORDER BY distance LIMIT ?",
            params,
        ).fetchall()
        rows.sort(key=lambda r: r[2])
        return [(r[0], r[1], 1.0 - r[2]) for r in rows[:k]]

    def node_cosines(self, qvec, node_ids: list[int]) -> dict[int, float]:
        """Each node's best cosine to the query (its best chunk; its node vector if it has no chunks).
        Nodes without any vector (not indexed yet) are left out."""
        import numpy as np

        if not node_ids or not self.vectors_match():
            return {}
        out: dict[int, float] = {}
        if self.use_mirror:
            m = self.mirror
            m.sync()
            if self._mirror_order is None or self._mirror_order[0] != m.generation:
                # Rows sorted by node id (once per mirror generation), so a node's rows are found by
                # binary search: np.isin over 100k rows costs ~2 ms a query, this ~0.05 ms.
                order = np.argsort(m.node_ids, kind="stable")
                self._mirror_order = (m.generation, order, m.node_ids[order])
            _, order, sorted_ids = self._mirror_order
            ids = np.asarray(node_ids, dtype=np.int64)
            lo, hi = np.searchsorted(sorted_ids, ids, "left"), np.searchsorted(sorted_ids, ids, "right")
            idx = order[np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist())])]
            if len(idx):
                scores = m.matrix[idx] @ np.asarray(qvec, dtype=np.float32)
                for node_id, score in zip(m.node_ids[idx].tolist(), scores.tolist()):
                    if score > out.get(node_id, -2.0):
                        out[node_id] = score
            return out
        blob = np.asarray(qvec, dtype=np.float32).tobytes()
        scope = json.dumps(node_ids)
        rows = self.db.execute(
            "SELECT c.node_id, MIN(vec_distance_cosine(v.embedding, ?)) FROM chunks c"
            " JOIN vec_chunks v ON v.rowid = c.id WHERE c.node_id IN (SELECT value FROM json_each(?))"
            " GROUP BY c.node_id", (blob, scope)).fetchall()
        rows += self.db.execute(
            "SELECT n.id, vec_distance_cosine(v.embedding, ?) FROM nodes n CROSS JOIN vec_nodes v ON v.rowid = n.id"
            " WHERE n.id IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = n.id)",
            (blob, scope)).fetchall()
        for node_id, distance in rows:
            if distance is not None:
                out[node_id] = 1.0 - distance
        return out

    def vector_candidates(self, query: str, limit: int, dimension: str | None = None) -> list[Candidate]:
        if not query.strip():
            return []
        qvec = self.query_vector(query)
        # Several chunks of one node may be near (a long note's chunks often are): more chunks are
        # taken until they hold `limit` distinct nodes, or every chunk is in (a vault note of 15
        # chunks: 30 nearest chunks held 4 notes for a limit of 10).
        k = limit * 3
        while True:
            chunks = self._nearest_chunks(qvec, k, dimension)
            by_node: dict[int, Candidate] = {}
            for chunk_id, node_id, cosine in chunks:
                if node_id not in by_node:
                    by_node[node_id] = Candidate(node_id, cosine=cosine, chunk_id=chunk_id or None,
                                                 vector_rank=len(by_node) + 1)
            if len(by_node) >= limit or len(chunks) < k or k >= MAX_NEAREST_CHUNKS:
                return list(by_node.values())[:limit]
            k = min(k * 4, MAX_NEAREST_CHUNKS)

    # -- fused -------------------------------------------------------------------------------------
    def candidates(self, query: str, mode: str = "hybrid", limit: int = 10, dimension: str | None = None) -> list[Candidate]:
        if mode not in MODES:
            raise InvalidInput(f"Unknown search mode {mode!r}; use one of {', '.join(MODES)}.")
        limit = max(1, min(int(limit), MAX_LIMIT))
        if mode == "fts":
            out = self.fts_candidates(query, limit, dimension)
            for c in out:
                c.score = c.fts
            return out
        if mode == "vector":
            out = self.vector_candidates(query, limit, dimension)
            for c in out:
                c.score = c.cosine
            return out
        fts = self.fts_candidates(query, max(limit, self.tuning.fts_candidates), dimension)
        vec = self.vector_candidates(query, max(limit, self.tuning.vector_candidates), dimension)
        merged: dict[int, Candidate] = {}
        for c in fts:
            merged[c.node_id] = c
        for c in vec:
            m = merged.get(c.node_id)
            if m is None:
                merged[c.node_id] = c
            else:
                m.cosine, m.vector_rank, m.chunk_id = c.cosine, c.vector_rank, c.chunk_id
        t = self.tuning
        if t.fusion == "rrf":
            for c in merged.values():
                c.score = rrf((c.fts_rank, c.vector_rank), t.rrf_k)
        else:
            # Keyword-only candidates get their exact cosine (best chunk), so both sides are compared
            # on every candidate; nodes with no vector yet keep None and are scored on BM25 alone.
            missing = [c.node_id for c in merged.values() if c.cosine is None]
            if missing and query.strip():
                cosines = self.node_cosines(self.query_vector(query), missing)
                for node_id, cosine in cosines.items():
                    merged[node_id].cosine = cosine
            best_fts = max((c.fts for c in fts), default=None)
            best_cosine = max((c.cosine for c in merged.values() if c.cosine is not None), default=None)
            for c in merged.values():
                c.score = blend(c.fts, c.cosine, best_fts, best_cosine, t.fts_weight)
        ranked = sorted(merged.values(), key=lambda c: (-c.score, c.node_id))
        if t.graph_weight > 0 and ranked:
            ranked = self._expand(ranked, merged, dimension)
        return ranked[:limit]

    def neighbours(self, node_ids: list[int], dimension: str | None = None) -> list[tuple[int, int]]:
        """(node, neighbour) pairs over edges in either direction: two index lookups (the UNIQUE
        (from_node_id, to_node_id) index and edges_to), optionally kept to one dimension."""
        sql = ("SELECT from_node_id AS s, to_node_id AS n FROM edges WHERE from_node_id IN (SELECT value FROM json_each(?1))"
               " UNION ALL SELECT to_node_id, from_node_id FROM edges WHERE to_node_id IN (SELECT value FROM json_each(?1))")
        params: list[Any] = [json.dumps(node_ids)]
        if dimension:
            sql = (f"SELECT s, n FROM ({sql}) WHERE n IN"
                   " (SELECT node_id FROM node_dimensions WHERE dimension = ?2)")
            params.append(dimension)
        return [(r[0], r[1]) for r in self.db.execute(sql, params)]

    def _expand(self, ranked: list[Candidate], merged: dict[int, Candidate], dimension: str | None) -> list[Candidate]:
        """Graph expansion: neighbours of the top hits get graph_weight x the best linking hit's score."""
        t = self.tuning
        seeds = {c.node_id: c.score for c in ranked[: max(1, t.graph_seeds)]}
        boost: dict[int, tuple[float, int]] = {}
        for seed, other in self.neighbours(list(seeds), dimension):
            b = t.graph_weight * seeds[seed]
            if b > boost.get(other, (0.0, 0))[0]:
                boost[other] = (b, seed)
        if not boost:
            return ranked
        for node_id, (b, seed) in boost.items():
            c = merged.get(node_id)
            if c is None:
                merged[node_id] = Candidate(node_id, score=b, extra={"via": seed})
            elif t.graph_combine == "sum":
                c.score += b
                c.extra["via"] = seed
            elif b > c.score:
                c.score = b
                c.extra["via"] = seed
        return sorted(merged.values(), key=lambda c: (-c.score, c.node_id))

    def search(self, query: str, mode: str = "hybrid", limit: int = 10, dimension: str | None = None,
               node_id: int | None = None) -> list[dict[str, Any]]:
        """Search hits as records: a node plus {score, chunk, match}."""
        if node_id is not None:
            return self.search_node(query, node_id, mode=mode, limit=limit)
        found = self.candidates(query, mode, limit, dimension)
        if mode == "hybrid" and self.tuning.fusion == "blend":
            best = self._best_passages(query, [c.node_id for c in found])
            for c in found:
                c.chunk_id = best.get(c.node_id, c.chunk_id)
        missing = [c.node_id for c in found if c.chunk_id is None]
        best = self._best_fts_chunks(query, missing)
        for c in found:
            if c.chunk_id is None:
                c.chunk_id = best.get(c.node_id)
        return self._records(found)

    def _best_passages(self, query: str, node_ids: list[int]) -> dict[int, int]:
        """The passage to show (and the chat to cite) for each hybrid hit: among its node's chunks that
        hold the query's words (a keyword match), the one the ranking's own blend scores best, per
        chunk: its BM25 and its cosine, each divided by the best of all the hits' chunks (`blend`). The
        node's nearest chunk alone (what the vector side found) missed the words: an exact phrase on one
        page of a PDF came back as another page's passage, and the chat cited that page (issue 24). The
        blend alone is not enough either: a chunk near in meaning without the words can outscore the one
        that holds a quoted phrase (0.6 against 0.58 in the test), and the user who typed the words
        wants to see them. A node whose chunks hold no keyword match keeps its nearest chunk; a node of
        one chunk, that chunk."""
        import numpy as np

        if not node_ids or not query.strip():
            return {}
        spans = self._chunk_spans(node_ids)
        several = [(node_id, lo, hi) for node_id, lo, hi, count in spans if count > 1]
        expr = fts_query.build(query) if several else None
        if expr is None:
            return {}
        keyword: dict[int, tuple[int, float]] = {}  # chunk id: (node id, BM25)
        for node_id, lo, hi in several:
            for chunk_id, rank in self.db.execute(
                    "SELECT f.rowid, f.rank FROM chunks_fts f JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ?"
                    " AND f.rowid BETWEEN ? AND ? AND c.node_id = ?", (expr, lo, hi, node_id)):
                keyword[chunk_id] = (node_id, -rank)
        if not keyword:
            return {}
        cosines: dict[int, float] = {}  # chunk id: cosine, of the chunks that hold the words
        if self.vectors_match():
            blob = np.asarray(self.query_vector(query), dtype=np.float32).tobytes()
            for chunk_id, distance in self.db.execute(
                    "SELECT rowid, vec_distance_cosine(embedding, ?) FROM vec_chunks"
                    " WHERE rowid IN (SELECT value FROM json_each(?))", (blob, json.dumps(sorted(keyword)))):
                if distance is not None:
                    cosines[chunk_id] = 1.0 - distance
        best_fts = max(fts for _, fts in keyword.values())
        best_cosine = max(cosines.values(), default=None)
        scored: dict[int, tuple[float, int]] = {}  # node id: (score, chunk id)
        for chunk_id, (node_id, fts) in sorted(keyword.items()):  # a tie: the earlier chunk
            score = blend(fts, cosines.get(chunk_id), best_fts, best_cosine, self.tuning.fts_weight)
            if node_id not in scored or score > scored[node_id][0]:
                scored[node_id] = (score, chunk_id)
        return {node_id: chunk_id for node_id, (_, chunk_id) in scored.items()}

    def search_node(self, query: str, node_id: int, mode: str = "hybrid", limit: int = 10) -> list[dict[str, Any]]:
        """Rank one node's chunks (exact: every chunk of the node is scored)."""
        if mode not in MODES:
            raise InvalidInput(f"Unknown search mode {mode!r}; use one of {', '.join(MODES)}.")
        self.store.get_node(node_id)  # NotFound with a clear message
        limit = max(1, min(int(limit), MAX_LIMIT))
        per_chunk: dict[int, Candidate] = {}
        if mode in ("fts", "hybrid"):
            expr = fts_query.build(query)
            if expr is not None:
                rows = self.db.execute(
                    "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?"
                    " AND rowid IN (SELECT id FROM chunks WHERE node_id = ?) ORDER BY rank",
                    (expr, node_id),
                ).fetchall()
                for i, (chunk_id, rank) in enumerate(rows):
                    per_chunk[chunk_id] = Candidate(node_id, fts=-rank, fts_rank=i + 1, chunk_id=chunk_id)
        if mode in ("vector", "hybrid") and query.strip():
            nearest = self._nearest_chunks(self.query_vector(query), 10_000, node_id=node_id)
            for i, (chunk_id, _, cosine) in enumerate(nearest):
                c = per_chunk.setdefault(chunk_id, Candidate(node_id, chunk_id=chunk_id or None))
                c.cosine, c.vector_rank = cosine, i + 1
        for c in per_chunk.values():
            if mode == "fts":
                c.score = c.fts
            elif mode == "vector":
                c.score = c.cosine
            else:
                c.score = rrf((c.fts_rank, c.vector_rank), self.tuning.rrf_k)
        ranked = sorted((c for c in per_chunk.values() if c.score is not None), key=lambda c: -c.score)
        return self._records(ranked[:limit])

    def _records(self, found: list[Candidate]) -> list[dict[str, Any]]:
        if not found:
            return []
        from core.graph.store import _NODE_COLUMNS

        nodes = {
            r["id"]: node_record(r)
            for r in self.db.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([c.node_id for c in found]),),
            )
        }
        chunk_ids = [c.chunk_id for c in found if c.chunk_id is not None]
        chunks = {
            r["id"]: r
            for r in self.db.execute(
                "SELECT id, chunk_idx, start_char, end_char, heading_path, text, page FROM chunks"
                " WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(chunk_ids),),
            )
        }
        hits = []
        for c in found:
            node = nodes.get(c.node_id)
            if node is None:  # deleted between the ranking and this read
                continue
            row = chunks.get(c.chunk_id) if c.chunk_id is not None else None
            chunk = None
            if row is not None:
                chunk = {
                    "idx": row["chunk_idx"],
                    "start_char": row["start_char"],
                    "end_char": row["end_char"],
                    "heading_path": json.loads(row["heading_path"]),
                    "text": row["text"],
                    "page": row["page"],  # 1-based page of a paged document (a captured PDF), else None
                }
            match = {"fts": _round(c.fts), "vector": _round(c.cosine)}
            hits.append({**node, "score": _round(c.score), "chunk": chunk, "match": match})
        return hits


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)
