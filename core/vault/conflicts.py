"""The conflicts a two-way round kept (core/vault/twoway.py), and resolving one.

A conflict is a note both sides changed where the changes overlapped: the file's version stayed in the
note and its file, Cairn's went whole into a sibling file `Title (conflict from Cairn YYYY-MM-DD
HHMM).md`. Until the user resolves it, `cairn sync`, `cairn doctor`, `cairn conflicts` and the app list
it. Resolving keeps one version: the file's (the conflict file goes to the vault's `.trash/`) or Cairn's
(its text becomes the note's file and the note, the file's version goes to `.trash/` beside it). Nothing
is deleted: the version not kept stays in `.trash/` and in the note's history. Deleting the conflict file
by hand also resolves it (the next round sees it gone).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from core import clock
from core.errors import InvalidInput, NotFound
from core.graph.store import Store
from core.vault.atomic import TRASH, move_to_trash, write_atomic

KEEP_CHOICES = ("file", "cairn")


@dataclass
class Conflict:
    id: int
    root: str
    rel: str  # the note's file, relative to the root
    conflict_rel: str  # the file holding Cairn's version
    created_at: str

    @property
    def note_path(self) -> Path:
        return Path(self.root) / self.rel

    @property
    def conflict_path(self) -> Path:
        return Path(self.root) / self.conflict_rel

    def as_dict(self) -> dict:
        return {"id": self.id, "root": self.root, "rel": self.rel, "conflict_rel": self.conflict_rel,
                "created_at": self.created_at}


@dataclass
class Versions:
    """Both versions of a conflicted note as they are on disk now (None: that file is gone)."""

    conflict: Conflict
    file_text: str | None
    cairn_text: str | None

    def diff(self) -> list[str]:
        """A unified diff from the file's version to Cairn's, line by line (no trailing newlines)."""
        return list(difflib.unified_diff(
            (self.file_text or "").splitlines(), (self.cairn_text or "").splitlines(),
            fromfile=f"{self.conflict.rel} (the file's version, in the note now)",
            tofile=f"{self.conflict.conflict_rel} (Cairn's version)", lineterm=""))


def open_conflicts(store: Store) -> list[Conflict]:
    """The conflicts a round kept and the user has not resolved yet, oldest first."""
    return [Conflict(**dict(r)) for r in store.db.execute(
        "SELECT id, root, rel, conflict_rel, created_at FROM vault_conflicts WHERE resolved_at IS NULL ORDER BY id")]


def get_conflict(store: Store, conflict_id: int) -> Conflict:
    row = store.db.execute("SELECT id, root, rel, conflict_rel, created_at, resolved_at FROM vault_conflicts"
                           " WHERE id = ?", (conflict_id,)).fetchone()
    if row is None:
        raise NotFound(f"There is no sync conflict {conflict_id} (cairn conflicts lists them).")
    if row["resolved_at"] is not None:
        raise InvalidInput(f"The sync conflict {conflict_id} ({row['rel']}) was resolved on {row['resolved_at'][:16]}.")
    return Conflict(**{k: row[k] for k in ("id", "root", "rel", "conflict_rel", "created_at")})


def versions(store: Store, conflict_id: int) -> Versions:
    conflict = get_conflict(store, conflict_id)
    return Versions(conflict, _read(conflict.note_path), _read(conflict.conflict_path))


def keep(store: Store, conflict_id: int, which: str) -> str:
    """Resolve a conflict by keeping one version (`file` or `cairn`); returns where the version not
    kept went (under the vault's `.trash/`), or "" when its file was already gone."""
    if which not in KEEP_CHOICES:
        raise InvalidInput(f"Keep which version: {' or '.join(KEEP_CHOICES)} (not {which!r}).")
    conflict = get_conflict(store, conflict_id)
    root = Path(conflict.root)
    if not root.is_dir():
        raise InvalidInput(f"The folder {root} of this conflict is not there; nothing was changed.")
    cairn_text = _read(conflict.conflict_path)
    if which == "file":
        away = move_to_trash(root, conflict.conflict_rel) if cairn_text is not None else ""
        _resolved(store, conflict.id)
        return away
    if cairn_text is None:
        raise InvalidInput(f"Cairn's version ({conflict.conflict_rel}) is no longer in the folder; nothing was "
                           "changed. The note's history still holds it (cairn history).")
    if not conflict.note_path.is_file():
        raise InvalidInput(f"The note's file {conflict.rel} is no longer in the folder (moved or deleted); nothing "
                           f"was changed. Cairn's version stays in {conflict.conflict_rel}.")
    from core.vault.twoway import TwoWaySync

    file_version = _read(conflict.note_path)
    away = _keep_a_copy(root, conflict.rel, file_version or "")
    write_atomic(conflict.note_path, cairn_text)
    TwoWaySync(store, root).round(paths=[str(conflict.note_path)],
                                  actor=f"resolving the sync conflict of {conflict.rel}: kept Cairn's version")
    move_to_trash(root, conflict.conflict_rel)
    _resolved(store, conflict.id)
    return away


def _keep_a_copy(root: Path, rel: str, text: str) -> str:
    """The file's version, written straight into the vault's .trash/ (never where an import would see
    it) before Cairn's replaces it; returns its path."""
    stem, dot, suffix = rel.rpartition(".")
    stamp = clock.now()[:16].replace(":", "").replace("T", " ")
    n = 1
    while True:
        extra = f" {n}" if n > 1 else ""
        name = f"{stem} (the file's version, replaced {stamp}){extra}.{suffix}" if dot else f"{rel} ({stamp}){extra}"
        copy = root / TRASH / name
        if not copy.exists():
            break
        n += 1
    write_atomic(copy, text)
    return f"{TRASH}/{name}"


def _resolved(store: Store, conflict_id: int) -> None:
    with store.db.transaction() as conn:
        conn.execute("UPDATE vault_conflicts SET resolved_at = ? WHERE id = ?", (clock.now(), conflict_id))


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None
