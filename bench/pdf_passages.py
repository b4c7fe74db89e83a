"""Does a quoted phrase bring the passage, and the page, that holds it? (issue 24, item 1)

Run:  .venv/bin/python bench/pdf_passages.py [--per-doc 8]
Real PDFs made at run time (bench/real_pdfs.py: man pages typeset by gropdf and by Ghostscript, and the
PDFs Debian ships), captured and indexed into a fresh database with the real embedder. Queries: phrases
of five words, each found on exactly one page of the whole corpus by poppler's `pdftotext` (the
reference, independent of Cairn's extraction), drawn at random (seeded) on different pages, quoted as a
user quotes them. For each, hybrid search's first hit is checked: is it the right document, does its
passage hold the phrase, is the passage's page the phrase's page. Both ways of choosing the passage, in
the same run: today's (the node's chunk by the ranking's blend among the chunks that hold the words,
core/search/searcher.py _best_passages) and the earlier one (the vector side's nearest chunk).
`held`: the queries whose phrase Cairn's own text of that page holds (a phrase its extraction split
cannot be matched by keywords: that is item 2's measure, bench/pdf_extract.py); the target is on those,
and the figures on all queries are given too. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from real_pdfs import build  # noqa: E402

from core.capture.files import capture_file  # noqa: E402
from core.graph.store import Store  # noqa: E402
from core.index.indexer import Indexer  # noqa: E402
from core.search.searcher import Searcher  # noqa: E402

WORDS = 5


def norm(text: str) -> str:
    return " " + " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split()) + " "


def phrases(docs, per_doc: int, rng: random.Random) -> list[tuple[int, int, str]]:
    """(doc index, 1-based page, phrase): five words on one page of the whole corpus only."""
    pages = [(d, i, norm(text)) for d, doc in enumerate(docs) for i, text in enumerate(doc.reference_pages)]
    whole = "\n".join(p for _, _, p in pages)
    out = []
    for d, doc in enumerate(docs):
        mine = [(i, text) for dd, i, text in pages if dd == d and len(text.split()) > 40]
        rng.shuffle(mine)
        for i, text in mine[:per_doc]:
            words = text.split()
            starts = list(range(0, len(words) - WORDS))
            rng.shuffle(starts)
            for s in starts:
                chosen = words[s:s + WORDS]
                if not all(len(w) >= 3 and w.isalpha() for w in chosen):
                    continue
                phrase = " ".join(chosen)
                if whole.count(f" {phrase} ") == 1:
                    out.append((d, i + 1, phrase))
                    break
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-doc", type=int, default=8)
    args = ap.parse_args()
    rng = random.Random(24)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        docs, skipped = build(tmp / "pdfs")
        queries = phrases(docs, args.per_doc, rng)
        with Store(tmp / "cairn.db") as store:
            nodes = [capture_file(store, doc.path).node for doc in docs]
            t = time.perf_counter()
            Indexer(store).run()
            index_s = time.perf_counter() - t
            chunks = store.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            now = Searcher(store)
            before = Searcher(store, embedder=now.embedder)
            before._best_passages = lambda query, node_ids: {}  # the earlier choice: the nearest chunk
            results = {"now": [], "before": []}
            for d, page, phrase in queries:
                node = nodes[d]
                starts = node["metadata"]["capture"]["page_starts"] + [len(node["source"])]
                held = phrase in norm(node["source"][starts[page - 1]:starts[page]])
                for name, searcher in (("now", now), ("before", before)):
                    hits = searcher.search(f'"{phrase}"', mode="hybrid", limit=5)
                    first = hits[0] if hits else None
                    right = first is not None and first["id"] == node["id"]
                    chunk = (first or {}).get("chunk") or {}
                    results[name].append({
                        "held": held, "right_doc": right,
                        "passage_holds": right and phrase in norm(chunk.get("text", "")),
                        "page_right": right and chunk.get("page") == page,
                        "producer": docs[d].producer})
    out = {"documents": len(docs), "pages": sum(len(d.reference_pages) for d in docs), "chunks": chunks,
           "producers": sorted({d.producer for d in docs}), "skipped": skipped, "queries": len(queries),
           "held": sum(r["held"] for r in results["now"]), "index_s": round(index_s, 1)}
    for name, rows in results.items():
        held = [r for r in rows if r["held"]]
        out[name] = {
            "right_doc_first": round(sum(r["right_doc"] for r in rows) / max(1, len(rows)), 3),
            "passage_holds_phrase": round(sum(r["passage_holds"] for r in rows) / max(1, len(rows)), 3),
            "page_right": round(sum(r["page_right"] for r in rows) / max(1, len(rows)), 3),
            "held_passage_holds_phrase": round(sum(r["passage_holds"] for r in held) / max(1, len(held)), 3),
            "held_page_right": round(sum(r["page_right"] for r in held) / max(1, len(held)), 3),
            "held_page_right_given_right_doc": round(
                sum(r["page_right"] for r in held) / max(1, sum(r["right_doc"] for r in held)), 3),
        }
    by_producer = {}
    for r in results["now"]:
        p = by_producer.setdefault(r["producer"], [0, 0])
        p[0] += r["held"] and r["page_right"]
        p[1] += r["held"]
    out["now"]["held_page_right_by_producer"] = {k: f"{a}/{b}" for k, (a, b) in sorted(by_producer.items())}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
