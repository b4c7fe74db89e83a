"""Auto-written memory (nodes with type='memory'): how often and how recently each was used, and the
small ranking boost that gives a recently or often used memory the edge over an equally good one.

A *use* is a memory passage put into a request's retrieved block, or a memory node returned to the
model by a read tool (getNodesById, searchContent); it is counted once per chat turn. Uses live in
the `memory_access` side table (migration 2), so a use never rewrites the node's row. The user's own
notes (any other type) are never counted and never boosted. A memory node moved to the trash keeps
its count in the trash payload, and `cairn restore` brings it back with the node (core.graph.store).

Where the boost applies (one rule: it orders what Cairn itself puts into a chat request, nothing else):

- Chat retrieval (core.chat.context.ContextEngine.scored_hits, the retrieved block of every turn): boosted.
- The Context viewer and `cairn context` (with or without --chat), and `cairn ask`: boosted, because
  they build the request with the same engine and so show exactly what the chat will send, in the
  same order. The boost's recency is measured on the chat's clock (ContextEngine.suffix passes its
  `now` down), and previewing is not a use: only a sent turn counts one, so looking at the preview
  cannot change the ranking it shows.
- `cairn search`, the searchContent / queryNodes tools (the chat model's and the MCP server's alike):
  not boosted. These are searches someone asked for with their own query; they answer with the
  search engine's ranking and score, so the same query ranks the same way wherever it is asked,
  and a search of the user's notes is not reordered by how often the chat used its memories.
- The keyword fallback of chat retrieval (core.search.retrieval_fallback): not boosted (BM25 scores are
  not comparable the way the boost assumes), and candidate searches of distil and integrate: not
  boosted (they gather candidates, they do not order a request).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Iterable

from core import clock

# The boost, applied to a memory hit's hybrid score in chat retrieval (core.chat.context; see above for where):
#     score x (1 + ACCESS_WEIGHT * a + RECENCY_WEIGHT * r)
#     a = min(1, log1p(uses) / log1p(ACCESS_SATURATION))    0 when never used, 1 from 20 uses on
#     r = 0.5 ** (days since last use, or creation, / RECENCY_HALF_LIFE_DAYS)
# so a memory gains at most 10 %: enough to order two equally good memory passages (the one used
# recently or often first), far too little to lift an unrelated memory over a better passage (the
# relative cutoff keeps passages within 20 % of the best). The logarithm makes the first few uses
# count most; the half-life lets an old habit fade. The cosine floor is never boosted: it is the
# junk control calibrated on off-topic questions, and a memory used often before is no more on topic
# for this message than its cosine says. User notes are never boosted, and the relative cutoff is
# measured from the best unboosted score, so which user notes are kept, and in what order, does not
# change.
ACCESS_WEIGHT = 0.05
RECENCY_WEIGHT = 0.05
ACCESS_SATURATION = 20
RECENCY_HALF_LIFE_DAYS = 30.0


def record_access(store, node_ids: Iterable[int], at: str | None = None) -> int:
    """Count one use of each memory node among `node_ids` (others are ignored); returns how many."""
    ids = sorted({int(i) for i in node_ids})
    if not ids:
        return 0
    stamp = at or clock.now()
    with store.db.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO memory_access(node_id, access_count, last_accessed_at)"
            " SELECT id, 1, ? FROM nodes WHERE type = 'memory' AND id IN (SELECT value FROM json_each(?))"
            " ON CONFLICT(node_id) DO UPDATE SET access_count = access_count + 1,"
            " last_accessed_at = excluded.last_accessed_at",
            (stamp, json.dumps(ids)))
        return cur.rowcount


def access(store, node_ids: Iterable[int]) -> dict[int, dict]:
    """For each memory node among `node_ids`: {access_count, last_accessed_at, created_at}."""
    ids = sorted({int(i) for i in node_ids})
    if not ids:
        return {}
    rows = store.db.execute(
        "SELECT n.id, n.created_at, COALESCE(a.access_count, 0) AS access_count, a.last_accessed_at"
        " FROM nodes n LEFT JOIN memory_access a ON a.node_id = n.id"
        " WHERE n.type = 'memory' AND n.id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)).fetchall()
    return {r["id"]: {"access_count": r["access_count"], "last_accessed_at": r["last_accessed_at"],
                      "created_at": r["created_at"]} for r in rows}


def boost_factor(access_count: int, last_used: str | None, now: datetime | None = None) -> float:
    """The multiplier for a memory hit's score (see the comment above): between 1.0 and 1.1."""
    now = now or datetime.now(timezone.utc)
    a = min(1.0, math.log1p(max(0, access_count)) / math.log1p(ACCESS_SATURATION))
    when = clock.parse(last_used)
    r = 0.0
    if when is not None:
        days = max(0.0, (now - when).total_seconds() / 86400)
        r = 0.5 ** (days / RECENCY_HALF_LIFE_DAYS)
    return 1.0 + ACCESS_WEIGHT * a + RECENCY_WEIGHT * r


def boost(store, scored: list[tuple[float, dict]], now: datetime | None = None) -> list[tuple[float, dict]]:
    """Boost the memory hits among (cosine, hit) pairs and re-rank by the boosted score.

    A boosted hit's `score` is multiplied and its factor kept in `hit["boost"]` (core.chat.context.cut
    measures the relative cutoff from the unboosted best). The cosine is left as it was."""
    memory_ids = [h["id"] for _, h in scored if h.get("type") == "memory"]
    if not memory_ids:
        return scored
    info = access(store, memory_ids)
    for _, h in scored:
        row = info.get(h["id"])
        if row is None:
            continue
        factor = boost_factor(row["access_count"], row["last_accessed_at"] or row["created_at"], now)
        h["boost"] = round(factor, 6)
        h["score"] = (h["score"] or 0.0) * factor
    order = {id(h): i for i, (_, h) in enumerate(scored)}
    return sorted(scored, key=lambda pair: (-(pair[1]["score"] or 0.0), order[id(pair[1])]))
