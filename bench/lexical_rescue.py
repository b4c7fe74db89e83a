"""Chat junk control with and without the lexical rescue (core.search.lexical_rescue), on SciFact and the
30 off-topic questions.

Run:  .venv/bin/python bench/lexical_rescue.py --db PATH [--data DIR] [--split train|test]
PATH is a SciFact database ingested by `cairn eval beir DIR --db PATH` (or bench/retrieval.py).
Progress goes to stderr; the last line of stdout is one JSON object (DESIGN.md, Layout: bench/).

The rescue changes only which retrieved passages enter the chat's context, never the ranking, so
`cairn eval beir` (nDCG@10) cannot see it; these are the figures that can: passages injected per
query, the share of them relevant, the share of queries with a relevant passage, and passages
injected for off-topic questions (bench/retrieval.md, "Junk control for chat context").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.retrieval import DEFAULT_DATA, junk_hits, load_split, log, offtopic_queries  # noqa: E402
from core.chat import context as context_module  # noqa: E402
from core.search import lexical_rescue  # noqa: E402
from core.index.embedder import Embedder  # noqa: E402
from core.search.searcher import Searcher  # noqa: E402
from core.graph.store import Store  # noqa: E402


def figures(store, on, off, texts_on, texts_off, rescue: bool) -> dict:
    def kept(rows, text):
        pairs = context_module.cut([(c, h) for c, _, h in rows], message=text if rescue else None, store=store)
        ids = {id(h) for _, h in pairs}
        return [r for r in rows if id(r[2]) in ids]

    on_kept = [kept(r, t) for r, t in zip(on, texts_on)]
    off_kept = [kept(r, t) for r, t in zip(off, texts_off)]
    injected = sum(len(k) for k in on_kept)
    relevant = sum(sum(1 for r in k if r[1]) for k in on_kept)
    return {
        "mean_injected": round(injected / max(1, len(on)), 3),
        "share_relevant": round(relevant / injected, 3) if injected else None,
        "queries_with_a_relevant_passage": round(sum(1 for k in on_kept if any(r[1] for r in k)) / max(1, len(on)), 3),
        "offtopic_mean_injected": round(sum(len(k) for k in off_kept) / max(1, len(off)), 3),
        "offtopic_queries_with_any": sum(1 for k in off_kept if k),
    }


def rescues(store, on, texts_on) -> dict:
    """Queries where the rescue added a passage, and how many of those passages were relevant."""
    added = relevant = 0
    for rows, text in zip(on, texts_on):
        scored = [(c, h) for c, _, h in rows]
        before = {id(h) for _, h in context_module.cut(scored)}
        for c, rel, h in rows:
            if id(h) not in before and id(h) in {id(x) for _, x in context_module.cut(scored, message=text, store=store)}:
                added += 1
                relevant += bool(rel)
    return {"passages_added": added, "added_relevant": relevant}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--split", choices=["train", "test"], default="train")
    args = ap.parse_args()

    queries, qrels = load_split(args.data, args.split)
    embedder = Embedder()
    with Store(args.db) as store:
        searcher = Searcher(store, embedder, mirror=True)
        log(f"collecting candidates for {len(queries)} {args.split} queries and the off-topic questions")
        on, off = junk_hits(store, searcher, queries, qrels)
        texts_on, texts_off = list(queries.values()), offtopic_queries()
        out = {"split": args.split, "min_cosine": lexical_rescue.MIN_COSINE, "rare_docs": lexical_rescue.RARE_DOCS,
               "rare_share": lexical_rescue.RARE_SHARE,
               "without": figures(store, on, off, texts_on, texts_off, rescue=False),
               "with": figures(store, on, off, texts_on, texts_off, rescue=True),
               **rescues(store, on, texts_on)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
