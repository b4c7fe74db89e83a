"""The notes are readable by their owner only: the database, its -wal/-shm, the backups Cairn writes
and the data folder are created 0600/0700 whatever the umask, and `cairn doctor` reports (and
`--repair` fixes) a database or folder others can read. Every process here runs with umask 022, the
usual default that made them 0644/0755 on a shared host."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")


def _umask_022():
    os.umask(0o022)


def _run(cmd: list[str], env: dict, *args, rc: int | None = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*cmd, *map(str, args)], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, preexec_fn=_umask_022)
    if rc is not None:
        assert proc.returncode == rc, (args, proc.stdout, proc.stderr)
    return proc


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# The modes of the database, its -wal and -shm and its folder, read while a connection holds them
# open (SQLite removes the -wal and -shm when the last connection closes).
OPEN_AND_LOOK = """
import json, os, stat, sys
from pathlib import Path
from core.graph.store import Store
db = Path(sys.argv[1])
store = Store(db)
store.add_node("Private", "Only mine to read.")
modes = {name: stat.S_IMODE(os.stat(p).st_mode) for name, p in (
    ("db", db), ("wal", f"{db}-wal"), ("shm", f"{db}-shm"), ("folder", db.parent))}
store.close()
print(json.dumps(modes))
"""


def test_a_new_database_its_wal_shm_and_folder_are_private(tmp_path, cli_env):
    db = tmp_path / "new" / "folder" / "cairn.db"
    proc = _run([sys.executable, "-c", OPEN_AND_LOOK, str(db)], cli_env)
    assert json.loads(proc.stdout) == {"db": 0o600, "wal": 0o600, "shm": 0o600, "folder": 0o700}


def test_the_first_command_makes_a_private_home(cairn_cmd, cli_env):
    home = Path(cli_env["CAIRN_HOME"])
    _run(cairn_cmd, cli_env, "add", "A note on a shared host")
    assert _mode(home) == 0o700 and _mode(home / "cairn.db") == 0o600


def test_config_set_as_the_first_command_makes_a_private_home(cairn_cmd, cli_env):
    home = Path(cli_env["CAIRN_HOME"])
    _run(cairn_cmd, cli_env, "config", "set", "chat.provider", "anthropic")
    assert _mode(home) == 0o700 and _mode(home / "config.toml") == 0o600


def test_backups_are_private(cairn_cmd, cli_env, tmp_path):
    db = tmp_path / "cairn.db"
    _run(cairn_cmd, cli_env, "add", "Backed up", "--db", db)
    target = tmp_path / "backups" / "copy.db"
    _run(cairn_cmd, cli_env, "backup", target, "--db", db)
    assert _mode(target) == 0o600 and _mode(target.parent) == 0o700
    assert not list(target.parent.glob("*.partial"))


def test_the_backup_before_a_migration_is_private(cairn_cmd, cli_env, tmp_path):
    """An older database: opening it backs it up (`.before-vN.bak`) before the schema changes."""
    from core.graph.db import Database, sqlite
    from core.graph.migrations import MIGRATIONS

    db = tmp_path / "old.db"
    conn = sqlite.connect(str(db), isolation_level=None)
    conn.close()
    old = Database(db, migrate=False)
    for version, statements in enumerate(MIGRATIONS[:-1], start=1):
        for statement in statements:
            old.conn.execute(statement)
        old.conn.execute(f"PRAGMA user_version = {version}")
    old.close()
    os.chmod(db, 0o600)
    _run(cairn_cmd, cli_env, "add", "After the upgrade", "--db", db)
    backup = db.with_name(f"old.db.before-v{len(MIGRATIONS)}.bak")
    assert backup.exists() and _mode(backup) == 0o600


def _permission_finding(stdout: str) -> dict:
    return {f["check"]: f for f in json.loads(stdout)["findings"]}["file_permissions"]


def test_doctor_reports_a_database_others_can_read_and_repair_makes_it_private(cairn_cmd, cli_env):
    home = Path(cli_env["CAIRN_HOME"])
    _run(cairn_cmd, cli_env, "add", "A note from an older Cairn")
    db = home / "cairn.db"
    os.chmod(db, 0o644)  # as Cairn made it before
    os.chmod(home, 0o755)

    proc = _run(cairn_cmd, cli_env, "doctor", rc=1)
    assert "problem file_permissions: readable by other users:" in proc.stdout
    assert f"{db} (mode 0644)" in proc.stdout and f"the folder {home} (mode 0755)" in proc.stdout
    assert "Run `cairn doctor --repair`" in proc.stdout
    finding = _permission_finding(_run(cairn_cmd, cli_env, "doctor", "--json", rc=1).stdout)
    # doctor's own connection made the -wal and -shm, with the database file's mode: reported too
    assert finding["count"] == 4 and f"{db}-wal (mode 0644)" in finding["detail"] and not finding["repaired"]

    finding = _permission_finding(_run(cairn_cmd, cli_env, "doctor", "--repair", "--json", rc=None).stdout)
    assert finding["repaired"]
    assert _mode(db) == 0o600 and _mode(home) == 0o700
    finding = _permission_finding(_run(cairn_cmd, cli_env, "doctor", "--json", rc=None).stdout)
    assert finding["count"] == 0


def test_doctor_leaves_the_folder_of_a_database_elsewhere_alone(cairn_cmd, cli_env, tmp_path):
    """`--db` in a folder of the user's own: the file is Cairn's to guard, the folder is not."""
    folder = tmp_path / "mine"
    folder.mkdir()
    os.chmod(folder, 0o755)
    db = folder / "notes.db"
    _run(cairn_cmd, cli_env, "add", "Elsewhere", "--db", db)
    os.chmod(db, 0o640)
    finding = _permission_finding(_run(cairn_cmd, cli_env, "doctor", "--json", "--db", db, rc=1).stdout)
    assert finding["count"] == 3 and f"{db} (mode 0640)" in finding["detail"]  # with its -wal and -shm
    assert f"the folder {folder}" not in finding["detail"]
    _run(cairn_cmd, cli_env, "doctor", "--repair", "--db", db, rc=None)
    assert _mode(db) == 0o600 and _mode(folder) == 0o755
