"""One index run at a time per database, across the app's threads and every Cairn process.

Two runs that embed the same pending notes at once pay twice the CPU and memory for one result (the
app's start and its database watcher each started one; `cairn index` beside the app another). Each run
holds an advisory lock (`flock`) on `<database>.index-lock` beside the database; a second run waits
for it, asking `should_stop` between tries so a stopped run (the app closing, Ctrl-C) gives up at once.
The kernel drops the lock of a process that dies, so a kill never leaves it held. The lock file is
separate from the database because SQLite's own locks are POSIX record locks, which some systems
(NFS) emulate flock with. Where `fcntl` is missing (Windows) runs are not serialised.

A thread that holds the lock may take it again (`held` inside `held`): `cairn import` holds it from
the start of the import to the end of its indexing, so the app, seeing notes arrive, follows that
run instead of starting its own. The holder says how far it is in `<database>.index-progress`
(`ProgressFile`, replaced whole at each write, so a reader never sees half of one); `holder()` reads
it for whoever waits (the app shows "indexing in another process (pid N): x of y").
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from core.index.progress import IndexProgress

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

POLL_SECONDS = 0.1
PUBLISH_SECONDS = 0.5  # the progress file is rewritten at most this often (and at the run's start)

_mine = threading.local()  # the lock paths this thread holds, with how many times (re-entry)
_here: set[str] = set()  # the lock paths some thread of this process holds


def lock_path(db_path: str | Path) -> Path:
    return Path(str(db_path) + ".index-lock")


def progress_path(db_path: str | Path) -> Path:
    return Path(str(db_path) + ".index-progress")


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
         on_wait: Callable[[], None] | None = None,
         while_waiting: Callable[[], None] | None = None) -> Iterator[bool]:
    """Hold the database's index lock for the block: yields True once held, or False when
    `should_stop()` said to give up while another run held it. `on_wait()` is called once, when the
    lock is found taken (to say why nothing happens yet); `while_waiting()` at every look after that
    (to follow the other run). A thread that holds the lock already gets it again at once."""
    lock = RunLock(db_path)
    key = str(lock.path)
    holding = getattr(_mine, "paths", None)
    if holding is None:
        holding = _mine.paths = {}
    if lock.path is not None and holding.get(key):
        holding[key] += 1
        try:
            yield True
        finally:
            holding[key] -= 1
        return
    waited = False
    try:
        while not lock.try_acquire():
            if should_stop is not None and should_stop():
                yield False
                return
            if not waited and on_wait is not None:
                on_wait()
            waited = True
            if while_waiting is not None:
                while_waiting()
            time.sleep(POLL_SECONDS)
        holding[key] = 1
        _here.add(key)
        try:
            yield True
        finally:
            holding.pop(key, None)
            _here.discard(key)
    finally:
        lock.release()


def try_held(db_path: str | Path | None):
    """The lock for a block if it is free now (True), else a block that does not hold it (False):
    for work that would rather go on without it than wait."""
    return held(db_path, should_stop=lambda: True)


@dataclass(frozen=True)
class Holder:
    """Another process's index run: its pid and what it last said (None before it said anything)."""

    pid: int | None
    progress: IndexProgress | None


def holder(db_path: str | Path | None) -> Holder | None:
    """The run holding this database's index lock, when that is another process; None when the lock
    is free or held in this process. Taking the lock to look (and dropping it at once) is the only
    portable test of a flock."""
    lock = RunLock(db_path)
    if lock.path is None or fcntl is None or str(lock.path) in _here:
        return None
    if lock.try_acquire():
        lock.release()
        return None
    lock.release()
    try:
        data = json.loads(progress_path(db_path).read_text(encoding="utf-8"))
    except FileNotFoundError:  # it has not said anything yet
        return Holder(None, None)
    except (OSError, ValueError) as exc:
        raise OSError(f"Cannot read the index progress file {progress_path(db_path)}: {exc}") from exc
    pid = data.get("pid")
    if pid == os.getpid():  # another thread of this process
        return None
    if not isinstance(pid, int) or not _alive(pid):  # a file left by a run that was killed
        return Holder(None, None)
    return Holder(pid, IndexProgress.from_dict(data["progress"]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


class ProgressFile:
    """What the lock's holder says about its run, for `holder()` in other processes: rewritten whole
    (a temporary file renamed over it) at most every PUBLISH_SECONDS, removed when the run ends."""

    def __init__(self, db_path: str | Path | None):
        self.path = progress_path(db_path) if db_path and str(db_path) != ":memory:" else None
        self._last = 0.0
        self._lock = threading.Lock()

    def write(self, progress: IndexProgress) -> None:
        if self.path is None:
            return
        with self._lock:
            moment = time.monotonic()
            if self._last and moment - self._last < PUBLISH_SECONDS:
                return
            self._last = moment
            # one name: only the lock's holder writes, and a killed holder's is written over by the next
            temporary = self.path.with_name(self.path.name + ".tmp")
            temporary.write_text(json.dumps({"pid": os.getpid(), "progress": progress.as_dict()}), encoding="utf-8")
            os.replace(temporary, self.path)

    def close(self) -> None:
        """Remove the file (before the lock is dropped: the next holder writes its own)."""
        if self.path is not None:
            with self._lock:
                self.path.unlink(missing_ok=True)
