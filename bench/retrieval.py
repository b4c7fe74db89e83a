"""Retrieval quality on SciFact (issue 6): ablations on the train split, the chosen defaults on test.

Run:  .venv/bin/python bench/retrieval.py [--data DIR] [--cache DIR] [--quick] [--no-test]
Progress goes to stderr; the last line of stdout is one JSON object (DESIGN.md, Layout: bench/).

Every configuration goes through Cairn's real path: `Store.add_node` + `Indexer.run` for ingest (one
database per chunking/indexing configuration, cached under --cache keyed by the configuration, the
corpus and the code that chunks and embeds), `Searcher.candidates` for ranking and
`ContextEngine.retrieve` for the passages a chat would inject. Query-time settings (fusion, weights,
candidate depths, BM25 column weights, OR/AND) are swept over one database.

Tuning uses only queries-train.jsonl / qrels-train.tsv. The test split is read once, for the chosen
defaults (`--no-test` skips it). SciFact is CC BY-NC: it is read from --data and never copied here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections import OrderedDict
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.ops import beir  # noqa: E402
from core.index import chunker as chunker_module  # noqa: E402
from core.chat import context as context_module  # noqa: E402
from core.index import embedder as embedder_module  # noqa: E402
from core.index import indexer as indexer_module  # noqa: E402
from core.graph import migrations  # noqa: E402
from core.agent.profiles import BUILT_IN  # noqa: E402
from core.index.chunker import Chunker  # noqa: E402
from core.chat.context import ContextEngine  # noqa: E402
from core.index.embedder import Embedder  # noqa: E402
from core.index.indexer import Indexer  # noqa: E402
from core.search.searcher import Searcher, Tuning  # noqa: E402
from core.graph.store import Store  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "evaldata" / "scifact"
OFFTOPIC = ROOT / "bench" / "data" / "offtopic_queries.txt"
DEPTH = 100

# Index-time configurations (each one is a separate ingest, cached): chunk size / overlap in word
# pieces, and whether the node's title is put in front of each chunk before embedding.
INDEX_CONFIGS = {
    "default": {"max_tokens": chunker_module.MAX_CHUNK_TOKENS, "overlap": chunker_module.OVERLAP_TOKENS, "title": True},
    "chunk128": {"max_tokens": 128, "overlap": 32, "title": True},
    "no_title_prefix": {"max_tokens": chunker_module.MAX_CHUNK_TOKENS, "overlap": chunker_module.OVERLAP_TOKENS, "title": False},
}

# Query-time ablations over the default index: (name, mode, Tuning overrides). Fewer than 100
# candidates a side cannot be measured here: recall@100 asks for 100 results, and a search never
# fuses fewer candidates than it returns.
QUERY_ABLATIONS = [
    ("fts", "fts", {}),
    ("fts title weight 1", "fts", {"bm25_weights": (1.0, 2.0, 1.0)}),
    ("fts title weight 2", "fts", {"bm25_weights": (2.0, 2.0, 1.0)}),
    ("fts title weight 5", "fts", {"bm25_weights": (5.0, 2.0, 1.0)}),
    ("fts AND with OR fallback", "fts", {"fts_mode": "and"}),
    ("vector (max chunk)", "vector", {}),
    ("hybrid rrf k=60 (old default)", "hybrid", {"fusion": "rrf", "rrf_k": 60}),
    ("hybrid rrf k=30", "hybrid", {"fusion": "rrf", "rrf_k": 30}),
    ("hybrid rrf k=10", "hybrid", {"fusion": "rrf", "rrf_k": 10}),
    ("hybrid rrf k=10, 200+200 candidates", "hybrid", {"fusion": "rrf", "rrf_k": 10, "fts_candidates": 200, "vector_candidates": 200}),
    ("hybrid blend w=0.3", "hybrid", {"fts_weight": 0.3}),
    ("hybrid blend w=0.4 (default)", "hybrid", {}),
    ("hybrid blend w=0.5", "hybrid", {"fts_weight": 0.5}),
    ("hybrid blend w=0.6", "hybrid", {"fts_weight": 0.6}),
    ("hybrid blend, 200+200 candidates", "hybrid", {"fts_candidates": 200, "vector_candidates": 200}),
    ("hybrid blend, title weight 1", "hybrid", {"bm25_weights": (1.0, 2.0, 1.0)}),
    ("hybrid blend, title weight 5", "hybrid", {"bm25_weights": (5.0, 2.0, 1.0)}),
    ("hybrid blend, AND with OR fallback", "hybrid", {"fts_mode": "and"}),
]
# Junk-control grid (train): cosine floor x relative cutoff (of the best hybrid score) x max passages.
JUNK_GRID = [(mc, rel, mx) for mc in (0.30, 0.35, 0.40) for rel in (0.0, 0.7, 0.8, 0.85, 0.9) for mx in (3, 6)]

_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# -- data ------------------------------------------------------------------------------------------
def load_split(folder: Path, split: str) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    queries_file, qrels_file = beir.SPLITS[split]
    qrels = beir.load_qrels(folder / qrels_file)
    queries = {str(q["_id"]): q["text"] for q in beir._read_jsonl(folder / queries_file)}
    return {q: t for q, t in queries.items() if q in qrels}, qrels


def offtopic_queries() -> list[str]:
    return [line.strip() for line in OFFTOPIC.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


# -- ingest (cached) -------------------------------------------------------------------------------
class _NoTitleIndexer(Indexer):
    def embed_text_of_chunk(self, title, chunk):
        return chunk.text


def index_db(folder: Path, cache: Path, name: str, embedder) -> Path:
    cfg = INDEX_CONFIGS[name]
    code = hashlib.sha256()
    for module in (chunker_module, embedder_module, indexer_module, migrations):
        code.update(Path(module.__file__).read_bytes())
    settings = f"{embedder.name}|{json.dumps(cfg, sort_keys=True)}|{code.hexdigest()}"
    path = cache / f"{folder.name}-{name}-{beir.corpus_fingerprint(folder, settings)}.db"
    done = path.with_suffix(".done")
    if done.exists():
        log(f"index {name}: cached {path}")
        return path
    log(f"index {name}: ingesting into {path} (slow: every document is chunked and embedded)")
    cls = Indexer if cfg["title"] else _NoTitleIndexer
    with Store(path) as store:
        chunker = Chunker.for_embedder(embedder, max_tokens=cfg["max_tokens"], overlap_tokens=cfg["overlap"])
        last = [0.0]

        def progress(stage, d, t):
            if time.perf_counter() - last[0] > 20:
                last[0] = time.perf_counter()
                log(f"  {stage} {d}/{t}")

        beir.ingest(store, folder, cls(store, embedder, chunker), progress=progress)
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    done.write_text(settings)
    return path


def unicode61_copy(path: Path) -> Path:
    """A copy of an ingested database whose nodes_fts uses plain unicode61 (no Porter stemming)."""
    out = path.with_name(path.stem + "-unicode61.db")
    if out.with_suffix(".done").exists():
        return out
    shutil.copyfile(path, out)
    with Store(out) as store:
        with store.db.transaction() as conn:
            conn.execute("DROP TABLE nodes_fts")
            conn.execute("CREATE VIRTUAL TABLE nodes_fts USING fts5(title, description, source, content='nodes',"
                         " content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3')")
            conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild')")
    out.with_suffix(".done").write_text("unicode61")
    return out


# -- evaluation ------------------------------------------------------------------------------------
def searcher_for(store, embedder, tuning: Tuning, qvecs: dict | None = None) -> Searcher:
    s = Searcher(store, embedder, mirror=True, tuning=tuning)
    if qvecs:
        s._query_vectors = OrderedDict(qvecs)  # embedded once for the whole sweep
    return s


def evaluate(searcher, store, queries, qrels, mode: str) -> dict:
    beir_of = {r[0]: r[1] for r in store.db.execute("SELECT id, json_extract(metadata, '$.beir_id') FROM nodes")}
    ndcg = recall = mrr = 0.0
    times = []
    for qid, text in queries.items():
        t = time.perf_counter()
        found = searcher.candidates(text, mode, limit=DEPTH)
        times.append(time.perf_counter() - t)
        ranked = [beir_of.get(c.node_id) for c in found]
        ndcg += beir.ndcg_at(ranked, qrels[qid], 10)
        recall += beir.recall_at(ranked, qrels[qid], 100)
        mrr += beir.mrr_at(ranked, qrels[qid], 10)
    n = max(1, len(queries))
    ms = np.asarray(times) * 1000
    return {"ndcg@10": round(ndcg / n, 4), "recall@100": round(recall / n, 4), "mrr@10": round(mrr / n, 4),
            "queries": len(queries), "p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def junk_hits(store, searcher, queries, qrels):
    """Per query: [(cosine, relevant?, hit)] as ContextEngine sees them before the cut."""
    beir_of = {r[0]: r[1] for r in store.db.execute("SELECT id, json_extract(metadata, '$.beir_id') FROM nodes")}
    engine = ContextEngine(store, searcher, BUILT_IN["orchestrator"], background_enabled=False)
    on = []
    for qid, text in queries.items():
        on.append([(c, qrels[qid].get(beir_of.get(h["id"]), 0) > 0, h) for c, h in engine.scored_hits(text)])
    off = [[(c, False, h) for c, h in engine.scored_hits(text)] for text in offtopic_queries()]
    return on, off


def junk_figures(on, off, min_cosine=None, relative=None, max_passages=None) -> dict:
    def kept(rows):
        pairs = context_module.cut([(c, h) for c, _, h in rows], min_cosine, relative, max_passages)
        ids = {id(h) for _, h in pairs}
        return [r for r in rows if id(r[2]) in ids]

    on_kept = [kept(r) for r in on]
    off_kept = [kept(r) for r in off]
    injected = sum(len(k) for k in on_kept)
    relevant = sum(sum(1 for r in k if r[1]) for k in on_kept)
    return {
        "mean_injected": round(injected / max(1, len(on)), 3),
        "share_relevant": round(relevant / injected, 3) if injected else None,
        "queries_with_a_relevant_passage": round(sum(1 for k in on_kept if any(r[1] for r in k)) / max(1, len(on)), 3),
        "offtopic_mean_injected": round(sum(len(k) for k in off_kept) / max(1, len(off)), 3),
        "offtopic_queries_with_any": sum(1 for k in off_kept if k),
        "offtopic_queries": len(off),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="BEIR SciFact folder")
    ap.add_argument("--cache", default=os.environ.get("CAIRN_BENCH_CACHE", str(Path(tempfile.gettempdir()) / "cairn-bench-retrieval")),
                    help="where ingested databases are kept between runs")
    ap.add_argument("--quick", action="store_true", help="skip the index ablations that need their own ingest")
    ap.add_argument("--no-test", action="store_true", help="train-split ablations only")
    args = ap.parse_args()
    folder = Path(args.data)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    embedder = Embedder()
    out: dict = {"bench": "retrieval", "collection": folder.name, "embedder": embedder.name,
                 "defaults": asdict(Tuning()), "junk_defaults": {
                     "min_cosine": context_module.MIN_COSINE, "relative_cutoff": context_module.RELATIVE_CUTOFF,
                     "max_passages": context_module.MAX_PASSAGES}}
    train_q, train_rel = load_split(folder, "train")
    log(f"train split: {len(train_q)} queries; embedding them once for the sweep")
    qvecs = dict(zip(train_q.values(), embedder.embed(list(train_q.values()))))

    # 1. Query-time ablations on the default index (train).
    default_db = index_db(folder, cache, "default", embedder)
    rows = []
    with Store(default_db) as store:
        for name, mode, overrides in QUERY_ABLATIONS:
            r = evaluate(searcher_for(store, embedder, replace(Tuning(), **overrides), qvecs), store, train_q, train_rel, mode)
            rows.append({"name": name, "mode": mode, **{k: r[k] for k in ("ndcg@10", "recall@100", "mrr@10")}})
            log(f"train {name}: nDCG@10 {r['ndcg@10']}  recall@100 {r['recall@100']}  MRR@10 {r['mrr@10']}")
        # 2. Junk-control calibration (train).
        log("junk control: collecting retrieval candidates for train and off-topic queries")
        on, off = junk_hits(store, searcher_for(store, embedder, Tuning(), qvecs), train_q, train_rel)
        junk_grid = []
        for mc, rel, mx in JUNK_GRID:
            junk_grid.append({"min_cosine": mc, "relative_cutoff": rel, "max_passages": mx, **junk_figures(on, off, mc, rel, mx)})
        out["junk_train_default"] = junk_figures(on, off)
        log(f"junk (train, defaults): {out['junk_train_default']}")
        out["junk_train_grid"] = junk_grid
    # 3. Tokenizer: plain unicode61 against the default porter unicode61.
    u61 = unicode61_copy(default_db)
    with Store(u61) as store:
        for name, mode in (("fts unicode61 (no stemming)", "fts"), ("hybrid blend, unicode61", "hybrid")):
            r = evaluate(searcher_for(store, embedder, Tuning(), qvecs), store, train_q, train_rel, mode)
            rows.append({"name": name, "mode": mode, **{k: r[k] for k in ("ndcg@10", "recall@100", "mrr@10")}})
            log(f"train {name}: nDCG@10 {r['ndcg@10']}  recall@100 {r['recall@100']}")
    # 4. Index-time ablations (their own ingest each).
    if not args.quick:
        for name in INDEX_CONFIGS:
            if name == "default":
                continue
            path = index_db(folder, cache, name, embedder)
            with Store(path) as store:
                for mode in ("vector", "hybrid"):
                    r = evaluate(searcher_for(store, embedder, Tuning(), qvecs), store, train_q, train_rel, mode)
                    label = f"{mode} ({'blend' if mode == 'hybrid' else 'max chunk'}), index {name}"
                    rows.append({"name": label, "mode": mode, **{k: r[k] for k in ("ndcg@10", "recall@100", "mrr@10")}})
                    log(f"train {label}: nDCG@10 {r['ndcg@10']}  recall@100 {r['recall@100']}")
    out["train_ablations"] = rows

    # 5. The chosen defaults on the test split, once.
    if not args.no_test:
        test_q, test_rel = load_split(folder, "test")
        log(f"test split: {len(test_q)} queries, defaults only")
        with Store(default_db) as store:
            test = {}
            for mode in ("fts", "vector", "hybrid"):
                # A fresh searcher per mode: latency includes embedding each query (no cache hits).
                test[mode] = evaluate(searcher_for(store, embedder, Tuning()), store, test_q, test_rel, mode)
                log(f"test {mode}: {test[mode]}")
            out["test"] = test
            out["latency_ms"] = {"hybrid_p50": test["hybrid"]["p50_ms"], "hybrid_p95": test["hybrid"]["p95_ms"],
                                 "nodes": store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0],
                                 "note": "SciFact-size (5k nodes), query embedding included; 100k: bench/store.py"}
            on, off = junk_hits(store, searcher_for(store, embedder, Tuning()), test_q, test_rel)
            out["junk_test"] = junk_figures(on, off)
            log(f"junk (test): {out['junk_test']}")
    out["total_s"] = round(time.perf_counter() - _T0, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
