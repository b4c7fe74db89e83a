"""RA-H OS databases of each schema era, built here from what RA-H's repository shows (fixtures of our
own: the table shapes follow RA-H, the rows are invented).

Eras (RA-H commits read; bradwmorris/ra-h_os and its fork mariokrajci/ra-h_os, which carries the
2026 history):

* December 2025 (733d1c3, "Initial commit: RA-H Open Source Edition"; same through e15f223): nodes with
  `content` (a consolidated summary) and `chunk` (the raw full text), a `type` column; edges with only a
  `context` JSON (no explanation column) and `user_feedback`; `node_dimensions` created WITHOUT ROWID,
  `dimensions(name, is_priority, updated_at)`; no `event_date` column (the date sits in
  `metadata.published_date`). Hubs: memory (`type = 'memory'`) excluded.
* February 2026 (86f43c9, "final schema pass"): `content` renamed `notes`, `type` dropped (memory is
  then told by `metadata.type`), `event_date` added, `edges.explanation` added and backfilled from
  `context.explanation`; the UI goes on editing `context.explanation` (+ `inferred_at`) only. Hubs:
  nothing excluded (`WHERE 1=1`).
* April 2026 (the migration that snapshots dimensions, seen in later RA-H code in the reference index):
  `dimensions` and `node_dimensions` dropped after a one-time row in
  `dimension_migration_snapshots(id, migrated_at, dimension_count, assignment_count, payload)`, payload a
  JSON list of {node_id, dimension, description, icon, is_priority}.
* Older still: an edges table `edges(id, from_id, to_id, description, created_at)`, which RA-H's own
  migration converted (not in the public history; shape as described in issue 15).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

BLOB = b"\x00" * 64


def _write(path: Path, script: str, rows: dict[str, list[tuple]]) -> Path:
    c = sqlite3.connect(path)
    c.executescript(script)
    for table, values in rows.items():
        if values:
            marks = ",".join("?" * len(values[0]))
            c.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    c.commit()
    c.close()
    return path


def make_dec2025(path: Path) -> Path:
    """RA-H OS as released in December 2025."""
    script = """
        CREATE TABLE nodes (id INTEGER PRIMARY KEY, title TEXT, description TEXT, content TEXT, link TEXT,
            type TEXT, created_at TEXT, updated_at TEXT, metadata TEXT, chunk TEXT, embedding BLOB,
            embedding_updated_at TEXT, embedding_text TEXT, chunk_status TEXT DEFAULT 'not_chunked',
            is_pinned INTEGER DEFAULT 0);
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL, chunk_idx INTEGER, text TEXT,
            created_at TEXT, embedding_type TEXT DEFAULT 'text-embedding-3-small', metadata TEXT,
            FOREIGN KEY (node_id) REFERENCES nodes(id) ON DELETE CASCADE);
        CREATE TABLE edges (id INTEGER PRIMARY KEY, from_node_id INTEGER NOT NULL, to_node_id INTEGER NOT NULL,
            source TEXT, created_at TEXT, context TEXT, user_feedback INTEGER,
            FOREIGN KEY (from_node_id) REFERENCES nodes(id) ON DELETE CASCADE,
            FOREIGN KEY (to_node_id) REFERENCES nodes(id) ON DELETE CASCADE);
        CREATE TABLE node_dimensions (node_id INTEGER NOT NULL, dimension TEXT NOT NULL,
            PRIMARY KEY (node_id, dimension), FOREIGN KEY (node_id) REFERENCES nodes(id) ON DELETE CASCADE
        ) WITHOUT ROWID;
        CREATE INDEX idx_dim_by_dimension ON node_dimensions(dimension, node_id);
        CREATE TABLE dimensions (name TEXT PRIMARY KEY, is_priority INTEGER DEFAULT 0,
            updated_at TEXT DEFAULT CURRENT_TIMESTAMP);
    """
    long_text = ("Deep work is the ability to focus without distraction on a cognitively demanding task. "
                 "The book argues it is rare and valuable. ") * 5
    residue = "When you switch tasks, attention stays behind with the first one."
    not_a_summary = "A consolidated note, longer than the text it sits beside: " + "notes and abstract. " * 6
    nodes = [
        (1, "Deep Work", None, "A book on focus.", "https://example.org/deep-work", "book",
         "2025-12-01T10:00:00.000Z", "2025-12-09T10:00:00.000Z",
         json.dumps({"published_date": "Jan 5, 2016", "author": "Cal Newport"}), long_text, BLOB, None, None,
         "chunked", 0),
        (2, "Focus sessions", None, "Ninety-minute blocks, phone in another room.", None, "idea",
         "2025-12-02T10:00:00.000Z", "2025-12-03T10:00:00.000Z", None, None, None, None, None, "not_chunked", 0),
        (3, "User works best in the morning", None, "Observed across chats.", None, "memory",
         "2025-12-02T11:00:00.000Z", "2025-12-10T11:00:00.000Z", "{}", None, None, None, None, "not_chunked", 0),
        (4, "Cal Newport", "Author and professor", None, None, "person",
         "2025-12-03T10:00:00.000Z", "2025-12-04T10:00:00.000Z", json.dumps({"published_date": "1981"}),
         None, None, None, None, "not_chunked", 0),
        (5, "Attention residue", "Switching costs", not_a_summary, None, "idea",
         "2025-12-04T10:00:00.000Z", "2025-12-06T10:00:00.000Z", None, residue, None, None, None, "chunked", 0),
    ]
    ctx = lambda **kw: json.dumps(kw)  # noqa: E731
    edges = [
        (1, 1, 4, "user", "2025-12-02T00:00:00.000Z",
         ctx(explanation="Deep Work was written by Cal Newport", type="authored_by", confidence=0.9,
             inferred_at="2025-12-02T00:00:00.000Z", created_via="ui"), None),
        (2, 1, 2, "user", "2025-12-03T00:00:00.000Z", ctx(explanation="The book recommends focus sessions",
                                                          type="related"), None),
        (3, 3, 1, "ai", "2025-12-04T00:00:00.000Z", ctx(explanation="Memory about the book"), None),
        (4, 3, 2, "ai", "2025-12-04T00:00:00.000Z", ctx(explanation="Memory about sessions"), None),
        (5, 3, 4, "ai", "2025-12-04T00:00:00.000Z", ctx(explanation="Memory about the author"), None),
        (6, 3, 5, "ai", "2025-12-04T00:00:00.000Z", ctx(explanation="Memory about residue"), None),
        (7, 5, 1, "user", "2025-12-05T00:00:00.000Z", ctx(type="related"), None),  # no explanation anywhere
        (8, 2, 5, "user", "2025-12-05T00:00:00.000Z", ctx(explanation="Sessions avoid residue"), 1),
    ]
    return _write(path, script, {
        "nodes": nodes, "edges": edges,
        "node_dimensions": [(1, "research"), (1, "books"), (2, "ideas"), (5, "research")],
        "dimensions": [("research", 1, "2025-12-01 00:00:00"), ("ideas", 1, "2025-12-01 00:00:00"),
                       ("books", 0, "2025-12-01 00:00:00")],
        "chunks": [(1, 1, 0, long_text[:100], "2025-12-01", "text-embedding-3-small", "{}")],
    })


# The event dates of the February 2026 file: RA-H value → what Cairn keeps (None: not a date).
FEB_EVENT_DATES = {
    10: ("2017-06-12", "2017-06-12"),
    11: ("1981", "1981"),
    12: ("2024-08", "2024-08"),
    13: ("Nov 25, 2024", "2024-11-25"),
    14: ("2024-08-01T23:30:00-05:00", "2024-08-01"),  # the date it was written in, not UTC's next day
    15: (1732492800, "2024-11-25"),  # epoch seconds
    16: ("last summer", None),
    17: ("Sept 2023", "2023-09"),
}


def make_feb2026(path: Path) -> Path:
    """After RA-H's February 2026 "final schema pass" (type dropped, content → notes, event_date and
    edges.explanation added), dimension tables still present."""
    script = """
        CREATE TABLE nodes (id INTEGER PRIMARY KEY, title TEXT, description TEXT, source TEXT, link TEXT,
            created_at TEXT, updated_at TEXT, metadata TEXT, notes TEXT, embedding BLOB,
            embedding_updated_at TEXT, embedding_text TEXT, chunk_status TEXT DEFAULT 'not_chunked',
            event_date TEXT);
        CREATE TABLE edges (id INTEGER PRIMARY KEY, from_node_id INTEGER NOT NULL, to_node_id INTEGER NOT NULL,
            source TEXT, created_at TEXT, context TEXT, explanation TEXT);
        CREATE TABLE node_dimensions (node_id INTEGER NOT NULL, dimension TEXT NOT NULL,
            PRIMARY KEY (node_id, dimension)) WITHOUT ROWID;
        CREATE TABLE dimensions (name TEXT PRIMARY KEY, is_priority INTEGER DEFAULT 0, updated_at TEXT,
            description TEXT, icon TEXT);
    """
    nodes = []
    for i, (raw, _) in FEB_EVENT_DATES.items():
        nodes.append((i, f"Event {i}", f"Node {i}", f"Text of node {i}.", None,
                      f"2026-02-1{i % 10}T08:00:00.000Z", f"2026-02-1{i % 10}T09:00:00.000Z",
                      json.dumps({"dimensions": ["events"]}), None, None, None, None, "not_chunked", raw))
    nodes.append((18, "Prefers short answers", "", "The user asked for brevity twice.", None,
                  "2026-02-18T08:00:00.000Z", "2026-02-19T08:00:00.000Z", json.dumps({"type": "memory"}),
                  "a note kept beside", None, None, None, "not_chunked", None))
    edges = [
        # edited in RA-H's UI after creation: context.explanation newer than the stale column
        (1, 10, 11, "user", "2026-02-16T08:00:00.000Z",
         json.dumps({"explanation": "Edited in RA-H: the paper came out after the birth", "type": "related",
                     "confidence": 0.8, "inferred_at": "2026-02-20T09:00:00.000Z", "created_via": "ui"}),
         "Original explanation"),
        # the column and context written together (same time): the column wins
        (2, 11, 12, "user", "2026-02-16T08:00:00.000Z",
         json.dumps({"explanation": "Context written at creation", "inferred_at": "2026-02-16T08:00:00.000Z"}),
         "Column written at creation"),
        (3, 12, 13, "user", "2026-02-16T08:00:00.000Z", json.dumps({"type": "related"}), None),  # unexplained
        (4, 12, 13, "user", "2026-02-17T08:00:00.000Z", "{}", "a duplicate row of edge 3's pair"),
        (5, 13, 13, "user", None, "{}", "a self edge"),
        (6, 13, 99, "user", None, "{}", "dangling"),
        (7, 18, 10, "ai", None, "{}", "Memory about event 10"),
        (8, 18, 11, "ai", None, "{}", "Memory about event 11"),
        (9, 18, 12, "ai", None, "{}", "Memory about event 12"),
        (10, 14, 10, "user", None, json.dumps({"explanation": "Only in context"}), None),
        (11, 15, 14, "user", None, "{}", "Launch after the call"),
    ]
    return _write(path, script, {
        "nodes": nodes, "edges": edges, "node_dimensions": [(10, "papers"), (18, "memory")],
        "dimensions": [("papers", 0, None, "Papers read", "📄"), ("memory", 1, None, None, None)],
    })


def make_apr2026(path: Path) -> Path:
    """After RA-H's April 2026 migration: dimension tables dropped, dimensions only in the snapshot."""
    script = """
        CREATE TABLE nodes (id INTEGER PRIMARY KEY, title TEXT, description TEXT, source TEXT, link TEXT,
            event_date TEXT, created_at TEXT, updated_at TEXT, metadata TEXT, notes TEXT, embedding BLOB,
            embedding_updated_at TEXT, embedding_text TEXT, chunk_status TEXT DEFAULT 'not_chunked');
        CREATE TABLE edges (id INTEGER PRIMARY KEY, from_node_id INTEGER NOT NULL, to_node_id INTEGER NOT NULL,
            source TEXT, created_at TEXT, context TEXT, explanation TEXT);
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL, chunk_idx INTEGER, text TEXT,
            created_at TEXT, embedding_type TEXT, metadata TEXT);
        CREATE TABLE dimension_migration_snapshots (id INTEGER PRIMARY KEY AUTOINCREMENT,
            migrated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, dimension_count INTEGER NOT NULL,
            assignment_count INTEGER NOT NULL, payload TEXT);
    """
    payload = [
        {"node_id": 20, "dimension": "method", "description": "How to work", "icon": None, "is_priority": 1},
        {"node_id": 20, "dimension": "notes", "description": None, "icon": None, "is_priority": 0},
        {"node_id": 21, "dimension": "people", "description": "People", "icon": "👤", "is_priority": 0},
        {"node_id": 22, "dimension": "memory", "description": None, "icon": None, "is_priority": 1},
    ]
    nodes = [
        (20, "Zettelkasten", "One idea per note", "A slip box of linked notes.", None, "1950",
         "2026-04-01T08:00:00.000Z", "2026-04-03T08:00:00.000Z", json.dumps({"dimensions": ["pkm"]}),
         None, None, None, None, "chunked"),
        (21, "Niklas Luhmann", "Sociologist", "He kept 90,000 cards.", "https://en.wikipedia.org/wiki/Niklas_Luhmann",
         "1927-12-08", "2026-04-01T09:00:00.000Z", "2026-04-02T08:00:00.000Z", "{}", None, None, None, None,
         "chunked"),
        (22, "User likes slip boxes", "", "Said so in a chat.", None, None, "2026-04-01T10:00:00.000Z",
         "2026-04-04T08:00:00.000Z", json.dumps({"type": "memory"}), None, None, None, None, "chunked"),
        (23, "Index cards", "", "A6 cards in wooden drawers.", None, "2024-08", "2026-04-01T11:00:00.000Z",
         "2026-04-02T08:00:00.000Z", None, None, None, None, None, "chunked"),
    ]
    edges = [
        (1, 21, 20, "user", "2026-04-02T00:00:00.000Z", json.dumps({"explanation": "Luhmann invented it",
                                                                    "inferred_at": "2026-04-02T00:00:00.000Z"}),
         "Luhmann invented it"),
        (2, 20, 23, "user", "2026-04-02T00:00:00.000Z", "{}", "Written on index cards"),
        (3, 22, 20, "ai", "2026-04-02T00:00:00.000Z", "{}", "Memory about the method"),
        (4, 22, 21, "ai", "2026-04-02T00:00:00.000Z", "{}", "Memory about Luhmann"),
        (5, 22, 23, "ai", "2026-04-02T00:00:00.000Z", "{}", "Memory about cards"),
        (6, 21, 23, "user", "2026-04-02T00:00:00.000Z", "{}", ""),  # an empty explanation column
    ]
    return _write(path, script, {
        "nodes": nodes, "edges": edges,
        "dimension_migration_snapshots": [(1, "2026-04-10 12:00:00", 4, 4, json.dumps(payload))],
    })


def make_from_id_edges(path: Path) -> Path:
    """The older edges table (from_id, to_id, description) beside content-era nodes."""
    script = """
        CREATE TABLE nodes (id INTEGER PRIMARY KEY, title TEXT, content TEXT, type TEXT, link TEXT,
            created_at TEXT, updated_at TEXT);
        CREATE TABLE edges (id INTEGER PRIMARY KEY, from_id INTEGER NOT NULL, to_id INTEGER NOT NULL,
            description TEXT, created_at TEXT);
    """
    return _write(path, script, {
        "nodes": [(1, "Memex", "Vannevar Bush's imagined desk of linked microfilm.", "idea", None,
                   "2024-01-01 10:00:00", "2024-01-02 10:00:00"),
                  (2, "As We May Think", "The 1945 essay.", "paper", "https://example.org/awmt",
                   "2024-01-01 11:00:00", "2024-01-03 10:00:00"),
                  (3, "Hypertext", "Links between texts.", "idea", None, "2024-01-01 12:00:00",
                   "2024-01-01 12:00:00")],
        "edges": [(1, 2, 1, "The essay describes the memex", "2024-01-04 00:00:00"),
                  (2, 1, 3, None, "2024-01-04 00:00:00"),
                  (3, 1, 3, "duplicate pair", "2024-01-05 00:00:00")],
    })


ERAS = {"dec2025": make_dec2025, "feb2026": make_feb2026, "apr2026": make_apr2026, "from_id": make_from_id_edges}


def raha_hubs(path: Path, limit: int = 10, *, imported_edges_only: bool = True) -> list[tuple[str, int]]:
    """RA-H's own hub query (its autoContext.ts, December 2025), run on the RA-H file: (title, edge count)
    of the most-connected nodes, memory excluded, ties by the most recent updated_at, then `n.id ASC` as
    RA-H's newest release (its autoContext query) breaks them. Where the file has no `type` column (2026), the
    same memory rule reads `metadata.type`. With `imported_edges_only`, only the edge rows Cairn keeps
    count (not self edges, dangling ones, nor a second row of the same pair); nodes without edges are
    not listed (Cairn lists none)."""
    c = sqlite3.connect(path)
    try:
        cols = {r[1] for r in c.execute("PRAGMA table_info(nodes)")}
        ecols = {r[1] for r in c.execute("PRAGMA table_info(edges)")}
        f, t = ("from_node_id", "to_node_id") if "from_node_id" in ecols else ("from_id", "to_id")
        kind = "n.type" if "type" in cols else "json_extract(n.metadata, '$.type')" if "metadata" in cols else "NULL"
        edges = "edges"
        if imported_edges_only:
            edges = (f"(SELECT * FROM edges x WHERE x.{f} != x.{t}"
                     f" AND x.{f} IN (SELECT id FROM nodes) AND x.{t} IN (SELECT id FROM nodes)"
                     f" AND x.id = (SELECT MIN(y.id) FROM edges y WHERE y.{f} = x.{f} AND y.{t} = x.{t}))")
        rows = c.execute(f"""
            SELECT n.title, COUNT(DISTINCT e.id) AS edge_count
              FROM nodes n
              LEFT JOIN {edges} e ON (e.{f} = n.id OR e.{t} = n.id)
             WHERE {kind} IS NULL OR {kind} != 'memory'
             GROUP BY n.id
             ORDER BY edge_count DESC, n.updated_at DESC, n.id ASC
             LIMIT ?""", (limit,)).fetchall()
    finally:
        c.close()
    return [(title, count) for title, count in rows if count > 0]
