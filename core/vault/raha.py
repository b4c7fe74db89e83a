"""Import an RA-H OS database (its SQLite file, e.g. `rah.sqlite`) into the store.

RA-H OS changed its schema many times; every shape below is read (the eras are reproduced by the
fixture builders in tests/raha_eras.py):

* Nodes. Text is `source` (from March 2026); older files keep the full text in `chunk` and a consolidated
  summary in `content` (December 2025), which February 2026 renamed `notes`; every node also has its
  text split into `chunks` rows. The text is the longest faithful one among `source`, `chunk` and the
  rows (a `source` that only repeats `content`/`notes`, as RA-H's own May 2026 migration leaves it, is
  the summary); `content`, and `notes` where the file still has `chunk`, is the summary: the description
  when shorter and the node has none, else a "## Summary" section; a later file's `notes` is appended as
  "## Notes". Nothing the file holds is dropped; see _node_text. bench/raha_real.py measures this on
  files RA-H's own code made and migrated.
* Type. The `type` column (until February 2026), else `metadata.type`; `memory` stays `memory`, so
  memory never counts as a hub.
* Event dates. The `event_date` column (February 2026 on), else `metadata.published_date` or
  `metadata.source_metadata.published_date` (what RA-H's own migration backfills from). The precision
  given is kept and nothing is invented: `1981` stays `1981`, `2024-08` stays `2024-08`, `Nov 25, 2024`
  becomes `2024-11-25`, `Nov 2024` becomes `2024-11`, an RFC 2822 date (`Mon, 25 Nov 2024 10:00:00 GMT`)
  becomes `2024-11-25`, a timestamp with an offset keeps the calendar date
  it was written in (`2024-08-01T23:30:00-05:00` is `2024-08-01`), epoch seconds/milliseconds (9+ digits)
  become their UTC date. A bare 4-digit number is a year, never epoch seconds. A value that cannot be a
  date is kept in `metadata.raha.event_date_raw` and named in the report's warnings.
* Dimensions. From `metadata.dimensions`; from the `node_dimensions` (+ `dimensions`) tables, which
  RA-H declared `WITHOUT ROWID` (they are read in primary-key order then, in rowid order otherwise);
  and from `dimension_migration_snapshots.payload` (a JSON list of {node_id, dimension, ...}), the only
  place they survive once RA-H's 2026 migration dropped the tables. All three are merged per node.
* Edges. `edges(from_node_id, to_node_id, explanation, context, ...)`, or the older
  `edges(from_id, to_id, description)`. The explanation is the `explanation` column (older: the
  `description` column) or `context.explanation`. RA-H's UI edits only `context.explanation` and stamps
  `context.inferred_at`, leaving the column stale, so when both are set and differ, the newer wins:
  context's time is `context.updated_at`, else `context.inferred_at`; the column's time is the row's
  `updated_at`, else its `created_at`. The context wins only when its time is later than the column's
  (or the row has no time at all); on a tie, or when the context has no time, the column wins. The
  RA-H context is kept whole (explanation included) in the Cairn edge's `context.raha_context`. An
  edge without any explanation comes in with an empty one (the UI shows "no explanation yet"); nothing
  is invented. Self edges, dangling edges, duplicates of an earlier (from, to) pair and pairs already
  linked in Cairn are skipped and counted.

Hubs. After an import `cairn hubs` gives RA-H's own hub list for the same data: nodes by
`COUNT(DISTINCT edge id)` over both directions, memory nodes excluded, ties broken by the most recent
`updated_at`, then by the lower id (RA-H's newest release; it left the order unspecified before). RA-H's versions differ: December 2025 excluded `type = 'memory'`;
February 2026 (after dropping `type`) excluded nothing, and March 2026 excluded private nodes. Cairn
follows DESIGN.md (memory excluded, `metadata.type = 'memory'` included) and adds the id tie-break that
RA-H left unspecified. RA-H counted every row, so its counts differ where a file holds duplicate rows,
self edges or dangling edges, which Cairn leaves out; RA-H also lists nodes with no edges, Cairn does not.

RA-H's chunks and vectors are not copied: every imported node is `pending`, so Cairn chunks and embeds
it with its own embedder.

Re-importing is idempotent: each node remembers its RA-H id in `metadata.raha = {db, id, sha, ...}`;
unchanged nodes are not written, changed ones are updated, edges the importer made are reconciled.
The source file is opened read-only and never changed; the whole import is one transaction, so a
failure leaves the store as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable

from core.graph import history, provenance
from core.graph.db import OperationalError, sqlite
from core.errors import CairnError, InvalidInput
from core.graph.store import (MAX_DESCRIPTION, MAX_DIMENSION, MAX_SOURCE, MAX_TITLE, Store, partial_date,
                              title_from_text)

SQLITE_HEADER = b"SQLite format 3\x00"
EDGE_SOURCE = "raha"
BATCH = 500

NODE_COLUMNS = ("id", "title", "description", "source", "chunk", "content", "notes", "link", "url", "type",
                "metadata", "event_date", "created_at", "updated_at", "is_private")
# RA-H's March 2026 `nodes.is_private` (kept out of its hubs and MCP answers): Cairn keeps a node
# from remote providers by a dimension listed in privacy.never_send, so a private node gets this one.
PRIVATE_DIMENSION = "private"
EDGE_COLUMNS = ("id", "from_node_id", "to_node_id", "from_id", "to_id", "explanation", "description", "context",
                "source", "created_at", "updated_at")

Progress = Callable[[int, int], None]


def _select(available: list[str], wanted: tuple[str, ...]) -> str:
    return ", ".join(f'"{c}"' for c in wanted if c in available)


def is_sqlite_file(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_HEADER
    except OSError:
        return False


def _columns(conn, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")').fetchall()]


def _without_rowid(conn, table: str) -> bool:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return bool(row and row[0] and "without rowid" in " ".join(str(row[0]).lower().split()))


def _open(path: Path):
    try:
        conn = sqlite.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except OperationalError as exc:
        raise InvalidInput(f"Cannot read {path} as a SQLite database ({exc}); nothing was imported.") from None
    except Exception as exc:  # sqlean raises DatabaseError for a file that is not a database
        raise InvalidInput(f"{path} is not a readable SQLite database ({exc}); nothing was imported.") from None
    conn.row_factory = sqlite.Row
    return conn


@dataclass
class Shape:
    nodes: list[str]
    edges: list[str]
    edge_ends: tuple[str, str]  # ("from_node_id", "to_node_id"), or the older ("from_id", "to_id")
    chunks: bool
    legacy_dimensions: bool
    snapshot: bool
    tables: list[str]


def inspect(conn, path: Path) -> Shape:
    """The tables RA-H import needs, or an error saying why this is not an RA-H OS database."""
    tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
    nodes = _columns(conn, "nodes") if "nodes" in tables else []
    edges = _columns(conn, "edges") if "edges" in tables else []
    text_columns = {"source", "content", "chunk", "description", "notes"}
    ends = next((pair for pair in (("from_node_id", "to_node_id"), ("from_id", "to_id")) if set(pair) <= set(edges)),
                None)
    if not ({"id", "title"} <= set(nodes) and text_columns & set(nodes) and ends):
        shown = ", ".join(t for t in tables if not t.startswith("sqlite_"))[:200] or "none"
        raise InvalidInput(
            f"{path} is a SQLite database but not an RA-H OS one (it needs tables nodes(id, title, source or "
            f"content or chunk) and edges(from_node_id, to_node_id) or the older edges(from_id, to_id); its tables: "
            f"{shown}); nothing was imported."
        )
    legacy = "node_dimensions" in tables and "node_id" in _columns(conn, "node_dimensions")
    snapshot = "dimension_migration_snapshots" in tables and "payload" in _columns(conn, "dimension_migration_snapshots")
    return Shape(nodes, edges, ends, "chunks" in tables, legacy, snapshot, tables)


def _stamp(value: Any) -> str | None:
    """RA-H's timestamps (ISO text, SQLite's 'YYYY-MM-DD HH:MM:SS', or epoch s/ms) as Cairn's ISO UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().replace(".", "", 1).isdigit():
        value = float(value)  # epoch seconds or milliseconds stored in a TEXT column
    try:
        if isinstance(value, (int, float)):
            dt = datetime.fromtimestamp(value / 1000 if value > 1e11 else value, timezone.utc)
        else:
            dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# Written dates: (strptime format, precision kept). "Sept" and "Nov." are normalised before matching.
_WRITTEN_DATES = (
    ("%b %d, %Y", "day"), ("%B %d, %Y", "day"), ("%b %d %Y", "day"), ("%B %d %Y", "day"),
    ("%d %b %Y", "day"), ("%d %B %Y", "day"), ("%d %b, %Y", "day"), ("%d %B, %Y", "day"),
    ("%Y/%m/%d", "day"), ("%Y.%m.%d", "day"), ("%Y-%m-%d", "day"),
    ("%b %Y", "month"), ("%B %Y", "month"), ("%b, %Y", "month"), ("%B, %Y", "month"), ("%Y/%m", "month"),
)
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\s*(?:Z|[+-]\d{2}(?::?\d{2})?)?",
                        re.IGNORECASE)


# "Mon, 25 Nov 2024 10:00:00 GMT" (RFC 2822 section 3.3: an optional day name, day, month, year, time, zone)
_RFC_2822 = re.compile(r"^(?:[A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{2}:\d{2}(?::\d{2})?\s+"
                       r"(?:[+-]\d{4}|[A-Za-z]{1,5})$")


def event_date(value: Any) -> tuple[str | None, str]:
    """An RA-H event date as Cairn's (`YYYY-MM-DD`, `YYYY-MM` or `YYYY`), and how it was read:
    'none' (empty), 'day' / 'month' / 'year' (taken as written), 'converted' (rewritten from another
    form at the precision it gave), 'unreadable' (not a date: the caller keeps the raw value)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, "none"
    if isinstance(value, bool):
        return None, "unreadable"
    if isinstance(value, (int, float)) or (isinstance(value, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*", value)):
        text = str(value).strip()
        digits = text.split(".")[0]
        if len(digits) == 4 and "." not in text:  # a bare year, never epoch seconds in 1970
            found = partial_date(digits)
            return (found, "year") if found else (None, "unreadable")
        if len(digits) == 8 and "." not in text:  # YYYYMMDD
            found = partial_date(f"{digits[:4]}-{digits[4:6]}-{digits[6:]}")
            return (found, "converted") if found else (None, "unreadable")
        if len(digits) >= 9:  # epoch seconds (10 digits) or milliseconds (13)
            stamp = _stamp(float(text))
            return (stamp[:10], "converted") if stamp else (None, "unreadable")
        return None, "unreadable"
    text = " ".join(str(value).split())
    found = partial_date(text)
    if found:
        return found, {10: "day", 7: "month", 4: "year"}[len(found)]
    m = _DATE_TIME.fullmatch(text)
    if m:  # a timestamp: the calendar date it was written in, whatever its offset
        found = partial_date(m.group(1))
        return (found, "converted") if found else (None, "unreadable")
    written = re.sub(r"\b(Sept)\b", "Sep", text, flags=re.IGNORECASE)
    written = re.sub(r"\b([A-Za-z]{3,9})\.", r"\1", written)
    for fmt, precision in _WRITTEN_DATES:
        try:
            parsed = datetime.strptime(written, fmt).date()
        except ValueError:
            continue
        return (parsed.isoformat() if precision == "day" else parsed.isoformat()[:7]), "converted"
    if _RFC_2822.match(text):  # an e-mail or RSS date (RFC 2822): the calendar date it was written in
        from email.utils import parsedate_to_datetime

        try:
            return parsedate_to_datetime(text).date().isoformat(), "converted"
        except (TypeError, ValueError, IndexError):
            pass
    return None, "unreadable"


def _json(value: Any) -> Any:
    if value is None or isinstance(value, (dict, list)):
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    value = str(value).replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _legacy_dimensions(conn) -> dict[str, list[str]]:
    """RA-H node id (as text) → dimension names from the legacy node_dimensions (+ dimensions) tables.

    RA-H created node_dimensions `WITHOUT ROWID` (primary key node_id, dimension): such a table has no
    rowid to keep insertion order by, so it is read in primary-key order."""
    cols = _columns(conn, "node_dimensions")
    found: dict[str, list[str]] = {}
    name_col = next((c for c in ("dimension", "dimension_name", "name") if c in cols), None)
    keyless = _without_rowid(conn, "node_dimensions")
    if name_col:
        order = f'node_id, "{name_col}"' if keyless else "rowid"
        rows = conn.execute(f'SELECT node_id, "{name_col}" FROM node_dimensions ORDER BY {order}')
    elif "dimension_id" in cols and "dimensions" in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}:
        dcols = _columns(conn, "dimensions")
        label = next((c for c in ("name", "dimension", "title") if c in dcols), None)
        key = "id" if "id" in dcols else "rowid"
        if not label:
            return found
        order = "nd.node_id, nd.dimension_id" if keyless else "nd.rowid"
        rows = conn.execute(f'SELECT nd.node_id, d."{label}" FROM node_dimensions nd JOIN dimensions d'
                            f' ON d."{key}" = nd.dimension_id ORDER BY {order}')
    else:
        return found
    for node_id, name in rows:
        found.setdefault(str(node_id), []).append(name)
    return found


def _snapshot_dimensions(conn, report: "RahaReport") -> dict[str, list[str]]:
    """RA-H node id (as text) → dimension names from dimension_migration_snapshots.payload, the JSON
    list ({node_id, dimension, description, icon, is_priority}) RA-H wrote before dropping the tables."""
    cols = _columns(conn, "dimension_migration_snapshots")
    key = "id" if "id" in cols else "rowid"
    found: dict[str, list[str]] = {}
    for snap_id, payload in conn.execute(f"SELECT {key}, payload FROM dimension_migration_snapshots ORDER BY {key}"):
        if payload is None or (isinstance(payload, str) and not payload.strip()):
            continue
        data = _json(payload)
        if not isinstance(data, list):
            report.warnings.append((f"dimension snapshot {snap_id}",
                                    "its payload is not a JSON list; no dimension was read from it"))
            continue
        for item in data:
            name = (item.get("dimension") or item.get("name")) if isinstance(item, dict) else None
            if not isinstance(name, str) or item.get("node_id") is None:
                report.dimensions_skipped += 1
                report.warnings.append((f"dimension snapshot {snap_id}", f"entry {str(item)[:80]} has no node_id "
                                        "and dimension; left out"))
                continue
            found.setdefault(str(item["node_id"]), []).append(name)
    return found


@dataclass
class RahaReport:
    path: str
    nodes: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    gone: int = 0  # imported before, no longer in the RA-H database: kept
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    # nodes: how their text and type were read
    text_from_chunk: int = 0  # full text in the older `chunk` column
    text_from_content: int = 0  # no source nor chunk: `content` (or `notes`) is the text
    description_from_content: int = 0  # `content` was a summary: it became the description
    summary_appended: int = 0  # `content` kept as a "## Summary" section of the source
    text_longer_than_source: int = 0  # the text is not `source`: `chunk` or the `chunks` rows held more, or `source`
    # repeated the summary (RA-H's own upgrade); each such node is named under warnings
    type_from_metadata: int = 0  # no type column: metadata.type
    memory: int = 0  # nodes of type memory (never hubs)
    private: int = 0  # RA-H's is_private nodes: given the dimension `private` (PRIVATE_DIMENSION)
    # dimensions
    dimensions_from: str = "none"  # "metadata", "legacy tables", "migration snapshot" joined by " + ", or "none"
    dimensions_assigned: int = 0  # node-dimension pairs imported (after merging the sources)
    dimensions_metadata: int = 0  # pairs read from each source, before merging
    dimensions_tables: int = 0
    dimensions_snapshot: int = 0
    dimensions_skipped: int = 0  # not text, too long, or a snapshot entry without node or name
    # event dates
    event_dates: int = 0  # nodes with an event date in RA-H
    event_dates_kept: int = 0  # already YYYY-MM-DD
    event_dates_partial: int = 0  # a year or a year-month, kept at that precision
    event_dates_converted: int = 0  # rewritten (a timestamp, a written date such as "Nov 25, 2024")
    event_dates_unreadable: int = 0  # not a date: kept in metadata.raha.event_date_raw
    event_dates_from_metadata: int = 0  # from metadata.published_date (no event_date column)
    # edges
    edge_table: str = "edges(from_node_id, to_node_id)"
    edges_read: int = 0
    edges: int = 0  # edges the RA-H file has that Cairn keeps
    edges_created: int = 0
    edges_updated: int = 0
    edges_removed: int = 0
    edges_unchanged: int = 0
    edges_skipped: int = 0  # the four kinds below
    edges_dangling: int = 0
    edges_self: int = 0
    edges_duplicate: int = 0  # a second row for the same (from, to) pair
    edges_already_linked: int = 0  # the pair is already linked in Cairn by another edge
    edges_no_explanation: int = 0  # imported with an empty explanation
    edges_explanation_from_context: int = 0  # context.explanation won over the column (newer, or column empty)
    seconds: float = 0.0

    def by_kind(self) -> dict[str, dict]:
        """What was imported, converted and skipped, per kind of record."""
        return {
            "nodes": {"read": self.nodes, "created": self.created, "updated": self.updated,
                      "unchanged": self.unchanged, "skipped": len(self.skipped), "gone": self.gone,
                      "text_from_chunk": self.text_from_chunk, "text_from_content": self.text_from_content,
                      "description_from_content": self.description_from_content,
                      "summary_appended": self.summary_appended,
                      "text_longer_than_source": self.text_longer_than_source,
                      "type_from_metadata": self.type_from_metadata,
                      "memory": self.memory, "private": self.private},
            "dimensions": {"from": self.dimensions_from, "assigned": self.dimensions_assigned,
                           "read_from_metadata": self.dimensions_metadata, "read_from_tables": self.dimensions_tables,
                           "read_from_snapshot": self.dimensions_snapshot, "skipped": self.dimensions_skipped},
            "event_dates": {"read": self.event_dates, "kept": self.event_dates_kept,
                            "partial": self.event_dates_partial, "converted": self.event_dates_converted,
                            "unreadable": self.event_dates_unreadable,
                            "from_metadata": self.event_dates_from_metadata},
            "edges": {"table": self.edge_table, "read": self.edges_read, "imported": self.edges,
                      "created": self.edges_created, "updated": self.edges_updated,
                      "unchanged": self.edges_unchanged, "removed": self.edges_removed,
                      "skipped": self.edges_skipped, "dangling": self.edges_dangling, "self": self.edges_self,
                      "duplicate": self.edges_duplicate, "already_linked": self.edges_already_linked,
                      "no_explanation": self.edges_no_explanation,
                      "explanation_from_context": self.edges_explanation_from_context},
        }

    def as_dict(self) -> dict:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["skipped"] = [list(s) for s in self.skipped]
        data["warnings"] = [list(s) for s in self.warnings]
        data["kinds"] = self.by_kind()
        return data


def _dimensions(values, rid: str, report: RahaReport) -> list[str]:
    out, seen = [], set()
    for v in values:
        if isinstance(v, dict):  # some exports keep {"name": ...}
            v = v.get("name") or v.get("dimension")
        if not isinstance(v, str):
            report.dimensions_skipped += 1
            report.warnings.append((f"node {rid}", f"dimension {str(v)[:40]!r} is not text; left out"))
            continue
        v = " ".join(_text(v).split()).lstrip("#")
        if len(v) > MAX_DIMENSION:
            report.dimensions_skipped += 1
            report.warnings.append((f"node {rid}", f"dimension {v[:20]!r}… is longer than {MAX_DIMENSION} "
                                    "characters; left out"))
            continue
        if v and v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


def _chunk_texts(conn) -> dict[str, str]:
    """{node id: its `chunks` rows joined} (RA-H keeps each node's text in them too)."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(chunks)")}
    if not {"node_id", "text"} <= cols:
        return {}
    order = "node_id, chunk_idx, id" if "chunk_idx" in cols else "node_id, rowid"
    by_node: dict[str, list[str]] = {}
    for node_id, text in conn.execute(f"SELECT node_id, text FROM chunks ORDER BY {order}"):
        if isinstance(text, str) and text.strip():
            by_node.setdefault(str(node_id), []).append(text)
    return {node_id: _joined_chunks(texts) for node_id, texts in by_node.items()}


def _joined_chunks(texts: list[str]) -> str:
    """RA-H's `chunks` rows of one node, in order, as one text: where a chunk starts with the end of the
    one before (an overlap), that part is not repeated."""
    out = ""
    for text in texts:
        overlap = 0
        for k in range(min(len(out), len(text), 4000), 0, -1):
            if out.endswith(text[:k]):
                overlap = k
                break
        out = out + text[overlap:] if overlap else (f"{out}\n\n{text}" if out else text)
    return out


def _bare(text: str) -> str:
    """The text without its whitespace: how texts are compared (RA-H's chunks rows lose the whitespace
    between pieces, which joining them cannot restore)."""
    return "".join(text.split())


def _node_text(row, cols: set[str], report: RahaReport, chunk_rows: str = "") -> tuple[str, str, dict]:
    """(source, description, counters) from whichever text columns this era of RA-H has.

    The text is the longest faithful one among `source`, `chunk` and the node's `chunks` rows: RA-H's own
    2026 migrations (the SQLiteClient of March to May 2026) filled the new `source` from the old summary
    (`content`, or `notes` once February renamed it) before `chunk`, so a node of a file RA-H upgraded
    itself has a 32-character `source` beside a 10,904-character `chunk` (issue 24; bench/raha_real.py
    builds such files with RA-H's own code). Such a `source`, a copy of `content`/`notes` beside a
    `chunk` or `chunks` rows that say something else, is that summary, not the text. The `chunks` rows
    (RA-H's splitter: overlapping pieces, whitespace trimmed at their ends) count only where they hold
    words no column has: joining them cannot restore the whitespace between pieces, so a column with
    the same words is the faithful text. A text the chosen one does not hold is kept as a section
    ("## RA-H chunk", "## RA-H source", "## RA-H chunks").

    `content` (and `notes` in a file that still has `chunk`, where it is `content` renamed) is the
    summary: the description when the node has none and it is shorter than the text and fits, else a
    "## Summary" section, unless the text already holds it; so the same node comes in alike from the
    December file and from the files RA-H's February and May code upgraded. In a file without `chunk`
    (RA-H from March 2026), `notes` is the user's notes: a "## Notes" section. Each node whose text
    columns disagree is named in the report's warnings."""
    def col(name: str) -> str:
        return _text(row[name]) if name in cols else ""

    counts = {"text_from_chunk": 0, "text_from_content": 0, "description_from_content": 0, "summary_appended": 0,
              "text_longer_than_source": 0}
    source, chunk, content, notes = col("source"), col("chunk"), col("content"), col("notes")
    description = col("description")
    flat = {name: _bare(value) for name, value in
            (("source", source), ("chunk", chunk), ("content", content), ("notes", notes))}
    rows = chunk_rows if chunk_rows.strip() and not any(
        _bare(chunk_rows) in value for value in flat.values() if value) else ""
    copy_of = next((name for name in ("content", "notes") if flat["source"] and flat["source"] == flat[name]), None)
    if copy_of and not any(value and value != flat["source"] for value in (flat["chunk"], _bare(rows))):
        copy_of = None  # nothing else holds a text: source is the text
    candidates = [(name, value) for name, value in (("source", "" if copy_of else source), ("chunk", chunk),
                                                    ("chunks", rows)) if value.strip()]
    name, text = max(candidates, key=lambda c: len(_bare(c[1]))) if candidates else ("", "")
    notes_is_summary = "chunk" in cols  # `content` renamed (February 2026), not yet the user's own notes
    source_held = bool(source.strip()) and _bare(source) in _bare(text)
    disagree: list[str] = []
    for other, value in candidates:
        if other == name or _bare(value) in _bare(text):
            continue
        text = f"{text.rstrip()}\n\n## RA-H {other}\n\n{value.strip()}\n"
        disagree.append(f"`{other}` ({len(value.strip()):,} characters) is kept as a section \"RA-H {other}\"")
    if name == "chunk":
        counts["text_from_chunk"] = 1
    if source.strip() and name != "source":
        counts["text_longer_than_source"] = 1
    used = None
    if not text.strip():
        for label, value in (("content", content), ("notes", notes)):
            if value.strip():
                text, used = value, label
                counts["text_from_content"] = 1
                break
    kept: dict[str, str] = {}
    for label, heading, value in (("content", "Summary", content), ("notes", "Notes", notes)):
        value = value.strip()
        if not value or label == used or value == description.strip() or _bare(value) in _bare(text):
            kept[label] = "the description" if value and value == description.strip() else "part of the text"
            continue
        summary = label == "content" or notes_is_summary
        if summary and not description.strip() and len(value) <= MAX_DESCRIPTION and len(value) < len(text.strip()):
            description, kept[label] = value, "the description"
            counts["description_from_content"] = 1
        else:
            heading = "Summary" if summary else heading  # notes that are content renamed: one heading
            text = f"{text.rstrip()}\n\n## {heading}\n\n{value}\n" if text.strip() else value
            kept[label] = f"a {heading} section"
            counts["summary_appended"] = int(label == "content" or counts["summary_appended"])
    if source.strip() and name != "source":
        chosen = rows if name == "chunks" else col(name)
        head = (f"`source` held {len(source.strip()):,} characters and `{name}` {len(chosen.strip()):,}: "
                f"the text is `{name}`")
        if copy_of:
            head += f"; `source` repeats `{copy_of}` (RA-H's migration), kept as {kept.get(copy_of, 'part of the text')}"
        elif source_held:
            head += ", which holds `source`"
        disagree.insert(0, head)
    if disagree:
        report.warnings.append((f"node {row['id']}", "; ".join(disagree)))
    return text, description, counts


def _node_fields(row, cols: set[str], dims: dict[str, dict[str, list[str]]], report: RahaReport,
                 chunk_rows: dict[str, str] | None = None) -> dict:
    rid = str(row["id"])
    meta = _json(row["metadata"]) if "metadata" in cols else None
    meta = meta if isinstance(meta, dict) else {}
    source, description, text_counts = _node_text(row, cols, report, (chunk_rows or {}).get(rid, ""))
    if len(source) > MAX_SOURCE:
        raise InvalidInput(f"its text is {len(source):,} characters; the limit is {MAX_SOURCE:,}")
    title = " ".join(_text(row["title"]).split())
    if not title:
        title = title_from_text(source) if source.strip() else f"Untitled (RA-H node {rid})"
    if len(title) > MAX_TITLE:
        title = title[: MAX_TITLE - 1] + "…"
    if len(description) > MAX_DESCRIPTION:
        report.warnings.append((f"node {rid}", f"description cut to {MAX_DESCRIPTION:,} characters"))
        description = description[: MAX_DESCRIPTION - 1] + "…"
    link = None
    for name in ("link", "url"):
        if name in cols and _text(row[name]).strip():
            link = _text(row[name]).strip()
            break
    node_type, type_from_meta = "note", False
    column_type = row["type"] if "type" in cols else None
    for candidate, from_meta in ((column_type, False), (meta.get("type"), True)):
        if isinstance(candidate, str) and candidate.strip():
            if len(candidate.strip()) <= 32:
                node_type, type_from_meta = candidate.strip(), from_meta
            else:
                report.warnings.append((f"node {rid}", f"type {candidate[:20]!r}… is longer than 32 characters; "
                                        "imported as a note"))
            break
    meta_dims = meta.get("dimensions") if isinstance(meta.get("dimensions"), list) else []
    from_tables, from_snapshot = dims["tables"].get(rid, []), dims["snapshot"].get(rid, [])
    private = "is_private" in cols and bool(row["is_private"])
    merged = _dimensions([*meta_dims, *from_tables, *from_snapshot, *([PRIVATE_DIMENSION] if private else [])],
                         rid, report)
    raw_date, date_from_meta = (row["event_date"] if "event_date" in cols else None), False
    if raw_date is None or (isinstance(raw_date, str) and not raw_date.strip()):
        source_meta = meta.get("source_metadata") if isinstance(meta.get("source_metadata"), dict) else {}
        for candidate in (source_meta.get("published_date"), meta.get("published_date")):
            if candidate not in (None, ""):
                raw_date, date_from_meta = candidate, True
                break
    when, how = event_date(raw_date)
    other = {k: v for k, v in meta.items() if k != "dimensions"}
    return {
        "title": title, "description": description, "source": source, "link": link,
        "event_date": when, "event_date_raw": _text(raw_date) if how == "unreadable" else None,
        "type": node_type, "dimensions": merged,
        "created_at": _stamp(row["created_at"]) if "created_at" in cols else None,
        "updated_at": _stamp(row["updated_at"]) if "updated_at" in cols else None,
        "other": other,
        "_counts": {**text_counts, "type_from_metadata": int(type_from_meta), "memory": int(node_type == "memory"),
                    "dimensions_metadata": len(meta_dims), "dimensions_tables": len(from_tables),
                    "dimensions_snapshot": len(from_snapshot), "dimensions_assigned": len(merged),
                    "private": int(private), "date_how": how, "date_from_meta": date_from_meta},
    }


def _count_node(report: RahaReport, counts: dict, rid: str, raw_date: str | None) -> None:
    for key in ("text_from_chunk", "text_from_content", "description_from_content", "summary_appended",
                "text_longer_than_source",
                "type_from_metadata", "memory", "dimensions_metadata", "dimensions_tables", "dimensions_snapshot",
                "dimensions_assigned", "private"):
        setattr(report, key, getattr(report, key) + counts[key])
    how = counts["date_how"]
    if how == "none":
        return
    report.event_dates += 1
    report.event_dates_from_metadata += int(counts["date_from_meta"])
    if how == "day":
        report.event_dates_kept += 1
    elif how in ("year", "month"):
        report.event_dates_partial += 1
    elif how == "converted":
        report.event_dates_converted += 1
    else:
        report.event_dates_unreadable += 1
        report.warnings.append((f"node {rid}", f"event date {raw_date!r} is not a date; kept as "
                                "metadata.raha.event_date_raw"))


def _fingerprint(fields: dict) -> str:
    kept = {k: v for k, v in fields.items() if not k.startswith("_")}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _explanation(row, cols: set[str]) -> tuple[str, dict, bool]:
    """(explanation, RA-H context, whether the context's explanation was taken); see the module
    docstring for which of the column and `context.explanation` wins."""
    context = _json(row["context"]) if "context" in cols else None
    ctx = context if isinstance(context, dict) else {}
    column_name = "explanation" if "explanation" in cols else "description" if "description" in cols else None
    column = _text(row[column_name]).strip() if column_name else ""
    in_context = ""
    for key in ("explanation", "description", "reason"):
        if isinstance(ctx.get(key), str) and ctx[key].strip():
            in_context = _text(ctx[key]).strip()
            break
    if not in_context and isinstance(context, str) and context.strip():
        in_context = _text(context).strip()  # a context that is plain text, not JSON
    chosen, from_context = column, False
    if in_context and not column:
        chosen, from_context = in_context, True
    elif in_context and column and in_context != column:
        ctx_time = _stamp(ctx.get("updated_at")) or _stamp(ctx.get("inferred_at"))
        row_time = (_stamp(row["updated_at"]) if "updated_at" in cols else None) or (
            _stamp(row["created_at"]) if "created_at" in cols else None)
        if ctx_time and (row_time is None or ctx_time > row_time):
            chosen, from_context = in_context, True
    return chosen[:MAX_DESCRIPTION], ctx, from_context


def import_raha(store: Store, path: str | Path, progress: Progress | None = None) -> RahaReport:
    """Import (or re-import) an RA-H OS SQLite database; see the module docstring. Its writes are
    recorded in the history as the import of the file."""
    with history.acting_as(history.import_of(Path(path).name)):
        return _import_raha(store, path, progress)


def _import_raha(store: Store, path: str | Path, progress: Progress | None = None) -> RahaReport:
    started = time.monotonic()
    path = Path(path).expanduser()
    if not path.is_file():
        raise InvalidInput(f"No file at {path}.")
    try:
        if os.path.samefile(path, store.path):
            raise InvalidInput(f"{path} is Cairn's own database; nothing to import.")
    except FileNotFoundError:
        pass
    if not is_sqlite_file(path):
        raise InvalidInput(f"{path} is not a SQLite database; nothing was imported.")
    db_key = str(path.resolve())
    report = RahaReport(path=db_key)
    conn = _open(path)
    try:
        shape = inspect(conn, path)
        cols = set(shape.nodes) & set(NODE_COLUMNS)
        dims = {"tables": _legacy_dimensions(conn) if shape.legacy_dimensions else {},
                "snapshot": _snapshot_dimensions(conn, report) if shape.snapshot else {}}
        # Only the columns used: RA-H keeps a 6 KB embedding BLOB on every node row.
        rows = conn.execute(f"SELECT {_select(shape.nodes, NODE_COLUMNS)} FROM nodes ORDER BY id").fetchall()
        chunk_rows = _chunk_texts(conn) if shape.chunks else {}
        edge_cols = set(shape.edges) & set(EDGE_COLUMNS)
        if "id" in edge_cols:
            edge_order = "id"
        elif _without_rowid(conn, "edges"):
            edge_order = ", ".join(f'"{c}"' for c in shape.edge_ends)
        else:
            edge_order = "rowid"
        edge_rows = conn.execute(f"SELECT {_select(shape.edges, EDGE_COLUMNS)} FROM edges ORDER BY {edge_order}"
                                 ).fetchall()
    except OperationalError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc}; nothing was imported.") from None
    finally:
        conn.close()
    if shape.edge_ends == ("from_id", "to_id"):
        report.edge_table = "edges(from_id, to_id, description), the older table"
        edge_cols.discard("explanation")  # that era's explanation is its description column
    else:
        edge_cols.discard("description")

    with store.db.transaction():  # one transaction: a failure anywhere leaves the store as it was
        id_map = _import_nodes(store, db_key, rows, cols, dims, report, progress, chunk_rows)
        desired: dict[tuple[int, int], tuple[str, dict, Any, Any]] = {}
        from_col, to_col = shape.edge_ends
        report.edges_read = len(edge_rows)
        for row in edge_rows:
            a, b = id_map.get(str(row[from_col])), id_map.get(str(row[to_col]))
            if a is None or b is None:
                report.edges_dangling += 1
                continue
            if a == b:
                report.edges_self += 1
                continue
            if (a, b) in desired:
                report.edges_duplicate += 1
                continue
            explanation, ctx, from_context = _explanation(row, edge_cols)
            report.edges_explanation_from_context += int(from_context)
            desired[(a, b)] = (explanation, ctx, row["id"] if "id" in edge_cols else None,
                               _stamp(row["created_at"]) if "created_at" in edge_cols else None)
        _reconcile_edges(store, db_key, desired, report)
    report.edges_skipped = report.edges_dangling + report.edges_self + report.edges_duplicate \
        + report.edges_already_linked
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _import_nodes(store: Store, db_key: str, rows, cols: set[str], dims: dict, report: RahaReport,
                  progress: Progress | None, chunk_rows: dict[str, str]) -> dict[str, int]:
    """Create, update or leave each node; returns RA-H id (as text) → Cairn node id."""
    existing = {}
    for r in store.db.execute(
        "SELECT id, json_extract(metadata, '$.raha.id') AS rid, json_extract(metadata, '$.raha.sha') AS sha"
        " FROM nodes WHERE json_extract(metadata, '$.raha.db') = ?", (db_key,)
    ):
        existing.setdefault(str(r["rid"]), (r["id"], r["sha"]))
    seen: set[str] = set()
    id_map: dict[str, int] = {}
    report.dimensions_from = " + ".join(
        name for name, found in (("metadata", any(_has_meta_dims(r, cols) for r in rows)),
                                 ("legacy tables", bool(dims["tables"])),
                                 ("migration snapshot", bool(dims["snapshot"]))) if found) or "none"
    report.nodes = len(rows)
    if progress:
        progress(0, len(rows))
    wconn = store.db.conn
    for start in range(0, len(rows), BATCH):
        for row in rows[start:start + BATCH]:
            rid = str(row["id"])
            seen.add(rid)
            try:
                fields = _node_fields(row, cols, dims, report, chunk_rows)
            except CairnError as exc:
                report.skipped.append((f"node {rid}", str(exc)))
                continue
            counts = fields.pop("_counts")
            sha = _fingerprint(fields)
            raha = {"db": db_key, "id": row["id"], "sha": sha, "dimensions": fields["dimensions"]}
            if fields["other"]:
                raha["metadata"] = fields["other"]
            if fields["event_date_raw"] is not None:
                raha["event_date_raw"] = fields["event_date_raw"]
            wconn.execute("SAVEPOINT raha_node")
            try:
                id_map[rid] = _write_node(store, wconn, existing.get(rid), fields, raha, sha, report)
                wconn.execute("RELEASE raha_node")
            except CairnError as exc:
                wconn.execute("ROLLBACK TO raha_node")
                wconn.execute("RELEASE raha_node")
                report.skipped.append((f"node {rid}", str(exc)))
                continue
            _count_node(report, counts, rid, fields["event_date_raw"])
        if progress:
            progress(min(start + BATCH, len(rows)), len(rows))
    report.gone = sum(1 for rid in existing if rid not in seen)
    return id_map


def _has_meta_dims(row, cols: set[str]) -> bool:
    if "metadata" not in cols:
        return False
    meta = _json(row["metadata"])
    return isinstance(meta, dict) and isinstance(meta.get("dimensions"), list) and bool(meta["dimensions"])


def _write_node(store: Store, wconn, known, fields: dict, raha: dict, sha: str, report: RahaReport) -> int:
    """Write one node (unchanged, updated or created); returns its Cairn id."""
    node = None
    if known:
        try:
            node = store.get_node(known[0])
        except CairnError:
            node = None  # deleted in Cairn: import it again
    if node and known[1] == sha:
        report.unchanged += 1
    elif node:
        meta = dict(node.get("metadata") or {})
        old_dims = {d.lower() for d in (meta.get("raha") or {}).get("dimensions", [])}
        mine = {d.lower() for d in fields["dimensions"]}
        dims = fields["dimensions"] + [d for d in node["dimensions"]
                                       if d.lower() not in old_dims and d.lower() not in mine]
        meta["raha"] = raha
        store.update_node(node["id"], title=fields["title"], description=fields["description"],
                          source=fields["source"], link=fields["link"], event_date=fields["event_date"],
                          type=fields["type"], dimensions=dims, metadata=meta, origin=provenance.RAHA)
        report.updated += 1
    else:
        node = store.add_node(fields["title"], fields["source"], description=fields["description"],
                              link=fields["link"], event_date=fields["event_date"], type=fields["type"],
                              dimensions=fields["dimensions"], metadata={"raha": raha}, origin=provenance.RAHA)
        created = fields["created_at"] or node["created_at"]
        updated = fields["updated_at"] or created
        wconn.execute("UPDATE nodes SET created_at = ?, updated_at = ? WHERE id = ?",
                      (created, max(updated, created), node["id"]))
        report.created += 1
    return node["id"]


def _reconcile_edges(store: Store, db_key: str, desired: dict, report: RahaReport) -> None:
    db = store.db
    mine = {(r["from_node_id"], r["to_node_id"]): r for r in db.execute(
        "SELECT id, from_node_id, to_node_id, explanation, context FROM edges"
        " WHERE source = ? AND json_extract(context, '$.raha_db') = ?", (EDGE_SOURCE, db_key))}
    taken = {(r[0], r[1]) for r in db.execute("SELECT from_node_id, to_node_id FROM edges")}
    with db.transaction() as conn:
        for pair, row in mine.items():
            if pair not in desired:
                store.delete_edge(row["id"])
                report.edges_removed += 1
        for pair, (explanation, ctx, raha_id, created) in desired.items():
            report.edges_no_explanation += int(not explanation)
            row = mine.get(pair)
            if row is not None:
                context = json.loads(row["context"] or "{}")
                # Follow RA-H's change unless the explanation was edited in Cairn since the last import.
                if row["explanation"] != explanation and row["explanation"] == context.get("raha_explanation"):
                    store.update_edge(row["id"], explanation=explanation, allow_empty=True,
                                      context={"raha_explanation": explanation, "raha_context": ctx})
                    report.edges_updated += 1
                else:
                    report.edges_unchanged += 1
                continue
            if pair in taken:
                report.edges_already_linked += 1
                continue
            context = {"type": ctx.get("type") if isinstance(ctx.get("type"), str) else "related",
                       "raha_db": db_key, "raha_edge_id": raha_id, "raha_explanation": explanation}
            if isinstance(ctx.get("confidence"), (int, float)):
                context["confidence"] = ctx["confidence"]
            if ctx:
                context["raha_context"] = ctx  # whole, explanation included
            edge = store.add_edge(pair[0], pair[1], explanation, source=EDGE_SOURCE, context=context,
                                  allow_empty=True)
            if created:
                conn.execute("UPDATE edges SET created_at = ? WHERE id = ?", (created, edge["id"]))
            report.edges_created += 1
    report.edges = len(desired) - report.edges_already_linked
