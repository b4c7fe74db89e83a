"""Read-only SQL for the model and MCP clients: a read-only connection *and* an authorizer that
allows only reading (no writes, ATTACH, PRAGMA changes, extension loading, or a second statement),
with limits a query cannot get past: a deadline, a row cap, a cap on the result's size, and SQLite's
own cap on any one value (so `randomblob(300000000)` fails before it is built). Chat and MCP both come
through run_readonly, so the limits are the same everywhere."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import logging
import threading
import time
from pathlib import Path
from typing import Iterator

from core.errors import InvalidInput
from core.graph.db import sqlite

log = logging.getLogger(__name__)

SQL_DEADLINE_SECONDS = 5.0  # a query still running then is interrupted
MAX_RESULT_BYTES = 1_000_000  # cell data in all (characters of text, bytes of a blob); more is cut
# SQLite's SQLITE_LIMIT_LENGTH for this connection: no string or blob, stored or computed, may be longer.
# It must stay above any value the store writes (core.graph.store.MAX_SOURCE: 10 M characters, at most
# 40 MB of UTF-8), or a query could no longer read a long note at all, even through substr() or length().
MAX_VALUE_BYTES = 64 * 1024 * 1024
_PROGRESS_STEPS = 1_000  # SQLite virtual-machine steps between two looks at the clock
_SQLITE_LIMIT_LENGTH = 0  # sqlite3.h


class QueryRefused(InvalidInput):
    """The statement is not one read, SQLite refused it, or it passed a limit; the sentence goes back to
    the caller (the sqliteQuery tool hands it to the model as its result)."""


_ALLOWED = {
    sqlite.SQLITE_SELECT,
    sqlite.SQLITE_READ,
    sqlite.SQLITE_FUNCTION,
    getattr(sqlite, "SQLITE_RECURSIVE", 33),
}
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts5_source_id"}


def _authorizer(action, arg1, arg2, db_name, trigger):
    if action == sqlite.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite.SQLITE_DENY
    return sqlite.SQLITE_OK if action in _ALLOWED else sqlite.SQLITE_DENY


_stop = threading.local()


@contextlib.contextmanager
def stop_when(event: threading.Event) -> Iterator[None]:
    """Inside, a query run_readonly runs on this thread stops soon after `event` is set (the MCP server
    sets it when its client cancels the call or goes away)."""
    outer = getattr(_stop, "event", None)
    _stop.event = event
    try:
        yield
    finally:
        _stop.event = outer


def _mb(n: int) -> str:
    return f"{n / 1_000_000:g} MB"


def run_readonly(path: Path, sql: str, max_rows: int, *, deadline: float | None = None,
                 max_bytes: int = MAX_RESULT_BYTES) -> dict:
    """`{columns, rows, truncated}` (and a `note` saying why when truncated) for one read-only SELECT,
    stopped after `deadline` seconds (SQL_DEADLINE_SECONDS unless given). Raises QueryRefused."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryRefused("sql must be one SELECT statement.")
    limit = SQL_DEADLINE_SECONDS if deadline is None else deadline
    stop = getattr(_stop, "event", None)
    ends = time.monotonic() + limit
    why: list[str] = []

    def progress() -> int:
        if stop is not None and stop.is_set():
            why.append("cancelled")
        elif time.monotonic() > ends:
            why.append("deadline")
        return 1 if why else 0

    conn = sqlite.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA query_only = ON")
        _limit_value_length(conn, MAX_VALUE_BYTES)
        conn.set_authorizer(_authorizer)
        conn.set_progress_handler(progress, _PROGRESS_STEPS)
        rows: list[list] = []
        size = 0
        note = None
        try:
            cur = conn.execute(sql)
            columns = [d[0] for d in cur.description or []]
            for row in cur:
                if len(rows) == max_rows:
                    note = (f"Only the first {max_rows} rows are shown; the query has more. Add a WHERE, or "
                            "LIMIT/OFFSET, for the rest.")
                    break
                size += sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)
                if size > max_bytes:
                    if not rows:
                        raise QueryRefused(f"The result passed {_mb(max_bytes)} in its first row; select fewer "
                                           "columns, or part of a long text with substr().")
                    note = (f"The result passed {_mb(max_bytes)}, so only its first {len(rows)} rows are shown; "
                            "select fewer columns or rows (substr() for a part of a long text).")
                    break
                rows.append(list(row))
                if time.monotonic() > ends:  # the time spent here, between SQLite's steps, counts too
                    why.append("deadline")
                    break
        except sqlite.Warning as exc:  # "You can only execute one statement at a time."
            raise QueryRefused(f"Refused: {exc}") from None
        except sqlite.DatabaseError as exc:
            text = str(exc)
            if why:
                pass  # interrupted by progress(): said below
            elif "not authorized" in text or "authorization denied" in text or "prohibited" in text or "readonly" in text:
                raise QueryRefused("Refused: sqliteQuery only reads (one SELECT; no writes, PRAGMA, ATTACH or extensions).") from None
            elif "too big" in text:
                raise QueryRefused(f"The query made a value longer than {MAX_VALUE_BYTES // 2**20} MB and was stopped; "
                                   "select fewer columns or rows, or part of a long text with substr().") from None
            else:
                raise QueryRefused(f"SQL error: {text}") from None
        if "cancelled" in why:
            raise QueryRefused("The query was cancelled.")
        if why:
            raise QueryRefused(f"The query ran past its {limit:g} s limit and was stopped; narrow it (a WHERE "
                               "on an indexed column, a LIMIT, a recursive CTE that ends) and try again.")
        out = {"columns": columns, "rows": rows, "truncated": note is not None}
        if note is not None:
            out["note"] = note
        return out
    finally:
        conn.close()


def _limit_value_length(conn, n: int) -> None:
    """sqlite3_limit(SQLITE_LIMIT_LENGTH) on this connection. The stdlib's Connection has setlimit();
    sqlean.py's (the driver core.graph.db prefers; no longer maintained) lacks it, so its exported C
    function is called with the connection's handle, the first field after the object header of
    every pysqlite-derived Connection. Where that cannot be done the other limits still apply."""
    setlimit = getattr(conn, "setlimit", None)
    if setlimit is not None:
        setlimit(getattr(sqlite, "SQLITE_LIMIT_LENGTH", _SQLITE_LIMIT_LENGTH), n)
        return
    fn = _sqlite3_limit()
    if fn is not None:
        fn(_handle(conn), _SQLITE_LIMIT_LENGTH, n)


def _handle(conn) -> int:
    return ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value


@functools.cache
def _sqlite3_limit():
    """sqlite3_limit from the driver's own library (the SQLite copy the connections use), checked once on
    a connection in memory; None where it is not exported (or does not behave)."""
    try:
        lib = ctypes.CDLL(importlib.import_module(f"{sqlite.__name__}._sqlite3").__file__)
        fn = lib.sqlite3_limit
    except (ImportError, AttributeError, OSError) as exc:
        log.warning("sqliteQuery: no SQLite value limit (%s); the result limits still apply", exc)
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    probe = sqlite.connect(":memory:")
    try:
        fn(_handle(probe), _SQLITE_LIMIT_LENGTH, 100)
        try:
            probe.execute("SELECT zeroblob(101)").fetchone()
        except sqlite.DataError:  # "string or blob too big": the limit holds on this connection
            return fn
        log.warning("sqliteQuery: sqlite3_limit had no effect; the result limits still apply")
        return None
    finally:
        probe.close()
