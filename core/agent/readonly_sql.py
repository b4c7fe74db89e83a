"""Read-only SQL for the model and MCP clients: a read-only connection *and* an authorizer that
allows only reading (no writes, ATTACH, PRAGMA changes, extension loading, or a second statement)."""

from __future__ import annotations

from pathlib import Path

from core.errors import InvalidInput
from core.graph.db import sqlite


class QueryRefused(InvalidInput):
    """The statement is not one read, or SQLite refused it; the sentence goes back to the caller
    (the sqliteQuery tool hands it to the model as its result)."""


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


def run_readonly(path: Path, sql: str, max_rows: int) -> dict:
    if not isinstance(sql, str) or not sql.strip():
        raise QueryRefused("sql must be one SELECT statement.")
    conn = sqlite.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.set_authorizer(_authorizer)
        try:
            cur = conn.execute(sql)
            rows = cur.fetchmany(max_rows + 1)
        except sqlite.Warning as exc:  # "You can only execute one statement at a time."
            raise QueryRefused(f"Refused: {exc}") from None
        except sqlite.DatabaseError as exc:
            text = str(exc)
            if "not authorized" in text or "authorization denied" in text or "prohibited" in text or "readonly" in text:
                raise QueryRefused("Refused: sqliteQuery only reads (one SELECT; no writes, PRAGMA, ATTACH or extensions).") from None
            raise QueryRefused(f"SQL error: {text}") from None
        columns = [d[0] for d in cur.description or []]
        truncated = len(rows) > max_rows
        return {"columns": columns, "rows": [list(r) for r in rows[:max_rows]], "truncated": truncated}
    finally:
        conn.close()
