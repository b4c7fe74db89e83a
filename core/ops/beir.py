"""`cairn eval beir`: run a BEIR-format collection through Cairn's real ingest and search path.

The corpus is ingested with `Store.add_node` and `Indexer.run` (the same code `cairn add` and
`cairn index` use) into a database that is cached by corpus and index settings, then every query of
the split is searched with `Searcher.candidates`. Metrics follow BEIR (pytrec_eval): nDCG@10 with
linear gains from the qrels, recall@100, MRR@10.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import time
from pathlib import Path
from typing import Callable

from core.errors import InvalidInput
from core.search.searcher import MODES as SEARCH_MODES

SPLITS = {"test": ("queries.jsonl", "qrels.tsv"), "train": ("queries-train.jsonl", "qrels-train.tsv")}
MODES = tuple(sorted(SEARCH_MODES, key=lambda mode: mode == "hybrid"))  # each baseline, then their fusion


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise InvalidInput(f"{path} is missing; a BEIR folder has corpus.jsonl, queries.jsonl and qrels.tsv.")
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InvalidInput(f"{path}:{n} is not valid JSON ({exc.msg}).") from None
    return out


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    if not path.is_file():
        raise InvalidInput(f"{path} is missing.")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if len(row) < 3 or row[0] == "query-id":
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    wanted = {d for d, g in relevant.items() if g > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def mrr_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def corpus_fingerprint(folder: Path, settings: str) -> str:
    h = hashlib.sha256(settings.encode())
    stat = (folder / "corpus.jsonl").stat()
    h.update(f"{stat.st_size}:{int(stat.st_mtime)}".encode())
    return h.hexdigest()[:16]


def ingest(store, folder: Path, indexer, progress: Callable[[str, int, int], None] | None = None) -> int:
    """Add every corpus document as a node (once), then index what is pending. Returns node count."""
    have = store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
    docs = _read_jsonl(folder / "corpus.jsonl")
    if have < len(docs):
        known = {r[0] for r in store.db.execute("SELECT json_extract(metadata, '$.beir_id') FROM nodes")}
        for i, doc in enumerate(docs):
            doc_id = str(doc["_id"])
            if doc_id in known:
                continue
            text = doc.get("text") or ""
            title = (doc.get("title") or "").strip()
            from core.graph.store import title_from_text

            store.add_node(title or title_from_text(text), text, metadata={"beir_id": doc_id})
            if progress and i % 200 == 0:
                progress("add", i, len(docs))
    indexer.run(progress=(lambda p: progress("index", p.notes_done, p.notes_total)) if progress else None)
    return len(docs)


def evaluate(searcher, store, folder: Path, mode: str, split: str, *, depth: int = 100,
             max_queries: int | None = None) -> dict:
    if split not in SPLITS:
        raise InvalidInput(f"Unknown split {split!r}; use test or train.")
    queries_file, qrels_file = SPLITS[split]
    qrels = load_qrels(folder / "qrels" / qrels_file if (folder / "qrels").is_dir() else folder / qrels_file)
    queries = {str(q["_id"]): q["text"] for q in _read_jsonl(folder / queries_file)}
    ids = [q for q in queries if q in qrels]
    if max_queries:
        ids = ids[:max_queries]
    beir_of = {r[0]: r[1] for r in store.db.execute("SELECT id, json_extract(metadata, '$.beir_id') FROM nodes")}
    ndcg = recall = mrr = 0.0
    latencies = []
    started = time.perf_counter()
    for qid in ids:
        t0 = time.perf_counter()
        found = searcher.candidates(queries[qid], mode, limit=depth)
        latencies.append(time.perf_counter() - t0)
        ranked = [beir_of.get(c.node_id) for c in found]
        ndcg += ndcg_at(ranked, qrels[qid], 10)
        recall += recall_at(ranked, qrels[qid], 100)
        mrr += mrr_at(ranked, qrels[qid], 10)
    n = max(1, len(ids))
    latencies.sort()
    return {
        "mode": mode,
        "split": split,
        "ndcg@10": round(ndcg / n, 4),
        "recall@100": round(recall / n, 4),
        "mrr@10": round(mrr / n, 4),
        "queries": len(ids),
        "seconds": round(time.perf_counter() - started, 2),
        "query_p50_ms": round(1000 * latencies[len(latencies) // 2], 2) if latencies else None,
    }
