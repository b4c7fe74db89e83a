"""One index run at a time per database, across the app's threads and every Cairn process.

Two runs that embed the same pending notes at once pay twice the CPU and memory for one result (the
app's start and its database watcher each started one; `cairn index` beside the app another). Each run
holds an advisory lock (`flock`) on `<database>.index-lock` beside the database; a second run waits
for it, asking `should_stop` between tries so a stopped run (the app closing, Ctrl-C) gives up at once.
The kernel drops the lock of a process that dies, so a kill never leaves it held. The lock file is
separate from the database because SQLite's own locks are POSIX record locks, which some systems
(NFS) emulate flock with. Where `fcntl` is missing (Windows) runs are not serialised.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

POLL_SECONDS = 0.1


def lock_path(db_path: str | Path) -> Path:
    return Path(str(db_path) + ".index-lock")


class RunLock:
    """The index lock of one database; `try_acquire` never blocks."""

    def __init__(self, db_path: str | Path | None):
        self.path = lock_path(db_path) if db_path and str(db_path) != ":memory:" else None
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        if self.path is None or fcntl is None:
            return True
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops its flock
            self._fd = None


@contextmanager
def held(db_path: str | Path | None, *, should_stop: Callable[[], bool] | None = None,
         on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
    """Hold the database's index lock for the block: yields True once held, or False when
    `should_stop()` said to give up while another run held it. `on_wait()` is called once, when the
    lock is found taken (to say why nothing happens yet)."""
    lock = RunLock(db_path)
    waited = False
    try:
        while not lock.try_acquire():
            if should_stop is not None and should_stop():
                yield False
                return
            if not waited and on_wait is not None:
                on_wait()
            waited = True
            time.sleep(POLL_SECONDS)
        yield True
    finally:
        lock.release()
