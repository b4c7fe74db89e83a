"""A two-way sync round (core/vault/twoway.py) on a large vault, against the one-way import in the same run.

Run:  .venv/bin/python bench/twoway.py [--notes 10000]
The last line of stdout is one JSON object. The vault is made at run time from a real one: the notes
of ../shared/evaldata/vault-obsidian-tasks-docs (an Obsidian vault, MIT), copied over and over into
numbered folders until there are N notes (each copy's first line numbered, so no two are equal). Times:
- the one-way import's second pass over the unchanged vault (`VaultSync.sync`, today's `cairn import`
  again) — the reference;
- a two-way round with nothing changed (the target: at most 1.2x the reference);
- 1 % changed: half edited in the files, half in Cairn; the round against a one-way import of the same
  file edits (the import cannot carry Cairn's half at all).
Indexing is left out of these (the same for both). Then the write-back latency (issue 23, item 7):
- save_to_file_s: the watcher (core/vault/watch.py, two_way) in a thread, a note updated through a second
  Store connection; from that commit until the file on disk holds the new text.
- app_save_to_file_s: the same through the app's own save path. The real CairnApp, headless (Textual's
  run_test), its config ($CAIRN_HOME/config.toml) binding the same vault with `[vault] path`, on the same
  database; after the app's watcher reports its first round, each save is made as a user makes it: the
  note opened in a Focus tab (OpenNode, what enter in the node list posts), `e`, tab to the source, page
  down to its end, a line typed key by key, ctrl+s (NodeEditor.action_save -> NodeView.save, a worker
  that calls Store.update_node on the app's connection). Timed from that update_node's return (the
  commit) until the file holds the typed line, the file read every 10 ms. Before the app starts, the
  notes are indexed with the real chunker and random vectors under the real model's name (as in
  bench/store.py: nothing in the save path reads the values), so the app starts with nothing to index,
  as a user's app does, and after each save embeds the saved note with the real model, as it does.
  store_save_to_file_indexed_s: save_to_file_s again, on that indexed database just before the app: the
  reference for app_save_to_file_over_store_save (the same database and minute: save_to_file_s's median
  went from 0.35 s to 1.06 s between runs here, with what else the machine ran).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.graph.store import Store  # noqa: E402
from core.vault.sync import VaultSync  # noqa: E402
from core.vault.twoway import TwoWaySync  # noqa: E402

SOURCE = ROOT.parent / "shared" / "evaldata" / "vault-obsidian-tasks-docs"


def _make_vault(folder: Path, n: int) -> list[Path]:
    notes = sorted(p for p in SOURCE.rglob("*.md") if ".obsidian" not in p.parts)
    made: list[Path] = []
    copy = 0
    while len(made) < n:
        for src in notes:
            if len(made) >= n:
                break
            rel = Path(f"copy{copy:03d}") / src.relative_to(SOURCE)
            dest = folder / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text(encoding="utf-8")
            dest.write_text(f"{text}\n\nCopy {copy} of {rel.name}.\n", encoding="utf-8")
            made.append(dest)
        copy += 1
    return made


def _save_to_file(db: Path, vault: Path, rng: random.Random, saves: int = 10) -> tuple[list[float], float]:
    """What the app does with [vault] path: the watcher (core/vault/watch.py, two_way) in its thread, a
    save through another connection; the time until the file on disk holds it."""
    from core.vault.watch import start_watching

    import threading

    ready = threading.Event()
    watcher = start_watching(db, vault, two_way=True, on_ready=lambda report: ready.set())
    out = []
    try:
        with Store(db) as app:
            t = time.perf_counter()
            ready.wait(1200)  # the watcher's first round (the app's start): not a save's latency
            startup = time.perf_counter() - t
            ids = [r[0] for r in app.db.execute("SELECT node_id FROM vault_notes")]
            for i in range(saves):
                node_id = rng.choice(ids)
                node = app.get_node(node_id)
                token = f"Saved in the app, {i}."
                rel = node["metadata"]["vault"]["path"]
                t = time.perf_counter()
                app.update_node(node_id, source=node["source"] + token + "\n")
                while token not in (vault / rel).read_text(encoding="utf-8"):
                    if time.perf_counter() - t > 60:
                        raise RuntimeError("a save did not reach its file in 60 s")
                    time.sleep(0.01)
                out.append(time.perf_counter() - t)
                time.sleep(0.3)
    finally:
        watcher.stop()
    return out, startup


def _index_with_random_vectors(db: Path) -> float:
    """Index every note: the real embedder's name, tokenizer and chunking, random unit vectors instead of
    the model's (the model would take hours here)."""
    import numpy as np

    from core.index.embedder import Embedder
    from core.index.indexer import Indexer

    class StandIn(Embedder):
        def embed(self, texts, progress=None):
            v = np.random.default_rng(len(texts)).standard_normal((len(texts), self.dimensions))
            return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    with Store(db) as store:
        t = time.perf_counter()
        report = Indexer(store, embedder=StandIn()).run()
        assert not report.errors, report.failures[:3]
        return time.perf_counter() - t


def _app_save_to_file(db: Path, vault: Path, home: Path, rng: random.Random, saves: int = 10) -> dict:
    """The real app on `db` with `[vault] path` = `vault` in its config; `saves` notes that came from the
    vault edited and saved through its editor (keys), each timed from its commit to its file."""
    import asyncio
    import os
    import threading

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"[vault]\npath = {json.dumps(str(vault))}\n", encoding="utf-8")
    os.environ["CAIRN_HOME"] = str(home)  # the config above, the app's log: never the user's

    from tui.app import CairnApp
    from tui.messages import OpenNode
    from tui.widgets.focus_panel import FocusPanel
    from tui.widgets.node_view import SourceEditor

    ready = threading.Event()

    class App(CairnApp):
        def _vault_ready(self, folder, report, from_thread):  # the watcher's first round (its thread)
            super()._vault_ready(folder, report, from_thread)
            ready.set()

    app = App(db, first_run_prompt=False, manage_gc=True)  # as `cairn` runs it (tui/app.py run_app)
    assert app.services.config.vault.path == str(vault), "the config was not read from $CAIRN_HOME"
    committed: dict[int, float] = {}
    out: dict = {"latencies": [], "missed": [], "conflicts": 0}

    async def until(predicate, what: str, timeout: float = 60.0) -> None:
        deadline = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the app did not get there in {timeout:.0f} s: {what}")
            await asyncio.sleep(0.01)

    def poll_file(path: Path, token: str, seen: list, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                if token in path.read_text(encoding="utf-8"):
                    seen.append(time.perf_counter())
                    return
            except OSError:
                pass  # between a write-to-temp and its rename
            time.sleep(0.01)

    async def run() -> None:
        started = time.perf_counter()
        async with app.run_test(size=(130, 40)) as pilot:
            await until(lambda: app._vault_watcher is not None, "the watcher started")
            store = app.services._store  # the app's own connection, the one NodeView.save writes through
            update_node = store.update_node

            def timed_update(node_id, **changes):  # the save path's own call, its commit time noted
                node = update_node(node_id, **changes)
                committed[node_id] = time.perf_counter()
                return node

            store.update_node = timed_update
            while not ready.wait(0.05):  # not a save's latency: the app's start
                await asyncio.sleep(0.05)
                if app._vault_watcher.error is not None:
                    raise RuntimeError(f"the app's watcher stopped: {app._vault_watcher.error}")
            out["first_round_s"] = time.perf_counter() - started
            await pilot.pause(0.5)
            panel = app.query_one(FocusPanel)
            with app.services.store() as s:
                rows = s.db.execute(
                    "SELECT v.node_id, v.rel, n.title FROM vault_notes v JOIN nodes n ON n.id = v.node_id"
                    " WHERE v.trashed IS NULL ORDER BY v.node_id").fetchall()
            for i, (node_id, rel, title) in enumerate(rng.sample(rows, saves)):
                app.post_message(OpenNode(node_id, title=title))  # what enter in the node list posts
                await until(lambda: panel.primary == node_id and panel.active_view is not None
                            and panel.active_view.node is not None and app.focused is panel.strip,
                            f"note {node_id} open in Focus")
                view = panel.active_view
                await pilot.press("e")  # FocusPanel.action_edit_node: the editor, the title focused
                await until(lambda: view.editor is not None and app.focused is not None, "the editor")
                for _ in range(5):  # title, description, link, dimensions, event date, then the source
                    await pilot.press("tab")
                source = view.editor.query_one(SourceEditor)
                assert app.focused is source, f"tab did not reach the source editor ({app.focused!r})"
                for _ in range(1000):  # to its last line, as a user gets there
                    if source.cursor_location[0] == source.document.line_count - 1:
                        break
                    await pilot.press("pagedown")
                await pilot.press("end")
                token = f"saved in the app {i} {rng.randrange(10**6)}"
                await pilot.press("enter", *["space" if c == " " else c for c in token])
                assert source.text.endswith("\n" + token), "the typed line is not in the editor"
                seen: list[float] = []
                stop = threading.Event()
                poller = threading.Thread(target=poll_file, args=(vault / rel, token, seen, stop), daemon=True)
                poller.start()
                committed.pop(node_id, None)
                await pilot.press("ctrl+s")  # NodeEditor.action_save -> NodeView.save (a worker)
                try:
                    await until(lambda: node_id in committed or app.screen is not app.screen_stack[0],
                                "the save's commit")
                    if node_id not in committed:  # NodeView.SaveConflict asked to overwrite: counted, not timed
                        out["conflicts"] += 1
                        await pilot.press("escape")  # "Keep editing": the edit stays in its tab, unsaved
                        continue
                    await until(lambda: not view.editing, "the editor closed after the save")
                    poller.join(60)
                    if seen:
                        out["latencies"].append(seen[0] - committed[node_id])
                    else:
                        out["missed"].append(rel)
                finally:
                    stop.set()
                await asyncio.sleep(0.3)
            app._vault_watcher.stop()  # before the app closes the store

    asyncio.run(run())
    return out


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--app-saves", type=int, default=10, help="saves made in the app (app_save_to_file_s)")
    args = ap.parse_args()
    if not SOURCE.is_dir():
        print(json.dumps({"skipped": f"no vault at {SOURCE}"}))
        return
    rng = random.Random(23)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        vault = tmp / "vault"
        files = _make_vault(vault, args.notes)
        # the one-way import: first pass, then the unchanged pass (the reference)
        one_way = tmp / "one.db"
        with Store(one_way) as store:
            first_import, _ = _timed(lambda: VaultSync(store, vault).sync())
            import_unchanged, _ = _timed(lambda: VaultSync(store, vault).sync())
        # the two-way replica: its first round (import and agreement), then an unchanged round
        two_way = tmp / "two.db"
        with Store(two_way) as store:
            first_round, _ = _timed(lambda: TwoWaySync(store, vault).round())
            round_unchanged, report = _timed(lambda: TwoWaySync(store, vault).round())
            assert not report.written and not report.imported.changed
            # 1 % changed: half in the files, half in Cairn
            k = max(2, args.notes // 100)
            picked = rng.sample(files, k)
            for path in picked[: k // 2]:
                path.write_text(path.read_text(encoding="utf-8") + "An edit made in the folder.\n", encoding="utf-8")
            ids = [r[0] for r in store.db.execute("SELECT id FROM nodes ORDER BY id")]
            for node_id in rng.sample(ids, k - k // 2):
                node = store.get_node(node_id)
                store.update_node(node_id, source=node["source"] + "An edit made in Cairn.\n")
            round_changed, report = _timed(lambda: TwoWaySync(store, vault).round())
            written, merged = len(report.written), len(report.merged)
        with Store(one_way) as store:
            import_changed, _ = _timed(lambda: VaultSync(store, vault).sync())
        latencies, watcher_start = _save_to_file(two_way, vault, rng)
        index_s = _index_with_random_vectors(two_way)
        # the reference for the app's saves: the Store save again, on the database the app then opens
        indexed_latencies, _ = _save_to_file(two_way, vault, rng)
        in_app = _app_save_to_file(two_way, vault, tmp / "home", rng, saves=args.app_saves)
        shutil.rmtree(vault)
    result = {"notes": args.notes, "first_import_s": round(first_import, 2), "first_round_s": round(first_round, 2),
              "import_unchanged_s": round(import_unchanged, 3), "round_unchanged_s": round(round_unchanged, 3),
              "round_unchanged_over_import": round(round_unchanged / import_unchanged, 2),
              "changed": k, "round_changed_s": round(round_changed, 3), "import_changed_s": round(import_changed, 3),
              "round_changed_over_import": round(round_changed / import_changed, 2),
              "written": written, "merged": merged,
              "save_to_file_s": {"median": round(sorted(latencies)[len(latencies) // 2], 3),
                                 "max": round(max(latencies), 3), "saves": len(latencies)},
              "watcher_first_round_s": round(watcher_start, 2)}
    app_latencies = sorted(in_app["latencies"])
    result["app_save_to_file_s"] = {
        "median": round(app_latencies[len(app_latencies) // 2], 3) if app_latencies else None,
        "max": round(app_latencies[-1], 3) if app_latencies else None, "saves": len(app_latencies)}
    result["store_save_to_file_indexed_s"] = {"median": round(sorted(indexed_latencies)[len(indexed_latencies) // 2], 3),
                                              "max": round(max(indexed_latencies), 3), "saves": len(indexed_latencies)}
    result["app_save_to_file_over_store_save"] = (  # both on the indexed database
        round(result["app_save_to_file_s"]["median"] / result["store_save_to_file_indexed_s"]["median"], 2)
        if app_latencies else None)
    result["app_vault_notes"] = args.notes  # the app binds the same vault (not a smaller one)
    result["app_saves_missed"] = in_app["missed"]  # files that never got their save within 60 s
    result["app_save_conflicts"] = in_app["conflicts"]
    result["app_watcher_first_round_s"] = round(in_app["first_round_s"], 2)  # from the app's start
    result["app_index_random_vectors_s"] = round(index_s, 1)  # before the app starts; not timed in it
    print(json.dumps(result))


if __name__ == "__main__":
    main()
