"""A PDF's words made whole again, page by page, before they are stored (issue 24, item 2).

PDF text as a reader gives it keeps what typesetting did to the words: ligature code points (U+FB01
`ﬁ` for "fi": 1,364 of them in one Ghostscript-made man page, so `ﬁle` never matches "file"), and words
split at a line end with a hyphen (`com-\\nmand`). `whole_words(pages)`:
- folds the Latin ligatures U+FB00–U+FB06 into their letters;
- joins a word hyphenated at a line end when the joined word occurs elsewhere in the same document (so
  `com-` + `mand` becomes `command` where the document says "command" somewhere), or keeps the hyphen
  when the hyphenated form does (`well-` + `known` where it says "well-known"); otherwise the line is left
  as it was (a dash at a line end may be a real one). The rest of the line follows the joined word onto
  the next line, so every line keeps its place.
Each page is changed on its own, so the page starts computed afterwards stay exact.
"""

from __future__ import annotations

import re

LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
             "\ufb06": "st"}
_LIGATURE = re.compile("[\ufb00-\ufb06]")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_LINE_END_HYPHEN = re.compile(r"([^\W\d_]+)-\n[ \t]*([^\W\d_]+)([ \t]*)")


def fold_ligatures(text: str) -> str:
    return _LIGATURE.sub(lambda m: LIGATURES[m.group()], text)


def whole_words(pages: list[str]) -> list[str]:
    """The pages with their ligatures folded and their line-end hyphenations joined (see the module)."""
    pages = [fold_ligatures(p) for p in pages]
    if not any("-\n" in p for p in pages):
        return pages
    vocabulary = {w.lower() for p in pages for w in _WORD.findall(_LINE_END_HYPHEN.sub(" ", p))}

    def join(m: re.Match) -> str:
        head, tail = m.group(1), m.group(2)
        if (head + tail).lower() in vocabulary:
            return f"{head}{tail}\n"
        if f"{head}-{tail}".lower() in vocabulary:
            return f"{head}-{tail}\n"
        return m.group(0)

    return [_LINE_END_HYPHEN.sub(join, p) for p in pages]
