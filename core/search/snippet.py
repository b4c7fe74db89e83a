"""The part of a passage to show in one line: around the first place the query's words occur.

A passage is a chunk of up to a few thousand characters (a PDF page); a listing shows ~200. Its start
is often not where the words are: `cairn search '"old copper kettle"'` showed the page's first lines and
cut the phrase off. The window starts a little before the first occurrence of the query's first quoted
phrase (else of any of its words, a word matched at its start as the porter stemmer would: `whistle`
finds `whistles`), on a word boundary, with "…" where text was left out.
"""

from __future__ import annotations

import re

from core.search import fts_query

LEAD = 60  # characters of context shown before the match


def _first_match(text: str, query: str) -> int | None:
    terms = [t for t in fts_query.parse(query) if not t.negative]
    phrases = [t for t in terms if t.quoted and len(t.words) > 1]
    for group in (phrases, terms):
        found = []
        for term in group:
            words = [re.escape(w[:-1] if len(w) > 4 and w.endswith("s") else w) for w in term.words]
            pattern = r"(?<!\w)" + r"\W+".join(words)
            m = re.search(pattern, text, re.IGNORECASE)
            if m:
                found.append(m.start())
        if found:
            return min(found)
    return None


def around(text: str, query: str, width: int = 200) -> str:
    """`text` on one line, at most `width` characters (plus "…" marks), starting before the match."""
    flat = " ".join(text.split())
    at = _first_match(flat, query) if query.strip() else None
    start = 0
    if at is not None and at + 40 > width:  # the match would be cut off or near the end: move the window
        start = flat.rfind(" ", 0, max(0, at - LEAD)) + 1
    shown = flat[start:start + width]
    if start + width < len(flat):
        shown += "…"
    return ("…" if start else "") + shown
