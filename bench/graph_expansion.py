"""Graph expansion in hybrid search (issue 6): does boosting the neighbours of the top hits help?

Run:  .venv/bin/python bench/graph_expansion.py [--vault DIR] [--cache DIR] [--scifact-db PATH] [--no-latency]
Progress goes to stderr; the last line of stdout is one JSON object (DESIGN.md, Layout: bench/).

Three parts:

1. SciFact (no edges): expansion must change nothing. The cached ingest of bench/retrieval.py is
   searched with expansion off and on (the strongest setting swept) and the rankings compared.
2. A real linked vault (the Obsidian Tasks documentation, 118 notes, ~600 wikilink edges), imported
   with the real importer (`core.vault.sync.import_vault`) and indexed with the real embedder. For each note
   Q with >= 2 distinct outgoing links, Q's own edges (both directions) are hidden from the expansion,
   Q is queried by its title and, separately, by its first paragraph, Q itself is dropped from the
   results, and the notes Q links to are the relevant set (nDCG@10, recall@10, binary gain). So
   expansion can only reach Q's link targets through the rest of the graph, never through Q.
3. Latency at 100k nodes: bench/store.py's synthetic database (same generator) plus random edges
   (6 per node on average, and 20 hubs with 2,000 neighbours each), hybrid p50/p95 with expansion
   off and on, and the neighbour query alone.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.index.embedder import Embedder  # noqa: E402
from core.index.indexer import Indexer  # noqa: E402
from core.search.searcher import Searcher, Tuning  # noqa: E402
from core.graph.store import Store  # noqa: E402
from core.vault.sync import import_vault  # noqa: E402

DEFAULT_VAULT = ROOT.parent / "shared" / "evaldata" / "vault-obsidian-tasks-docs"
DEFAULT_SCIFACT = Path("/tmp/cairn-bench-retrieval/scifact-default-840ebc23318a6796.db")
SCIFACT_QUERIES = ROOT.parent / "shared" / "evaldata" / "scifact" / "queries-train.jsonl"
K = 10
WEIGHTS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
SEEDS = (5, 10)
COMBINES = ("max", "sum")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class HiddenEdges(Searcher):
    """A Searcher whose graph expansion does not see the edges of one node (the query's own note)."""

    hidden: int | None = None

    def neighbours(self, node_ids, dimension=None):
        pairs = super().neighbours(node_ids, dimension)
        h = self.hidden
        return [(s, n) for s, n in pairs if s != h and n != h]


def ndcg(ranked: list[int], relevant: set[int], k: int = K) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def first_paragraph(source: str) -> str:
    """The note's first prose block: not a heading, front matter, code fence or table; callout '>'s stripped."""
    fence = False
    for block in re.split(r"\n\s*\n", source):
        b = block.strip()
        if b.startswith("```"):
            fence = not fence if b.count("```") % 2 else fence
            continue
        if fence or not b or b.startswith(("#", "---", "|", "<!--", "![")):
            continue
        text = " ".join(line.lstrip("> ").strip() for line in b.splitlines() if not line.lstrip("> ").startswith("[!"))
        if len(text.split()) >= 6:
            return text
    return ""


def vault_db(vault: Path, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / "vault.db"
    done = cache / "vault.done"
    if db.exists() and done.exists() and done.read_text() == str(vault):
        log(f"vault: cached {db}")
        return db
    for p in cache.glob("vault.db*"):
        p.unlink()
    store = Store(db)
    t = time.perf_counter()
    report = import_vault(store, vault)
    idx = Indexer(store, Embedder()).run()
    log(f"vault: imported {report.files} files, {report.edges} edges; indexed {idx.indexed} notes,"
        f" {idx.chunks} chunks in {time.perf_counter() - t:.0f} s")
    store.close()
    done.write_text(str(vault))
    return db


def vault_eval(db: Path, embedder: Embedder) -> dict:
    store = Store(db)
    searcher = HiddenEdges(store, embedder)
    nodes = {r[0]: (r[1], r[2]) for r in store.db.execute("SELECT id, title, source FROM nodes")}
    out_links: dict[int, set[int]] = {}
    for f, t in store.db.execute("SELECT from_node_id, to_node_id FROM edges"):
        out_links.setdefault(f, set()).add(t)
    queries = []
    for q, targets in sorted(out_links.items()):
        targets = targets - {q}
        if len(targets) >= 2:
            title, source = nodes[q]
            queries.append((q, targets, title, first_paragraph(source)))
    log(f"vault: {len(nodes)} notes, {sum(map(len, out_links.values()))} edges,"
        f" {len(queries)} query notes with >= 2 outgoing links")
    configs = [("off", Tuning(graph_weight=0.0))]
    for combine in COMBINES:
        for n in SEEDS:
            for w in WEIGHTS:
                configs.append((f"w={w} N={n} {combine}", Tuning(graph_weight=w, graph_seeds=n, graph_combine=combine)))
    results: dict = {"notes": len(nodes), "edges": sum(map(len, out_links.values())),
                     "queries": len(queries), "mean_relevant": round(float(np.mean([len(t) for _, t, _, _ in queries])), 2),
                     "by_query_kind": {}}
    for kind in ("title", "first_paragraph"):
        rows = {}
        per_query: dict[str, list[float]] = {}
        qs = [(q, t, title if kind == "title" else para) for q, t, title, para in queries]
        qs = [x for x in qs if x[2].strip()]
        for name, tuning in configs:
            searcher.tuning = tuning
            nd, rc = [], []
            for q, targets, text in qs:
                searcher.hidden = q
                ranked = [c.node_id for c in searcher.candidates(text, "hybrid", limit=K + 1) if c.node_id != q][:K]
                nd.append(ndcg(ranked, targets))
                rc.append(len(set(ranked) & targets) / len(targets))
            per_query[name] = nd
            rows[name] = {"ndcg@10": round(float(np.mean(nd)), 4), "recall@10": round(float(np.mean(rc)), 4)}
            log(f"vault {kind:16s} {name:18s} nDCG@10 {rows[name]['ndcg@10']:.4f}  recall@10 {rows[name]['recall@10']:.4f}")
        base = np.asarray(per_query["off"])
        for name in rows:
            if name == "off":
                continue
            d = np.asarray(per_query[name]) - base
            rows[name]["delta_ndcg"] = round(float(d.mean()), 4)
            rows[name]["paired_se"] = round(float(d.std(ddof=1) / math.sqrt(len(d))), 4)
            rows[name]["better/worse"] = f"{int((d > 1e-9).sum())}/{int((d < -1e-9).sum())}"
        results["by_query_kind"][kind] = {"queries": len(qs), "configs": rows}
    store.close()
    return results


def scifact_unchanged(db: Path, embedder: Embedder, n_queries: int) -> dict:
    if not db.exists():
        log(f"scifact: no cached ingest at {db}; run bench/retrieval.py first")
        return {"skipped": f"no cached ingest at {db}"}
    work = Path(tempfile.mkdtemp(prefix="cairn-bench-graph-sf-"))
    try:
        shutil.copy(db, work / "s.db")  # read through a copy: the cache stays untouched
        store = Store(work / "s.db")
        edges = store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]
        queries = [json.loads(line)["text"] for line in SCIFACT_QUERIES.read_text().splitlines()[:n_queries]]
        off = Searcher(store, embedder)
        on = Searcher(store, embedder, tuning=Tuning(graph_weight=max(WEIGHTS), graph_seeds=max(SEEDS), graph_combine="sum"))
        same = 0
        for q in queries:
            a = [(c.node_id, c.score) for c in off.candidates(q, "hybrid", limit=100)]
            b = [(c.node_id, c.score) for c in on.candidates(q, "hybrid", limit=100)]
            same += a == b
        store.close()
        log(f"scifact: {edges} edges; {same}/{len(queries)} train queries with identical top-100 ids and scores")
        return {"edges": edges, "train_queries_checked": len(queries), "identical_top100": same,
                "setting": f"w={max(WEIGHTS)} N={max(SEEDS)} sum"}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def latency(n: int, embedder: Embedder, tuning: Tuning) -> dict:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_store", ROOT / "bench" / "store.py")
    sb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sb)  # bench/store.py's generator, unchanged

    rng = np.random.default_rng(sb.SEED)
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-graph-lat-"))
    try:
        vocab = sb.vocabulary(rng, sb.VOCAB_SIZE)
        titles, sources, df = sb.make_corpus(n, rng, vocab)
        store = Store(tmp / "cairn.db")
        sb.build_db(store, titles, sources, rng)
        del titles, sources
        # Random graph: 3 outgoing edges per node (6 neighbours on average) plus 20 hubs of 2,000.
        pairs = set()
        src = np.repeat(np.arange(1, n + 1), 3)
        dst = rng.integers(1, n + 1, len(src))
        pairs.update((int(a), int(b)) for a, b in zip(src, dst) if a != b)
        for h in rng.choice(np.arange(1, n + 1), 20, replace=False):
            pairs.update((int(h), int(b)) for b in rng.integers(1, n + 1, 2000) if b != h)
        stamp = "2024-01-01T00:00:00Z"
        with store.db.transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO edges(from_node_id, to_node_id, created_at) VALUES (?, ?, ?)",
                             [(a, b, stamp) for a, b in pairs])
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        n_edges = store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]
        log(f"latency: {n:,} nodes, {n_edges:,} edges")
        hq = sb.pick_queries(rng, vocab, df, n, sb.MID_DF, 2 * sb.HYBRID_QUERIES + 5)
        res = {"nodes": n, "edges": n_edges}
        searchers = {"off": Searcher(store, embedder, mirror=True),
                     "on": Searcher(store, embedder, mirror=True, tuning=tuning)}
        for s in searchers.values():
            for q in hq[-5:]:
                s.search(q, mode="hybrid", limit=10)  # warm-up (ONNX session, mirror)
        # The same query on both sides (each Searcher has its own query-vector cache, so both embed
        # it), interleaved and in alternating order so neither side always gets a warm page cache.
        times: dict[str, list[float]] = {"off": [], "on": []}
        for i in range(2 * sb.HYBRID_QUERIES):
            order = list(searchers.items()) if i % 2 == 0 else list(searchers.items())[::-1]
            for name, s in order:
                q = hq[i]
                t = time.perf_counter()
                s.search(q, mode="hybrid", limit=10)
                times[name].append(time.perf_counter() - t)
        for name, ts in times.items():
            res[f"hybrid_{name}"] = sb.ms_stats(ts)
        ids = [list(map(int, rng.integers(1, n + 1, tuning.graph_seeds))) for _ in range(300)]
        hubs = [int(r[0]) for r in store.db.execute(
            "SELECT from_node_id FROM edges GROUP BY from_node_id ORDER BY COUNT(*) DESC LIMIT 10")]
        nb = searchers["on"]
        res["neighbour_query_random_seeds"] = sb.ms_stats(sb.timed(lambda x: nb.neighbours(x), ids))
        res["neighbour_query_with_hubs"] = sb.ms_stats(sb.timed(lambda x: nb.neighbours(x), [hubs] * 50))
        plan = store.db.execute("EXPLAIN QUERY PLAN SELECT from_node_id, to_node_id FROM edges WHERE from_node_id IN"
                                " (SELECT value FROM json_each(?1)) UNION ALL SELECT to_node_id, from_node_id FROM edges"
                                " WHERE to_node_id IN (SELECT value FROM json_each(?1))", ("[1]",)).fetchall()
        res["plan"] = [r[-1] for r in plan]
        log(f"latency: hybrid off p50 {res['hybrid_off']['p50']} ms, on p50 {res['hybrid_on']['p50']} ms;"
            f" neighbour query p50 {res['neighbour_query_random_seeds']['p50']} ms"
            f" (10 hubs: {res['neighbour_query_with_hubs']['p50']} ms); plan {res['plan']}")
        store.close()
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", type=Path, default=DEFAULT_VAULT)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "cairn-bench-graph")
    ap.add_argument("--scifact-db", type=Path, default=DEFAULT_SCIFACT)
    ap.add_argument("--scifact-queries", type=int, default=50)
    ap.add_argument("--latency-nodes", type=int, default=100_000)
    ap.add_argument("--latency-setting", default="0.2,10,max", help="graph_weight,graph_seeds,graph_combine")
    ap.add_argument("--no-latency", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    embedder = Embedder()
    out: dict = {"bench": "graph_expansion"}
    out["vault"] = vault_eval(vault_db(args.vault, args.cache), embedder)
    out["scifact"] = scifact_unchanged(args.scifact_db, embedder, args.scifact_queries)
    if not args.no_latency:
        w, n, comb = args.latency_setting.split(",")
        out["latency"] = latency(args.latency_nodes, embedder,
                                 Tuning(graph_weight=float(w), graph_seeds=int(n), graph_combine=comb))
        out["latency"]["setting"] = args.latency_setting
    out["total_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
