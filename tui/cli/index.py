"""`cairn index`: chunk and embed every pending node (the only verb besides the app that embeds)."""

from __future__ import annotations

import sys

from tui.cli.common import Out, Verbs, open_store, plural
from tui.cli.index_bar import IndexBar


def cmd_index(args, out: Out) -> int:
    from core.index.indexer import Indexer, coverage
    from core.index.progress import coverage_text, rate_text

    with open_store(args) as store:
        indexer = Indexer(store)
        other = indexer.other_model()
        if other:
            out.text(f"The vectors were made by {other}; re-embedding every node with {indexer.embedder.name} "
                     "(search by meaning is partial until this finishes).")
        elif indexer.pending_count() == 0 and not args.json:
            out.text("Nothing to index: every node is up to date.")
            return 0
        waited = []

        def waiting() -> None:  # one index run at a time per database (core/index/run_lock.py)
            waited.append(True)
            print("Another Cairn process (the app, or cairn index) is indexing this database; waiting for it "
                  "to finish (Ctrl-C stops waiting)…", file=sys.stderr, flush=True)

        with IndexBar(out) as progress:  # no empty bar before an error or for --json of nothing
            report = indexer.run(progress=progress, on_wait=waiting)
        covered, nodes = coverage(store.db)
    if out.as_json:
        out.json({**report.as_dict(), "covered": covered, "nodes": nodes})
    elif waited and not report.indexed and not report.errors:
        out.text(f"The other process indexed them; {coverage_text(covered, nodes, 'node')}.")
    else:
        rate = rate_text(report.embedded, report.seconds, "chunk")
        # Texts through the model and vectors kept are not parts of the chunks: a note's own text may be
        # embedded beside its chunks, and equal chunks are embedded once.
        kept = f", {plural(report.reused, 'vector')} kept from before" if report.reused else ""
        out.text(f"Indexed {plural(report.indexed, 'node')} ({plural(report.chunks, 'chunk')}; "
                 f"{plural(report.embedded, 'text')} embedded{kept}) in {report.seconds:.1f} s"
                 f"{', ' + rate if rate else ''}; {coverage_text(covered, nodes, 'node')}.")
        if report.skipped:
            out.text(f"{plural(report.skipped, 'node')} changed while being indexed; they stay queued for the next run.")
        if report.errors:
            out.text(f"{plural(report.errors, 'node')} failed to index; `cairn doctor` lists them.", style="red")
    return 1 if report.errors else 0


def register(verbs: Verbs) -> None:
    verbs.add("index", cmd_index, "chunk and embed every pending node")
