"""`cairn doctor` on a database file with damaged pages: it reports which surfaces are damaged instead
of failing ("vtable constructor failed: nodes_fts"), and `--repair` copies every row it can read into
a fresh file, rebuilds the search index, re-indexes, and keeps the damaged file beside it (0600).

The damage is real: random bytes written over the pages SQLite's `dbstat` table says hold a surface,
in a real Cairn database file with no connection open."""

from __future__ import annotations

import json
import os
import random
import stat
import subprocess
from pathlib import Path

import pytest

from core.graph.db import sqlite
from core.graph.store import Store

WORDS = """river mountain algorithm protein galaxy violin harvest quantum ledger glacier syntax orchard
neuron carbon sonnet bridge compiler lantern meadow tariff enzyme comet pottery falcon thunder archive""".split()
NOTES = 80


def _make(db: Path) -> dict[int, tuple[str, str]]:
    """A database of notes long enough to span many pages of every table; {id: (title, text)}."""
    rng = random.Random(22)
    notes = {}
    with Store(db) as store:
        for i in range(NOTES):
            text = " ".join(f"{rng.choice(WORDS)}{rng.randint(0, 5000)}" for _ in range(90)) + f" marker{i}"
            node = store.add_node(f"Note {i}", text)
            notes[node["id"]] = (node["title"], text)
        store.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return notes


def _damage(db: Path, where: str, *, leaves: slice | None = None) -> list[int]:
    """Random bytes over the pages of the tables `where` (an SQL condition on dbstat's `name`) names."""
    conn = sqlite.connect(str(db))
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    if leaves is None:
        pages = [r[0] for r in conn.execute(f"SELECT pageno FROM dbstat WHERE {where}")]
    else:
        pages = [r[0] for r in conn.execute(
            f"SELECT pageno FROM dbstat WHERE {where} AND pagetype = 'leaf' ORDER BY path")][leaves]
    conn.close()
    assert pages and not Path(f"{db}-wal").exists()
    rng = random.Random(7)
    with open(db, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * page_size)
            fh.write(rng.randbytes(page_size))
    return pages


def _cairn(cmd, env, *args, rc=None):
    proc = subprocess.run([*cmd, *map(str, args)], env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert "unexpected error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    if rc is not None:
        assert proc.returncode == rc, (args, proc.stdout, proc.stderr)
    return proc


def _findings(proc) -> dict[str, dict]:
    return {f["check"]: f for f in json.loads(proc.stdout)["findings"]}


def _nodes(db: Path) -> dict[int, tuple[str, str]]:
    with Store(db, readonly=True) as store:
        return {r["id"]: (r["title"], r["source"]) for r in store.db.execute("SELECT id, title, source FROM nodes")}


def _kept(db: Path) -> Path:
    kept = list(db.parent.glob(f"{db.name}.damaged-*"))
    assert len(kept) == 1, kept
    assert stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    return kept[0]


def test_a_damaged_search_index_is_reported_and_rebuilt_from_the_nodes(cairn_cmd, cli_env, tmp_path):
    db = tmp_path / "cairn.db"
    notes = _make(db)
    _damage(db, "name LIKE 'nodes_fts%'")  # every page of the notes' search index, its config too

    proc = _cairn(cairn_cmd, cli_env, "doctor", "--db", db, rc=1)
    assert "problem sqlite_integrity: the database file is damaged in: search index (nodes_fts" in proc.stdout
    assert "Run `cairn doctor --repair`" in proc.stdout
    report = json.loads(_cairn(cairn_cmd, cli_env, "doctor", "--json", "--db", db, rc=1).stdout)
    assert list(report["damaged"]) == ["search index"]

    proc = _cairn(cairn_cmd, cli_env, "doctor", "--repair", "--json", "--db", db)
    found = _findings(proc)
    assert found["sqlite_integrity"]["repaired"], found["sqlite_integrity"]
    assert "rebuilt the search index" in found["sqlite_integrity"]["detail"]
    kept = _kept(db)
    assert str(kept) in found["sqlite_integrity"]["detail"]
    assert proc.returncode == 0, proc.stdout

    assert _nodes(db) == notes  # every node, with its text
    report = json.loads(_cairn(cairn_cmd, cli_env, "doctor", "--json", "--db", db, rc=0).stdout)
    assert report["clean"] and report["damaged"] == {}
    hits = json.loads(_cairn(cairn_cmd, cli_env, "search", "marker42", "--mode", "fts", "--json", "--db", db,
                             rc=0).stdout)
    assert [h["title"] for h in hits][:1] == ["Note 42"]


def test_damaged_nodes_are_copied_row_by_row_into_a_fresh_file(cairn_cmd, cli_env, tmp_path):
    db = tmp_path / "cairn.db"
    notes = _make(db)
    _damage(db, "name = 'nodes'", leaves=slice(5, 6))  # one page of the nodes themselves

    proc = _cairn(cairn_cmd, cli_env, "doctor", "--json", "--db", db, rc=1)
    report = json.loads(proc.stdout)
    assert "nodes" in report["damaged"]
    not_checked = [f for f in report["findings"] if f["detail"].startswith("not checked:")]
    assert not_checked, report  # checks that need the nodes say so; the others still ran
    assert {"link_dictionary", "log_file", "file_permissions"} <= {f["check"] for f in report["findings"]}

    proc = _cairn(cairn_cmd, cli_env, "doctor", "--repair", "--json", "--db", db)
    report = json.loads(proc.stdout)
    assert _findings(proc)["sqlite_integrity"]["repaired"]
    lost = report["salvage"]["lost_nodes"]
    after = _nodes(db)
    assert 0 < len(lost) < 10 and sorted(set(notes) - set(after)) == lost  # one page of rows, named
    assert all(after[i] == notes[i] for i in after)  # every node read is kept, with its text
    with Store(_kept(db), readonly=True) as damaged:  # the damaged file, as it was
        with pytest.raises(sqlite.DatabaseError, match="malformed"):
            damaged.db.conn.execute("SELECT COUNT(*), SUM(LENGTH(source)) FROM nodes").fetchone()
    report = json.loads(_cairn(cairn_cmd, cli_env, "doctor", "--json", "--db", db, rc=0).stdout)
    assert report["clean"]


def test_damaged_vectors_send_every_node_back_to_be_indexed(store, db_path, embedder):
    from core.index.indexer import Indexer
    from core.ops import doctor

    for i in range(40):
        store.add_node(f"Indexed {i}", " ".join(random.Random(i).choice(WORDS) for _ in range(200)))
    Indexer(store, embedder).run()
    notes = {r["id"]: r["source"] for r in store.db.execute("SELECT id, source FROM nodes")}
    store.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    _damage(db_path, "name LIKE 'vec_chunks%'")

    with Store(db_path) as damaged:
        report = doctor.check(damaged, embedder_name=embedder.name)
        assert "vectors" in report.damaged and not report.clean
        report = doctor.check(damaged, repair=True, embedder_name=embedder.name,
                              reindex=lambda: Indexer(damaged, embedder).run().indexed)
        assert report.salvage.reindex == len(notes) and report.reindexed == len(notes)
        assert report.clean, report.as_dict()
        assert {r["id"]: r["source"] for r in damaged.db.execute("SELECT id, source FROM nodes")} == notes
        assert damaged.db.execute("SELECT COUNT(*) FROM vec_nodes").fetchone()[0] == len(notes)
    assert os.path.exists(report.salvage.kept)


def test_a_damaged_schema_page_points_to_the_backups_not_back_to_doctor(cairn_cmd, cli_env, tmp_path):
    """Page 1 holds the schema: no row can be read, so doctor says where copies are instead of naming
    itself again."""
    db = tmp_path / "cairn.db"
    with Store(db) as store:
        store.add_node("A note", "some text")
        store.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(db, "r+b") as fh:
        fh.seek(100)
        fh.write(random.Random(3).randbytes(3000))
    elsewhere = _cairn(cairn_cmd, cli_env, "show", "1", "--db", db, rc=1)
    assert "run `cairn doctor`" in elsewhere.stderr
    for args in (("doctor",), ("doctor", "--repair")):
        proc = _cairn(cairn_cmd, cli_env, *args, "--db", db, rc=1)
        assert "cairn doctor cannot open it either" in proc.stderr and "cairn backup" in proc.stderr
        assert "run `cairn doctor`" not in proc.stderr
