"""Turn anything a person types into a safe FTS5 MATCH expression (never raw user text).

- Words are split the way the unicode61 tokenizer splits them; every term is double-quoted, so FTS5
  operators and punctuation in the input (`c++`, `a:b`, `NEAR`, `(`, URLs) are plain text.
- "double quoted phrases" stay phrases; `it's` or `a:b` become the phrase of their parts.
- `word*` is a prefix search; a prefix shorter than MIN_PREFIX characters is searched as a whole
  word instead (a one-letter prefix would expand to most of the vocabulary).
- `-word` excludes; if nothing positive is left, the query matches nothing.
- Terms are OR-ed (BM25 ranks documents with more of them first); common English stop-words are
  dropped when the query has other terms.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MIN_PREFIX = 2
MAX_TERMS = 32  # a pasted paragraph would otherwise build a query that scans every posting list

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)


def _is_token_char(ch: str) -> bool:
    """unicode61's default token characters: letters, numbers and marks (plus private use)."""
    cat = unicodedata.category(ch)
    return cat[0] in "LNM" or cat == "Co"


def words(text: str) -> list[str]:
    out, current = [], []
    for ch in text:
        if _is_token_char(ch):
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]
    prefix: bool = False
    negative: bool = False
    quoted: bool = False

    def render(self) -> str:
        body = " ".join(self.words)
        return f'"{body}"' + ("*" if self.prefix else "")

    @property
    def is_stopword(self) -> bool:
        return not self.quoted and len(self.words) == 1 and self.words[0].lower() in STOPWORDS


_PIECE = re.compile(r'(-?)"([^"]*)("?)|(\S+)')


def parse(text: str) -> list[Term]:
    terms: list[Term] = []
    for m in _PIECE.finditer(text or ""):
        if m.group(4) is None:  # a quoted phrase (an unclosed quote runs to the end)
            ws = words(m.group(2))
            if ws:
                terms.append(Term(tuple(ws), negative=bool(m.group(1)), quoted=True))
            continue
        raw = m.group(4)
        negative = raw.startswith("-") and len(raw) > 1
        if negative:
            raw = raw[1:]
        prefix = raw.endswith("*")
        ws = words(raw)
        if not ws:
            continue
        if prefix and len(ws[-1]) < MIN_PREFIX:
            prefix = False
        terms.append(Term(tuple(ws), prefix=prefix, negative=negative))
    return terms


def build(text: str, *, mode: str = "or") -> str | None:
    """The MATCH expression for `text`, or None when nothing searchable is left (match nothing)."""
    terms = parse(text)
    positive = [t for t in terms if not t.negative]
    negative = [t for t in terms if t.negative]
    content = [t for t in positive if not t.is_stopword]
    if content:
        positive = content
    positive = _unique(positive)[:MAX_TERMS]
    if not positive:
        return None
    joiner = " OR " if mode == "or" else " AND "
    expr = joiner.join(t.render() for t in positive)
    if len(positive) > 1:
        expr = f"({expr})"
    for t in _unique(negative)[:MAX_TERMS]:
        expr += f" NOT {t.render()}"
    return expr


def _unique(terms: list[Term]) -> list[Term]:
    seen, out = set(), []
    for t in terms:
        key = (tuple(w.lower() for w in t.words), t.prefix)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out
