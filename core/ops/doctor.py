"""`cairn doctor`: check every surface of the index and, when asked, repair it.

Checks: SQLite's own integrity check, per surface (nodes, edges, search index, vectors, chunks,
history, chats: core.ops.salvage); who may read the database files and folder; chunks, chunk vectors
and node vectors whose node is gone; chunks or nodes missing their vectors; nodes whose vectors were
made from older text or another embedder (stale); FTS index integrity; nodes pending or in error; memory nodes past the user's
retention policy (core.graph.retention; only when a policy is set); the dictionary of fuzzy link
suggestions (core.assist.mentions: the embedder's tokenizer.json; reinstalling fixes it, `--repair` cannot).
Repair is explicit (`--repair`). On a damaged file every check that cannot read what it checks
becomes a finding instead of stopping the others, and the repair copies every readable row into a
fresh file (core.ops.salvage) before the other repairs run.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
from dataclasses import dataclass, field
from typing import Callable, Iterator

from core.errors import DatabaseError
from core.graph.db import sqlite
from core.graph.store import Store, content_hash


@dataclass
class Finding:
    check: str
    count: int
    detail: str
    repaired: bool = False

    def as_dict(self) -> dict:
        return {"check": self.check, "count": self.count, "detail": self.detail, "repaired": self.repaired}


# Problems `cairn doctor --repair` cannot fix; each one's detail says what to do instead.
NOT_REPAIRABLE = frozenset({"link_dictionary", "read_only", "log_file", "vault_conflicts"})


@dataclass
class DoctorReport:
    findings: list[Finding] = field(default_factory=list)
    reindexed: int = 0
    memory_removed: list[dict] = field(default_factory=list)  # what the retention policy moved to the trash
    damaged: dict[str, list[str]] = field(default_factory=dict)  # surface -> what SQLite found, before any repair
    salvage: object = None  # core.ops.salvage.Salvage when --repair copied a damaged file

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.count]

    @property
    def clean(self) -> bool:
        return not any(f.count and not f.repaired for f in self.findings)

    @property
    def repairable(self) -> list[Finding]:
        """Unrepaired problems that `--repair` can fix (not a damaged file or a missing dictionary)."""
        if any(f.check == "read_only" and f.count for f in self.findings):
            return []  # a repair writes: on a read-only database it can fix nothing
        return [f for f in self.findings if f.count and not f.repaired and f.check not in NOT_REPAIRABLE]

    def as_dict(self) -> dict:
        return {"clean": self.clean, "reindexed": self.reindexed, "findings": [f.as_dict() for f in self.findings],
                "memory_removed": self.memory_removed, "damaged": self.damaged,
                "salvage": self.salvage.as_dict() if self.salvage is not None else None}


def _fts_ok(store: Store, table: str) -> tuple[bool, str]:
    try:
        store.db.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        return True, ""
    except Exception as exc:  # FTS5 reports corruption as SQLITE_CORRUPT ("malformed")
        return False, str(exc)


def check(store: Store, *, repair: bool = False, embedder_name: str | None = None,
          reindex: Callable[[], int] | None = None, retention_policy=None,
          keep_versions: int | None = None) -> DoctorReport:
    """Run every check; with repair=True fix what is found. `reindex` runs the indexer, returns count.
    `retention_policy` (core.graph.retention.Policy) is the user's memory policy; None or inactive: no check.
    `keep_versions` is the history's bound ([history] keep_versions); None: no check."""
    report = DoctorReport()
    db = store.db
    add = report.findings.append

    damaged = _integrity(store, repair, report)
    _permissions(store, repair, report)
    guarded = functools.partial(_unless_damaged, report, damaged)

    orphan_sql = {
        "orphan_chunks": ("SELECT COUNT(*) FROM chunks WHERE node_id NOT IN (SELECT id FROM nodes)",
                          "DELETE FROM chunks WHERE node_id NOT IN (SELECT id FROM nodes)",
                          "chunks whose node was deleted"),
        "orphan_chunk_vectors": ("SELECT COUNT(*) FROM vec_chunks WHERE rowid NOT IN (SELECT id FROM chunks)",
                                 "DELETE FROM vec_chunks WHERE rowid NOT IN (SELECT id FROM chunks)",
                                 "chunk vectors without a chunk"),
        "orphan_node_vectors": ("SELECT COUNT(*) FROM vec_nodes WHERE rowid NOT IN (SELECT id FROM nodes)",
                                "DELETE FROM vec_nodes WHERE rowid NOT IN (SELECT id FROM nodes)",
                                "node vectors without a node"),
    }
    for name, (count_sql, fix_sql, what) in orphan_sql.items():
        with guarded(name):
            n = db.execute(count_sql).fetchone()[0]
            finding = Finding(name, n, f"{n} {what}")
            if n and repair:
                with db.transaction() as conn:
                    conn.execute(fix_sql)
                    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation'")
                finding.repaired = True
            add(finding)

    # Nodes whose index does not match their text: missing vectors, stale hash, other embedder.
    requeue: set[int] = set()
    with guarded("missing_vectors"):
        missing = {r[0] for r in db.execute(
            "SELECT DISTINCT c.node_id FROM chunks c WHERE c.id NOT IN (SELECT rowid FROM vec_chunks)"
            " UNION SELECT id FROM nodes WHERE chunk_status = 'indexed' AND id NOT IN (SELECT rowid FROM vec_nodes)")}
        add(Finding("missing_vectors", len(missing), f"{len(missing)} indexed nodes missing chunk or node vectors"))
        requeue |= missing

    with guarded("stale_vectors"):
        stale = set()
        for row in db.execute("SELECT id, title, description, source, content_hash FROM nodes WHERE chunk_status = 'indexed'"):
            if row["content_hash"] != content_hash(row["title"], row["description"], row["source"]):
                stale.add(row["id"])
        if embedder_name:
            stale |= {r[0] for r in db.execute(
                "SELECT DISTINCT node_id FROM chunks WHERE embedding_type != ?", (embedder_name,))}
        add(Finding("stale_vectors", len(stale), f"{len(stale)} nodes whose vectors were made from older text or another model"))
        requeue |= stale

    read_only = False
    for table in ("nodes_fts", "chunks_fts"):
        ok, message = _fts_ok(store, table)
        if not ok and "readonly" in message.lower():  # FTS5's integrity-check writes: not a mismatch
            read_only = True
            continue
        with guarded(f"{table}_integrity"):
            finding = Finding(f"{table}_integrity", 0 if ok else 1, "ok" if ok else f"{table} does not match its table: {message}")
            if not ok and repair:
                with db.transaction() as conn:
                    conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
                finding.repaired = _fts_ok(store, table)[0]
            add(finding)
    if read_only:
        add(Finding("read_only", 1, f"{store.path} is read-only, so the search-index checks (which write) were "
                                    "skipped and nothing can be repaired; make the file and its folder writable"))

    errors: list[int] = []
    with guarded("index_errors"):
        errors = [r[0] for r in db.execute("SELECT id FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'error'")]
        add(Finding("index_errors", len(errors), f"{len(errors)} nodes failed to index" + (
            f" (first: {errors[:5]})" if errors else "")))
    pending = 0
    with guarded("pending"):
        pending = db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'pending'").fetchone()[0]
        add(Finding("pending", pending, f"{pending} nodes waiting to be indexed (run `cairn index`)"))

    with guarded("memory_retention"):
        _retention(store, retention_policy, repair, report)
    with guarded("history_bound"):
        _history_bound(store, keep_versions, repair, report)
    _link_dictionary(report)
    _log_file(report)
    with guarded("vault_conflicts"):
        _vault_conflicts(store, report)

    if repair and not damaged:
        requeue |= set(errors)
        if requeue:
            with db.transaction() as conn:
                conn.executemany("UPDATE nodes SET chunk_status = 'pending', index_error = NULL WHERE id = ?",
                                 [(i,) for i in sorted(requeue)])
        if reindex is not None and (requeue or pending):
            report.reindexed = reindex()
        remaining_pending = db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'pending'").fetchone()[0]
        remaining_errors = db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'error'").fetchone()[0]
        for f in report.findings:
            if f.check in ("missing_vectors", "stale_vectors") and f.count:
                f.repaired = reindex is not None and remaining_pending == 0
            elif f.check == "pending" and f.count:
                f.repaired = remaining_pending == 0
            elif f.check == "index_errors" and f.count:
                f.repaired = remaining_errors == 0
    return report


def _integrity(store: Store, repair: bool, report: DoctorReport) -> bool:
    """SQLite's integrity check, per surface; with repair a damaged file is copied row by row into a
    fresh one (core.ops.salvage). True if the file is still damaged, so that checks which cannot read
    it report so instead of failing."""
    from core.ops import salvage

    report.damaged = salvage.damaged_surfaces(store.db.conn)
    if not report.damaged:
        report.findings.append(Finding("sqlite_integrity", 0, "ok"))
        return False
    damage = "the database file is damaged in: " + "; ".join(
        f"{surface} ({', '.join(found)})" for surface, found in report.damaged.items())
    finding = Finding("sqlite_integrity", len(report.damaged), damage + (
        " — `cairn doctor --repair` copies every row it can read into a fresh file, rebuilds the search index "
        "and re-indexes, and keeps the damaged file beside it"))
    report.findings.append(finding)
    if not repair:
        return True
    report.salvage = salvage.salvage(store.db, report.damaged)
    finding.repaired = not salvage.damaged_surfaces(store.db.conn)
    finding.detail = f"{damage}. The repair {report.salvage.summary()}"
    return not finding.repaired


@contextlib.contextmanager
def _unless_damaged(report: DoctorReport, damaged: bool, check: str) -> Iterator[None]:
    """On a damaged file, a check that cannot read what it checks becomes a finding (the others still
    run); on a sound one its error is raised as it is."""
    try:
        yield
    except (sqlite.DatabaseError, DatabaseError) as exc:
        if not damaged:
            raise
        report.findings.append(Finding(check, 1, f"not checked: {exc} (the file is damaged; see sqlite_integrity)"))


def _permissions(store: Store, repair: bool, report: DoctorReport) -> None:
    """The database, its -wal/-shm, the backups Cairn wrote beside it, and Cairn's data folder:
    readable by the user only (0600 files, a 0700 folder), as the config file is (core.config)."""
    from core import paths

    if os.name == "nt":
        return
    db = store.path
    name = glob.escape(db.name)
    files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"),
             *sorted(db.parent.glob(f"{name}.before-v*.bak")), *sorted(db.parent.glob(f"{name}.damaged-*")),
             *sorted(db.parent.glob(f"{glob.escape(db.stem)}-backup-*.db"))]
    open_files = [p for p in files if paths.readable_by_others(p)]
    folder = db.parent
    with contextlib.suppress(OSError):  # a folder that cannot be resolved is not Cairn's data folder
        if folder.resolve() != paths.data_dir().resolve():
            folder = None  # a --db elsewhere: the user's folder is theirs to set
    open_folder = folder is not None and paths.readable_by_others(folder)
    exposed = [f"{p} (mode {os.stat(p).st_mode & 0o777:04o})" for p in open_files]
    if open_folder:
        exposed.append(f"the folder {folder} (mode {os.stat(folder).st_mode & 0o777:04o})")
    if not exposed:
        report.findings.append(Finding("file_permissions", 0, "the database files are readable by you only"))
        return
    finding = Finding("file_permissions", len(exposed), "readable by other users: " + ", ".join(exposed) +
                      "; `cairn doctor --repair` makes the files 0600 and the folder 0700")
    if repair:
        for p in open_files:
            os.chmod(p, paths.PRIVATE_FILE)
        if open_folder:
            os.chmod(folder, paths.PRIVATE_FOLDER)
        finding.repaired = not any(map(paths.readable_by_others, [*open_files, *([folder] if open_folder else [])]))
    report.findings.append(finding)


def _vault_conflicts(store: Store, report: DoctorReport) -> None:
    """The notes a two-way sync kept both versions of (core/vault/twoway.py), until the user resolves them."""
    from core.vault.conflicts import open_conflicts

    found = open_conflicts(store)
    if not found:
        report.findings.append(Finding("vault_conflicts", 0, "no sync conflict waiting"))
        return
    report.findings.append(Finding("vault_conflicts", len(found), "; ".join(
        f"{c.rel}: Cairn's version is in {c.conflict_rel}" for c in found)
        + " — compare them with `cairn conflicts show ID`, keep one with `cairn conflicts keep ID file|cairn`"
        " (or the app's Sync conflicts), or delete the conflict file once you took what you want from it"))


def _log_file(report: DoctorReport) -> None:
    """Where errors and their tracebacks are written (core/logfile.py), and whether it can be."""
    from core import logfile

    path = logfile.log_path()
    problem = logfile.writable()
    report.findings.append(Finding("log_file", 0, f"errors are logged to {path}") if problem is None else Finding(
        "log_file", 1, f"cannot write the log file {path}: {problem}; errors are shown but not logged"))


def _link_dictionary(report: DoctorReport) -> None:
    """Fuzzy link suggestions tell real words from typos with the embedder's vocabulary; without it
    they take any near miss (core.assist.mentions, FUZZY RULE)."""
    from core.assist.mentions import dictionary_status

    words, problem = dictionary_status()
    if problem:
        report.findings.append(Finding(
            "link_dictionary", 1, f"{problem} Fuzzy link suggestions take real words one letter from a title "
            "word as typos until Cairn is reinstalled (make run)."))
    else:
        report.findings.append(Finding("link_dictionary", 0, f"{words} dictionary words for fuzzy link suggestions"))


def _history_bound(store: Store, keep_versions: int | None, repair: bool, report: DoctorReport) -> None:
    """Changes past the history's bound: counted, and with repair removed (the app and the MCP server
    remove them when they start)."""
    from core.graph import history

    if keep_versions is None:
        return
    if keep_versions == 0:
        report.findings.append(Finding("history_bound", 0, "every change is kept ([history] keep_versions = 0)"))
        return
    n = history.past_bound(store.db, keep_versions)
    finding = Finding("history_bound", n, f"{n} changes past the history's bound of {keep_versions} per node "
                      "([history] keep_versions)")
    if n and repair:
        history.prune(store.db, keep_versions)
        finding.repaired = True
    report.findings.append(finding)


def _retention(store: Store, policy, repair: bool, report: DoctorReport) -> None:
    """Memory nodes past the retention policy: counted, and with repair moved to the trash."""
    from core.graph import retention

    if policy is None or not policy.active:
        report.findings.append(Finding("memory_retention", 0, "no retention policy for memory nodes ([memory] in the config)"))
        return
    due = retention.plan(store, policy)
    finding = Finding("memory_retention", len(due),
                      f"{len(due)} memory nodes past the retention policy ({policy.describe()})")
    if due and repair:
        report.memory_removed = retention.apply(store, policy)
        finding.repaired = len(report.memory_removed) == len(due)
        finding.detail += f"; moved {len(report.memory_removed)} to the trash"
    report.findings.append(finding)
