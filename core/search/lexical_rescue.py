"""Lexical rescue: the chat keeps a note whose title holds the question's exact term.

The context engine's junk control (core.chat.context.cut) drops every passage whose cosine to the message
is under MIN_COSINE (0.35). That floor was calibrated on SciFact's long claims, where meaning search
is strong; a short question about a rare identifier is not: "What does never_send do?" reaches
"Privacy: never_send" at cosine 0.345 (MiniLM does not know the word), although BM25 ranks it first
by far. A person expects a note that names the term to be read.

So one passage may pass under the floor when the lexical evidence is plain:
- it is the candidate with the highest BM25 among those retrieved;
- its title contains, as whole words in order, a term of the message that is not a stop-word
  (core.search.fts_query's terms: `never_send` and `"exact phrase"` are one term each);
- that term is rare in the graph: at most RARE_DOCS notes, or RARE_SHARE of them, contain it ("long"
  or "cell" in a title says little; "never_send", "KRAS" or "Raptor" say which note is meant);
- its cosine is at least MIN_COSINE (0.25: not a pure word collision, e.g. "tap" the faucet against
  "tap" the gesture), and its hybrid score passes the same relative cutoff as every other passage.
At most one passage is rescued, so a vague question can add one passage at most, and only when a
title names one of its words. Measured with bench/lexical_rescue.py (SciFact train and the 30
off-topic questions; figures in bench/retrieval.md, "Lexical rescue").
"""

from __future__ import annotations

from core.search import fts_query

MIN_COSINE = 0.25
RARE_DOCS = 8
RARE_SHARE = 0.01
MIN_TERM_CHARS = 3  # "a", "of", "is" and short fragments are not evidence


def terms(message: str) -> list[tuple[str, ...]]:
    """The message's content terms as lower-cased word sequences (stop-words and short words dropped)."""
    out = []
    for term in fts_query.parse(message):
        if term.negative or term.is_stopword:
            continue
        seq = tuple(w.lower() for w in term.words)
        # "what's" is ("what", "s"): a term counts only with a content word of MIN_TERM_CHARS or more.
        if any(len(w) >= MIN_TERM_CHARS and w not in fts_query.STOPWORDS for w in seq):
            out.append(seq)
    return out


def title_terms(message: str, title: str) -> list[tuple[str, ...]]:
    """The terms of `message` that `title` contains as whole words in order."""
    words = [w.lower() for w in fts_query.words(title)]
    return [seq for seq in terms(message)
            if any(tuple(words[i:i + len(seq)]) == seq for i in range(len(words) - len(seq) + 1))]


def title_term(message: str, title: str) -> tuple[str, ...] | None:
    """The first term of `message` that `title` contains, else None."""
    found = title_terms(message, title)
    return found[0] if found else None


def is_rare(store, seq: tuple[str, ...]) -> bool:
    """Whether at most max(RARE_DOCS, RARE_SHARE x all) notes contain the words `seq` (as a phrase,
    stemmed as full-text search stems it). Runs only for a rescue candidate: one count per message."""
    phrase = '"' + " ".join(seq) + '"'
    docs = store.db.execute("SELECT COUNT(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (phrase,)).fetchone()[0]
    if docs <= RARE_DOCS:
        return True
    total = store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
    return docs <= RARE_SHARE * total


def rescued(message: str, scored: list[tuple[float, dict]], bar: float, store=None) -> int | None:
    """The index in `scored` of the one passage to keep under the cosine floor, else None. `bar` is
    the hybrid score a passage needs (the relative cutoff times the best). With the `store`, the
    title's term must also be rare in the graph (without it, as in bench sweeps over bare hits, any
    content term counts)."""
    best_i, best_fts = None, 0.0
    for i, (_, h) in enumerate(scored):
        fts = (h.get("match") or {}).get("fts")
        if fts is not None and fts > best_fts:
            best_i, best_fts = i, fts
    if best_i is None:
        return None
    cosine, hit = scored[best_i]
    if cosine < MIN_COSINE or (hit["score"] or 0.0) < bar:
        return None
    found = title_terms(message, hit["title"])
    if store is not None:
        found = [seq for seq in found if is_rare(store, seq)]
    return best_i if found else None
