"""Focus tabs reopened at start (tui/flows/focus_tabs.py): what ten kept tabs cost the app's start.

Run:  .venv/bin/python bench/focus_restore.py [--nodes N] [--tabs T] [--runs R]
Progress goes to stderr; the last line of stdout is one JSON object (DESIGN.md, Layout: bench/).

A database of N nodes (default 20k; written with executemany as bench/link_follow.py does, each with
500 characters of markdown text) and T kept tabs (default 10, the active one in the middle). The
app runs headless in this process (Textual's run_test, 120x40), R times with the tabs kept and R
times with none, and R times with none kept but the same note opened as soon as the first frame is
up (as enter on the node list would at once: the cost of a first tab, whatever opens it), alternated. Timed from the app's construction: its first frame (`startup_ms`, which
the reopening must not delay: it starts after that frame), the node list's first page, the tab strip
holding every kept tab, and the active tab showing its note. `read_at_start`: how many tabs read
their node by then (only the active one should; the others read theirs when first shown).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(db: Path, nodes: int, tabs: int) -> list[int]:
    from core.graph import focus_tabs
    from core.graph.store import Store

    text = "## A heading\n\nSome words of text, a *little* markdown, a list:\n\n- one\n- two\n\n" + "More words. " * 30
    with Store(db) as store:
        with store.db.transaction() as conn:
            conn.executemany("INSERT INTO nodes(title, source, metadata, created_at, updated_at, chunk_status)"
                             " VALUES (?, ?, '{}', ?, ?, 'indexed')",
                             [(f"Note {i}", text, "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z") for i in range(nodes)])
        ids = [1 + i * (nodes // tabs) for i in range(tabs)]
        focus_tabs.save(store, ids, ids[tabs // 2])
        focus_tabs_value = store.meta(focus_tabs.KEY)
    return ids, focus_tabs_value


async def once(db: Path, expect_tabs: int, open_one: int | None = None) -> dict:
    """One start; `open_one`: no tabs kept, and this node opened as soon as the first frame is up (what
    enter on the node list does at once), for comparison."""
    from tui.app import CairnApp
    from tui.widgets.focus_panel import FocusPanel
    from tui.widgets.node_browser import NodeBrowser

    start = time.perf_counter()
    app = CairnApp(db, first_run_prompt=False)
    app.index_pending = lambda: None  # nothing to index; keeps the measurement to the screen
    marks: dict[str, float] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline:
            now = (time.perf_counter() - start) * 1000
            panel = app.query_one(FocusPanel)
            if open_one is not None and app.startup_ms is not None and not panel.open_ids:
                panel.open_node(open_one)
            if "list_ms" not in marks and app.query_one(NodeBrowser).query("OptionList") and \
                    app.query_one(NodeBrowser).query_one("OptionList").option_count:
                marks["list_ms"] = now
            if expect_tabs and "tabs_ms" not in marks and len(panel.query("ContentTab")) == expect_tabs:
                marks["tabs_ms"] = now
            primary = panel.primary
            if expect_tabs and "active_ms" not in marks and primary is not None and panel.view(primary) is not None \
                    and panel.view(primary).node is not None:
                marks["active_ms"] = now
                marks["read_at_start"] = sum(1 for i in panel.open_ids if panel.view(i) and panel.view(i).node)
            if app.startup_ms is not None and "list_ms" in marks and (
                    not expect_tabs or ("tabs_ms" in marks and "active_ms" in marks)):
                break
            await pilot.pause(0.005)
        marks["startup_ms"] = app.startup_ms
    return marks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--tabs", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "cairn.db"
        print(f"writing {args.nodes:,} nodes…", file=sys.stderr)
        _ids, kept = build(db, args.nodes, args.tabs)
        from core.graph import focus_tabs
        from core.graph.store import Store

        runs: dict[str, list[dict]] = {"kept": [], "none": [], "opened": []}
        for run in range(args.runs):
            for case in ("kept", "none", "opened"):
                with Store(db) as store:  # what the last run left is put back (the app keeps its tabs on exit)
                    if case == "kept":
                        store.set_meta(focus_tabs.KEY, kept)
                    else:
                        store.db.execute("DELETE FROM meta WHERE key = ?", (focus_tabs.KEY,))
                expect = {"kept": args.tabs, "none": 0, "opened": 1}[case]
                runs[case].append(asyncio.run(once(db, expect, _ids[args.tabs // 2] if case == "opened" else None)))
                print(f"run {run + 1} {case}: {runs[case][-1]}", file=sys.stderr)

    def median(case: str, key: str):
        values = [r[key] for r in runs[case] if key in r and r[key] is not None]
        return round(statistics.median(values), 1) if values else None

    result = {"nodes": args.nodes, "tabs": args.tabs, "runs": args.runs}
    for case in ("kept", "none", "opened"):
        for key in ("startup_ms", "list_ms", "tabs_ms", "active_ms"):
            if (value := median(case, key)) is not None:
                result[f"{case}_{key}"] = value
    result["read_at_start"] = max(r.get("read_at_start", 0) for r in runs["kept"])
    print(json.dumps(result))


if __name__ == "__main__":
    main()
