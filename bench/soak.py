"""Crash and concurrency soak (issue 7): the scenarios of tests/test_crash_recovery.py, longer.

Run:  .venv/bin/python bench/soak.py [--scale 1.0] [--only writers] [--third app|index]
Progress goes to stderr; the last line of stdout is one JSON object (also saved as bench/results/soak.json).
With --only, the other scenarios' figures are kept from the existing file and "rerun" names the ones run.

- index_kill: SIGKILL `cairn index` (128-input batches) at random delays, 40 times, on one database
  while notes keep arriving between runs; after each kill: integrity_check, every committed note
  unchanged, indexed nodes fully indexed, pending ones without index rows, core.ops.doctor finds nothing but
  pending work. Then `cairn index` resumes and finishes; `cairn doctor` is clean.
- import_kill: SIGKILL `cairn import <shared vault> --no-index` at random delays, 40 times (each run
  continues what the last kill left; a fresh database once one got through); every node and edge present
  must equal an uninterrupted import's; then the import completes and matches it exactly.
- chat_kill: `cairn ask` against the fake Anthropic server whose reply stalls mid-stream; SIGKILL during
  start-up or mid-reply, 40 times, continuing one chat; no assistant row from a killed turn, every
  earlier message unchanged, every question the server saw kept; then `cairn ask --chat` completes.
- writers_60s: `cairn mcp` (createNode, SDK client), two `cairn add` loops and the app's indexer (CairnApp
  run headless in its own process, indexing what the WAL watcher sees; it exits once the others stop and
  nothing is pending) for 60 s on one database: every acknowledged write present, nothing else, each node
  indexed exactly once (chunks and vectors present), no error shown to a user (the app's error notifications
  and stderr included), `cairn doctor` clean. If the app cannot start, a `cairn index` loop stands in and
  the result says why (app_unavailable); --third index picks the loop.

lost_writes, errors_surfaced and integrity_failures must all be 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import test_crash_recovery as scenarios  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply kill counts and the writers' duration")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "soak.json"))
    ap.add_argument("--only", action="append", choices=["index", "import", "chat", "writers"],
                    help="run only these scenarios (repeatable); the others' figures are kept from --out")
    ap.add_argument("--third", choices=["app", "index"], default="app",
                    help="the writers scenario's third writer: the app's indexer (default) or a `cairn index` loop")
    args = ap.parse_args()
    n = lambda k: max(1, round(k * args.scale))  # noqa: E731

    def writers(d: Path):
        if args.third == "index":
            return scenarios.three_writers(d, seconds=60.0 * args.scale)
        try:
            return scenarios.three_writers(d, seconds=60.0 * args.scale, third="app")
        except scenarios.AppUnavailable as exc:
            print(f"writers_60s: {exc}; running the `cairn index` loop instead", file=sys.stderr)
            stats = scenarios.three_writers(d, seconds=60.0 * args.scale)
            stats.extra["app_unavailable"] = str(exc)
            return stats

    plan = {
        "index_kill": lambda d: scenarios.index_kills(d, kills=n(40), seed=101, initial=800, per_kill=15,
                                                      delay=(0.1, 2.0), batch_inputs=128,
                                                      keep_pending=400),
        "import_kill": lambda d: scenarios.import_kills(d, kills=n(40), seed=102, delay=(0.01, 0.4)),
        "chat_kill": lambda d: scenarios.chat_kills(d, kills=n(40), seed=103),
        "writers_60s": writers,
    }
    if args.only:
        plan = {name: run for name, run in plan.items() if name.split("_")[0] in args.only}
    results: dict[str, dict] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cairn-soak-") as tmp:
        os.environ["CAIRN_HOME"] = str(Path(tmp) / "home")  # never the real user's data
        for name, run in plan.items():
            workdir = Path(tmp) / name
            workdir.mkdir()
            if name == "import_kill" and not scenarios.VAULT.is_dir():
                results[name] = {"skipped": f"{scenarios.VAULT} is not on this machine"}
                print(f"{name}: skipped", file=sys.stderr)
                continue
            t0 = time.monotonic()
            try:
                stats = run(workdir)
                result = stats.as_dict()
            except Exception as exc:  # a scenario crashing counts as an error, the others still run
                result = {"runs": 0, "kills": 0, "lost_writes": 0, "errors_surfaced": 1, "integrity_failures": 0,
                          "problems": [f"scenario raised {type(exc).__name__}: {exc}"]}
            result["seconds"] = round(time.monotonic() - t0, 1)
            results[name] = result
            print(f"{name}: {json.dumps(result)}", file=sys.stderr, flush=True)
    elapsed = round(time.monotonic() - started, 1)
    extra: dict = {}
    if args.only:  # keep the other scenarios' figures from the last full run
        previous = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
        kept = {k: v for k, v in previous.get("scenarios", {}).items() if k not in results}
        results = {**kept, **results}
        extra = {"rerun": sorted(k for k in results if k not in kept), "rerun_seconds": elapsed,
                 "kept_from_previous_run": sorted(kept)}
        elapsed = round(sum(r.get("seconds", 0) for r in results.values()), 1)
    ran = [r for r in results.values() if "skipped" not in r]
    total = {key: sum(r[key] for r in ran) for key in ("runs", "kills", "lost_writes", "errors_surfaced",
                                                        "integrity_failures")}
    out = {**total, "ok": not (total["lost_writes"] or total["errors_surfaced"] or total["integrity_failures"]),
           "seconds": elapsed, "scale": args.scale, **extra, "scenarios": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
