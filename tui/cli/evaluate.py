"""`cairn eval beir`: retrieval quality (nDCG@10, recall@100, MRR@10) on a BEIR-format collection."""

from __future__ import annotations

from pathlib import Path

from core.errors import InvalidInput
from core.ops import beir
from tui.cli.common import Out, Progress, Verbs, path_arg, positive_int


def cmd_eval(args, out: Out) -> int:
    from core.index.embedder import shared_embedder
    from core.index.indexer import Indexer
    from core.paths import data_dir
    from core.search.searcher import Searcher
    from core.graph.store import Store

    folder = Path(args.folder)
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder.")
    if not (folder / "corpus.jsonl").is_file():
        raise InvalidInput(f"{folder / 'corpus.jsonl'} is missing; a BEIR folder has corpus.jsonl, queries.jsonl and qrels.tsv.")
    embedder = shared_embedder()
    # The cache key covers everything that shapes the index: the embedder and the code that chunks
    # and embeds (so a changed chunker never reuses a stale collection).
    import hashlib

    from core.index import chunker
    from core.index import embedder as embedder_module
    from core.index import indexer as indexer_module
    from core.graph import migrations

    code = hashlib.sha256()
    for module in (chunker, embedder_module, indexer_module, migrations):
        code.update(Path(module.__file__).read_bytes())
    indexer_settings = f"{embedder.name}|{code.hexdigest()}"
    path = Path(args.db) if getattr(args, "db", None) else data_dir() / "eval" / (
        f"{folder.name}-{beir.corpus_fingerprint(folder, indexer_settings)}.db")
    with Store(path) as store:
        with Progress(out, "Ingesting", "docs") as progress:
            beir.ingest(store, folder, Indexer(store, embedder), progress=lambda stage, d, t: progress(d, t))
        searcher = Searcher(store, embedder, mirror=True)
        results = [beir.evaluate(searcher, store, folder, mode, args.split, max_queries=args.max_queries)
                   for mode in args.mode or ["hybrid"]]
    if out.as_json:
        out.json(results[0] if len(results) == 1 else results)
    else:
        for r in results:
            out.text(f"{r['mode']:>7} {r['split']}: nDCG@10 {r['ndcg@10']:.4f}  recall@100 {r['recall@100']:.4f}  "
                     f"MRR@10 {r['mrr@10']:.4f}  ({r['queries']} queries, {r['seconds']} s)")
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("eval", cmd_eval, "retrieval evaluation")
    p.add_argument("suite", choices=["beir"], help="the format of the collection")
    p.add_argument("folder", metavar="DIR", type=path_arg, help="a folder with corpus.jsonl, queries.jsonl and qrels.tsv")
    p.add_argument("--mode", action="append", choices=beir.MODES, help="repeatable; default hybrid")
    p.add_argument("--split", choices=list(beir.SPLITS), default="test", help="which qrels (default: test)")
    p.add_argument("--max-queries", type=positive_int, metavar="N", help="evaluate only the first N queries")
