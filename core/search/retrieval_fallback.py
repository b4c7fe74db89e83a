"""Chat retrieval when meaning search cannot be trusted: keyword passages plus the most recent notes.

Two conditions switch the context engine (core.chat.context) to this fallback, and it says which in its
`retrieval_note` (shown above the retrieved block in the Context viewer and by `cairn context`):

- the embedding model is not available: its files are missing or it fails to load (EmbedderError),
  or onnxruntime / tokenizers cannot be imported;
- a large indexing backlog: at least BACKLOG_MIN_PENDING nodes pending AND more than BACKLOG_SHARE of
  all nodes. Pending nodes have no chunks or vectors yet, so meaning search cannot see them; with a
  fifth of the graph unseen, keywords over every node beat meaning over the rest. Below 50 pending
  the running app indexes them within seconds (~128 sentences/s on 2 cores), so a fresh capture
  never flips retrieval into keyword mode;
- most of the graph pending, whatever its size: more than MOST_SHARE of all nodes. A small graph just
  loaded or imported (the 14-note Getting started guide, before its first indexing pass) has too few
  vectors for meaning search to find anything, while keywords see every node. A single fresh capture
  in a graph of a few notes never crosses half.

Keyword passages have no calibrated absolute score (BM25 is unbounded), so the cosine floor cannot
apply: a keyword hit is kept when its BM25 is at least KEYWORD_RELATIVE of the best one's, at most
KEYWORD_PASSAGES of them; then the RECENT_NODES most recently updated notes not already in the block
(never memory nodes: the conversation's own turns are already in its history). A node not indexed
yet has no chunk, so its passage is the start of its text (PASSAGE_CHARS). Memory hits get no boost
here (core.graph.memory's boost orders passages of comparable meaning, which keyword scores are not).
"""

from __future__ import annotations

import json
from typing import Callable

from core.errors import EmbedderError

BACKLOG_MIN_PENDING = 50
BACKLOG_SHARE = 0.20
MOST_SHARE = 0.5
KEYWORD_RELATIVE = 0.5
KEYWORD_PASSAGES = 4
RECENT_NODES = 2
CANDIDATES = 20
PASSAGE_CHARS = 1000  # about one chunk (core.index.chunker: 200 tokens)
_TAIL = "; passages are keyword matches plus the most recent notes."


def backlog(store) -> tuple[int, int]:
    """(pending nodes, all nodes)."""
    row = store.db.execute("SELECT (SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed'"
                           " AND chunk_status = 'pending'),"
                           " (SELECT COUNT(*) FROM nodes)").fetchone()
    return int(row[0]), int(row[1])


def _pending(store) -> int:
    """Pending nodes only. The `!= 'indexed'` term lets SQLite use the partial index nodes_status
    (measured at 100k indexed nodes: 0.004 ms, against 4.8 ms for `= 'pending'` alone, a table scan)."""
    return int(store.db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed'"
                                " AND chunk_status = 'pending'").fetchone()[0])


def backlog_is_large(pending: int, total: int) -> bool:
    return (pending >= BACKLOG_MIN_PENDING and pending > BACKLOG_SHARE * total) or pending > MOST_SHARE * total


def _most_pending(store, pending: int) -> bool:
    """Whether more than half the nodes are pending, counting at most 2 x pending rows (a large graph
    with a few pending notes costs a few rows, not a scan)."""
    limit = int(pending / MOST_SHARE)
    seen = store.db.execute("SELECT COUNT(*) FROM (SELECT 1 FROM nodes LIMIT ?)", (limit,)).fetchone()[0]
    return seen < limit


def reason(store, searcher, message: str) -> str | None:
    """Why retrieval for `message` must fall back to keywords, or None when meaning search is fine.
    Embeds the message (the searcher caches the vector, so the search that follows reuses it)."""
    # Counting every node scans an index (~5 ms at 100k nodes), so only with enough pending to matter.
    first = _pending(store)
    if first >= BACKLOG_MIN_PENDING or (first and _most_pending(store, first)):
        pending, total = backlog(store)
        if backlog_is_large(pending, total):
            return (f"Retrieval: keyword search only — {pending:,} of {total:,} nodes are waiting to be indexed "
                    f"(run `cairn index`, or leave the app open){_TAIL}")
    try:
        searcher.query_vector(message)
    except (EmbedderError, ImportError) as exc:
        return f"Retrieval: keyword search only — the embedding model is not available ({exc}){_TAIL}"
    return None


def _passage(node: dict, chunk_row) -> dict:
    if chunk_row is not None:
        return {"idx": chunk_row["chunk_idx"], "start_char": chunk_row["start_char"],
                "end_char": chunk_row["end_char"], "heading_path": json.loads(chunk_row["heading_path"]),
                "text": chunk_row["text"]}
    text = node["source"] or node["description"] or node["title"]
    end = len(text)
    if end > PASSAGE_CHARS:
        cut_at = text.rfind(" ", 0, PASSAGE_CHARS)
        end = cut_at if cut_at > PASSAGE_CHARS // 2 else PASSAGE_CHARS
    return {"idx": None, "start_char": 0, "end_char": end, "heading_path": [], "text": text[:end]}


def hits(store, searcher, message: str, allowed: Callable[[dict], bool]) -> list[tuple[None, dict]]:
    """(None, hit) pairs: keyword hits best first (hit["fallback"] = "keyword"), then recent notes
    ("recent"). The cosine is None: there is none to give."""
    out: list[tuple[None, dict]] = []
    for h in searcher.search(message, mode="fts", limit=CANDIDATES):
        if allowed(h):
            out.append((None, {**h, "fallback": "keyword"}))
    seen = {h["id"] for _, h in out}
    recent_ids = [r[0] for r in store.db.execute(
        "SELECT id FROM nodes WHERE type != 'memory' ORDER BY updated_at DESC, id DESC LIMIT ?", (CANDIDATES,))]
    for node in store.get_nodes(recent_ids):
        if node["id"] not in seen and allowed(node):
            out.append((None, {**node, "score": None, "chunk": None, "match": {"fts": None, "vector": None},
                               "fallback": "recent"}))
    # Every hit gets a passage: its best keyword chunk, else its first chunk, else the start of its text.
    need = [h["id"] for _, h in out if h["chunk"] is None]
    first = {r["node_id"]: r for r in store.db.execute(
        "SELECT node_id, chunk_idx, start_char, end_char, heading_path, text FROM chunks"
        " WHERE chunk_idx = 0 AND node_id IN (SELECT value FROM json_each(?))", (json.dumps(need),))} if need else {}
    for _, h in out:
        if h["chunk"] is None:
            h["chunk"] = _passage(h, first.get(h["id"]))
    return out


def cut(scored: list[tuple[None, dict]]) -> list[tuple[None, dict]]:
    """Keep keyword hits within KEYWORD_RELATIVE of the best (KEYWORD_PASSAGES at most), then
    RECENT_NODES recent notes."""
    keyword = [(c, h) for c, h in scored if h.get("fallback") == "keyword"]
    recent = [(c, h) for c, h in scored if h.get("fallback") == "recent"]
    best = max((h["score"] or 0.0 for _, h in keyword), default=0.0)
    kept = [(c, h) for c, h in keyword if best > 0 and (h["score"] or 0.0) >= KEYWORD_RELATIVE * best]
    return kept[:KEYWORD_PASSAGES] + recent[:RECENT_NODES]
