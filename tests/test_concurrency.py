"""Several processes on one database: writers while `cairn index` runs, a database locked by someone
else, and a connection that may not write."""

from __future__ import annotations

import json
import random
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from core.graph import db as core_db
from core.errors import DatabaseError
from core.graph.store import Store

WORDS = """river mountain algorithm protein galaxy violin harvest quantum ledger glacier syntax orchard
neuron carbon sonnet bridge compiler lantern meadow tariff enzyme comet pottery falcon thunder archive""".split()
INITIAL = 2000  # several indexer batches (~512 short notes each), so the adds meet its transactions
ADDS = 30


def _seed(db_path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with Store(db_path) as store:
        for i in range(n):
            paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 10))) + "."
                          for _ in range(rng.randint(2, 3))]
            store.add_node(f"Seed {i}", "\n\n".join(paragraphs))


def _count(db_path, where: str = "1") -> int:
    with Store(db_path, readonly=True) as store:
        return store.db.execute(f"SELECT COUNT(*) FROM nodes WHERE {where}").fetchone()[0]


def test_adds_while_index_runs(cairn_cmd, cli_env, tmp_path):
    db_path = tmp_path / "busy.db"
    _seed(db_path, INITIAL)
    initial = _count(db_path)

    index = subprocess.Popen([*cairn_cmd, "index", "--db", str(db_path)], env=cli_env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Start writing once the indexer is committing batches, so the writes meet its transactions.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and index.poll() is None:
            if _count(db_path, "chunk_status = 'indexed'") > 0:
                break
            time.sleep(0.01)
        assert index.poll() is None, "cairn index finished before the writers started; seed more notes"

        def add(i: int):
            text = f"Concurrent note {i}\n\n" + " ".join(random.Random(i).choice(WORDS) for _ in range(12))
            return subprocess.run([*cairn_cmd, "add", "--db", str(db_path), "-d", "concurrent", text],
                                  env=cli_env, capture_output=True, text=True, timeout=120,
                                  stdin=subprocess.DEVNULL)

        with ThreadPoolExecutor(max_workers=3) as pool:
            first = pool.submit(add, 0)
            first_result = first.result()
            overlapped = index.poll() is None
            results = [first_result, *pool.map(add, range(1, ADDS))]
        assert overlapped, "cairn index finished before the first add returned; seed more notes"
        out, err = index.communicate(timeout=300)
    finally:
        if index.poll() is None:
            index.kill()
            index.communicate()

    for i, r in enumerate(results):
        assert r.returncode == 0, f"add {i}: rc={r.returncode} stderr={r.stderr}"
        assert "locked" not in r.stderr.lower(), r.stderr
        assert r.stdout.strip().isdigit()
    assert len({int(r.stdout) for r in results}) == ADDS
    assert index.returncode == 0, err.decode(errors="replace")
    assert b"locked" not in err.lower()

    assert _count(db_path) == initial + ADDS
    with Store(db_path, readonly=True) as store:
        titles = {r[0] for r in store.db.execute("SELECT title FROM nodes WHERE title LIKE 'Concurrent note %'")}
    assert titles == {f"Concurrent note {i}" for i in range(ADDS)}

    second = subprocess.run([*cairn_cmd, "index", "--db", str(db_path), "--json"], env=cli_env,
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["errors"] == 0
    assert _count(db_path, "chunk_status != 'indexed'") == 0


# -- a database another connection keeps locked ----------------------------------------------------
def test_locked_database_raises_clear_error_and_writes_nothing(db_path, monkeypatch):
    with Store(db_path) as store:
        store.add_node("before the lock", "text")
    monkeypatch.setattr(core_db, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(core_db, "LOCK_WAIT_SECONDS", 0.5)

    holder = core_db.sqlite.connect(str(db_path), isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with Store(db_path) as store:
            with pytest.raises(DatabaseError, match="stayed locked"):
                store.add_node("blocked", "should not be written")
            with pytest.raises(DatabaseError, match="stayed locked"):
                store.update_node(1, title="blocked edit")
            assert not store.db.conn.in_transaction
            holder.execute("ROLLBACK")
            assert [r[0] for r in store.db.execute("SELECT title FROM nodes")] == ["before the lock"]
            node = store.add_node("after the lock", "now it works")
            assert node["id"] == 2
            assert store.get_node(1)["title"] == "before the lock"
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
    with Store(db_path) as store:
        assert [r[0] for r in store.db.execute("SELECT title FROM nodes ORDER BY id")] == \
            ["before the lock", "after the lock"]


def test_locked_database_from_the_cli(cairn_cmd, cli_env, db_path):
    """The CLI reports a lock as a sentence on stderr (busy timeout shortened through a tiny wrapper)."""
    import sys

    with Store(db_path) as store:
        store.add_node("existing", "text")
    holder = core_db.sqlite.connect(str(db_path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    script = ("import sys, core.graph.db as d; d.BUSY_TIMEOUT_MS = 100; d.LOCK_WAIT_SECONDS = 0.3\n"
              "from tui.cli.main import main; sys.exit(main(sys.argv[1:]))")
    try:
        proc = subprocess.run([sys.executable, "-c", script, "add", "blocked", "--db", str(db_path)],
                              env=cli_env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 1
    assert proc.stderr.startswith("cairn: ") and "stayed locked" in proc.stderr
    assert "Traceback" not in proc.stderr
    with Store(db_path) as store:
        assert store.counts()["nodes"] == 1


# -- a connection that may not write ---------------------------------------------------------------
@pytest.fixture
def readonly_store(db_path):
    with Store(db_path) as store:
        a = store.add_node("a", "first")
        b = store.add_node("b", "second")
        store.add_edge(a["id"], b["id"], "a relates to b")
    ro = Store(db_path, readonly=True)
    yield ro
    ro.close()


WRITES = {
    "add_node": lambda s: s.add_node("new", "text"),
    "update_node": lambda s: s.update_node(1, title="changed"),
    "delete_node": lambda s: s.delete_node(1),
    "add_edge": lambda s: s.add_edge(2, 1, "b relates to a"),
    "delete_edge": lambda s: s.delete_edge(1),
    "set_meta": lambda s: s.set_meta("k", "v"),
}


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_readonly_store_write_raises_database_error(readonly_store, db_path, write):
    # Running as root, file permissions are ignored, so the read-only case is a read-only connection.
    with pytest.raises(DatabaseError, match="read-only"):
        WRITES[write](readonly_store)
    assert not readonly_store.db.conn.in_transaction
    # Reads still work on the same connection, and nothing changed.
    assert readonly_store.get_node(1)["title"] == "a"
    with Store(db_path) as store:
        assert store.counts()["nodes"] == 2 and store.counts()["edges"] == 1
        assert store.meta("k") is None


def test_readonly_database_execute_raises_database_error(readonly_store):
    with pytest.raises(DatabaseError, match="read-only"):
        readonly_store.db.execute("UPDATE nodes SET title = 'x'")
