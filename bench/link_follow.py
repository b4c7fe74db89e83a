"""Following a `[[link]]` at scale: core.vault.link_target.node_for (enter on a link in Focus) against N
nodes (default 100k), and the Focus tabs kept between runs read back (core.graph.focus_tabs.restore).

Run:  .venv/bin/python bench/link_follow.py [--nodes N] [--runs R]
Progress goes to stderr; the last line of stdout is one JSON object (DESIGN.md, Layout: bench/).

The nodes are written straight into a temporary database with executemany (no history, nothing
embedded): titles "Title number i", 500 characters of text each, every third node with two aliases
(one starting with a non-ASCII letter), every second one imported from a folder (metadata.vault.path).
Timed (median of R runs, each a fresh connection's first call is left out): a link by title, by file
name, by alias, by an alias that starts with a cased non-ASCII letter, one that names nothing, and
one whose name holds no stretch SQLite can fold (the row-by-row path); then the restore of ten kept
tabs, two of them trashed and one merged away since.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.graph import focus_tabs  # noqa: E402
from core.graph.store import Store  # noqa: E402
from core.vault import link_target  # noqa: E402


def build(store: Store, nodes: int) -> None:
    rows = []
    for i in range(nodes):
        meta: dict = {"dimensions": []}
        if i % 3 == 0:
            meta["aliases"] = [f"alias {i}", f"Ärger {i}"]
        if i % 2 == 0:
            meta["vault"] = {"root": "/vault", "path": f"folder{i % 50}/Note {i}.md"}
        rows.append((f"Title number {i}", "some words of text " * 26, json.dumps(meta, ensure_ascii=False),
                     "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"))
    with store.db.transaction() as conn:
        conn.executemany("INSERT INTO nodes(title, source, metadata, created_at, updated_at) VALUES (?,?,?,?,?)", rows)
    store.add_node("Éé", "a title no stretch of which SQLite folds")


def timed(fn, runs: int) -> tuple[float, object]:
    result = fn()  # warm: the pages in the OS cache, as for a database in use
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 1), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "cairn.db")
        print(f"writing {args.nodes:,} nodes…", file=sys.stderr)
        build(store, args.nodes)
        n = args.nodes
        cases = {"title": f"Title number {n - 7}", "file_name": f"Note {n // 2 * 2 - 2}", "alias": f"alias {n // 3 * 3 - 3}",
                 "non_ascii_alias": f"ärger {n // 3 * 3 - 3}", "missing": "No such note at all", "unfoldable": "éÉ"}
        result: dict = {"nodes": n, "runs": args.runs, "follow_ms": {}, "found": {}}
        for name, target in cases.items():
            ms, found = timed(lambda: link_target.node_for(store, target), args.runs)
            result["follow_ms"][name] = ms
            result["found"][name] = found is not None
            print(f"{name}: {ms} ms", file=sys.stderr)
        ids = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        focus_tabs.save(store, ids, 5)
        store.delete_node(5)
        store.delete_node(6)
        from core.graph import merge

        merge.apply(store, merge.plan(store, 1, 7))
        ms, tabs = timed(lambda: focus_tabs.restore(store), args.runs)
        result["restore_tabs_ms"] = ms
        result["restored"] = [i for i, _ in tabs.open]
        result["restored_primary"] = tabs.primary
        store.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
