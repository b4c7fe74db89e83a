"""Two (or more) first commands at once on a new database: both create it, neither fails with "table
meta already exists", and every note is saved. Each `cairn add` runs in its own process; they start
the command together (a file they wait for), so they race the database's creation every time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from core.graph.store import Store

PROCESSES = 6
ROUNDS = 4

# `cairn add`, imported first and then held until the start file exists: the slow part (imports) is
# done before the race, so the processes open the new database within a millisecond of each other.
AT_THE_SIGNAL = """
import sys, time
from pathlib import Path
from tui.cli.main import main
go, ready = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.001)
sys.exit(main(sys.argv[3:]))
"""


def test_first_commands_at_once_all_save_their_note(cli_env, tmp_path):
    for round_ in range(ROUNDS):
        home = tmp_path / f"home{round_}"
        env = {**cli_env, "CAIRN_HOME": str(home)}
        go = tmp_path / f"go{round_}"
        ready = [tmp_path / f"ready{round_}.{i}" for i in range(PROCESSES)]
        procs = [subprocess.Popen([sys.executable, "-c", AT_THE_SIGNAL, str(go), str(ready[i]),
                                   "add", f"Note {i} of round {round_}"],
                                  env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i in range(PROCESSES)]
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert all(rc == 0 for rc, _, _ in results), results
        with Store(Path(home) / "cairn.db", readonly=True) as store:
            titles = sorted(r[0] for r in store.db.execute("SELECT title FROM nodes"))
        assert titles == sorted(f"Note {i} of round {round_}" for i in range(PROCESSES))


def test_a_write_after_another_process_changed_the_schema_is_not_told_the_table_is_missing(tmp_path):
    """The race the test above hit about one time in five, made certain: this connection has read the
    schema, another process applies the last migration, and this connection's next note must still be
    saved (SQLite answered "no such table: nodes": its INSERT's FTS5 trigger met the stale schema)."""
    from core.graph.db import Database
    from core.graph.migrations import MIGRATIONS

    path = tmp_path / "cairn.db"
    other = Database(path, migrate=False)
    for version, statements in enumerate(MIGRATIONS[:-1]):
        with other.transaction() as conn:
            for statement in statements:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
    store = Store.__new__(Store)  # this process: a connection that has read the schema of one version before
    store.db = Database(path, migrate=False)
    store.path = path
    store.db.execute("SELECT count(*) FROM nodes").fetchone()
    with other.transaction() as conn:  # the other process finishes the migration
        for statement in MIGRATIONS[-1]:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
    node = store.add_node("Saved all the same", "the text")
    assert store.get_node(node["id"])["title"] == "Saved all the same"
    store.close()
    other.close()


def test_opening_a_database_another_process_is_creating_waits_for_it(tmp_path):
    """A new, empty file whose header another connection is writing: the switch to WAL waits for it
    instead of failing at once with "database is locked" (the two-way watcher and the app, both new)."""
    import threading

    from core.graph.db import Database, sqlite

    path = tmp_path / "cairn.db"
    path.touch()
    creator = sqlite.connect(str(path), isolation_level=None, check_same_thread=False)
    creator.execute("BEGIN IMMEDIATE")  # holds the new file as a process in the middle of creating it would
    creator.execute("CREATE TABLE being_made(a)")
    release = threading.Timer(0.5, lambda: creator.execute("COMMIT"))
    opened = []
    release.start()
    try:
        database = Database(path)  # with the rollback-journal lock held, the WAL switch must wait
        opened.append(database.user_version)
        database.close()
    finally:
        release.join()
        creator.close()
    assert opened and opened[0] > 0
