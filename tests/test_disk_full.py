"""A full disk is said as one: "The disk holding … is full, so nothing was changed or saved; free some
space and try again." — whether SQLite reports it as SQLITE_FULL, as "disk I/O error" (it cannot grow
the -shm or -wal), or a file write fails with ENOSPC.

Three real full disks: SQLite's page limit pinned at the file's size (SQLITE_FULL, anywhere); a 1 MB
tmpfs filled up (where this process may mount one: root in a container that allows it); /dev/full,
which fails every write with ENOSPC."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.graph.store import Store

SENTENCE = "is full, so nothing was changed or saved; free some space and try again."

# `cairn` with the page limit pinned at the database's size: every write needing a new page fails
# with SQLITE_FULL ("database or disk is full"), as on a full disk.
FULL_DB_CLI = """
import sys, core.graph.db as d
orig = d.Database._pragmas
def pragmas(self):
    orig(self)
    n = self.conn.execute('PRAGMA page_count').fetchone()[0]
    self.conn.execute(f'PRAGMA max_page_count = {n}')
d.Database._pragmas = pragmas
from tui.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _one_sentence(proc: subprocess.CompletedProcess, where: object) -> str:
    err = proc.stderr.strip().splitlines()
    err = [line for line in err if not line.startswith("cairn: cannot write the log file")]  # the log is there too
    assert proc.returncode == 1 and len(err) == 1, (proc.stdout, proc.stderr)
    assert err[0] == f"cairn: The disk holding {where} {SENTENCE}", err[0]
    return err[0]


def _titles(db: Path) -> list[str]:
    with Store(db, readonly=True) as store:
        return [r[0] for r in store.db.execute("SELECT title FROM nodes ORDER BY id")]


def test_sqlite_full_says_the_disk_is_full_and_what_to_do(cli_env, tmp_path):
    db = tmp_path / "full.db"
    with Store(db) as store:
        store.add_node("before", "written before the disk filled")
    proc = subprocess.run([sys.executable, "-c", FULL_DB_CLI, "add", "--db", str(db), "--title", "big",
                           "A long note. " * 4000], env=cli_env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    _one_sentence(proc, db)
    assert _titles(db) == ["before"]


@contextlib.contextmanager
def _tmpfs(mountpoint: Path, size: str = "1m"):
    mountpoint.mkdir()
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mountpoint)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=True)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:
        with contextlib.suppress(OSError):  # ENOSPC: full
            while True:
                fh.write(b"\0" * 4096)
    return filler


def test_a_real_full_disk(cairn_cmd, cli_env, tmp_path):
    with _tmpfs(tmp_path / "disk") as disk:
        home = disk / "home"
        env = {**cli_env, "CAIRN_HOME": str(home)}

        def cairn(*args):
            return subprocess.run([*cairn_cmd, *args], env=env, capture_output=True, text=True, timeout=120,
                                  stdin=subprocess.DEVNULL)

        assert cairn("add", "Kept through it all").returncode == 0
        db = home / "cairn.db"
        filler = _fill(disk)
        # SQLite cannot make the -shm: it says "disk I/O error"
        _one_sentence(cairn("add", "Not saved " + "x" * 20_000), db)
        # tomlkit's write of the config file: OSError ENOSPC
        proc = cairn("config", "set", "chat.provider", "anthropic")
        assert proc.returncode == 1 and "unexpected error" not in proc.stderr, proc.stderr
        assert SENTENCE in proc.stderr, proc.stderr
        filler.unlink()
        assert _titles(db) == ["Kept through it all"]
        assert cairn("add", "Saved once there is space").returncode == 0
        assert _titles(db) == ["Kept through it all", "Saved once there is space"]


def test_enospc_from_a_file_write_is_the_same_sentence(cairn_cmd, cli_env, tmp_path):
    """`cairn chats export N -o FILE` onto /dev/full: the write fails with ENOSPC."""
    from core.chat.repository import ChatRepository

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    db = tmp_path / "chats.db"
    with Store(db) as store:
        chats = ChatRepository(store)
        chat_id, _ = chats.create_chat(agent="orchestrator", provider="offline", model=None, metadata=lambda _id: {})
        chats.insert_message(chat_id, "user", [{"type": "text", "text": "What did I write about rivers?"}])
    proc = subprocess.run([*cairn_cmd, "chats", "export", str(chat_id), "-o", "/dev/full", "--force", "--db", str(db)],
                          env=cli_env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    err = proc.stderr.strip()
    assert proc.returncode == 1 and "\n" not in err and "unexpected error" not in err, err
    assert err.startswith("cairn: The disk") and err.endswith(SENTENCE), err
