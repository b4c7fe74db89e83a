"""A PDF's words made whole again, page by page, before they are stored (issue 24, item 2).

PDF text as a reader gives it keeps what typesetting did to the words: ligature code points (U+FB01
`ﬁ` for "fi": 1,364 of them in one Ghostscript-made man page, so `ﬁle` never matches "file"), words
hyphenated at a line end (`com-\nmand`; PDFium marks them `com\ufffemand`), and, in PDFs that space
their words by position instead of space characters (groff's, Ghostscript's), a space guessed where a
letter was kerned (`v alue`, `b uiltin`) or in the wrong place (`ifpar ameter` for "if parameter").
`whole_words(pages, soft)`:
- takes back a guessed space (`soft`: the offsets of the spaces the reader made up, per page) between two
  pieces when the pieces joined are a word the document shows whole elsewhere and one piece never occurs
  in the document but beside the other; or moves it, when the pieces joined are no word but split
  elsewhere into two words the document has (`if` + `parameter`) — the length stays the same;
- folds the Latin ligatures U+FB00–U+FB06 into their letters;
- joins a word hyphenated at a line end when the joined word occurs elsewhere in the same document (so
  `com-` + `mand` becomes `command` where the document says "command" somewhere), or keeps the hyphen
  when the hyphenated form does (`well-` + `known` where it says "well-known"); otherwise a line end is
  left as it was (a dash at a line end may be a real one) and PDFium's mark becomes a hyphen. The rest of
  the line follows the joined word onto the next line, so every line keeps its place.
Each page is changed on its own, so the page starts computed afterwards stay exact. A space is only ever
taken back where the reader guessed it; the spaces the PDF holds are the document's.
"""

from __future__ import annotations

import re
from collections import Counter

LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
             "\ufb06": "st"}
_LIGATURE = re.compile("[\ufb00-\ufb06]")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_LINE_END_HYPHEN = re.compile(r"([^\W\d_]+)-\n[ \t]*([^\W\d_]+)([ \t]*)")
_LETTERS = re.compile(r"[^\W\d_]+")
_MARKED_HYPHEN = re.compile(r"([^\W\d_]+)\ufffe\s*([^\W\d_]+)")  # PDFium's line-end hyphenation


def fold_ligatures(text: str) -> str:
    return _LIGATURE.sub(lambda m: LIGATURES[m.group()], text)


def whole_words(pages: list[str], soft: list[list[int]] | None = None) -> list[str]:
    """The pages with guessed spaces mended, ligatures folded and line-end hyphenations joined (see the
    module). soft[i]: offsets in pages[i] of the spaces the reader guessed."""
    if soft:
        pages = _mend_guessed_spaces(pages, soft)
    pages = [fold_ligatures(p) for p in pages]
    if not any("-\n" in p or "\ufffe" in p for p in pages):
        return pages
    vocabulary = {w.lower() for p in pages
                  for w in _WORD.findall(_LINE_END_HYPHEN.sub(" ", _MARKED_HYPHEN.sub(" ", p)))}

    def join(m: re.Match) -> str:
        head, tail = m.group(1), m.group(2)
        if (head + tail).lower() in vocabulary:
            return f"{head}{tail}\n"
        if f"{head}-{tail}".lower() in vocabulary:
            return f"{head}-{tail}\n"
        return m.group(0)

    def join_marked(m: re.Match) -> str:
        head, tail = m.group(1), m.group(2)
        return head + tail if (head + tail).lower() in vocabulary else f"{head}-{tail}"

    return [_LINE_END_HYPHEN.sub(join, _MARKED_HYPHEN.sub(join_marked, p)).replace("\ufffe", "-") for p in pages]


def _mend_guessed_spaces(pages: list[str], soft: list[list[int]]) -> list[str]:
    """Each guessed space between two pieces of letters taken back or moved where the document shows the
    word (see the module)."""
    runs = [[(m.start(), m.end(), fold_ligatures(m.group()).lower()) for m in _LETTERS.finditer(p)] for p in pages]
    count = Counter(key for page in runs for _, _, key in page)
    # (page, where the left piece starts, the space, where the right piece ends, left piece, right piece)
    candidates: list[tuple[int, int, int, int, str, str]] = []
    for number, (page, guessed) in enumerate(zip(pages, soft)):
        ends = {end: (start, key) for start, end, key in runs[number]}
        starts = {start: (end, key) for start, end, key in runs[number]}
        for k in guessed:
            if 0 <= k < len(page) and page[k] == " " and k in ends and k + 1 in starts:
                (start, a), (end, b) = ends[k], starts[k + 1]
                candidates.append((number, start, k, end, a, b))
    pairs = Counter((a, b) for *_, a, b in candidates)
    edits: dict[int, list[tuple[int, int, int, int | None]]] = {}  # page -> (start, space, end, new split)
    for number, start, k, end, a, b in candidates:
        if count[a] != pairs[a, b] and count[b] != pairs[a, b]:
            continue  # both pieces occur elsewhere on their own: two words
        if count[a + b]:
            split = None  # the word the document shows whole
        else:
            split = _best_split(a + b, len(a), count) if end - start == len(a) + len(b) + 1 else None
            if split is None:  # (a piece with a ligature in it is not moved: its letters and keys differ)
                continue
        mine = edits.setdefault(number, [])
        if not mine or mine[-1][2] <= start:  # a piece already mended beside it: leave this one
            mine.append((start, k, end, split))
    return [_apply(page, edits[number]) if number in edits else page for number, page in enumerate(pages)]


def _best_split(word: str, current: int, count: Counter) -> int | None:
    """Where to put the space in `word` so both sides are words of the document (the commonest pair)."""
    best, best_score = None, 0
    for i in range(1, len(word)):
        if i != current:
            score = min(count[word[:i]], count[word[i:]])
            if score > best_score:
                best, best_score = i, score
    return best


def _apply(page: str, edits: list[tuple[int, int, int, int | None]]) -> str:
    parts, at = [], 0
    for start, space, end, split in edits:
        letters = page[start:space] + page[space + 1:end]
        parts += [page[at:start], letters if split is None else f"{letters[:split]} {letters[split:]}"]
        at = end
    parts.append(page[at:])
    return "".join(parts)
