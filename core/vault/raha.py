"""Import an RA-H OS database (its SQLite file, e.g. `rah.sqlite`) into the store.

RA-H's graph is `nodes`, `edges` and `chunks` (seeds/003: RA-H schema). Older installs kept
dimensions in `dimensions` + `node_dimensions` tables; newer ones keep them in `nodes.metadata`.
Both are read. Node text is `source` (older: `content`; a `notes` column is appended), edges keep
their direction and their explanation (the `explanation` column, else `context.explanation`).
RA-H's chunks and vectors are not copied: every imported node is `pending`, so Cairn chunks and
embeds it with its own embedder.

Re-importing is idempotent: each node remembers its RA-H id in `metadata.raha = {db, id, sha, ...}`;
unchanged nodes are not written, changed ones are updated, edges the importer made are reconciled.
The source file is opened read-only and never changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable

from core.graph.db import OperationalError, sqlite
from core.errors import CairnError, InvalidInput
from core.graph.store import MAX_DESCRIPTION, MAX_DIMENSION, MAX_SOURCE, MAX_TITLE, Store, title_from_text

SQLITE_HEADER = b"SQLite format 3\x00"
EDGE_SOURCE = "raha"
BATCH = 500
DEFAULT_EXPLANATION = "Related (imported from RA-H OS without an explanation)"

NODE_COLUMNS = ("id", "title", "description", "source", "content", "notes", "link", "url", "type", "metadata",
                "event_date", "created_at", "updated_at")
EDGE_COLUMNS = ("id", "from_node_id", "to_node_id", "explanation", "context", "source", "created_at")

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
    chunks: bool
    legacy_dimensions: bool
    tables: list[str]


def inspect(conn, path: Path) -> Shape:
    """The tables RA-H import needs, or an error saying why this is not an RA-H OS database."""
    tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
    nodes = _columns(conn, "nodes") if "nodes" in tables else []
    edges = _columns(conn, "edges") if "edges" in tables else []
    text_columns = {"source", "content", "description", "notes"}
    if not ({"id", "title"} <= set(nodes) and text_columns & set(nodes)
            and {"from_node_id", "to_node_id"} <= set(edges)):
        shown = ", ".join(t for t in tables if not t.startswith("sqlite_"))[:200] or "none"
        raise InvalidInput(
            f"{path} is a SQLite database but not an RA-H OS one (it needs tables nodes(id, title, source or "
            f"content) and edges(from_node_id, to_node_id); its tables: {shown}); nothing was imported."
        )
    legacy = "node_dimensions" in tables and "node_id" in _columns(conn, "node_dimensions")
    return Shape(nodes, edges, "chunks" in tables, legacy, tables)


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


def _event_date(value: Any) -> str | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        return date.fromisoformat(text[:10]).isoformat()
    except ValueError:
        stamp = _stamp(value)
        return stamp[:10] if stamp else None


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


def _dimensions(values) -> list[str]:
    out, seen = [], set()
    for v in values:
        if isinstance(v, dict):  # some exports keep {"name": ...}
            v = v.get("name") or v.get("dimension")
        if not isinstance(v, str):
            continue
        v = " ".join(_text(v).split()).lstrip("#")
        if v and len(v) <= MAX_DIMENSION and v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


def _legacy_dimensions(conn) -> dict[Any, list[str]]:
    """node id → dimension names from the legacy node_dimensions (+ dimensions) tables."""
    cols = _columns(conn, "node_dimensions")
    found: dict[Any, list[str]] = {}
    name_col = next((c for c in ("dimension", "dimension_name", "name") if c in cols), None)
    if name_col:
        rows = conn.execute(f'SELECT node_id, "{name_col}" FROM node_dimensions ORDER BY rowid')
    elif "dimension_id" in cols and "dimensions" in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}:
        dcols = _columns(conn, "dimensions")
        label = next((c for c in ("name", "dimension", "title") if c in dcols), None)
        key = "id" if "id" in dcols else "rowid"
        if not label:
            return found
        rows = conn.execute(f'SELECT nd.node_id, d."{label}" FROM node_dimensions nd JOIN dimensions d'
                            f' ON d."{key}" = nd.dimension_id ORDER BY nd.rowid')
    else:
        return found
    for node_id, name in rows:
        found.setdefault(node_id, []).append(name)
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
    dimensions_from: str = "none"  # metadata | legacy tables | both | none
    edges: int = 0
    edges_created: int = 0
    edges_updated: int = 0
    edges_removed: int = 0
    edges_skipped: int = 0  # dangling, self-links or duplicates of another pair
    seconds: float = 0.0

    def as_dict(self) -> dict:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["skipped"] = [list(s) for s in self.skipped]
        data["warnings"] = [list(s) for s in self.warnings]
        return data


def _node_fields(row, cols: set[str], legacy: dict, report: RahaReport) -> dict:
    rid = row["id"]
    meta = _json(row["metadata"]) if "metadata" in cols else None
    meta = meta if isinstance(meta, dict) else {}
    source = _text(row["source"]) if "source" in cols else ""
    if not source.strip() and "content" in cols:
        source = _text(row["content"])
    if "notes" in cols and _text(row["notes"]).strip() and _text(row["notes"]).strip() not in source:
        notes = _text(row["notes"]).strip()
        source = f"{source.rstrip()}\n\n## Notes\n\n{notes}\n" if source.strip() else notes
    if len(source) > MAX_SOURCE:
        raise InvalidInput(f"its text is {len(source):,} characters; the limit is {MAX_SOURCE:,}")
    title = " ".join(_text(row["title"]).split())
    if not title:
        title = title_from_text(source) if source.strip() else f"Untitled (RA-H node {rid})"
    if len(title) > MAX_TITLE:
        title = title[: MAX_TITLE - 1] + "…"
    description = _text(row["description"]) if "description" in cols else ""
    if len(description) > MAX_DESCRIPTION:
        report.warnings.append((f"node {rid}", f"description cut to {MAX_DESCRIPTION:,} characters"))
        description = description[: MAX_DESCRIPTION - 1] + "…"
    link = None
    for col in ("link", "url"):
        if col in cols and _text(row[col]).strip():
            link = _text(row[col]).strip()
            break
    node_type = "note"
    if "type" in cols and isinstance(row["type"], str) and 0 < len(row["type"].strip()) <= 32:
        node_type = row["type"].strip()
    dims = _dimensions([*(meta.get("dimensions") or [] if isinstance(meta.get("dimensions"), list) else []),
                        *legacy.get(rid, [])])
    other = {k: v for k, v in meta.items() if k != "dimensions"}
    return {
        "title": title, "description": description, "source": source, "link": link,
        "event_date": _event_date(row["event_date"]) if "event_date" in cols else None,
        "type": node_type, "dimensions": dims,
        "created_at": _stamp(row["created_at"]) if "created_at" in cols else None,
        "updated_at": _stamp(row["updated_at"]) if "updated_at" in cols else None,
        "other": other,
    }


def _fingerprint(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _explanation(row, cols: set[str]) -> tuple[str, dict]:
    context = _json(row["context"]) if "context" in cols else None
    ctx = context if isinstance(context, dict) else {}
    text = _text(row["explanation"]).strip() if "explanation" in cols else ""
    if not text:
        for key in ("explanation", "description", "reason"):
            if isinstance(ctx.get(key), str) and ctx[key].strip():
                text = ctx[key].strip()
                break
    if not text and isinstance(context, str) and context.strip():
        text = context.strip()
    return (_text(text)[:MAX_DESCRIPTION] or DEFAULT_EXPLANATION), ctx


def import_raha(store: Store, path: str | Path, progress: Progress | None = None) -> RahaReport:
    """Import (or re-import) an RA-H OS SQLite database; see the module docstring."""
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
        legacy = _legacy_dimensions(conn) if shape.legacy_dimensions else {}
        # Only the columns used: RA-H keeps a 6 KB embedding BLOB on every node row.
        rows = conn.execute(f"SELECT {_select(shape.nodes, NODE_COLUMNS)} FROM nodes ORDER BY id").fetchall()
        edge_cols = set(shape.edges) & set(EDGE_COLUMNS)
        edge_rows = conn.execute(
            f"SELECT {_select(shape.edges, EDGE_COLUMNS)} FROM edges ORDER BY "
            + ("id" if "id" in edge_cols else "rowid")).fetchall()
    except OperationalError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc}; nothing was imported.") from None
    finally:
        conn.close()

    in_meta = any(isinstance(_json(r["metadata"]), dict) and _json(r["metadata"]).get("dimensions")
                  for r in rows) if "metadata" in cols else False
    report.dimensions_from = {(True, True): "both", (True, False): "metadata", (False, True): "legacy tables",
                              (False, False): "none"}[(in_meta, bool(legacy))]
    existing = {}
    for r in store.db.execute(
        "SELECT id, json_extract(metadata, '$.raha.id') AS rid, json_extract(metadata, '$.raha.sha') AS sha"
        " FROM nodes WHERE json_extract(metadata, '$.raha.db') = ?", (db_key,)
    ):
        existing.setdefault(str(r["rid"]), (r["id"], r["sha"]))
    id_map: dict[str, int] = {}
    report.nodes = len(rows)
    if progress:
        progress(0, len(rows))
    seen: set[str] = set()
    for start in range(0, len(rows), BATCH):
        with store.db.transaction() as wconn:
            for row in rows[start:start + BATCH]:
                rid = str(row["id"])
                seen.add(rid)
                try:
                    fields = _node_fields(row, cols, legacy, report)
                except CairnError as exc:
                    report.skipped.append((f"node {rid}", str(exc)))
                    continue
                sha = _fingerprint(fields)
                raha = {"db": db_key, "id": row["id"], "sha": sha, "dimensions": fields["dimensions"]}
                if fields["other"]:
                    raha["metadata"] = fields["other"]
                wconn.execute("SAVEPOINT raha_node")
                try:
                    known = existing.get(rid)
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
                                          source=fields["source"], link=fields["link"],
                                          event_date=fields["event_date"], type=fields["type"],
                                          dimensions=dims, metadata=meta)
                        report.updated += 1
                    else:
                        node = store.add_node(fields["title"], fields["source"], description=fields["description"],
                                              link=fields["link"], event_date=fields["event_date"],
                                              type=fields["type"], dimensions=fields["dimensions"],
                                              metadata={"raha": raha})
                        created = fields["created_at"] or node["created_at"]
                        updated = fields["updated_at"] or created
                        wconn.execute("UPDATE nodes SET created_at = ?, updated_at = ? WHERE id = ?",
                                      (created, max(updated, created), node["id"]))
                        report.created += 1
                    wconn.execute("RELEASE raha_node")
                    id_map[rid] = node["id"]
                except CairnError as exc:
                    wconn.execute("ROLLBACK TO raha_node")
                    wconn.execute("RELEASE raha_node")
                    report.skipped.append((f"node {rid}", str(exc)))
        if progress:
            progress(min(start + BATCH, len(rows)), len(rows))
    report.gone = sum(1 for rid in existing if rid not in seen)

    desired: dict[tuple[int, int], tuple[str, dict, Any, Any]] = {}
    for row in edge_rows:
        a, b = id_map.get(str(row["from_node_id"])), id_map.get(str(row["to_node_id"]))
        if a is None or b is None or a == b or (a, b) in desired:
            report.edges_skipped += 1
            continue
        explanation, ctx = _explanation(row, edge_cols)
        desired[(a, b)] = (explanation, ctx, row["id"] if "id" in edge_cols else None,
                           _stamp(row["created_at"]) if "created_at" in edge_cols else None)
    report.edges = len(desired)
    _reconcile_edges(store, db_key, desired, report)
    report.seconds = round(time.monotonic() - started, 3)
    return report


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
            row = mine.get(pair)
            if row is not None:
                context = json.loads(row["context"] or "{}")
                if row["explanation"] != explanation and row["explanation"] == context.get("raha_explanation"):
                    store.update_edge(row["id"], explanation=explanation, context={"raha_explanation": explanation})
                    report.edges_updated += 1
                continue
            if pair in taken:
                continue
            context = {"type": ctx.get("type") if isinstance(ctx.get("type"), str) else "related",
                       "raha_db": db_key, "raha_edge_id": raha_id, "raha_explanation": explanation}
            if isinstance(ctx.get("confidence"), (int, float)):
                context["confidence"] = ctx["confidence"]
            extra = {k: v for k, v in ctx.items() if k not in ("type", "confidence", "explanation")}
            if extra:
                context["raha_context"] = extra
            edge = store.add_edge(pair[0], pair[1], explanation, source=EDGE_SOURCE, context=context)
            if created:
                conn.execute("UPDATE edges SET created_at = ? WHERE id = ?", (created, edge["id"]))
            report.edges_created += 1
