"""`cairn index` killed with SIGKILL part-way: nothing committed is lost, nothing half-indexed is left,
and the next run finishes the work (DESIGN.md, Embedding lifecycle: "The pipeline is resumable")."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import pytest

TOTAL = 2000  # batches hold ~512 short notes: enough of them that every kill point falls mid-run
WORDS = """river mountain algorithm protein galaxy violin harvest quantum ledger glacier syntax orchard
neuron carbon sonnet bridge compiler lantern meadow tariff enzyme comet pottery falcon thunder archive
voltage marble saffron harbor circuit fossil canyon opera velvet magnet prism tundra cipher basalt
migration sparrow copper monsoon theorem biscuit kayak granite cathedral pollen""".split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 8))).capitalize() + rng.choice(".!?")


def _note(rng: random.Random, i: int) -> tuple[str, str]:
    paragraphs = []
    if rng.random() < 0.3:
        paragraphs.append(f"# Section {i} {rng.choice(WORDS)}")
    for _ in range(rng.randint(2, 3)):
        paragraphs.append(" ".join(_sentence(rng) for _ in range(rng.randint(1, 2))))
    if rng.random() < 0.1:
        paragraphs.append("- " + "\n- ".join(rng.choice(WORDS) for _ in range(3)))
    if rng.random() < 0.05:
        paragraphs = ["   \n"]  # an empty-looking note: indexed with no chunks
    title = f"Note {i}: {rng.choice(WORDS)} {rng.choice(WORDS)}"
    return title, "\n\n".join(paragraphs)


def make_corpus(db_path, seed: int) -> list[tuple[int, str, str]]:
    from core.graph.store import Store

    rng = random.Random(seed)
    inserted = []
    with Store(db_path) as store:
        for i in range(TOTAL):
            title, source = _note(rng, i)
            node = store.add_node(title, source, dimensions=[rng.choice(["a", "b", "c"])])
            inserted.append((node["id"], title, source))
    return inserted


def status_counts(db_path) -> dict[str, int]:
    from core.graph.store import Store

    with Store(db_path, readonly=True) as store:
        rows = store.db.execute("SELECT chunk_status, COUNT(*) FROM nodes GROUP BY chunk_status").fetchall()
    return {r[0]: r[1] for r in rows}


def check_consistent(db_path, inserted, *, expect_all_indexed: bool) -> dict[str, int]:
    """Integrity, no lost or changed notes, and every 'indexed' node fully indexed (pending ones untouched)."""
    from core.graph.store import Store

    with Store(db_path) as store:
        db = store.db
        assert [r[0] for r in db.execute("PRAGMA integrity_check")] == ["ok"]
        rows = db.execute("SELECT id, title, source, chunk_status FROM nodes ORDER BY id").fetchall()
        assert [(r["id"], r["title"], r["source"]) for r in rows] == inserted
        chunks_per_node = {r[0]: r[1] for r in db.execute("SELECT node_id, COUNT(*) FROM chunks GROUP BY node_id")}
        chunks_without_vec = {r[0] for r in db.execute(
            "SELECT DISTINCT node_id FROM chunks WHERE id NOT IN (SELECT rowid FROM vec_chunks)")}
        vec_chunk_nodes = {r[0]: r[1] for r in db.execute("SELECT node_id, COUNT(*) FROM vec_chunks GROUP BY node_id")}
        vec_nodes = {r[0] for r in db.execute("SELECT rowid FROM vec_nodes")}
        fts_chunks = db.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0]
        total_chunks = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        assert fts_chunks == total_chunks
        status = {}
        for r in rows:
            nid, source = r["id"], r["source"]
            status[r["chunk_status"]] = status.get(r["chunk_status"], 0) + 1
            if r["chunk_status"] == "indexed":
                if source.strip():
                    assert chunks_per_node.get(nid, 0) > 0, f"node {nid} indexed without chunks"
                assert nid not in chunks_without_vec, f"node {nid} has chunks without vectors"
                assert vec_chunk_nodes.get(nid, 0) == chunks_per_node.get(nid, 0), f"node {nid} vector count"
                assert nid in vec_nodes, f"node {nid} indexed without a node vector"
            else:
                assert r["chunk_status"] == "pending", f"node {nid} is {r['chunk_status']}"
                # Fresh notes: a half-done swap would leave rows here.
                assert nid not in chunks_per_node and nid not in vec_chunk_nodes and nid not in vec_nodes, \
                    f"pending node {nid} has partial index rows"
        if expect_all_indexed:
            assert status == {"indexed": TOTAL}
    return status


def doctor(cairn_cmd, env, db_path) -> tuple[int, dict]:
    proc = subprocess.run([*cairn_cmd, "doctor", "--db", str(db_path), "--json"], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr
    return proc.returncode, {f["check"]: f["count"] for f in json.loads(proc.stdout)["findings"]}


# (kill once at least this many nodes are indexed, extra pause before the kill): three points of the run,
# the pauses move the kill to different places inside the following batch.
# `make test` runs the middle point (random points: tests/test_crash_recovery.py); all three run in `make soak`.
KILL_POINTS = [pytest.param(1, 0.0, id="early", marks=pytest.mark.soak),
               pytest.param(TOTAL * 2 // 5, 0.3, id="middle"),
               pytest.param(TOTAL * 3 // 5, 0.15, id="late", marks=pytest.mark.soak)]


@pytest.mark.parametrize("threshold,pause", KILL_POINTS)
def test_sigkill_mid_index_then_resume(cairn_cmd, cli_env, tmp_path, threshold, pause):
    db_path = tmp_path / "resume.db"
    inserted = make_corpus(db_path, seed=20240229 + threshold)

    proc = subprocess.Popen([*cairn_cmd, "index", "--db", str(db_path)], env=cli_env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # generous: a loaded 2-core machine indexes several times slower
        indexed = 0
        while time.monotonic() < deadline and proc.poll() is None:
            indexed = status_counts(db_path).get("indexed", 0)
            if indexed >= threshold:
                break
            time.sleep(0.01)
        assert proc.poll() is None, (
            f"cairn index finished (rc={proc.returncode}) before reaching {threshold} indexed nodes; "
            f"make the corpus bigger. stderr: {proc.stderr.read().decode(errors='replace')[-2000:]}")
        assert indexed >= threshold, f"only {indexed} nodes indexed within the timeout"
        if pause:
            time.sleep(pause)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, "the indexer exited on its own before the kill"

    status = check_consistent(db_path, inserted, expect_all_indexed=False)
    assert 1 <= status.get("indexed", 0) <= TOTAL - 1, f"kill was not mid-way: {status}"

    rc, findings = doctor(cairn_cmd, cli_env, db_path)
    for check in ("sqlite_integrity", "orphan_chunks", "orphan_chunk_vectors", "orphan_node_vectors",
                  "missing_vectors", "stale_vectors", "nodes_fts_integrity", "chunks_fts_integrity",
                  "index_errors"):
        assert findings[check] == 0, (check, findings)
    assert findings["pending"] == status["pending"]
    assert rc == 1  # pending work is reported until the next run

    resumed = subprocess.run([*cairn_cmd, "index", "--db", str(db_path), "--json"], env=cli_env,
                             capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["indexed"] == status["pending"] and report["errors"] == 0

    check_consistent(db_path, inserted, expect_all_indexed=True)
    rc, findings = doctor(cairn_cmd, cli_env, db_path)
    assert rc == 0 and not any(findings.values()), findings
