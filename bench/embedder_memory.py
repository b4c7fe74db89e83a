"""Embedder memory and throughput per configuration (issue 16 item 2), each in a fresh process.

For every configuration the child embeds the real chunk texts of the shared Obsidian Tasks vault
(../shared/evaldata/vault-obsidian-tasks-docs, chunked as the indexer does) and then 1,000 short
sentences, and reports texts/s, tokens/s, peak RSS (ru_maxrss) and RSS after the run. Configurations:
  rows32       today's: 32 texts per batch, onnxruntime's CPU arena on
  tokens<N>    batches bounded by N padded tokens (rows x longest row), at most 64 rows
  +noarena     the CPU memory arena off
  +shrink      the arena on, shrunk after each run (run option memory.enable_memory_arena_shrinkage)
  +trim        glibc malloc_trim(0) after each embed() call
Usage: python bench/embedder_memory.py [--quick]; the last line is one JSON object.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAULT = ROOT.parent / "shared" / "evaldata" / "vault-obsidian-tasks-docs"
CONFIGS = ["rows32", "tokens2048", "tokens2048+trim", "tokens2048+shrink+trim", "tokens4096+trim",
           "tokens1024+trim", "rows32+noarena", "rows32#2"]  # "#2": today's again, to see the machine drift
SAMPLE = 3  # every third vault chunk (641 of 1,924): the same length mix, a third of the time


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def vault_chunks() -> list[str]:
    from core.index.chunker import Chunker
    from core.index.embedder import Embedder

    chunker = Chunker.for_embedder(Embedder())
    texts = []
    for path in sorted(VAULT.rglob("*.md")):
        source = path.read_text(encoding="utf-8", errors="replace")
        texts += [c.text for c in chunker.split(source)]
    return texts[::SAMPLE]


def short_texts(n: int) -> list[str]:
    import random

    rng = random.Random(7)
    words = ("river mountain algorithm protein galaxy violin harvest quantum ledger glacier syntax orchard "
             "neuron carbon sonnet bridge compiler lantern meadow tariff enzyme comet pottery falcon").split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(8, 24))).capitalize() + "." for _ in range(n)]


def child(config: str) -> dict:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from core.index import embedder as emb

    parts = config.split("#")[0].split("+")
    kwargs = {}
    if parts[0].startswith("tokens"):
        kwargs["token_budget"] = int(parts[0][len("tokens"):])
    else:
        kwargs["token_budget"] = 0  # rows only (today's batching)
    kwargs["arena"] = "noarena" not in parts
    kwargs["shrink"] = "shrink" in parts
    kwargs["trim"] = "trim" in parts
    e = emb.Embedder(**kwargs)
    long_texts = vault_chunks()
    short = short_texts(1000)
    e.embed(["warm up the session"])
    base = rss_mb()
    out = {"config": config, "rss_after_load_mb": round(base, 1)}
    for name, texts in (("vault", long_texts), ("short", short)):
        tokens = sum(e.count_tokens(t) for t in texts)
        t0 = time.perf_counter()
        vecs = e.embed(texts)
        dt = time.perf_counter() - t0
        out[name] = {"texts": len(texts), "tokens": tokens, "texts_per_s": round(len(texts) / dt, 1),
                     "tokens_per_s": round(tokens / dt, 1), "rss_after_mb": round(rss_mb(), 1),
                     "checksum": float(np.round(vecs.sum(), 3))}
        np.save(f"/tmp/embedder_memory_{config.split('#')[0]}_{name}.npy", vecs)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
        return
    import numpy as np

    configs = CONFIGS[:2] if "--quick" in sys.argv else CONFIGS
    results = {}
    for config in configs:
        proc = subprocess.run([sys.executable, __file__, "--child", config], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        if proc.returncode != 0:
            raise SystemExit(f"{config}: {proc.stderr[-2000:]}")
        results[config] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(json.dumps(results[config]), file=sys.stderr)
    ref = results["rows32"]
    summary = {}
    for config, r in results.items():
        saved = config.split("#")[0]
        same = all(np.array_equal(np.load(f"/tmp/embedder_memory_{saved}_{n}.npy"),
                                  np.load(f"/tmp/embedder_memory_rows32_{n}.npy")) for n in ("vault", "short"))
        close = max(float(np.abs(np.load(f"/tmp/embedder_memory_{saved}_{n}.npy")
                                 - np.load(f"/tmp/embedder_memory_rows32_{n}.npy")).max()) for n in ("vault", "short"))
        summary[config] = {"peak_rss_mb": r["peak_rss_mb"], "rss_after_mb": r["short"]["rss_after_mb"],
                           "vault_tokens_per_s_ratio": round(r["vault"]["tokens_per_s"] / ref["vault"]["tokens_per_s"], 3),
                           "short_texts_per_s_ratio": round(r["short"]["texts_per_s"] / ref["short"]["texts_per_s"], 3),
                           "bit_identical": same, "max_abs_diff": close}
    print(json.dumps({"bench": "embedder_memory", "vault_chunks": ref["vault"]["texts"],
                      "vault_tokens": ref["vault"]["tokens"], "rows32": ref, "summary": summary}))


if __name__ == "__main__":
    main()
