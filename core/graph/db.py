"""The SQLite connection: sqlean.py with sqlite-vec loaded, Cairn's pragmas, numbered migrations."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from pathlib import Path
from typing import Iterator

from core.errors import DatabaseError
from core.graph.migrations import MIGRATIONS

BUSY_TIMEOUT_MS = 10_000
LOCK_WAIT_SECONDS = 30  # how long Database.transaction keeps retrying BEGIN IMMEDIATE on a locked database


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
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseError(f"Cannot create the folder for the database {self.path}: {exc.strerror}.") from exc
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
                mode = c.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except OperationalError as exc:
                if "readonly" in str(exc).lower():  # e.g. a read-only folder: no -wal/-shm can be made
                    raise DatabaseError(f"The database {self.path} is read-only (check the permissions of the file "
                                        "and its folder); nothing was changed.") from exc
                raise DatabaseError(f"Cannot open {self.path} for writing: {exc}.") from exc
            if str(mode).lower() != "wal":
                raise DatabaseError(f"{self.path}: could not switch the database to WAL mode (got {mode}).")
            c.execute("PRAGMA synchronous = NORMAL")

    @property
    def user_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        latest = len(MIGRATIONS)
        current = self.user_version
        if current > latest:
            raise DatabaseError(
                f"{self.path} was written by a newer Cairn (schema {current}, this one knows {latest}). Upgrade Cairn."
            )
        if current == latest:
            return
        if current > 0:
            self.backup(self.path.with_name(f"{self.path.name}.before-v{latest}.bak"))
        for version in range(current + 1, latest + 1):
            with self.transaction():
                for statement in MIGRATIONS[version - 1]:
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {version}")

    # -- use ---------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[object]:
        """BEGIN IMMEDIATE so a writer waits for the lock up front instead of failing on upgrade."""
        if self.conn.in_transaction:
            yield self.conn  # nested: the outer transaction commits
            return
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                break
            except OperationalError as exc:
                if is_locked(exc) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise _translate(exc, self.path) from exc
        try:
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

    def execute(self, sql: str, params=()):
        try:
            return self.conn.execute(sql, params)
        except OperationalError as exc:
            raise _translate(exc, self.path) from exc

    def backup(self, target: Path) -> Path:
        """A consistent copy through SQLite's online backup API (safe while others write)."""
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".partial")
        dest = sqlite.connect(str(tmp))
        try:
            self.conn.backup(dest)
        finally:
            dest.close()
        shutil.move(str(tmp), str(target))
        return target

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


def _translate(exc: Exception, path: Path) -> Exception:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return DatabaseError(f"The database {path} stayed locked by another process for too long; try again.")
    if "readonly" in text or "read-only" in text:
        return DatabaseError(f"The database {path} is read-only; nothing was changed.")
    if "disk is full" in text or "full" in text:
        return DatabaseError(f"The disk holding {path} is full; nothing was changed.")
    if "malformed" in text or "not a database" in text:
        return DatabaseError(f"{path} is damaged or not a Cairn database ({exc}); run `cairn doctor`.")
    return DatabaseError(f"Database error on {path}: {exc}.")
