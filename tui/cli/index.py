"""`cairn index`: chunk and embed every pending node (the only verb besides the app that embeds)."""

from __future__ import annotations

import sys

from tui.cli.common import LazyProgress, Out, Verbs, open_store, plural


def cmd_index(args, out: Out) -> int:
    from core.index.indexer import Indexer

    with open_store(args) as store:
        indexer = Indexer(store)
        other = indexer.other_model()
        if other:
            out.text(f"The vectors were made by {other}; re-embedding every node with {indexer.embedder.name} "
                     "(search by meaning is partial until this finishes).")
        elif indexer.pending_count() == 0 and not args.json:
            out.text("Nothing to index: every node is up to date.")
            return 0
        def waiting() -> None:  # one index run at a time per database (core/index/run_lock.py)
            print("Another Cairn process (the app, or cairn index) is indexing this database; waiting for it "
                  "to finish (Ctrl-C stops waiting)…", file=sys.stderr, flush=True)

        with LazyProgress(out, "Indexing", "nodes") as progress:  # no empty bar before an error or for --json of nothing
            report = indexer.run(progress=progress, on_wait=waiting)
    if out.as_json:
        out.json(report.as_dict())
    else:
        rate = report.indexed / report.seconds if report.seconds else 0
        out.text(f"Indexed {plural(report.indexed, 'node')} ({plural(report.chunks, 'chunk')}; {report.embedded} embedded, "
                 f"{report.reused} reused) in {report.seconds:.1f} s, {rate:.1f} nodes/s.")
        if report.skipped:
            out.text(f"{report.skipped} nodes changed while being indexed; they stay queued for the next run.")
        if report.errors:
            out.text(f"{report.errors} nodes failed to index; `cairn doctor` lists them.", style="red")
    return 1 if report.errors else 0


def register(verbs: Verbs) -> None:
    verbs.add("index", cmd_index, "chunk and embed every pending node")
