"""The index pipeline against the embedder's own speed, coverage-first order, and the ETA (issues 26, 27).

Run:  .venv/bin/python bench/index_pipeline.py [--repeats N] [--threads N] [--skip-vault] [--skip-texts]
Progress goes to stderr; the last line of stdout is one JSON object (DESIGN.md, Layout: bench/).

Two pipelines, measured in this one run and interleaved (old, new, then new, old, ...), because
another process on a shared machine only ever slows whichever runs beside it:
- "old": core/index/indexer.py as it was at OLD_INDEXER (read from git), with the embedder tokenizing
  each text again after its count (UncachedCounts): whole notes in id order,
  embedding and SQLite writes taking turns;
- "new": today's indexer (coverage first, the next batch embedded while the last one is written).

Figures:
- `texts`: 1,000 one-chunk notes (bench/store.py's natural sentences, captured as `cairn add TEXT`
  would): `embed_raw_per_s` (the embedder alone on the same texts, the mean of just before and just
  after each pipeline run),
  `index_per_s`, and their ratio, per repetition; best and median. `cpu_ratio`: the CPU seconds of
  the embedder alone over those of the index run (all threads; the embedder takes every core, so
  on a busy machine this holds where the wall-clock ratio swings with the neighbours' load).
- `vault`: the Obsidian Tasks vault imported and indexed: import and index seconds, the time until
  every note has at least one vector (reachable by meaning search; a poller on its own connection
  reads core.index.indexer.coverage every POLL_S), the time until all are done, and their ratio.
- `eta`: over the new pipeline's vault import, each ETA the run gave against the true time left
  (known once it ended), after the first 10 % of the run: the largest relative deviation, and the
  same for the old progress bar (Rich's notes-per-second estimate over the old pipeline's counts).
- `threads`: the model's threads (the embedder's default: every core up to 4). With `--threads` one
  fewer than the cores, a core is left to everything beside the model: the ratio the pipeline gives
  where the model does not take every core (a machine with more cores than the model's threads).
- `work_beside`: what the pipeline's work beside the model costs the model. The embedder alone on
  the texts, then again while another thread runs the new pipeline's reading, chunking and writing
  (FreeEmbedder index runs of other notes, paced): the model's extra seconds per CPU second of that
  work (`model_s_per_cpu_s`; 0 with a core to spare, about 1 when the model takes every core), and
  the ceiling it sets on the ratio: raw / (raw + overhead_cpu_s x that cost).
- `overhead_cpu_s`: the CPU seconds of everything but the model (reading, chunking, writing) for the
  1,000 notes, with a stand-in embedder that returns fixed vectors at once; process CPU time, so it
  holds on a busy machine where the wall-clock figures above do not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from core.graph.store import Store, title_from_text  # noqa: E402
from core.index import indexer as new_indexer  # noqa: E402
from core.index.embedder import Embedder  # noqa: E402
from core.index.indexer import coverage  # noqa: E402
from store import natural_sentences  # noqa: E402  (bench/store.py's texts)

SEED = 20240611
TEXTS = 1_000
REPEATS = 3
POLL_S = 0.05
# The last commit before issue 27's pipeline: its core/index/indexer.py is the "old" pipeline.
OLD_INDEXER = "b162d37a69be0c22a47ea59f6c81d3a2299e6d32"
VAULT = ROOT.parent / "shared" / "evaldata" / "vault-obsidian-tasks-docs"
# Rich's estimate of speed, as the old bar (tui/cli/common.py Progress) used it: the samples of the
# last 30 s (rich.progress.Progress's speed_estimate_period).
RICH_SPEED_PERIOD = 30.0

_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def old_indexer_module() -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{OLD_INDEXER}:core/index/indexer.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("old_indexer")
    module.__file__ = f"<git {OLD_INDEXER[:8]}:core/index/indexer.py>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


class CoveragePoller:
    """Reads coverage on its own connection every POLL_S; records when all notes are reached."""

    def __init__(self, db_path: Path, started: float):
        self.db_path, self.started = db_path, started
        self.all_reached: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with Store(self.db_path, readonly=True) as store:
            while not self._stop.is_set():
                covered, notes = coverage(store.db)
                if covered == notes and self.all_reached is None:
                    self.all_reached = time.perf_counter() - self.started
                    return
                self._stop.wait(POLL_S)

    def stop(self) -> float:
        """When all notes were reached; the run's end if the last look came before it."""
        ended = time.perf_counter() - self.started
        self._stop.set()
        self._thread.join()
        return ended if self.all_reached is None else self.all_reached


def embed_raw(embedder, texts: list[str]) -> tuple[float, float]:
    """The embedder alone on the texts: texts per second, and CPU seconds."""
    t, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - t), time.process_time() - cpu


def index_texts(module, embedder, texts: list[str], db_path: Path) -> tuple[float, float]:
    """Notes indexed per second, and the run's CPU seconds (all threads of the process)."""
    with Store(db_path) as store:
        for text in texts:
            store.add_node(title_from_text(text), text)
        t, cpu = time.perf_counter(), time.process_time()
        module.Indexer(store, embedder).run()
        seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
        counts = store.counts()
        assert counts["pending"] == 0 and counts["errors"] == 0, counts
    return len(texts) / seconds, cpu


def index_vault(module, embedder, db_path: Path, name: str) -> dict:
    from core.vault.sync import import_vault

    events: list[tuple] = []
    with Store(db_path) as store:
        t = time.perf_counter()
        import_vault(store, VAULT)
        import_s = time.perf_counter() - t
        started = time.perf_counter()
        if name == "new":
            def progress(p):
                events.append((time.perf_counter() - started, p.eta, p.work_done, p.work_total))
        else:
            def progress(done, total):
                events.append((time.perf_counter() - started, done, total))
        poller = CoveragePoller(db_path, started)
        report = module.Indexer(store, embedder).run(progress=progress)
        index_s = time.perf_counter() - started
        reached = poller.stop()
        notes = store.counts()["nodes"]
    return {"import_s": round(import_s, 2), "index_s": round(index_s, 2), "total_s": round(import_s + index_s, 2),
            "all_reached_s": round(reached, 2), "reached_share": round(reached / index_s, 3),
            "notes": notes, "chunks": report.chunks, "embedded": report.embedded, "_events": events}


class UncachedCounts:
    """The embedder as the old pipeline had it: a count's word pieces are not kept for the embed (the
    text is tokenized again for the model; core/index/embedder.py COUNTED_KEPT)."""

    def __init__(self, real: Embedder):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def count_tokens(self, text: str) -> int:
        count = self.real.count_tokens(text)
        self.real._counted.pop(text, None)
        return count


class FreeEmbedder:
    """The real tokenizer (the chunker counts with it), no model: fixed unit vectors at once."""

    def __init__(self, real: Embedder):
        self.real = real
        self.name, self.dimensions, self.max_tokens = real.name, real.dimensions, real.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def token_offsets(self, text: str):
        return self.real.token_offsets(text)

    def embed(self, texts, progress=None):
        if progress:
            progress(1.0)
        return np.full((len(texts), self.dimensions), 1 / np.sqrt(self.dimensions), np.float32)


def overhead_cpu(module, embedder, texts: list[str], db_path: Path) -> float:
    with Store(db_path) as store:
        for text in texts:
            store.add_node(title_from_text(text), text)
        cpu = time.process_time()
        module.Indexer(store, FreeEmbedder(embedder)).run()
        return time.process_time() - cpu


def work_beside(embedder, texts: list[str], tmp: Path, repeats: int) -> dict:
    """The model's extra seconds per CPU second of the pipeline's other work run beside it."""
    others = natural_sentences(np.random.default_rng(SEED + 11), TEXTS)
    free = FreeEmbedder(embedder)
    alone, beside, cpu_beside = [], [], []
    for rep in range(repeats):
        paths = []
        for k in range(4):
            paths.append(tmp / f"beside-{rep}-{k}.db")
            with Store(paths[-1]) as store:
                for text in others:
                    store.add_node(title_from_text(text), text)
        t = time.perf_counter()
        embedder.embed(texts)
        alone.append(time.perf_counter() - t)
        stop, used = threading.Event(), []

        def work() -> None:
            cpu = time.thread_time()
            for path in paths:
                if stop.is_set():
                    break
                with Store(path) as store:
                    new_indexer.Indexer(store, free).run()
                time.sleep(0.2)  # paced, as the pipeline's writes come between the model's batches
            used.append(time.thread_time() - cpu)

        thread = threading.Thread(target=work)
        thread.start()
        t = time.perf_counter()
        embedder.embed(texts)
        beside.append(time.perf_counter() - t)
        stop.set()
        thread.join()
        cpu_beside.append(used[0])
    extra = statistics.median(b - a for a, b in zip(alone, beside))
    return {"model_alone_s": round(statistics.median(alone), 3), "model_beside_s": round(statistics.median(beside), 3),
            "work_beside_cpu_s": round(statistics.median(cpu_beside), 3),
            "model_s_per_cpu_s": round(extra / statistics.median(cpu_beside), 2)}


def eta_deviation(samples: list[tuple[float, float | None]], end: float, after: float = 0.10) -> dict:
    """Largest |ETA - true time left| / true time left over the samples after `after` of the run: all
    of them, those up to 90 % of the run, and those with 2 s or more left (closer to the end a tenth
    of a second is a large share). A sample without an ETA after the first 10 % counts as 100 %."""
    def worst(keep) -> float | None:
        devs = [1.0 if eta is None else abs(eta - (end - t)) / (end - t) for t, eta in samples
                if t >= after * end and end - t > 0 and keep(t)]
        return round(max(devs), 3) if devs else None

    mid = [(abs(eta - (end - t)) / (end - t) if eta is not None else 1.0, t) for t, eta in samples
           if after * end <= t <= 0.9 * end and end - t > 0]
    return {"worst_at_share": round(max(mid)[1] / end, 3) if mid else None,
            "max_rel_dev": worst(lambda t: True), "max_rel_dev_10_to_90": worst(lambda t: t <= 0.9 * end),
            "max_rel_dev_2s_left": worst(lambda t: end - t >= 2.0),
            "samples": sum(1 for t, _ in samples if t >= after * end)}


def rate_swing(events: list[tuple], end: float, window: float = 2.0) -> float | None:
    """How much the embedder's own speed moved during a run (what no ETA can foresee): the fastest
    over the slowest work rate of consecutive `window`-second spans between 10 % and 90 % of the run."""
    rates, start = [], 0.1 * end
    while start + window <= 0.9 * end:
        inside = [(t, done) for t, _, done, _ in events if start <= t <= start + window]
        if len(inside) >= 2 and inside[-1][0] > inside[0][0]:
            rates.append((inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0]))
        start += window
    return round(max(rates) / min(rates), 2) if rates and min(rates) > 0 else None


def rich_notes_eta(events: list[tuple[float, int, int]]) -> list[tuple[float, float | None]]:
    """The ETA the old bar showed at each of the old pipeline's progress calls: Rich's speed over the
    last RICH_SPEED_PERIOD seconds of (time, notes done) samples, then notes left / speed."""
    out, window = [], []
    for t, done, total in events:
        window.append((t, done))
        window = [(ts, d) for ts, d in window if ts >= t - RICH_SPEED_PERIOD]
        span = window[-1][0] - window[0][0]
        speed = (window[-1][1] - window[0][1]) / span if span > 0 else 0
        out.append((t, (total - done) / speed if speed > 0 else None))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument("--threads", type=int, default=None, help="the model's threads (default: the embedder's)")
    ap.add_argument("--skip-vault", action="store_true")
    ap.add_argument("--skip-texts", action="store_true")
    args = ap.parse_args()

    pipelines = {"old": old_indexer_module(), "new": new_indexer}
    embedder = Embedder(threads=args.threads)
    embedder.load()
    texts = natural_sentences(np.random.default_rng(SEED + 1), TEXTS)
    embedder.embed(natural_sentences(np.random.default_rng(SEED + 7), 256))  # settles caches
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-index-"))
    out: dict = {"bench": "index_pipeline", "cores": len(os.sched_getaffinity(0)), "threads": embedder.threads,
                 "old_indexer": OLD_INDEXER, "texts": TEXTS}
    try:
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for rep in range(0 if args.skip_texts else args.repeats):
            for name in (("old", "new") if rep % 2 == 0 else ("new", "old")):
                raw_before, cpu_before = embed_raw(embedder, texts)
                used = embedder if name == "new" else UncachedCounts(embedder)
                index, index_cpu = index_texts(pipelines[name], used, texts, tmp / f"texts-{name}-{rep}.db")
                raw_after, cpu_after = embed_raw(embedder, texts)
                # the embedder alone just before and just after: a drift of the machine's speed
                # during the run moves both sides alike
                raw, raw_cpu = (raw_before + raw_after) / 2, (cpu_before + cpu_after) / 2
                runs[name].append({"embed_raw_per_s": round(raw, 1), "index_per_s": round(index, 1),
                                   "ratio": round(index / raw, 3), "cpu_ratio": round(raw_cpu / index_cpu, 3)})
                log(f"texts {name} #{rep + 1}: {runs[name][-1]}")
        out["texts_runs"] = runs
        for name, r in runs.items() if not args.skip_texts else ():
            ratios = [x["ratio"] for x in r]
            best = max(r, key=lambda x: x["index_per_s"])
            out[name] = {"index_per_s": best["index_per_s"], "embed_raw_per_s": max(x["embed_raw_per_s"] for x in r),
                         "ratio_best": max(ratios), "ratio_median": round(statistics.median(ratios), 3),
                         "cpu_ratio_median": round(statistics.median(x["cpu_ratio"] for x in r), 3)}
        if not args.skip_texts:
            out["ratio_new_over_old_median"] = round(out["new"]["ratio_median"] / out["old"]["ratio_median"], 3)
        cpu: dict[str, list[float]] = {"old": [], "new": []}
        for rep in range(0 if args.skip_texts else args.repeats):
            for name in (("old", "new") if rep % 2 == 0 else ("new", "old")):
                cpu[name].append(overhead_cpu(pipelines[name], embedder, texts, tmp / f"cpu-{name}-{rep}.db"))
        out["overhead_cpu_s"] = {name: round(statistics.median(v), 3) for name, v in cpu.items() if v}
        log(f"CPU of all but the model, 1,000 notes: {out['overhead_cpu_s']}")
        if not args.skip_texts:
            beside = work_beside(embedder, texts, tmp, args.repeats)
            raw_s = TEXTS / statistics.median(x["embed_raw_per_s"] for x in runs["new"])
            beside["ceiling_ratio"] = round(raw_s / (raw_s + out["overhead_cpu_s"]["new"] * max(0.0, beside["model_s_per_cpu_s"])), 3)
            out["work_beside"] = beside
            log(f"work beside the model: {beside}")

        if not args.skip_vault and VAULT.is_dir():
            vault: dict[str, list[dict]] = {"old": [], "new": []}
            for rep in range(args.repeats):
                for name in (("old", "new") if rep % 2 == 0 else ("new", "old")):
                    used = embedder if name == "new" else UncachedCounts(embedder)
                    vault[name].append(index_vault(pipelines[name], used, tmp / f"vault-{name}-{rep}.db", name))
                    log(f"vault {name} #{rep + 1}: { {k: v for k, v in vault[name][-1].items() if k != '_events'} }")
            for name, r in vault.items():
                for x in r:
                    end = x["index_s"]
                    if name == "new":
                        x["eta"] = eta_deviation([(t, eta) for t, eta, *_ in x["_events"]], end)
                        x["rate_swing"] = rate_swing(x["_events"], end)
                    else:
                        x["eta_rich_notes"] = eta_deviation(rich_notes_eta(x["_events"]), end)
                    del x["_events"]
            out["vault"] = {
                "notes_folder": VAULT.name, "runs": vault,
                "old_median": {k: statistics.median(x[k] for x in vault["old"])
                               for k in ("index_s", "total_s", "all_reached_s", "reached_share")},
                "new_median": {k: statistics.median(x[k] for x in vault["new"])
                               for k in ("index_s", "total_s", "all_reached_s", "reached_share")},
                **{f"eta_new_{k}": max(x["eta"][k] for x in vault["new"])
                   for k in ("max_rel_dev", "max_rel_dev_10_to_90", "max_rel_dev_2s_left")},
                "eta_new_max_rel_dev_10_to_90_median_run": statistics.median(
                    x["eta"]["max_rel_dev_10_to_90"] for x in vault["new"]),
                **{f"eta_old_{k}": max(x["eta_rich_notes"][k] for x in vault["old"])
                   for k in ("max_rel_dev", "max_rel_dev_10_to_90", "max_rel_dev_2s_left")},
            }
        out["targets"] = {
            **({"index_per_s>=0.95*embed_raw_per_s (median ratio)": out["new"]["ratio_median"] >= 0.95}
               if "new" in out else {}),
            **({"every note reachable in <=25% of the full index time (median)":
                out["vault"]["new_median"]["reached_share"] <= 0.25,
                "ETA within 25% from 10% to 90% of the run, every run": out["vault"]["eta_new_max_rel_dev_10_to_90"] <= 0.25,
                "ETA within 25% from 10% to 90% of the run, median run":
                    out["vault"]["eta_new_max_rel_dev_10_to_90_median_run"] <= 0.25}
               if "vault" in out else {}),
        }
        out["total_s"] = round(time.perf_counter() - _T0, 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
