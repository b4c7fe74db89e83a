"""Cairn's log file: what went wrong, with its traceback, for the user to read or attach to a report.

One file, `cairn.log`, in the platform's log folder (platformdirs' user_log_dir: ~/.local/state/cairn/log
on Linux, ~/Library/Logs/cairn on macOS), or in `$CAIRN_HOME` when that is set (everything of one
Cairn home stays together). Every process (the app, each CLI verb, the MCP server) appends lines to
it; lines are written whole (O_APPEND), so processes never interleave within a line. Rotation is
done when a process starts and finds the file over MAX_BYTES: it becomes cairn.log.1 (the older
ones shift up to KEEP), under a lock, so two processes never rotate at once. The file is opened
(and the folder made) only when a first line is logged: a command that goes well writes nothing.

`cairn doctor` shows the path and whether it can be written.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

MAX_BYTES = 1_000_000
KEEP = 3  # cairn.log.1 … cairn.log.3
FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"

_handler: logging.Handler | None = None


def log_dir() -> Path:
    home = os.environ.get("CAIRN_HOME")
    if home:
        return Path(home).expanduser()
    from platformdirs import user_log_dir

    return Path(user_log_dir("cairn"))


def log_path() -> Path:
    return log_dir() / "cairn.log"


def rotate_if_large(path: Path) -> None:
    if not path.is_file() or path.stat().st_size <= MAX_BYTES:
        return
    import fcntl

    with open(path.parent / ".cairn.log.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file() or path.stat().st_size <= MAX_BYTES:
            return  # another process rotated it while this one waited
        for n in range(KEEP - 1, 0, -1):
            older = path.with_name(f"{path.name}.{n}")
            if older.exists():
                os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
        os.replace(path, path.with_name(f"{path.name}.1"))


class _LogFile(logging.FileHandler):
    """Opened at the first line logged (a command that logs nothing creates nothing), rotated then.
    A file that cannot be written is said once on stderr and the handler steps aside: the command
    itself goes on (`cairn doctor` reports the log as a problem)."""

    def _open(self):
        path = Path(self.baseFilename)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # with $CAIRN_HOME: the database's folder
        rotate_if_large(path)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))  # a new log is the user's only: it names notes
        return super()._open()

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:
            try:  # FileHandler opens the file outside the try that routes errors to handleError
                self.stream = self._open()
            except OSError:
                self.handleError(record)
                return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        import sys

        logging.getLogger("cairn").removeHandler(self)
        global _handler
        _handler = None
        error = sys.exc_info()[1]
        print(f"cairn: cannot write the log file {self.baseFilename}: {getattr(error, 'strerror', None) or error}",
              file=sys.stderr)


def setup() -> None:
    """Send the `cairn` loggers (INFO and above) to the log file, opened when the first line comes."""
    global _handler
    if _handler is not None:
        return
    handler = _LogFile(log_path(), mode="a", encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.setLevel(logging.INFO)
    logger = logging.getLogger("cairn")
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    _handler = handler


def writable() -> str | None:
    """None if the log file can be appended to, else why not."""
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # with $CAIRN_HOME: the database's folder
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
