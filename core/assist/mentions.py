"""Link suggestions from mentions: a node's text names another node's title or one of its aliases.

A suggestion is an edge the user may accept, with the sentence that mentions the other node as the
draft of its explanation. Matching works on normalised word tokens (`\\w+`, case-folded, accents
removed), so word boundaries come for free and "Knowledge-Graphs" names "knowledge graphs".

- **exact**: the tokens of a title (or an alias: match "alias") appear in a row. Titles shorter than
  MIN_NAME_CHARS characters, and titles made only of stop-words or numbers, are never matched
  ("AI", "The", "2024"). Where matches overlap, the longest wins ("Deep Learning" hides "Learning"
  inside it; the same words elsewhere still count).
- **fuzzy**: for names of 2 to MAX_FUZZY_TOKENS words, every word but one matches exactly and that
  one is a near miss (FUZZY RULE below). Conservative on purpose: a wrong suggestion costs the user
  a keystroke and trust; a missed one costs nothing.

FUZZY RULE (thresholds; tests/test_mentions.py holds the near misses and the unrelated words):
the title's word has at least FUZZY_MIN_CHARS (5) letters and is no stop-word or number; the text's
word starts with the same letter and is within Damerau-Levenshtein distance 1 (2 for title words of
FUZZY_LONG_CHARS (10) letters or more), or is the title word plus/minus a plural "s"/"es" (that also
for words of 3-4 letters). So "neural netwroks" and "Graph Databse" are caught; "Bayesian influence"
(inference: 2 edits in 9 letters), "deep word" (work: 4 letters) and "graph theorem" are not. A text
word that is a real word is a different word, not a typo, unless it is the plural/singular: "grape
theory" does not suggest Graph Theory, "neural network" still suggests Neural Networks. Real words
are (1) the dictionary: the whole-word entries (alphabetic, no "##") of the offline embedder's
WordPiece vocabulary (all-MiniLM-L6-v2 tokenizer.json: 21,361 English words and names of 3+ letters),
read once per process, under a lock, on the first near miss (~20 ms; 3.3 MB kept, RSS +7 MB); and
(2) the words of the user's own titles and aliases (the TitleIndex keeps them; the node being
scanned does not count, and a word a renamed or deleted node no longer has counts until the next
rebuild). A typo that is itself a real word ("transformer modes" for Transformer Models) is
therefore missed; a missed suggestion costs nothing. Without a readable tokenizer.json (a broken
install) the rule falls back to edits alone, says so once in the log ("cairn.mentions" warning),
and `cairn doctor` reports it (check "link_dictionary").

Speed (it runs on every save at 100k nodes): no regex per title. A TitleIndex, built once per
database, holds 64-bit hashes of every eligible name (and of each fuzzy name with one word blanked
but for its first letter) in sorted numpy arrays, plus, per first word, the lengths of the names it
starts. Before each scan it takes in the rows written since it last looked (`updated_at` at or after
the newest seen, or a higher id), asked only when `PRAGMA data_version` (other connections),
`total_changes` (this one) or the newest row moved. A scan tokenises the text once, hashes each
distinct word n-gram that can start a name, looks the hashes up in one vectorised pass, and reads only
the candidate nodes back from SQLite to verify them (so a hash collision, a renamed or a deleted node
is never suggested). bench/links.py, 100k titles (bench/results/links.json): index build ~1 s, a
5,000-word note ~0.2 s, a 500-word note ~40-60 ms.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable

from core.errors import InvalidInput
from core.search.fts_query import STOPWORDS

MIN_NAME_CHARS = 3  # a normalised name shorter than this ("ai", "c") is never matched
MAX_FUZZY_TOKENS = 8  # longer names match exactly only
FUZZY_MIN_CHARS = 5
FUZZY_LONG_CHARS = 10
SENTENCE_CHARS = 300  # the explanation draft is trimmed to about this
MAX_SCAN_CHARS = 1_000_000  # of a node's text; a longer source is scanned up to here
SCORE_TITLE = 1.0
SCORE_ALIAS = 0.95
# Titles/aliases added since the last full build live in small dicts; past this many a scan rebuilds.
OVERLAY_LIMIT = 20_000
# A name shared by more nodes than this is too ambiguous to suggest (which one did the text mean?).
MAX_SAME_NAME = 5

log = logging.getLogger("cairn.mentions")

_WORD = re.compile(r"\w+")
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s|\n")
_MD_LEAD = re.compile(r"^\s*(?:#+|[-*+>]|\d+[.)])\s+")


@dataclass(frozen=True)
class Suggestion:
    target_id: int
    target_title: str
    sentence: str  # the draft explanation: the sentence that mentions the target
    match: str  # "exact" | "alias" | "fuzzy"
    score: float  # 1.0 title, 0.95 alias, fuzzy 1 - edits / name length
    mention: str  # the words as written in the text

    def as_dict(self) -> dict:
        return asdict(self)


# -- normalising -------------------------------------------------------------------------------------
def _fold(token: str) -> str:
    token = token.casefold()
    if token.isascii():
        return token
    return "".join(c for c in unicodedata.normalize("NFKD", token) if not unicodedata.combining(c))


def _plain(token: str) -> bool:
    """A word that cannot carry a match on its own: a stop-word or a number."""
    return token in STOPWORDS or token.isdigit()


def name_tokens(name: str) -> tuple[str, ...] | None:
    """A title's or alias's normalised words, or None when it is too short or too plain to match."""
    tokens = tuple(_fold(t) for t in _WORD.findall(name or ""))
    if not tokens or len(" ".join(tokens)) < MIN_NAME_CHARS or all(_plain(t) for t in tokens):
        return None
    return tokens


def _wild_key(tokens: tuple[str, ...], k: int) -> str:
    """A name with word k blanked but for its first letter (a near miss keeps the first letter, and
    without it a two-word name's key would be shared by every name with the same other word)."""
    return " ".join(tokens[:k] + ("\x00" + tokens[k][0],) + tokens[k + 1:])


def _fuzzy_slot(token: str) -> bool:
    """Whether a title word may be the one near miss of a fuzzy match."""
    return len(token) >= 3 and not _plain(token)


def edit_distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein distance (optimal string alignment); anything above `limit` is limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    # Only the part between the common prefix and suffix can differ (it also makes the table small).
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    a, b = a[i:], b[i:]
    while a and b and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                v = min(v, prev2[j - 2] + 1)
            cur[j] = v
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return min(prev[-1], limit + 1)


def _one_edit(a: str, b: str) -> bool:
    """Whether two different words are one Damerau edit apart (a fast path for limit 1: no table)."""
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    i, m = 0, min(la, lb)
    while i < m and a[i] == b[i]:
        i += 1
    if la == lb:
        return a[i + 1:] == b[i + 1:] or (i + 1 < la and a[i] == b[i + 1] and a[i + 1] == b[i]
                                           and a[i + 2:] == b[i + 2:])
    return a[i + 1:] == b[i:] if la > lb else a[i:] == b[i + 1:]


def near_miss(title_word: str, text_word: str, known: Callable[[str], bool] | None = None) -> int | None:
    """Edits between a title word and a text word under the FUZZY RULE, or None when not a near miss.
    `known(word)`: whether a word is a real word (default: in the dictionary); asked only when the
    words are otherwise a near miss, so the dictionary loads on the first one."""
    if text_word == title_word or _plain(text_word) or not _fuzzy_slot(title_word):
        return None
    for a, b in ((title_word, text_word), (text_word, title_word)):
        if b in (a + "s", a + "es"):
            return len(b) - len(a)
    if len(title_word) < FUZZY_MIN_CHARS or len(text_word) < 3 or text_word[0] != title_word[0]:
        return None
    if _one_edit(title_word, text_word):
        edits = 1
    elif len(title_word) >= FUZZY_LONG_CHARS and _two_edits(title_word, text_word):
        edits = 2
    else:
        return None
    return None if (known or is_word)(text_word) else edits


def _two_edits(a: str, b: str) -> bool:
    """Whether two words are at most two Damerau edits apart: the first difference takes one edit
    (substitution, deletion, insertion or transposition) and the rest at most one more."""
    if abs(len(a) - len(b)) > 2:
        return False
    i, m = 0, min(len(a), len(b))
    while i < m and a[i] == b[i]:
        i += 1
    a, b = a[i:], b[i:]
    options = [(a[1:], b[1:]), (a[1:], b), (a, b[1:])]
    if len(a) > 1 and len(b) > 1 and a[0] == b[1] and a[1] == b[0]:
        options.append((a[2:], b[2:]))
    return any(x == y or _one_edit(x, y) for x, y in options)


# -- the dictionary ----------------------------------------------------------------------------------
_dictionary: frozenset[str] | None = None
_dictionary_problem: str | None = None
_dictionary_lock = threading.Lock()


def _vocabulary_file() -> Path:
    """The offline embedder's tokenizer.json (raises EmbedderError when the package lacks it)."""
    from core.index.embedder import tokenizer_path

    return tokenizer_path()


def _load_dictionary() -> tuple[frozenset[str], str | None]:
    """(the real words, None), or (no words, why not) when tokenizer.json is missing or unreadable."""
    from core.errors import EmbedderError

    try:
        path = _vocabulary_file()
    except EmbedderError as exc:
        return frozenset(), str(exc)
    try:
        with open(path, encoding="utf-8") as f:
            vocab = json.load(f)["model"]["vocab"]
    except OSError as exc:
        return frozenset(), f"Cannot read {path}: {exc.strerror or exc}."
    except (ValueError, KeyError, TypeError) as exc:
        return frozenset(), f"{path} is not a tokenizer.json with a model vocabulary ({type(exc).__name__}: {exc})."
    if not isinstance(vocab, dict):
        return frozenset(), f"{path} has no word vocabulary (model.vocab is not a mapping of words)."
    words = frozenset(w for w in (_fold(k) for k in vocab if isinstance(k, str) and k.isalpha()) if len(w) >= 3)
    if not words:
        return frozenset(), f"{path} holds no whole words in its vocabulary."
    return words, None


def dictionary() -> frozenset[str]:
    """The real words of the FUZZY RULE, loaded once per process (thread-safe); empty, with a warning
    logged once, when tokenizer.json cannot be read."""
    global _dictionary, _dictionary_problem
    words = _dictionary
    if words is None:
        with _dictionary_lock:
            if _dictionary is None:
                loaded, problem = _load_dictionary()
                if problem:
                    log.warning("Fuzzy link suggestions have no dictionary, so a real word one letter from "
                                "a title word may be suggested: %s", problem)
                _dictionary_problem = problem
                _dictionary = loaded
            words = _dictionary
    return words


def is_word(word: str) -> bool:
    """Whether a normalised word is in the dictionary (False for every word when it is missing)."""
    return word in dictionary()


def dictionary_status() -> tuple[int, str | None]:
    """(words in the dictionary, why it is missing or None): what `cairn doctor` reports."""
    words = dictionary()
    return len(words), _dictionary_problem


# -- the index ---------------------------------------------------------------------------------------
class TitleIndex:
    """Hashes of every node's eligible names (titles and `metadata.aliases`), memory nodes left out."""

    def __init__(self, store):
        import numpy as np

        self._np = np
        self.path = str(store.path)
        self.first_lengths: dict[str, tuple[int, ...]] = {}
        # (name length, position 0 or 1) -> the words found there, for names that can match fuzzily
        self.fuzzy_pos: dict[tuple[int, int], set[str]] = {}
        self.extra_exact: dict[int, set[int]] = {}
        self.extra_wild: dict[int, set[int]] = {}
        self.extra_count = 0
        # every word of every name -> the one node whose names hold it, or -1 for several (the FUZZY
        # RULE's real words: a text word another node's title holds is that word, not a typo)
        self.words: dict[str, int] = {}
        self.state: tuple | None = None
        self.names = 0
        self._build(store)

    @staticmethod
    def _state(store) -> tuple:
        """What says something may have changed: another connection committed (data_version), this one
        wrote (total_changes), or the newest row moved. Timestamps alone are not enough: two writes
        in one millisecond share one."""
        row = store.db.execute("SELECT MAX(updated_at), MAX(id) FROM nodes").fetchone()
        version = store.db.execute("PRAGMA data_version").fetchone()[0]
        return (row[0], row[1], version, store.db.conn.total_changes)

    @staticmethod
    def _names(title: str, aliases_json: str | None) -> list[tuple[str, ...]]:
        names = [title]
        if aliases_json:
            try:
                aliases = json.loads(aliases_json)
            except ValueError:
                aliases = []
            if isinstance(aliases, str):
                aliases = [aliases]
            if isinstance(aliases, list):
                names += [a for a in aliases if isinstance(a, str)]
        out = []
        for name in names:
            tokens = name_tokens(name)
            if tokens is not None and tokens not in out:
                out.append(tokens)
        return out

    def _add_words(self, tokens: tuple[str, ...], node_id: int) -> None:
        words = self.words
        for t in tokens:
            owner = words.setdefault(t, node_id)
            if owner != node_id and owner != -1:
                words[t] = -1

    def title_word(self, word: str, ignore: set[int]) -> bool:
        """Whether some node's name, not only the ignored nodes', holds this word."""
        owner = self.words.get(word)
        return owner is not None and (owner == -1 or owner not in ignore)

    def _keys(self, tokens: tuple[str, ...], exact: list[int], wild: list[int]) -> None:
        exact.append(hash(" ".join(tokens)))
        lengths = self.first_lengths.get(tokens[0], ())
        if len(tokens) not in lengths:
            self.first_lengths[tokens[0]] = tuple(sorted((*lengths, len(tokens)), reverse=True))
        if 2 <= len(tokens) <= MAX_FUZZY_TOKENS:
            slots = [k for k, t in enumerate(tokens) if _fuzzy_slot(t)]
            for k in slots:
                wild.append(hash(_wild_key(tokens, k)))
            if slots:
                for j in (0, 1):
                    self.fuzzy_pos.setdefault((len(tokens), j), set()).add(tokens[j])

    _SELECT = ("SELECT id, title, json_extract(metadata, '$.aliases') AS aliases FROM nodes"
               " WHERE type != 'memory'")

    def _build(self, store) -> None:
        np = self._np
        self.state = self._state(store)
        exact_h: list[int] = []
        exact_n: list[int] = []
        wild_h: list[int] = []
        wild_n: list[int] = []
        self.first_lengths, self.fuzzy_pos, self.words = {}, {}, {}
        names = 0
        for node_id, title, aliases in store.db.execute(self._SELECT):
            for tokens in self._names(title, aliases):
                e0, w0 = len(exact_h), len(wild_h)
                self._keys(tokens, exact_h, wild_h)
                self._add_words(tokens, node_id)
                exact_n.extend([node_id] * (len(exact_h) - e0))
                wild_n.extend([node_id] * (len(wild_h) - w0))
                names += 1
        self.names = names

        def sorted_pair(h: list[int], n: list[int]):
            hashes = np.asarray(h, dtype=np.int64)
            nodes = np.asarray(n, dtype=np.int64)
            order = np.argsort(hashes, kind="stable")
            return hashes[order], nodes[order]

        self.exact_h, self.exact_n = sorted_pair(exact_h, exact_n)
        self.wild_h, self.wild_n = sorted_pair(wild_h, wild_n)
        self.extra_exact, self.extra_wild, self.extra_count = {}, {}, 0

    def sync(self, store) -> None:
        """Take in names written since the last look (here or by another process); rebuild when the
        additions pile up. Old names of renamed nodes stay in the hashes and fail verification."""
        state = self._state(store)
        if state == self.state:
            return
        since, last_id = self.state[:2]
        # `>=`: rows written in the same millisecond as the newest one seen last time come back too.
        rows = store.db.execute(
            f"{self._SELECT} AND updated_at >= ? UNION {self._SELECT} AND id > ?",
            (since or "", last_id or 0)).fetchall()
        self.state = state
        for node_id, title, aliases in rows:
            for tokens in self._names(title, aliases):
                exact: list[int] = []
                wild: list[int] = []
                self._keys(tokens, exact, wild)
                self._add_words(tokens, node_id)
                for table, hashes in ((self.extra_exact, exact), (self.extra_wild, wild)):
                    for h in hashes:
                        ids = table.setdefault(h, set())
                        if node_id not in ids:
                            ids.add(node_id)
                            self.extra_count += 1
        if self.extra_count > OVERLAY_LIMIT:
            self._build(store)

    def lookup(self, hashes: list[int], wild: bool) -> list[list[int]]:
        """For each hash, the node ids whose names hash to it (base arrays plus the recent overlay)."""
        np = self._np
        if not hashes:
            return []
        base_h, base_n = (self.wild_h, self.wild_n) if wild else (self.exact_h, self.exact_n)
        extra = self.extra_wild if wild else self.extra_exact
        query = np.asarray(hashes, dtype=np.int64)
        lo = np.searchsorted(base_h, query, "left")
        hi = np.searchsorted(base_h, query, "right")
        out: list[list[int]] = []
        for h, a, b in zip(hashes, lo.tolist(), hi.tolist()):
            found = base_n[a:b].tolist() if b > a else []
            more = extra.get(h)
            if more:
                found = list(dict.fromkeys([*found, *more]))
            out.append(found)
        return out


_indexes: dict[str, TitleIndex] = {}
_lock = threading.RLock()  # held while an index is synced or read (app workers scan concurrently)


def title_index(store) -> TitleIndex:
    """The database's TitleIndex, built on first use and brought up to date on every call."""
    key = str(store.path)
    with _lock:
        index = _indexes.get(key)
        if index is None:
            index = _indexes[key] = TitleIndex(store)
        else:
            index.sync(store)
        return index


def forget_index(store) -> None:
    """Drop the cached index of this database (tests, or after replacing the file)."""
    with _lock:
        _indexes.pop(str(store.path), None)


# -- scanning ----------------------------------------------------------------------------------------
@dataclass
class _Token:
    word: str
    segment: int
    start: int
    end: int


@dataclass
class _Match:
    start: int  # token index
    length: int
    node_id: int
    kind: str
    score: float


def _tokenise(segments: list[str]) -> list[_Token]:
    out: list[_Token] = []
    for s, text in enumerate(segments):
        for m in _WORD.finditer(text):
            out.append(_Token(_fold(m.group()), s, m.start(), m.end()))
    return out


def _candidates(index: TitleIndex, words: list[str]) -> tuple[dict, dict]:
    """The n-grams that could be names, each once with every place it occurs:
    exact {(start words...): [start, ...]} and fuzzy {(window, blank): [start, ...]}."""
    n = len(words)
    exact: dict[tuple[str, ...], list[int]] = {}
    for i, w in enumerate(words):
        lengths = index.first_lengths.get(w)
        if lengths:
            for length in lengths:
                if i + length <= n:
                    exact.setdefault(tuple(words[i:i + length]), []).append(i)
    fuzzy: dict[tuple[tuple[str, ...], int], list[int]] = {}
    eligible = [_fuzzy_slot(w) for w in words]
    for length in range(2, MAX_FUZZY_TOKENS + 1):
        firsts = index.fuzzy_pos.get((length, 0))
        seconds = index.fuzzy_pos.get((length, 1))
        if not firsts or not seconds:
            continue
        for i in range(n - length + 1):
            a = words[i] in firsts  # the first word is exact: the blank may be at 1..length-1
            b = words[i + 1] in seconds  # the second word is exact: the blank may be at 0 or 2..
            if not (a or b):
                continue
            window = tuple(words[i:i + length])
            for k in range(length):
                if not eligible[i + k] or (k == 0 and not b) or (k >= 1 and not a) or (k >= 2 and not b):
                    continue
                fuzzy.setdefault((window, k), []).append(i)
    return exact, fuzzy


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence (or line) around text[start:end], whitespace collapsed, trimmed to ~SENTENCE_CHARS."""
    lo = max(0, start - 2000)
    begin = lo
    for m in _BOUNDARY.finditer(text, lo, start):
        begin = m.end()
    m = _BOUNDARY.search(text, end, end + 2000)
    stop = m.start() + 1 if m and text[m.start()] in ".!?" else (m.start() if m else min(len(text), end + 2000))
    before = _MD_LEAD.sub("", text[begin:start])  # "- ", "## " opening a list item or heading
    mention, after = " ".join(text[start:end].split()), text[end:stop]
    # Whitespace collapsed, keeping one space where the mention met its neighbours with one.
    before = " ".join(before.split()) + (" " if before[-1:].isspace() and before.strip() else "")
    after = (" " if after[:1].isspace() and after.strip() else "") + " ".join(after.split())
    sentence = f"{before}{mention}{after}"
    if len(sentence) <= SENTENCE_CHARS:
        return sentence
    # Too long: keep a window around the mention, cut at spaces, marked with ellipses.
    room = max(0, SENTENCE_CHARS - len(mention))
    keep_before = min(len(before), room // 3)
    keep_after = min(len(after), room - keep_before)
    keep_before = min(len(before), room - keep_after)
    head = before[len(before) - keep_before:] if keep_before else ""
    tail = after[:keep_after]
    if keep_before < len(before):
        head = "…" + (head.split(" ", 1)[-1] if " " in head.rstrip() else head)
    if keep_after < len(after):
        tail = (tail.rsplit(" ", 1)[0] if " " in tail.lstrip() else tail) + "…"
    return f"{head}{mention}{tail}"


def scan(store, segments: list[str], *, exclude: Iterable[int] = (), ignore: Iterable[int] = (),
         limit: int = 50) -> list[Suggestion]:
    """Suggestions for texts (e.g. a node's title, description and source), best first: by score,
    then longer names (more specific), then the earlier mention. `exclude`: nodes not suggested (a
    mention of one still hides the shorter names inside it); `ignore`: nodes not matched at all (the
    node itself: its own title in its text mentions nothing)."""
    segments = [s[:MAX_SCAN_CHARS] for s in segments if s]
    tokens = _tokenise(segments)
    if not tokens:
        return []
    words = [t.word for t in tokens]
    unmatched = {int(i) for i in ignore}
    with _lock:
        index = title_index(store)
        exact, fuzzy = _candidates(index, words)
        exact_keys = list(exact)
        fuzzy_keys = list(fuzzy)
        found_exact = index.lookup([hash(" ".join(g)) for g in exact_keys], wild=False)
        found_fuzzy = index.lookup([hash(_wild_key(w, k)) for w, k in fuzzy_keys], wild=True)
        # the text words that are some other node's title words: real words, not typos (FUZZY RULE)
        titled = {w[k] for (w, k), ns in zip(fuzzy_keys, found_fuzzy) if ns and index.title_word(w[k], unmatched)}
    ids = {n for ns in found_exact for n in ns} | {n for ns in found_fuzzy for n in ns}
    if not ids:
        return []

    def known(word: str) -> bool:
        return word in titled or is_word(word)
    rows = store.db.execute(
        "SELECT id, title, type, json_extract(metadata, '$.aliases') AS aliases FROM nodes"
        " WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(ids)),)).fetchall()
    titles: dict[int, str] = {}
    names: dict[int, list[tuple[str, ...]]] = {}  # a node's eligible names, its title's first
    for r in rows:
        if r["type"] != "memory" and r["id"] not in unmatched:
            titles[r["id"]] = r["title"]
            names[r["id"]] = TitleIndex._names(r["title"], r["aliases"])

    # Verify each distinct n-gram against its candidate nodes once (a hash collision, a renamed or
    # deleted node drops out here), then place it at every position it occurs.
    matches: list[_Match] = []
    for gram, nodes in zip(exact_keys, found_exact):
        hits = []
        for node_id in nodes:
            own = names.get(node_id)
            if own and gram in own:
                hits.append((node_id, "exact" if own[0] == gram and name_tokens(titles[node_id]) == gram
                             else "alias"))
        if len(hits) > MAX_SAME_NAME:
            continue  # too ambiguous to suggest
        for node_id, kind in hits:
            score = SCORE_TITLE if kind == "exact" else SCORE_ALIAS
            matches += [_Match(i, len(gram), node_id, kind, score) for i in exact[gram]]
    for (window, k), nodes in zip(fuzzy_keys, found_fuzzy):
        hits = []
        for node_id in nodes:
            best = None
            for name in names.get(node_id, ()):
                if len(name) != len(window) or abs(len(name[k]) - len(window[k])) > 2 or \
                        name[:k] != window[:k] or name[k + 1:] != window[k + 1:]:
                    continue
                edits = near_miss(name[k], window[k], known)
                if edits is not None and (best is None or edits < best[0]):
                    best = (edits, name)
            if best is not None:
                hits.append((node_id, round(max(0.5, 1 - best[0] / len(" ".join(best[1]))), 3)))
        if len(hits) > MAX_SAME_NAME:
            continue
        for node_id, score in hits:
            matches += [_Match(i, len(window), node_id, "fuzzy", score) for i in fuzzy[(window, k)]]
    if not matches:
        return []

    # Longest match wins: a span is kept unless it overlaps a longer (or equally long, better) one
    # already kept; the very same span may name several nodes (duplicate titles), all kept.
    matches.sort(key=lambda m: (-m.length, -m.score, m.start))
    owner: dict[int, tuple[int, int]] = {}
    kept: list[_Match] = []
    for m in matches:
        span = (m.start, m.length)
        if m.length == 1:
            claim = owner.get(m.start)
            if claim is not None and claim != span:
                continue
        else:
            claims = {owner.get(p) for p in range(m.start, m.start + m.length)} - {None}
            if claims and claims != {span}:
                continue
        for p in range(m.start, m.start + m.length):
            owner[p] = span
        kept.append(m)

    skip = {int(i) for i in exclude}
    best: dict[int, _Match] = {}
    for m in sorted(kept, key=lambda m: m.start):
        if m.node_id not in skip and (m.node_id not in best or m.score > best[m.node_id].score):
            best[m.node_id] = m
    out = []
    for m in sorted(best.values(), key=lambda m: (-m.score, -m.length, m.start))[:max(0, int(limit))]:
        first, last = tokens[m.start], tokens[m.start + m.length - 1]
        text = segments[first.segment]
        out.append(Suggestion(m.node_id, titles[m.node_id], _sentence(text, first.start, last.end), m.kind,
                              m.score, text[first.start:last.end]))
    return out


def suggest_links(store, node: int | str, *, exclude: Iterable[int] = (), limit: int = 50,
                  draft: list[str] | None = None) -> list[Suggestion]:
    """Mention suggestions for a node (by id: its title, description and source; the node itself and
    the nodes it is already linked to, either way, are skipped) or for a text (`exclude` skipped).
    `draft`: texts being written for the node (its editor's title, description, source) to scan
    instead of what is stored."""
    if isinstance(node, bool) or not isinstance(node, (int, str)):
        raise InvalidInput("suggest_links takes a node id or a text.")
    skip = {int(i) for i in exclude}
    ignore: set[int] = set()
    if isinstance(node, int):
        record = store.get_node(node)
        ignore.add(node)
        skip.update(r[0] for r in store.db.execute(
            "SELECT to_node_id FROM edges WHERE from_node_id = ?1 UNION SELECT from_node_id FROM edges"
            " WHERE to_node_id = ?1", (node,)))
        segments = [record["title"], record["description"] or "", record["source"] or ""]
    else:
        segments = [node]
    if draft is not None:
        segments = list(draft)
    return scan(store, segments, exclude=skip, ignore=ignore, limit=limit)
