"""Mention-based link suggestions at scale: core.assist.mentions.suggest_links on a 5,000-word note against
100k node titles (10 % with an alias).

Run:  .venv/bin/python bench/links.py [--nodes N] [--words W] [--runs R]
Progress goes to stderr; the last line of stdout is one JSON object (DESIGN.md, Layout: bench/).

The titles are synthetic and distinct: 1-5 content words drawn Zipf(s=1) from a 30k vocabulary of pronounceable
pseudo-words (as bench/store.py), written into a temporary database with executemany; nothing is
embedded. The note's words come from the same distribution with English stop-words mixed in, so
almost every word of the note is some title's word (a worst case for the n-gram scan), and it
carries planted mentions: exact titles, aliases, and titles with one typo (a letter swapped in a
word of 5+ letters), whose recall is reported. Timed: the first call (builds the title index), the
call after (index cached: the cost on every save; the default limit of 50 suggestions, and once
with every suggestion drafted), a pause in typing (tui/widgets/mention_hint.py: a connection of its
own and a 500-word draft), and the call after one node was renamed (the index takes in the changed
row).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core import clock  # noqa: E402
from core.search.fts_query import STOPWORDS  # noqa: E402
from core.assist.mentions import suggest_links, title_index  # noqa: E402
from core.graph.store import Store  # noqa: E402

SEED = 20261130
_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
           "br", "ch", "cl", "dr", "fl", "gr", "kr", "pl", "pr", "sh", "sk", "sl", "sp", "st", "th", "tr"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
_CODAS = ["", "", "", "n", "l", "r", "m", "nd", "st", "x"]
_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    words: list[str] = []
    seen = set(STOPWORDS)
    while len(words) < size:
        n = int(rng.integers(2, 5))
        w = "".join(_ONSETS[rng.integers(len(_ONSETS))] + _VOWELS[rng.integers(len(_VOWELS))] for _ in range(n))
        w += _CODAS[rng.integers(len(_CODAS))]
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def zipf(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    cdf = np.cumsum(1.0 / np.arange(1, size + 1))
    cdf /= cdf[-1]
    return np.searchsorted(cdf, rng.random(n), side="right")


def typo(rng: np.random.Generator, word: str) -> str:
    """Swap two neighbouring letters (a Damerau edit of 1) that differ, keeping the first letter."""
    for _ in range(20):
        i = int(rng.integers(1, len(word) - 1))
        if word[i] != word[i + 1]:
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    return word


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--words", type=int, default=5_000)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(SEED)
    vocab = vocabulary(rng, 30_000)
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-links-"))
    out: dict = {"nodes": args.nodes, "note_words": args.words}
    try:
        store = Store(tmp / "cairn.db")
        # Titles are distinct (as in a real graph; a name many nodes share is not suggested at all).
        titles, seen = [], set()
        while len(titles) < args.nodes:
            lengths = rng.integers(1, 6, args.nodes)
            ranks = zipf(rng, len(vocab), int(lengths.sum()))
            pos = 0
            for n in lengths.tolist():
                words = [vocab[r] for r in ranks[pos:pos + n]]
                pos += n
                title = " ".join([words[0].capitalize(), *words[1:]])
                if title.lower() not in seen and len(titles) < args.nodes:
                    titles.append(title)
                    seen.add(title.lower())
        aliases = {}
        for i in rng.choice(args.nodes, args.nodes // 10, replace=False).tolist():
            aliases[i] = " ".join(vocab[r] for r in rng.integers(0, len(vocab), 2).tolist())
        stamp = clock.now()
        rows = [(t, "", json.dumps({"dimensions": [], **({"aliases": [aliases[i]]} if i in aliases else {})}),
                 stamp, stamp) for i, t in enumerate(titles)]
        t = time.perf_counter()
        with store.db.transaction() as conn:
            conn.executemany("INSERT INTO nodes(title, source, metadata, chunk_status, created_at, updated_at)"
                             " VALUES (?, ?, ?, 'indexed', ?, ?)", rows)
        log(f"{args.nodes:,} titles written in {time.perf_counter() - t:.1f} s")

        # The note: Zipf words with stop-words mixed in (every third word), planted mentions spread out.
        stop = sorted(STOPWORDS)
        body = [vocab[r] if j % 3 else stop[int(rng.integers(len(stop)))]
                for j, r in enumerate(zipf(rng, len(vocab), args.words).tolist())]
        long_titles = [i for i, t in enumerate(titles) if len(t.split()) >= 3]
        typo_titles = [i for i in long_titles if any(len(w) >= 5 for w in titles[i].split())]
        planted: dict[str, set[int]] = {"exact": set(), "alias": set(), "fuzzy": set()}
        slots = sorted(rng.choice(np.arange(10, args.words - 10, 12), 50, replace=False).tolist())
        for j, slot in enumerate(slots):
            if j % 5 < 3:
                i = int(rng.choice(long_titles))
                kind, words = "exact", titles[i].lower().split()
            elif j % 5 == 3:
                i = int(rng.choice(list(aliases)))
                kind, words = "alias", aliases[i].split()
                if " ".join(words) in seen:
                    continue  # the alias is also some title
            else:
                i = int(rng.choice(typo_titles))
                words = titles[i].lower().split()
                w = next(k for k, x in enumerate(words) if len(x) >= 5)
                words[w] = typo(rng, words[w])
                kind = "fuzzy"
            planted[kind].add(i + 1)  # ids start at 1
            body[slot:slot + len(words)] = words
        sentences, j = [], 0
        while j < len(body):
            m = int(rng.integers(8, 20))
            part = body[j:j + m]
            sentences.append(" ".join([part[0].capitalize(), *part[1:]]) + ".")
            j += m
        text = " ".join(sentences)
        note = store.add_node("Bench note", text)
        out["note_chars"] = len(text)

        t = time.perf_counter()
        first = suggest_links(store, note["id"])
        out["cold_ms"] = round((time.perf_counter() - t) * 1000, 1)
        index = title_index(store)
        out["index_names"] = index.names
        out["index_array_mb"] = round(sum(a.nbytes for a in (index.exact_h, index.exact_n, index.wild_h,
                                                               index.wild_n)) / 2**20, 1)
        samples = []
        for _ in range(args.runs):
            t = time.perf_counter()
            found = suggest_links(store, note["id"])
            samples.append((time.perf_counter() - t) * 1000)
        assert [s.target_id for s in found] == [s.target_id for s in first]
        t = time.perf_counter()
        found = suggest_links(store, note["id"], limit=100_000)
        out["warm_all_suggestions_ms"] = round((time.perf_counter() - t) * 1000, 1)
        out["warm_p50_ms"] = round(statistics.median(samples), 1)
        out["warm_max_ms"] = round(max(samples), 1)

        # A note of everyday length: its first 500 words.
        short = store.add_node("Short bench note", " ".join(text.split()[:500]))
        suggest_links(store, short["id"])
        samples = []
        for _ in range(args.runs):
            t = time.perf_counter()
            suggest_links(store, short["id"])
            samples.append((time.perf_counter() - t) * 1000)
        out["warm_500_words_p50_ms"] = round(statistics.median(samples), 1)
        # What a pause in typing costs (tui/widgets/mention_hint.py): its own connection, the draft scanned.
        draft = ["Short bench note", "", " ".join(text.split()[:500]) + " more"]
        samples = []
        for _ in range(args.runs):
            t = time.perf_counter()
            with Store(tmp / "cairn.db") as own:
                suggest_links(own, short["id"], draft=draft)
            samples.append((time.perf_counter() - t) * 1000)
        out["typing_pause_500_words_p50_ms"] = round(statistics.median(samples), 1)

        store.update_node(2, title="Renamed just now")
        t = time.perf_counter()
        suggest_links(store, note["id"])
        out["after_rename_ms"] = round((time.perf_counter() - t) * 1000, 1)

        by_kind: dict[str, set[int]] = {"exact": set(), "alias": set(), "fuzzy": set()}
        for s in found:
            by_kind[s.match].add(s.target_id)
        out["suggestions"] = len(found)
        out["suggestions_by_match"] = {k: len(v) for k, v in by_kind.items()}
        every = set().union(*by_kind.values())
        out["planted_found"] = {k: f"{len(v & every)}/{len(v)}" for k, v in planted.items()}
        out["rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        out["cores"] = len(os.sched_getaffinity(0))
        out["total_s"] = round(time.perf_counter() - _T0, 1)
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
