"""Markdown-aware chunking: headings, then paragraphs, then sentences, then (last resort) tokens.

Every chunk is an exact slice of the source: `source[start_char:end_char] == text`. Its heading path
is the list of headings above it. A paged document (a PDF) gives the character offset where each page
starts (`page_starts`); no chunk then crosses a page break, and each chunk has the 1-based page it is
on. Lengths are measured in the embedder's word pieces, so no chunk
is cut off by the model's input window.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass, field
from typing import Callable

# 200 word pieces leaves room under the 256-piece window for the title prefixed at embedding time.
# Measured in issue 6 on SciFact's train split (bench/retrieval.py): 128-piece chunks (overlap 32,
# the length the model was trained on) gave hybrid nDCG@10 0.751 against 0.747, +0.004 with a
# standard error of 0.003 (66 queries better, 62 worse), for 57 % more chunks to embed, store and
# scan; not worth it, so 200 stays. Without the title in front of each chunk: 0.745 (vector alone
# 0.674 against 0.685), so the title prefix stays.
MAX_CHUNK_TOKENS = 200
OVERLAP_TOKENS = 32

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
# A sentence ends after . ! ? … (and up to two closing quotes/brackets, which stay with it).
_SENTENCE_END = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"')\]])|(?<=[.!?…][\"')\]]{2}))\s+|\n+")


def has_headings(capture_kind: str | None) -> bool:
    """Whether a node's `# ...` lines are headings: not in a captured PDF or text file (their
    metadata.capture.kind), which carry no markdown; in every other node (notes, vault files, web pages
    captured as markdown)."""
    return capture_kind not in ("pdf", "text")


@dataclass(frozen=True)
class Chunk:
    idx: int
    text: str
    start_char: int
    end_char: int
    heading_path: tuple[str, ...] = field(default_factory=tuple)
    page: int | None = None  # 1-based page of a paged document; None for a note without pages
    # Word pieces as the chunker counted them (the sum of its sentences' or paragraphs'): the index
    # run's measure of work (core/index/progress.py); not part of what the chunk is.
    tokens: int = field(default=0, compare=False)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    tokens: int


def _sections(source: str, headings: bool = True) -> list[tuple[tuple[str, ...], int, int]]:
    """(heading path, start, end) for each run of text under one heading; code fences respected.
    Without `headings` (a PDF, a text file: no markdown in them) the whole text is one section."""
    if not headings:
        return [((), 0, len(source))] if source else []
    sections: list[tuple[tuple[str, ...], int, int]] = []
    path: list[tuple[int, str]] = []
    current_path: tuple[str, ...] = ()
    start = 0
    pos = 0
    fence: str | None = None
    for line in source.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        m_fence = _FENCE.match(stripped)
        if m_fence:
            marker = m_fence.group(1)
            if fence is None:
                fence = marker
            elif marker == fence:
                fence = None
        elif fence is None:
            m = _HEADING.match(stripped)
            if m:
                if pos > start:
                    sections.append((current_path, start, pos))
                level = len(m.group(1))
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, m.group(2).strip()))
                current_path = tuple(title for _, title in path)
                start = pos
        pos += len(line)
    if pos > start:
        sections.append((current_path, start, pos))
    return sections


def _outline_sections(outline: list, length: int) -> list[tuple[tuple[str, ...], int, int]]:
    """(heading path, start, end) from a document's own outline: [level, title, offset] entries (a PDF's
    bookmarks placed by core.capture.files). Entries that are not that shape, or out of order, are left out."""
    marks: list[tuple[int, int, str]] = []
    for entry in outline:
        if (isinstance(entry, (list, tuple)) and len(entry) == 3 and isinstance(entry[0], int)
                and isinstance(entry[1], str) and isinstance(entry[2], int) and 0 <= entry[2] <= length
                and (not marks or entry[2] >= marks[-1][0])):
            marks.append((entry[2], entry[0], entry[1]))
    sections: list[tuple[tuple[str, ...], int, int]] = []
    path: list[tuple[int, str]] = []
    start, current = 0, ()
    for offset, level, title in marks:
        if offset > start:
            sections.append((current, start, offset))
            start = offset
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        current = tuple(t for _, t in path)
    if length > start:
        sections.append((current, start, length))
    return sections


def _page_starts(page_starts: list[int] | None, length: int) -> list[int]:
    """The page starts checked: whole numbers, ascending, the first 0, none past the end."""
    if not page_starts:
        return []
    starts = [int(x) for x in page_starts]
    if starts[0] != 0 or any(b < a for a, b in zip(starts, starts[1:])) or starts[-1] > length:
        raise ValueError(f"page starts must ascend from 0 within the text's {length:,} characters; "
                         f"got {starts[:5]}{'…' if len(starts) > 5 else ''}")
    return starts


def _cut_at(starts: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """The range [start, end) cut at every page start inside it."""
    cuts = [s for s in starts if start < s < end]
    edges = [start, *cuts, end]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def _spans(text: str, pattern: re.Pattern, offset: int) -> list[tuple[int, int]]:
    """Non-blank pieces of text between matches of pattern, as absolute (start, end)."""
    out = []
    last = 0
    for m in pattern.finditer(text):
        if text[last : m.start()].strip():
            out.append((offset + last, offset + m.start()))
        last = m.end()
    if text[last:].strip():
        out.append((offset + last, offset + len(text)))
    return [_trim(text, offset, s, e) for s, e in out]


def _trim(text: str, offset: int, s: int, e: int) -> tuple[int, int]:
    piece = text[s - offset : e - offset]
    lead = len(piece) - len(piece.lstrip())
    trail = len(piece) - len(piece.rstrip())
    return s + lead, e - trail


class Chunker:
    """Splits markdown into chunks of at most `max_tokens` word pieces (special tokens excluded)."""

    def __init__(
        self,
        count_tokens: Callable[[str], int],
        token_offsets: Callable[[str], list[tuple[int, int]]],
        max_tokens: int = MAX_CHUNK_TOKENS,
        overlap_tokens: int = OVERLAP_TOKENS,
    ):
        if overlap_tokens >= max_tokens:
            raise ValueError("overlap must be smaller than the chunk size")
        self._count_with_specials = count_tokens
        self._token_offsets = token_offsets
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens

    @classmethod
    def for_embedder(cls, embedder, **kwargs) -> "Chunker":
        return cls(embedder.count_tokens, embedder.token_offsets, **kwargs)

    def count(self, text: str) -> int:
        return max(0, self._count_with_specials(text) - 2)

    def split(self, source: str, page_starts: list[int] | None = None, *, headings: bool = True,
              outline: list | None = None) -> list[Chunk]:
        """Chunks of source; with page_starts (the offset where each page begins, ascending, the first
        0) the sections are also cut at every page start and each chunk carries its page number.
        `headings`: whether `# ...` lines are headings (markdown: notes, vault files, web pages made
        markdown); a PDF's or a text file's lines that start with `#` are shell prompts, comments and
        parameters, never headings (2,324 of 2,947 chunks of man-page PDFs had such a false one).
        `outline`: a document's own headings, [level, title, offset] (a PDF's bookmarks), used instead."""
        starts = _page_starts(page_starts, len(source))
        chunks: list[Chunk] = []
        sections = _outline_sections(outline, len(source)) if outline else _sections(source, headings)
        for path, s_start, s_end in sections:
            for p_start, p_end in _cut_at(starts, s_start, s_end):
                units = self._units(source, p_start, p_end)
                for start, end, tokens in self._pack(units):
                    text = source[start:end]
                    page = bisect.bisect_right(starts, start) if starts else None
                    chunks.append(Chunk(len(chunks), text, start, end, path, page, tokens))
        return chunks

    # -- internals --------------------------------------------------------------------------------
    def _units(self, source: str, start: int, end: int) -> list[_Unit]:
        """Sentences (and lines) of every paragraph; any still too long is cut at token boundaries."""
        units: list[_Unit] = []
        section = source[start:end]
        for p_start, p_end in _spans(section, _BLANK_LINES, start):
            paragraph = source[p_start:p_end]
            tokens = self.count(paragraph)
            if tokens <= self.max_tokens:
                units.append(_Unit(p_start, p_end, tokens))
                continue
            for s_start, s_end in _spans(paragraph, _SENTENCE_END, p_start):
                sentence = source[s_start:s_end]
                tokens = self.count(sentence)
                if tokens <= self.max_tokens:
                    units.append(_Unit(s_start, s_end, tokens))
                else:
                    units.extend(self._hard_split(source, s_start, s_end))
        return units

    def _hard_split(self, source: str, start: int, end: int) -> list[_Unit]:
        offsets = self._token_offsets(source[start:end])
        out = []
        # Small pieces, so packing can fill chunks and carry an overlap across the cut.
        step = max(8, min(self.overlap_tokens, self.max_tokens // 4))
        for i in range(0, len(offsets), step):
            window = offsets[i : i + step]
            a = start + (window[0][0] if i else 0)  # keep leading characters the tokenizer skips
            b = start + (offsets[i + step][0] if i + step < len(offsets) else len(source[start:end]))
            a, b = _trim(source, 0, a, b)
            if b > a:
                out.append(_Unit(a, b, self.count(source[a:b])))
        return out

    def _pack(self, units: list[_Unit]) -> list[tuple[int, int, int]]:
        """Greedy packing of consecutive units; a new chunk repeats the previous chunk's tail units
        up to `overlap_tokens` so a passage cut at a boundary is still found whole in one chunk.
        (start, end, tokens) of each chunk."""
        spans: list[tuple[int, int, int]] = []
        i = 0
        while i < len(units):
            j = i
            total = 0
            while j < len(units) and total + units[j].tokens <= self.max_tokens:
                total += units[j].tokens
                j += 1
            if j == i:  # a single unit over the budget (cannot happen after _hard_split, but be safe)
                j = i + 1
                total = units[i].tokens
            spans.append((units[i].start, units[j - 1].end, total))
            if j >= len(units):
                break
            # step back over trailing units that fit the overlap and leave room for the next unit (else the
            # next chunk would only repeat part of this one), but always make progress
            back = j
            carried = 0
            while (back - 1 > i and carried + units[back - 1].tokens <= self.overlap_tokens
                   and carried + units[back - 1].tokens + units[j].tokens <= self.max_tokens):
                back -= 1
                carried += units[back].tokens
            i = back
        return spans
