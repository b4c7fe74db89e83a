"""Listing nodes for a browser: light rows (no source text) a page at a time, sorted by recently
updated or by connections, optionally restricted to dimensions, plus the counts a pane shows.

The Nodes pane pages through this (200 rows at a time) instead of materialising every node, so a
100k-node graph scrolls and filters without loading more than it shows.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from core.search import fts_query
from core.errors import EmbedderError
from core.graph.store import Store

SORTS = ("updated", "edges")
PAGE = 200
# One or two typed letters carry no meaning to search by (and embedding them costs ~8 ms of the
# keystroke at 100k notes): semantic results join from the third character.
MIN_SEMANTIC_CHARS = 3
BODY_PREFIX = 4  # an unfinished word this long or longer also matches as a prefix in note bodies
MAX_HITS = 200  # search-as-you-type shows the best 200; a browse list pages instead
# A vector-only hit must be at least this similar to the query (the junk floor the chat context uses:
# RRF is rank-only, so without it every embedded node would "match" every query).
MIN_COSINE = 0.30

# Why a query found nothing without looking (the Nodes pane's status line: 32 columns at 120).
NOTHING_TO_SEARCH = "nothing to search: type a word"
ONLY_EXCLUSIONS = "-word only excludes: add a word"

_TAG = re.compile(r'(?<!\S)#(?:"([^"]*)"?|(\S*))')


def split_tags(text: str) -> tuple[str, list[str]]:
    """Split `#tag` and `#"two words"` filters out of what a person typed: (the rest, the tags)."""
    tags: list[str] = []

    def take(m: re.Match) -> str:
        tag = (m.group(1) if m.group(1) is not None else m.group(2) or "").strip()
        if tag:
            tags.append(tag)
        return " "

    rest = _TAG.sub(take, text)
    return re.sub(r"\s+", " ", rest).strip(), tags


def format_tag(dimension: str) -> str:
    """How a dimension is written as a filter in the search box."""
    return f'#"{dimension}"' if re.search(r'[\s"]', dimension) else f"#{dimension}"


def resolve_dimension(store: Store, tag: str) -> str | None:
    """The dimension a typed `#tag` means: an exact match (any case), else the most used dimension
    starting with it (so `#res` filters by `research` while the word is still being typed)."""
    row = store.db.execute("SELECT dimension FROM node_dimensions WHERE dimension = ? LIMIT 1", (tag,)).fetchone()
    if row:
        return row[0]
    pattern = tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    row = store.db.execute(
        "SELECT dimension FROM node_dimensions WHERE dimension LIKE ? ESCAPE '\\'"
        " GROUP BY dimension ORDER BY COUNT(*) DESC, dimension LIMIT 1",
        (pattern,),
    ).fetchone()
    return row[0] if row else None


def dimension_names(store: Store) -> list[str]:
    """Every dimension in use, most used first."""
    return [d["dimension"] for d in store.dimensions()]


def _dimension_filter(dimensions: Iterable[str], column: str = "n.id") -> tuple[str, list[Any]]:
    parts, params = [], []
    for dim in dimensions:
        parts.append(f"{column} IN (SELECT node_id FROM node_dimensions WHERE dimension = ?)")
        params.append(dim)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def _row(r) -> dict[str, Any]:
    metadata = json.loads(r["metadata"] or "{}")
    return {
        "id": r["id"],
        "title": r["title"],
        "dimensions": metadata.get("dimensions", []),
        "type": r["type"],
        "chunk_status": r["chunk_status"],
        "updated_at": r["updated_at"],
        "edge_count": r["edge_count"],
    }


_DEGREE = """LEFT JOIN (SELECT node_id, COUNT(*) AS c FROM (
                SELECT from_node_id AS node_id FROM edges UNION ALL SELECT to_node_id FROM edges)
              GROUP BY node_id) d ON d.node_id = n.id"""
_EDGE_COUNT = ("(SELECT COUNT(*) FROM edges e WHERE e.from_node_id = n.id)"
               " + (SELECT COUNT(*) FROM edges e WHERE e.to_node_id = n.id)")


def page(store: Store, *, sort: str = "updated", dimensions: Iterable[str] = (), offset: int = 0,
         limit: int = PAGE) -> list[dict[str, Any]]:
    """One page of light node rows: id, title, dimensions, type, chunk_status, updated_at, edge_count.

    An edge joins two different nodes and a pair is linked at most once per direction, so counting
    edge rows at each end equals COUNT(DISTINCT edge id) (DESIGN.md's hub definition)."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {SORTS}")
    where, params = _dimension_filter(dimensions)
    if sort == "updated":
        sql = (f"SELECT n.id, n.title, n.metadata, n.type, n.chunk_status, n.updated_at, {_EDGE_COUNT} AS edge_count"
               f" FROM nodes n{where} ORDER BY n.updated_at DESC, n.id DESC LIMIT ? OFFSET ?")
    else:
        sql = (f"SELECT n.id, n.title, n.metadata, n.type, n.chunk_status, n.updated_at, COALESCE(d.c, 0) AS edge_count"
               f" FROM nodes n {_DEGREE}{where} ORDER BY edge_count DESC, n.updated_at DESC, n.id DESC LIMIT ? OFFSET ?")
    rows = store.db.execute(sql, (*params, int(limit), int(offset))).fetchall()
    return [_row(r) for r in rows]


def rows(store: Store, node_ids: Iterable[int]) -> list[dict[str, Any]]:
    """Light rows for these nodes, in the order given (missing ids left out)."""
    ids = [int(i) for i in node_ids]
    if not ids:
        return []
    found = store.db.execute(
        f"SELECT n.id, n.title, n.metadata, n.type, n.chunk_status, n.updated_at, {_EDGE_COUNT} AS edge_count"
        " FROM nodes n WHERE n.id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    ).fetchall()
    by_id = {r["id"]: _row(r) for r in found}
    return [by_id[i] for i in ids if i in by_id]


def sort_rows(items: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """Re-order rows (e.g. search hits) by updated or by connections; stable for ties."""
    if sort == "updated":
        return sorted(items, key=lambda r: (r["updated_at"], r["id"]), reverse=True)
    if sort == "edges":
        return sorted(items, key=lambda r: (r["edge_count"], r["updated_at"], r["id"]), reverse=True)
    return list(items)


def count(store: Store, dimensions: Iterable[str] = ()) -> int:
    """How many nodes the filter matches."""
    where, params = _dimension_filter(dimensions)
    return store.db.execute(f"SELECT COUNT(*) FROM nodes n{where}", params).fetchone()[0]


def totals(store: Store) -> dict[str, int]:
    """Node count and how many wait for (or failed) indexing; cheap (no chunk count)."""
    out = {"nodes": store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0], "pending": 0, "errors": 0}
    # `!= 'indexed'` is the partial index's own condition, so only unindexed rows are read.
    for status, n in store.db.execute(
            "SELECT chunk_status, COUNT(*) FROM nodes WHERE chunk_status != 'indexed' GROUP BY chunk_status"):
        out["errors" if status == "error" else status] = n
    return out


def _fts_expression(text: str) -> str | None:
    """All typed words must match (so typing narrows); the last one may be unfinished.

    An unfinished last word of 2+ letters also matches as a prefix (OR-ed with the whole word,
    because the index is stemmed: `running*` would miss the stored `run`); a single letter is
    ignored until the next one arrives, so the list does not blank between keystrokes."""
    whole = fts_query.build(text, mode="and")
    if whole is None or not text or text.count('"') % 2:
        return whole
    i = len(text)
    while i and fts_query._is_token_char(text[i - 1]):
        i -= 1
    head, tail = text[:i], text[i:]
    if not tail:
        return whole
    if len(tail) >= fts_query.MIN_PREFIX:
        alternative = fts_query.build(text + "*", mode="and")
        if len(tail) < BODY_PREFIX and (not head or head[-1].isspace()):
            # A 2–3 letter prefix matches thousands of words in note bodies, and ranking every note
            # that contains one costs ~35 ms at 100k notes; titles and descriptions (what a
            # half-typed word is usually aiming at) cost ~6 ms. Whole words still match everywhere.
            prefix = "{title description} : " + fts_query.build(tail + "*", mode="and")
            rest = fts_query.build(head, mode="and")
            alternative = f"{rest} AND {prefix}" if rest else prefix
    else:
        alternative = fts_query.build(head, mode="and")
    if alternative and alternative != whole:
        return f"({whole}) OR ({alternative})"
    return whole


def search(searcher, text: str, *, dimensions: Iterable[str] = (), limit: int = MAX_HITS) -> tuple[list[int], str | None]:
    """Hybrid search for search-as-you-type: node ids, best first, and a note when semantic search
    is unavailable (then it is full-text only) or when the query has nothing to look for (only
    punctuation, or only `-word` exclusions, which also hold for the meaning matches). Full-text and vector rankings are fused by reciprocal
    rank, as in `core.search.searcher`; vector-only hits below MIN_COSINE are dropped."""
    from core.search.searcher import BM25_WEIGHTS, FTS_CANDIDATES, VECTOR_CANDIDATES, rrf

    dims = list(dimensions)
    first = dims[0] if dims else None
    db = searcher.db
    terms = fts_query.parse(text)
    excluded = [t for t in terms if t.negative]
    if not terms:
        return [], NOTHING_TO_SEARCH
    if len(excluded) == len(terms):
        return [], ONLY_EXCLUSIONS
    # What the embedder reads: the wanted words only (embedding "-cats" would find notes about cats).
    meaning = " ".join(" ".join(t.words) for t in terms if not t.negative) if excluded else text
    ranks: dict[int, list[int]] = {}
    expr = _fts_expression(text)
    if expr is not None:
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        if first:
            # Match first, then filter: with `rowid IN (dimension's nodes)` beside MATCH, SQLite runs
            # the full-text query once per node of the dimension (seconds on a large graph).
            sql = (f"WITH m AS MATERIALIZED (SELECT rowid AS id, bm25(nodes_fts, {weights}) AS rank FROM nodes_fts"
                   " WHERE nodes_fts MATCH ?) SELECT id FROM m"
                   " WHERE id IN (SELECT node_id FROM node_dimensions WHERE dimension = ?) ORDER BY rank LIMIT ?")
            params: list[Any] = [expr, first]
        else:
            sql = f"SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY bm25(nodes_fts, {weights}) LIMIT ?"
            params = [expr]
        params.append(max(limit, FTS_CANDIDATES))
        for rank, (node_id,) in enumerate(db.execute(sql, params).fetchall(), 1):
            ranks.setdefault(node_id, []).append(rank)
    note = None
    vector = []
    if len(meaning.strip()) >= MIN_SEMANTIC_CHARS:
        try:
            vector = searcher.vector_candidates(meaning, max(limit, VECTOR_CANDIDATES), first)
        except EmbedderError as exc:
            note = f"full-text only: {exc}"
    vector = [c for c in vector if c.cosine is not None and c.cosine >= MIN_COSINE]
    if excluded and vector:  # `-word` holds for meaning matches too: drop the notes that contain it
        unwanted = " OR ".join(t.render() for t in excluded[:fts_query.MAX_TERMS])
        hidden = {r[0] for r in db.execute(
            "SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))",
            (unwanted, json.dumps([c.node_id for c in vector])))}
        vector = [c for c in vector if c.node_id not in hidden]
    for c in vector:
        ranks.setdefault(c.node_id, []).append(c.vector_rank)
    scored = sorted(ranks.items(), key=lambda kv: (-rrf(kv[1]), kv[0]))
    ids = [node_id for node_id, _ in scored]
    for dim in dims[1:]:
        keep = {r[0] for r in db.execute(
            "SELECT node_id FROM node_dimensions WHERE dimension = ? AND node_id IN (SELECT value FROM json_each(?))",
            (dim, json.dumps(ids)))}
        ids = [i for i in ids if i in keep]
    return ids[:limit], note
