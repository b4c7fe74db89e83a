"""The SQLite connection: sqlean.py with sqlite-vec loaded, Cairn's pragmas, numbered migrations."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Iterator

from core import paths
from core.errors import DatabaseError, disk_full_message
from core.graph.migrations import MIGRATIONS

BUSY_TIMEOUT_MS = 10_000
LOCK_WAIT_SECONDS = 30  # how long Database.transaction keeps retrying BEGIN IMMEDIATE on a locked database
# Each of those tries waits at most this long inside SQLite. SQLite's busy wait is C code that no signal
# ends, and Python raises KeyboardInterrupt only once it returns: with the whole BUSY_TIMEOUT_MS there, a
# Ctrl-C while another process held the write lock took up to 10 s (`cairn watch` waiting for a round).
BEGIN_WAIT_MS = 100
# SQLite reports a disk too full to grow the -shm or -wal as "disk I/O error", not SQLITE_FULL: with
# less free space than this where the database lives, that error is called a full disk.
LOW_SPACE_BYTES = 16 * 1024 * 1024


# Run first in every write transaction. A connection prepares statements against the schema it has in
# memory and finds out at run time that another connection changed it (sqlite.org/forum/forumpost/
# 29bad1c5c1d1ac1c); an INSERT INTO nodes whose triggers write the FTS5 index then fails with "no such
# table: nodes" instead of being prepared again (SQLite 3.40 and 3.50 alike; seen when several first
# commands create a new database together, tests/test_db.py). This statement's byte code checks the
# schema cookie, so a changed schema is read again before the transaction's own statements are prepared.
RELOAD_A_CHANGED_SCHEMA = "SELECT 1 FROM sqlite_master LIMIT 0"


def _driver():
    """sqlean.py bundles a SQLite that can load extensions; the stdlib one often cannot."""
    try:
        import sqlean

        return sqlean
    except ImportError:  # pragma: no cover - only where sqlean.py has no wheel
        import sqlite3

        return sqlite3


sqlite = _driver()
OperationalError = sqlite.OperationalError
IntegrityError = sqlite.IntegrityError


def _vec_extension_path() -> str:
    """Path of sqlite-vec's loadable library, found without importing the package (which imports
    numpy: ~80 ms that `cairn add` should not pay)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError("The sqlite-vec package is not installed; reinstall Cairn (make run).")
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def _load_vec(conn) -> None:
    try:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_extension_path())
    except (AttributeError, OperationalError) as exc:
        raise DatabaseError(
            f"Cannot load the sqlite-vec extension into SQLite ({exc}). "
            "Install Cairn with its dependencies (sqlean.py) so extensions can be loaded."
        ) from exc
    finally:
        with contextlib.suppress(AttributeError, OperationalError):
            conn.enable_load_extension(False)


def is_locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, OperationalError) and ("locked" in text or "busy" in text)


class Database:
    """One connection (owned by one thread) plus explicit, immediate write transactions."""

    def __init__(self, path: str | Path, *, readonly: bool = False, migrate: bool = True, shared: bool = False):
        """`shared=True` lets other threads use this connection; the caller must serialise use (a lock)."""
        self.path = Path(path)
        self.readonly = readonly
        if not readonly:
            try:
                paths.private_folder(self.path.parent)
            except OSError as exc:
                raise _os_error(exc, self.path, f"Cannot create the folder for the database {self.path}") from exc
            try:
                paths.create_private_file(self.path)  # before SQLite opens it: its -wal/-shm take this mode
            except OSError as exc:
                raise _os_error(exc, self.path, f"Cannot create the database {self.path}") from exc
        elif not self.path.exists():
            raise DatabaseError(f"No database at {self.path}.")
        try:
            if readonly:
                uri = f"file:{self.path}?mode=ro"
                self.conn = sqlite.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                                           check_same_thread=not shared)
            else:
                self.conn = sqlite.connect(str(self.path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                                           check_same_thread=not shared)
        except OperationalError as exc:
            if _out_of_space(exc, self.path):
                raise DatabaseError(disk_full_message(self.path)) from exc
            raise DatabaseError(f"Cannot open the database {self.path}: {exc}.") from exc
        self.conn.row_factory = sqlite.Row
        self.owner = threading.get_ident()
        _load_vec(self.conn)
        try:
            self._pragmas()
        except sqlite.DatabaseError as exc:  # not a database at all ("file is not a database"), damaged ...
            self.close()
            raise _translate(exc, self.path) from exc
        if migrate and not readonly:
            self._migrate()

    # -- setup -------------------------------------------------------------
    def _pragmas(self) -> None:
        c = self.conn
        c.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        c.execute("PRAGMA foreign_keys = ON")
        if not self.readonly:
            try:
                mode = self._switch_to_wal()
            except OperationalError as exc:
                if "readonly" in str(exc).lower():  # e.g. a read-only folder: no -wal/-shm can be made
                    raise DatabaseError(f"The database {self.path} is read-only (check the permissions of the file "
                                        "and its folder); nothing was changed.") from exc
                if _out_of_space(exc, self.path):  # the -shm or -wal could not be made or grown
                    raise DatabaseError(disk_full_message(self.path)) from exc
                raise DatabaseError(f"Cannot open {self.path} for writing: {exc}.") from exc
            if str(mode).lower() != "wal":
                raise DatabaseError(f"{self.path}: could not switch the database to WAL mode (got {mode}).")
            c.execute("PRAGMA synchronous = NORMAL")

    def _switch_to_wal(self) -> str:
        """PRAGMA journal_mode = WAL, waiting for another process that is creating the same new database:
        on a file with no header yet the switch writes one, and SQLite answers "database is locked" at
        once (no busy handler: the reader cannot upgrade while another connection writes)."""
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                return self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except OperationalError as exc:
                if not (is_locked(exc) and time.monotonic() < deadline):
                    raise
                time.sleep(0.02)

    @property
    def user_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        """Bring the schema up to date, one version per transaction. Several processes may open a new
        or older database at once (two first commands): each version is applied under the write lock
        (BEGIN IMMEDIATE waits for it) after reading the version again, so only one process applies it."""
        latest = len(MIGRATIONS)
        current = self.user_version
        self._refuse_newer(current, latest)
        if current == latest:
            return
        if current > 0:
            self.backup(self.path.with_name(f"{self.path.name}.before-v{latest}.bak"))
        while True:
            with self.transaction():
                current = self.user_version  # under the lock: another process may have migrated meanwhile
                self._refuse_newer(current, latest)
                if current == latest:
                    return
                for statement in MIGRATIONS[current]:
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {current + 1}")

    def _refuse_newer(self, current: int, latest: int) -> None:
        if current > latest:
            raise DatabaseError(
                f"{self.path} was written by a newer Cairn (schema {current}, this one knows {latest}). Upgrade Cairn."
            )

    # -- use ---------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[object]:
        """BEGIN IMMEDIATE so a writer waits for the lock up front instead of failing on upgrade."""
        if self.conn.in_transaction:
            yield self.conn  # nested: the outer transaction commits
            return
        self._begin_immediate()
        try:
            self.conn.execute(RELOAD_A_CHANGED_SCHEMA)
            yield self.conn
        except OperationalError as exc:  # a statement in the body failed: read-only, locked, disk full...
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise _translate(exc, self.path) from exc
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        else:
            try:
                self.conn.execute("COMMIT")
            except OperationalError as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise _translate(exc, self.path) from exc

    def _begin_immediate(self) -> None:
        """BEGIN IMMEDIATE, waiting up to LOCK_WAIT_SECONDS for another connection's write to end, in short
        waits inside SQLite (BEGIN_WAIT_MS) between Python's: a Ctrl-C meanwhile stops it at once. The
        statements of the transaction keep the whole BUSY_TIMEOUT_MS (the write lock is held by then)."""
        wait_ms = min(BEGIN_WAIT_MS, BUSY_TIMEOUT_MS)
        self.conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        try:
            deadline = time.monotonic() + LOCK_WAIT_SECONDS
            while True:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    return
                except OperationalError as exc:
                    if is_locked(exc) and time.monotonic() < deadline:
                        time.sleep(0.01)
                        continue
                    raise _translate(exc, self.path) from exc
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def execute(self, sql: str, params=()):
        try:
            return self.conn.execute(sql, params)
        except OperationalError as exc:
            raise _translate(exc, self.path) from exc

    def backup(self, target: Path) -> Path:
        """A consistent copy through SQLite's online backup API (safe while others write), readable by
        the user only (0600) as the database is. It copies pages without reading them as tables, so it
        also copies a damaged database as it is."""
        target = Path(target)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.partial")  # two processes may back up at once
        try:
            paths.private_folder(target.parent)
            tmp.unlink(missing_ok=True)
            paths.create_private_file(tmp)
        except OSError as exc:
            raise _os_error(exc, target, f"Cannot write the backup {target}") from exc
        try:
            dest = sqlite.connect(str(tmp))
            try:
                self.conn.backup(dest)
            finally:
                dest.close()
            shutil.move(str(tmp), str(target))
        except OperationalError as exc:
            tmp.unlink(missing_ok=True)
            raise _translate(exc, target) from exc
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise _os_error(exc, target, f"Cannot write the backup {target}") from exc
        return target

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


def _out_of_space(exc: Exception, path: Path) -> bool:
    """SQLITE_FULL, or an I/O error where the disk has (almost) no space left."""
    text = str(exc).lower()
    if "disk is full" in text:
        return True
    if "disk i/o error" not in text:
        return False
    try:
        return shutil.disk_usage(path.parent).free < LOW_SPACE_BYTES
    except OSError:
        return False


def _os_error(exc: OSError, path: Path, doing: str) -> DatabaseError:
    import errno

    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return DatabaseError(disk_full_message(path))
    return DatabaseError(f"{doing}: {exc.strerror or exc}.")


def _translate(exc: Exception, path: Path) -> Exception:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return DatabaseError(f"The database {path} stayed locked by another process for too long; try again.")
    if "readonly" in text or "read-only" in text:
        return DatabaseError(f"The database {path} is read-only; nothing was changed.")
    if "full" in text or _out_of_space(exc, path):
        return DatabaseError(disk_full_message(path))
    if "malformed" in text or "not a database" in text:
        return DatabaseError(f"{path} is damaged or not a Cairn database ({exc}); run `cairn doctor`.")
    return DatabaseError(f"Database error on {path}: {exc}.")
