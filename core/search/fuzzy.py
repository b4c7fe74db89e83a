"""Fuzzy matching of node titles, for finders such as the TUI's new-edge picker.

A query matches a title when its characters appear in the title in order (case ignored, spaces in the
query ignored). Exact, prefix, word-start and substring matches rank before scattered ones; among
equals, the tighter match, then the shorter title, then the caller's order (most recent first) wins.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

TitleRow = tuple[int, str]


def node_titles(store, *, exclude: Iterable[int] = ()) -> list[TitleRow]:
    """Every node's (id, title), most recently updated first; ids in `exclude` left out."""
    skip = {int(i) for i in exclude}
    rows = store.db.execute("SELECT id, title FROM nodes ORDER BY updated_at DESC, id DESC").fetchall()
    return [(row["id"], row["title"]) for row in rows if row["id"] not in skip]


def rank_titles(query: str, titles: Sequence[TitleRow], limit: int = 50) -> list[TitleRow]:
    """The best `limit` titles for `query`; an empty query keeps the given order."""
    needle = " ".join(query.lower().split())
    if not needle:
        return list(titles[:limit])
    chars = [c for c in needle if not c.isspace()]
    pattern = re.compile(".*?".join(re.escape(c) for c in chars), re.IGNORECASE | re.DOTALL)
    word_start = re.compile(r"(?:^|[^\w])" + re.escape(needle), re.IGNORECASE)
    scored: list[tuple[int, int, int, int, TitleRow]] = []
    for order, row in enumerate(titles):
        title = row[1]
        match = pattern.search(title)
        if match is None:
            continue
        lower = title.lower()
        if lower == needle:
            tier, span = 0, len(needle)
        elif lower.startswith(needle):
            tier, span = 1, len(needle)
        elif word_start.search(title):
            tier, span = 2, len(needle)
        elif needle in lower:
            tier, span = 3, len(needle)
        else:
            tier, span = 4, _tightest_span(pattern, title, match)
        scored.append((tier, span, len(title), order, row))
    scored.sort(key=lambda item: item[:4])
    return [item[4] for item in scored[:limit]]


def _tightest_span(pattern: re.Pattern, title: str, first: re.Match) -> int:
    """Length of the shortest window holding the query in order (tries each later start, bounded)."""
    best = first.end() - first.start()
    start = first.start() + 1
    for _ in range(8):  # a few retries find the tight window in practice; titles are short
        match = pattern.search(title, start)
        if match is None:
            break
        best = min(best, match.end() - match.start())
        start = match.start() + 1
    return best
