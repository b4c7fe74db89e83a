"""A damaged database file: which surfaces are damaged, and a repair that keeps every row it can read.

SQLite cannot rebuild or drop a table whose pages are damaged (it must read them to free them: the FTS
'rebuild' command and DROP TABLE both fail with "malformed"), so the repair builds a fresh file with
Cairn's schema and copies into it every row of the tables that hold what only the user has (nodes,
edges, history, chats, the trash), reading past damaged pages. What is derived from the nodes is
made again: the search indexes fill as the rows go in (their triggers), and if the chunks or vectors
were damaged every node is marked for re-indexing. The damaged file is kept beside the database
(`<name>.damaged-<time>`, 0600), then the fresh pages are written into the database in place with
SQLite's backup API, so the path, its permissions and other processes' connections stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core import clock, paths
from core.errors import DatabaseError
from core.graph.db import Database, IntegrityError, sqlite
from core.graph.migrations import DEFAULT_DIMENSIONS, vec_tables

# What a user would call each part of the file, by the tables that hold it.
SURFACES = ("nodes", "edges", "search index", "vectors", "chunks", "history", "chats", "other")
DERIVED = {"node_dimensions"}  # filled by a trigger as nodes go in
BATCH = 500
# Nodes whose last change in the history is not a delete, yet are not among the rows read.
LOST_NODES = """SELECT h.node_id FROM history h
    WHERE h.edge_id IS NULL AND h.node_id NOT IN (SELECT id FROM nodes)
      AND h.id = (SELECT max(id) FROM history WHERE node_id = h.node_id AND edge_id IS NULL)
      AND h.action != 'delete'
    ORDER BY h.node_id"""


def surface_of(table: str) -> str:
    if table.startswith(("nodes_fts", "chunks_fts")):
        return "search index"
    if table.startswith("vec_"):
        return "vectors"
    if table.startswith("messages_fts") or table in ("chats", "messages", "sent_log"):
        return "chats"
    if table in ("nodes", "node_dimensions", "memory_access"):
        return "nodes"
    if table in ("edges", "chunks", "history"):
        return table
    return "other"


def damaged_surfaces(conn) -> dict[str, list[str]]:
    """{surface: ["table: what SQLite found", ...]} for each damaged surface; {} for a sound file.
    The whole-file check stops at the first virtual table it cannot open ("vtable constructor
    failed"), so on any problem each table is checked on its own, which also says where the damage is."""
    try:
        lines = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite.DatabaseError as exc:
        lines = [str(exc)]
    if lines == ["ok"]:
        return {}
    damaged: dict[str, list[str]] = {}
    for table in _tables(conn):
        try:
            found = [r[0] for r in conn.execute(f'PRAGMA integrity_check("{table}")').fetchall()]
        except sqlite.DatabaseError as exc:
            found = [str(exc)]
        if found != ["ok"]:
            damaged.setdefault(surface_of(table), []).append(f"{table}: {found[0]}")
    if not damaged:  # e.g. a page on no table's list: the file, not a table
        damaged["other"] = lines[:3]
    return {surface: damaged[surface] for surface in SURFACES if surface in damaged}


def _tables(conn) -> list[str]:
    """The file's own b-tree tables (virtual tables keep their rows in shadow tables, listed too)."""
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY rootpage")]


@dataclass
class Salvage:
    """What the repair did."""

    kept: Path  # the damaged file, as it was
    copied: dict[str, int] = field(default_factory=dict)  # table -> rows copied
    unreadable: dict[str, int] = field(default_factory=dict)  # table -> damaged stretches skipped
    dropped: dict[str, int] = field(default_factory=dict)  # table -> rows whose node (or chat) was unreadable
    reindex: int = 0  # nodes marked for re-indexing
    lost_nodes: list[int] = field(default_factory=list)  # nodes the history knows that could not be read

    def summary(self) -> str:
        parts = [f"copied every readable row into a fresh file ({self.copied.get('nodes', 0)} nodes, "
                 f"{self.copied.get('edges', 0)} edges, {self.copied.get('history', 0)} history entries)",
                 "rebuilt the search index"]
        if self.lost_nodes:
            shown = ", ".join(map(str, self.lost_nodes[:10])) + (", ..." if len(self.lost_nodes) > 10 else "")
            parts.append(f"could not read {len(self.lost_nodes)} nodes (ids {shown}; their history is kept)")
        others = sorted(set(self.unreadable) - ({"nodes"} if self.lost_nodes else set()))
        if others:
            parts.append("could not read part of " + ", ".join(others))
        if self.dropped:
            parts.append("left out " + ", ".join(f"{n} {table} rows of unreadable parents"
                                                 for table, n in sorted(self.dropped.items())))
        if self.reindex:
            parts.append(f"marked {self.reindex} nodes for re-indexing")
        parts.append(f"kept the damaged file as {self.kept}")
        return "; ".join(parts)

    def as_dict(self) -> dict:
        return {"kept": str(self.kept), "copied": self.copied, "unreadable": self.unreadable,
                "dropped": self.dropped, "reindex": self.reindex, "lost_nodes": self.lost_nodes}


def salvage(db: Database, damaged: dict[str, list[str]]) -> Salvage:
    """Copy every readable row of `db` into a fresh file, then write that back over `db` in place."""
    stamp = clock.now().replace(":", "").replace(".", "").replace("-", "")
    result = Salvage(kept=db.backup(db.path.with_name(f"{db.path.name}.damaged-{stamp}")))
    fresh_path = db.path.with_name(f"{db.path.name}.repairing")
    _remove(fresh_path)
    paths.create_private_file(fresh_path)
    page_size = db.conn.execute("PRAGMA page_size").fetchone()[0]
    raw = sqlite.connect(str(fresh_path))  # the backup API needs equal page sizes on a WAL database
    try:
        raw.execute(f"PRAGMA page_size = {int(page_size)}")
        raw.execute("PRAGMA journal_mode = WAL")
    finally:
        raw.close()
    fresh = Database(fresh_path)
    try:
        rebuild_index = bool({"chunks", "vectors"} & set(damaged))
        db.execute("BEGIN IMMEDIATE")  # no other process writes while the rows are read (and lost with the old file)
        try:
            _copy(db.conn, fresh, result, rebuild_index)
        finally:
            db.conn.execute("ROLLBACK")  # nothing was written; a COMMIT can fail on the damaged pages
        try:
            fresh.conn.backup(db.conn)
        except sqlite.DatabaseError as exc:
            fresh.close()
            saved = fresh_path.rename(db.path.with_name(f"{db.path.name}.repaired-{stamp}"))
            raise DatabaseError(f"Could not write the repaired copy into {db.path} ({exc}); it is saved as "
                                f"{saved}, and the database is as it was.") from exc
    finally:
        fresh.close()
        _remove(fresh_path)
    return result


def _copy(old, fresh: Database, result: Salvage, rebuild_index: bool) -> None:
    new = fresh.conn
    new.execute("PRAGMA foreign_keys = OFF")  # rows go in table by table; dangling ones are removed after
    dims = _meta(old, "dimensions")
    with fresh.transaction():
        if dims and dims != str(DEFAULT_DIMENSIONS):
            new.execute("DROP TABLE vec_nodes")
            new.execute("DROP TABLE vec_chunks")
            for statement in vec_tables(int(dims)):
                new.execute(statement)
        virtual = [r[0] for r in new.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'")]
        tables = [t for t in _tables(new) if t not in DERIVED and not any(t.startswith(v + "_") for v in virtual)]
        tables.sort(key=lambda t: t != "nodes")  # nodes first
        for table in tables:
            if table == "chunks" and rebuild_index:
                continue
            _copy_table(old, new, table, result)
        if not rebuild_index:
            rebuild_index = not _copy_vectors(old, new, result)
        _sequences(old, new, set(result.copied))
        while True:  # rows whose node (or chat, or message) could not be read
            dangling = new.execute("PRAGMA foreign_key_check").fetchall()
            if not dangling:
                break
            for table, rowid, *_ in dangling:
                new.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
                result.dropped[table] = result.dropped.get(table, 0) + 1
        new.execute("DELETE FROM vec_nodes WHERE rowid NOT IN (SELECT id FROM nodes)")
        if "nodes" in result.unreadable:
            result.lost_nodes = [r[0] for r in new.execute(LOST_NODES)]
        if rebuild_index:
            new.execute("DELETE FROM chunks")
            new.execute("DELETE FROM vec_chunks")
            new.execute("DELETE FROM vec_nodes")
            result.reindex = new.execute(
                "UPDATE nodes SET chunk_status = 'pending', index_error = NULL").rowcount
        new.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation'")
    new.execute("PRAGMA foreign_keys = ON")


def _meta(conn, key: str) -> str | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite.DatabaseError:
        return None
    return row[0] if row else None


def _columns(conn, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _copy_table(old, new, table: str, result: Salvage) -> None:
    try:
        have = set(_columns(old, table))
    except sqlite.DatabaseError:
        have = set()
    columns = [c for c in _columns(new, table) if c in have]
    if not columns:
        result.unreadable[table] = result.unreadable.get(table, 0) + 1
        return
    names = ", ".join(f'"{c}"' for c in columns)
    insert = f'INSERT OR REPLACE INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})'
    batch: list[tuple] = []
    copied = 0
    for row in _readable_rows(old, table, names, result):
        batch.append(tuple(row))
        if len(batch) >= BATCH:
            copied += _insert(new, insert, batch, table, result)
            batch = []
    copied += _insert(new, insert, batch, table, result)
    result.copied[table] = copied


def _insert(new, insert: str, rows: list[tuple], table: str, result: Salvage) -> int:
    """Rows that a damaged page turned into values the schema refuses are left out, one by one."""
    if not rows:
        return 0
    new.execute("SAVEPOINT batch")
    try:
        new.executemany(insert, rows)
        new.execute("RELEASE batch")
        return len(rows)
    except IntegrityError:
        new.execute("ROLLBACK TO batch")
        new.execute("RELEASE batch")
    copied = 0
    for row in rows:
        try:
            new.execute(insert, row)
            copied += 1
        except IntegrityError:
            result.unreadable[table] = result.unreadable.get(table, 0) + 1
    return copied


def _readable_rows(conn, table: str, names: str, result: Salvage):
    """Every row SQLite can read, in rowid order. At a damaged page the scan stops (the cursor reads a
    row ahead, so the row before the damage goes with it); it goes on from the first row past `last`
    that can be read on its own (found by doubling, then halving, the jump), then scans again."""
    select = f'SELECT rowid, {names} FROM "{table}"'
    last = None  # the last rowid read, or skipped as unreadable
    while True:
        try:
            cursor = conn.execute(select + ("" if last is None else " WHERE rowid > ?") + " ORDER BY rowid",
                                  () if last is None else (last,))
            for row in cursor:
                last = row[0]
                yield row[1:]
            return
        except sqlite.DatabaseError:
            result.unreadable[table] = result.unreadable.get(table, 0) + 1
        found = _next_readable(conn, table, names, last)
        if found is None:
            return
        yield found[1:]
        last = found[0]


def _next_readable(conn, table: str, names: str, last: int | None):
    """The first row past `last` that can be read (as a row with its rowid first), or None if none can."""
    smallest, largest = -(2 ** 63), 2 ** 63 - 1

    def probe(rowid: int):  # the first row from `rowid` on; None: there is none; False: damaged
        try:
            return conn.execute(f'SELECT rowid, {names} FROM "{table}" WHERE rowid >= ? ORDER BY rowid LIMIT 1',
                                (rowid,)).fetchone()
        except sqlite.DatabaseError:
            return False

    low = smallest if last is None else last + 1  # the first rowid not yet read
    if low > largest:
        return None
    bad, step = low - 1, 1
    while True:
        at = min(low + step - 1, largest)
        found = probe(at)
        if found is not False:
            break
        bad = at
        if at == largest:
            return None
        step *= 2
    good = at  # reading from `good` works, from `bad` it does not: halve the gap
    while good - bad > 1:
        mid = (good + bad) // 2
        state = probe(mid)
        if state is False:
            bad = mid
        else:
            good, found = mid, state
    return found


def _copy_vectors(old, new, result: Salvage) -> bool:
    """The vectors, as they are; False (nothing copied) if they cannot all be read."""
    new.execute("SAVEPOINT vectors")
    try:
        for table, columns in (("vec_nodes", "rowid, embedding"), ("vec_chunks", "rowid, node_id, embedding")):
            insert = f"INSERT INTO {table}({columns}) VALUES ({', '.join('?' * len(columns.split(', ')))})"
            cursor = old.execute(f"SELECT {columns} FROM {table}")
            result.copied[table] = 0
            while rows := cursor.fetchmany(BATCH):
                new.executemany(insert, [tuple(r) for r in rows])
                result.copied[table] += len(rows)
    except sqlite.DatabaseError:
        new.execute("ROLLBACK TO vectors")
        new.execute("RELEASE vectors")
        for table in ("vec_nodes", "vec_chunks"):
            result.copied.pop(table, None)
            result.unreadable[table] = result.unreadable.get(table, 0) + 1
        return False
    new.execute("RELEASE vectors")
    return True


def _sequences(old, new, tables: set[str]) -> None:
    """AUTOINCREMENT counters as high as they were: an id once given (a node in the trash) is not reused."""
    try:
        rows = old.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
    except sqlite.DatabaseError:
        return
    for name, seq in rows:
        if name not in tables:
            continue
        if new.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (seq, name)).rowcount == 0:
            new.execute("INSERT INTO sqlite_sequence(name, seq) VALUES (?, ?)", (name, seq))


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)
