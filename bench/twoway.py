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
Indexing is left out (the same for both).
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


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
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
    print(json.dumps(result))


if __name__ == "__main__":
    main()
