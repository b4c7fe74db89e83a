"""A folder of markdown notes (an Obsidian-style vault) kept in step with the store.

Every note file (see core.vault.parse) outside hidden folders (`.obsidian`, `.git`, `.trash` ...)
is a node. Symbolic links never lead out of the folder: a linked note whose file lies outside it is
skipped and listed, a linked note inside it is imported once (under its own path when that is a
note path too), and linked folders are listed, not followed (see `VaultSync._scan`). `metadata.vault = {root, path, mtime, size, sha256, dimensions, fields}` records the file
the node came from, and which dimensions and fields the file provided: dimensions or a description
the user added in Cairn survive a change to the file. `metadata.aliases` and `metadata.frontmatter`
hold the file's aliases and its other frontmatter keys.

A note's links that resolve (see core.vault.resolve) become edges (source `vault`) whose explanation
names the link. A same-note `[[#Heading]]` is no edge; an embed of a non-markdown file (image, pdf ...)
is listed as an attachment, not as unresolved. Several links between the same two notes make one edge.

`VaultSync(store, folder).sync()` can run again and again (the watcher does): unchanged files are
not written, changed ones are updated, a moved file keeps its node (matched by content hash, or by
the `cairn_id` that `cairn export` writes), and the edges the importer made are reconciled with the
links now in the files. Edges made any other way are never touched. A VaultSync's first sync checks
every link and edge; the next ones (the watcher's) look only at the notes that changed and at the
notes whose links a change can make resolve differently (see `_refresh_links`).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from core.errors import CairnError, InvalidInput, NotFound
from core.graph import history, provenance
from core.graph.store import Store
from core.vault.parse import MAX_NOTE_BYTES, NOTE_SUFFIXES, Link, ParsedNote, Skip, cap, read_note
from core.vault.resolve import Resolver

BATCH_FILES = 500  # files written per transaction
# One file gone and one new in the same events are a rename (and edit) when they share at least this much
# of their text (difflib ratio); less is a delete and a new note.
RENAME_LIKENESS = 0.5
MAX_EXPLANATION = 300
EDGE_SOURCE = "vault"
RESCAN_MAX_PATHS = 200  # more changed paths than this in one batch: scan the whole folder instead
# A file whose mtime is this close to the sync (or after it) may be written again within the same mtime
# tick (Linux stamps files with a coarse clock; FAT keeps 2 s) with the same size: its stat looks
# unchanged then. Such a file is read again on the next sync instead of trusting its stat ("racily clean").
RACY_MTIME_NS = 2_000_000_000

Progress = Callable[[int, int], None]
OUTSIDE_FILE = "a link to a file outside the vault"
OUTSIDE_FOLDER = "a link to a folder outside the vault"
CONFLICT_MARK = "(conflict from Cairn "  # in the name of a file core/vault/twoway.py keeps for a conflict
CONFLICT_FILE = "Cairn's version of a note kept by a sync conflict (not a note; cairn sync lists it)"
SYNCTHING_COPY = ("a Syncthing conflict copy (not a note: compare it with its note, keep what you want in the "
                  "note, then delete it)")
GIT_MARKERS = ("git conflict markers (<<<<<<< … >>>>>>>): finish the merge in the file; the note keeps its "
               "text until then")
_GIT_CONFLICT = re.compile(r"^<{7}(?: |$).*?^={7}$.*?^>{7}(?: |$)", re.S | re.M)


def has_git_conflict(text: str) -> bool:
    """Whether a file holds an unfinished git merge (its conflict markers), which is no note's text."""
    return "<<<<<<<" in text and _GIT_CONFLICT.search(text) is not None


def inside(path: str, root: str) -> bool:
    """Whether `path` (resolved) is `root` (resolved) or lies under it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# -- what the sync keeps -------------------------------------------------------------------------
@dataclass
class NoteState:
    """What the sync remembers of a note file between runs."""

    node_id: int
    rel: str
    sha: str
    title: str
    aliases: list[str]
    size: int | None = None
    mtime_ns: int | None = None
    links: list[Link] | None = None  # None: not parsed in this session


@dataclass
class _NoteLinks:
    """A note's links as last resolved (VaultSync keeps one per note, to look again only at what changed)."""

    links: list[Link] | None  # the parsed links they came from (compared by identity)
    node_id: int
    title: str
    aliases: list[str]
    pairs: dict[tuple[int, int], str] = field(default_factory=dict)  # (from, to) → explanation
    deps: set[tuple[str, str]] = field(default_factory=set)  # the keys its links were looked up by
    counts: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)  # same-note, wiki, wiki resolved, md, md resolved
    unresolved: list[str] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)


# -- the report ---------------------------------------------------------------------------------
@dataclass
class SyncReport:
    folder: str
    files: int = 0  # markdown files found
    other_files: int = 0  # other files (attachments, settings): not notes
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    restored: int = 0  # brought back from the trash because their file is there
    renamed: list[tuple[str, str]] = field(default_factory=list)
    trashed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # files gone; their nodes kept (no --prune)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # paths created, updated, moved or restored
    added: list[str] = field(default_factory=list)  # paths whose node was created
    wikilinks: int = 0  # [[...]] and ![[...]] to other notes or attachments, outside code
    wikilinks_resolved: int = 0
    same_note_links: int = 0  # [[#Heading]]: no edge
    md_links: int = 0
    md_links_resolved: int = 0
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # (file, link as written)
    attachments: list[tuple[str, str]] = field(default_factory=list)
    edges: int = 0  # node pairs joined by the links now in the files
    edges_created: int = 0
    edges_updated: int = 0
    edges_removed: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for key in ("renamed", "skipped", "warnings", "unresolved", "attachments"):
            data[key] = [list(item) for item in data[key]]
        return data

    @property
    def changes(self) -> int:
        return (self.created + self.updated + self.restored + len(self.renamed) + len(self.trashed)
                + self.edges_created + self.edges_updated + self.edges_removed)


# -- sync ---------------------------------------------------------------------------------------
def vault_nodes(store: Store, root: str):
    return store.db.execute(
        "SELECT id, title, json_extract(metadata, '$.vault.path') AS path,"
        " json_extract(metadata, '$.vault.sha256') AS sha, json_extract(metadata, '$.aliases') AS aliases"
        " FROM nodes WHERE json_extract(metadata, '$.vault.root') = ? ORDER BY id",
        (root,),
    ).fetchall()


class VaultSync:
    """The database in step with one folder. Keep the object to sync again cheaply (the watcher does)."""

    def __init__(self, store: Store, folder: str | Path, *, max_bytes: int = MAX_NOTE_BYTES):
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise InvalidInput(f"{folder} is not a folder; give the folder that holds the markdown notes.")
        self.store = store
        self.root = root.resolve()
        self.root_key = str(self.root)
        self.max_bytes = max_bytes
        self.notes: dict[str, NoteState] = {}
        self.by_node: dict[int, str] = {}
        self.skipped: dict[str, tuple[tuple[int, int], str]] = {}
        self.other_files: set[str] = set()
        self.trashed_by_sha: dict[str, int] = {}  # nodes this object moved to the trash
        self.orphans: dict[str, list[tuple[int, str]]] = {}  # path → nodes of vault folders that are gone
        self.gone_roots: list[str] = []
        self.kept: dict[str, int] = {}  # path → node kept while its file was gone (no prune)
        self._trash_cache: dict[str, int] | None = None
        self._loaded = False
        # The last full scan, kept up to date by `sync(paths=...)`: note files → (size, mtime_ns).
        self._files: dict[str, tuple[int, int]] | None = None
        self._dirs: set[str] = set()
        self._other_count = 0
        self._folder_skips: list[tuple[str, str]] = []
        self.last_full_scan = 0.0  # time.monotonic() of it
        # Links as last resolved (see _refresh_links); None: resolve everything on the next sync.
        self._links: dict[str, _NoteLinks] | None = None
        self._resolver: Resolver | None = None
        self._resolver_files: set[str] = set()
        self._dependents: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._link_totals = [0] * 5
        self._edge_total = 0
        self._restored: set[int] = set()  # nodes this sync brought back from the trash
        self._touched: set[str] = set()  # paths whose NoteState was replaced, changed or removed
        self._reread: set[str] = set()  # paths to read on the next sync although their file looked the same
        self._complete = False  # the last sync went through
        self._listed: tuple[list, list] | None = None  # (unresolved, attachments) of every note, in path order

    # -- scanning ------------------------------------------------------------------------------
    def _scan(self, report: SyncReport) -> dict[str, tuple[int, int]]:
        files: dict[str, tuple[int, int]] = {}
        others: set[str] = set()

        def unreadable(exc: OSError) -> None:
            rel = os.path.relpath(exc.filename or "?", self.root).replace(os.sep, "/")
            report.skipped.append((rel + "/", f"folder unreadable ({exc.strerror or exc})"))

        dirs: set[str] = set()
        links: list[tuple[str, str]] = []  # (path, full path) of note files that are symbolic links
        for dirpath, dirnames, filenames in os.walk(self.root, onerror=unreadable):  # (links to folders not entered)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            base = os.path.relpath(dirpath, self.root)
            dirs.update(d if base == "." else f"{base}/{d}".replace(os.sep, "/") for d in dirnames)
            for name in dirnames:
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    rel = name if base == "." else f"{base}/{name}".replace(os.sep, "/")
                    target = os.path.realpath(full)
                    why = (f"a link to the folder {self._rel(target)}/ in the vault (links to folders are not followed)"
                           if inside(target, self.root_key) else OUTSIDE_FOLDER)
                    report.skipped.append((rel + "/", why))
            for name in filenames:
                if name.startswith("."):
                    continue
                rel = name if base == "." else f"{base}/{name}".replace(os.sep, "/")
                if not name.lower().endswith(NOTE_SUFFIXES):
                    others.add(name.lower())
                    report.other_files += 1
                    continue
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError as exc:
                    report.skipped.append((rel, f"unreadable ({exc.strerror or exc})"))
                    continue
                if stat.S_ISLNK(st.st_mode):
                    links.append((rel, os.path.join(dirpath, name)))
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                if CONFLICT_MARK in name:  # Cairn's version of a note kept by a sync conflict (core/vault/twoway.py)
                    report.skipped.append((rel, CONFLICT_FILE))
                    continue
                if ".sync-conflict-" in name:  # Syncthing's copy of a file changed on two devices at once
                    report.skipped.append((rel, SYNCTHING_COPY))
                    continue
                files[rel] = (st.st_size, st.st_mtime_ns)
        link_skips = self._linked_notes(links, files)
        report.skipped.extend(link_skips)
        self.other_files = others
        self._files, self._dirs, self._other_count = files, dirs, report.other_files
        self._folder_skips = [s for s in report.skipped if s[0].endswith("/")] + link_skips
        self.last_full_scan = time.monotonic()
        return files

    def _rel(self, target: str) -> str:
        return os.path.relpath(target, self.root_key).replace(os.sep, "/")

    def _linked_notes(self, links: list[tuple[str, str]], files: dict[str, tuple[int, int]]) -> list[tuple[str, str]]:
        """Add to `files` the linked notes that may be imported; returns the (path, why) of the others.
        A link whose file lies outside the folder is never followed; one to a note imported under its
        own path, or to a file another link already brings in, would import that file twice."""
        skipped: list[tuple[str, str]] = []
        taken: dict[str, str] = {}  # target → the link that brings it in
        for rel, full in sorted(links):
            target = os.path.realpath(full)
            if not inside(target, self.root_key):
                skipped.append((rel, OUTSIDE_FILE))
                continue
            target_rel = self._rel(target)
            if target_rel in files:
                skipped.append((rel, f"a link to {target_rel}, which is imported itself"))
                continue
            if target in taken:
                skipped.append((rel, f"a link to {target_rel}, which is imported through {taken[target]}"))
                continue
            try:
                st = os.stat(full)
            except OSError as exc:
                skipped.append((rel, f"unreadable ({exc.strerror or exc})"))
                continue
            if stat.S_ISREG(st.st_mode):
                taken[target] = rel
                files[rel] = (st.st_size, st.st_mtime_ns)
        return skipped

    def _rescan(self, paths: Iterable[str]) -> set[str] | None:
        """The last full scan (self._files) brought up to date by looking only at `paths` (the
        file-system events' paths); returns the note paths looked at, or None when only a full scan
        will do: no scan yet, too many paths, a folder or a non-note file among them (a folder moves
        a whole subtree; an attachment's name changes how links resolve), a path that is gone, a
        path outside the folder or under a symlinked folder (the full scan does not follow those), a
        symbolic link (the full scan decides where it leads).
        So an edit or an editor's save (write in place, or write a temp file and rename it over the
        note) is a stat or two; a new note as well; a delete or a move scans the whole folder."""
        paths = list(paths)
        if self._files is None or len(paths) > RESCAN_MAX_PATHS:
            return None
        found: dict[str, tuple[int, int]] = {}
        for path in paths:
            rel = os.path.relpath(path, self.root_key)
            parts = rel.split(os.sep)
            if rel == "." or parts[0] == ".." or os.path.isabs(rel):
                return None
            if any(p.startswith(".") for p in parts):
                continue  # hidden: never a note
            rel = "/".join(parts)
            if rel in self._dirs or not parts[-1].lower().endswith(NOTE_SUFFIXES):
                return None
            full = os.path.join(self.root_key, *parts)
            parent = os.path.dirname(full)
            if len(parts) > 1 and os.path.realpath(parent) != parent:
                return None
            try:
                st = os.lstat(full)
            except OSError:
                # Gone (or unreadable): maybe deleted, maybe moved to a path whose event is late or
                # lost (a file moved into a folder just made, before the watch on it was set up).
                # Only the whole folder tells a move (node and edges kept) from a delete.
                return None
            if not stat.S_ISREG(st.st_mode):  # a link too: only the full scan follows one, inside the folder
                return None
            found[rel] = (st.st_size, st.st_mtime_ns)
        self._files.update(found)
        return set(found)

    def _load(self) -> None:
        for row in vault_nodes(self.store, self.root_key):
            rel = row["path"]
            if not rel or rel in self.notes:
                continue
            aliases = json.loads(row["aliases"]) if row["aliases"] else []
            self.notes[rel] = NoteState(row["id"], rel, row["sha"] or "", row["title"],
                                        [a for a in aliases if isinstance(a, str)])
            self.by_node[row["id"]] = rel
        # Nodes of a vault folder that no longer exists: this folder may be it, moved or renamed.
        roots: dict[str, bool] = {}
        for row in self.store.db.execute(
            "SELECT id, json_extract(metadata, '$.vault.root') AS root, json_extract(metadata, '$.vault.path') AS path,"
            " json_extract(metadata, '$.vault.sha256') AS sha FROM nodes"
            " WHERE json_extract(metadata, '$.vault.root') IS NOT NULL AND json_extract(metadata, '$.vault.root') != ?",
            (self.root_key,),
        ):
            if row["root"] not in roots:
                roots[row["root"]] = os.path.isdir(str(row["root"]))
            if not roots[row["root"]] and row["path"]:
                self.orphans.setdefault(row["path"], []).append((row["id"], row["sha"]))
        self.gone_roots = sorted(root for root, exists in roots.items() if not exists)
        self._loaded = True

    def _claimed_elsewhere(self, rels: list[str]) -> None:
        """Files new to this importer but maybe not to the database: another connection may have claimed
        them since this importer loaded (a `cairn sync` or a command's write-back writing the file of a
        note made in Cairn while the app's watcher keeps its importer). Such a file is that note's, not a
        new note: what the database says is learnt before the files are read."""
        rows = self.store.db.execute(
            "SELECT id, title, json_extract(metadata, '$.vault.path') AS path,"
            " json_extract(metadata, '$.vault.sha256') AS sha, json_extract(metadata, '$.aliases') AS aliases"
            " FROM nodes WHERE json_extract(metadata, '$.vault.root') = ?"
            " AND json_extract(metadata, '$.vault.path') IN (SELECT value FROM json_each(?))",
            (self.root_key, json.dumps(rels))).fetchall()
        for row in rows:
            was = self.by_node.get(row["id"])
            if was is not None and was != row["path"]:
                self.notes.pop(was, None)  # moved by the other connection's round: the database says where
            aliases = json.loads(row["aliases"]) if row["aliases"] else []
            self.notes[row["path"]] = NoteState(row["id"], row["path"], row["sha"] or "", row["title"],
                                                [a for a in aliases if isinstance(a, str)])
            self.by_node[row["id"]] = row["path"]

    def _trash_by_path(self) -> dict[str, int]:
        rows = self.store.db.execute(
            "SELECT node_id, json_extract(payload, '$.node.metadata.vault.path') AS path FROM trash"
            " WHERE json_extract(payload, '$.node.metadata.vault.root') = ? ORDER BY id DESC",
            (self.root_key,),
        ).fetchall()
        found: dict[str, int] = {}
        for row in rows:
            if row["path"]:
                found.setdefault(row["path"], row["node_id"])
        return found

    # -- the sync ------------------------------------------------------------------------------
    def sync(self, progress: Progress | None = None, *, prune: bool = False, pair_renames: bool = False,
             prune_grace: float = 0.0, paths: Iterable[str] | None = None) -> SyncReport:
        """`_sync`, its writes recorded in the history as the import of each file (its links: of the
        vault)."""
        with history.acting_as(history.import_of(f"the vault {self.root.name}")):
            return self._sync(progress, prune=prune, pair_renames=pair_renames, prune_grace=prune_grace,
                              paths=paths)

    def _sync(self, progress: Progress | None = None, *, prune: bool = False, pair_renames: bool = False,
              prune_grace: float = 0.0, paths: Iterable[str] | None = None) -> SyncReport:
        """Bring the database in step with the folder.

        prune: move nodes whose file is gone to the trash (else they are kept and listed as missing).
        pair_renames: one file gone and one new file in the same run count as a rename even when the
        content changed too (the watcher sets it: that is what a rename-and-edit looks like).
        prune_grace: seconds to wait before trashing, so an editor's delete-then-write save is no delete.
        paths: the only paths that may have changed since the last sync (the watcher's events): only
        they are looked at, not the whole folder, when that is safe (see _rescan).

        Only the edges that can have changed are reconciled after the first sync: those of the notes
        that changed, and of the notes whose links are looked up by a name that now leads elsewhere
        (see _refresh_links). The first sync of a VaultSync (so every `cairn import`) checks them all."""
        started = time.monotonic()
        racy_after = time.time_ns() - RACY_MTIME_NS  # a file changed after this: its stat is not trusted
        report = SyncReport(folder=self.root_key)
        if not self.root.is_dir():
            raise InvalidInput(f"The folder {self.root} is gone; nothing was changed.")
        first = not self._loaded
        if first:
            self._load()
        # Only the paths given are looked at when the last sync went through (then every note is in
        # self._files and parsed, and only those paths can differ from it); else the whole folder.
        looked = self._rescan(paths) if paths is not None and not first and self._complete else None
        self._complete = False
        if looked is None:
            files = self._scan(report)
        else:
            files = self._files
            report.other_files = self._other_count
            report.skipped.extend(self._folder_skips)
        report.files = len(files)
        total = len(files)
        done = 0
        if progress:
            progress(0, total)

        if looked is None:
            missing = {rel: s for rel, s in self.notes.items() if rel not in files}
            consider = sorted(files)
        else:
            missing = {rel: self.notes[rel] for rel in looked if rel in self.notes and rel not in files}
            consider = sorted((looked | self._reread | self.skipped.keys()) & files.keys())
            report.unchanged += len(files) - len(consider)  # not named by an event: as they were
            done += len(files) - len(consider)
        self._reread = set()
        missing_by_sha: dict[str, list[str]] = defaultdict(list)
        for rel, s in missing.items():
            missing_by_sha[s.sha].append(rel)
        to_read = []
        for rel in consider:
            st = files[rel]
            state = self.notes.get(rel)
            if state is not None and state.links is not None and (state.size, state.mtime_ns) == st:
                report.unchanged += 1
                done += 1
                continue
            previous = self.skipped.get(rel)
            if previous and previous[0] == st:
                report.skipped.append((rel, previous[1]))
                done += 1
                continue
            to_read.append(rel)
        if progress and done:
            progress(done, total)
        new_paths = [rel for rel in to_read if rel not in self.notes]
        if new_paths and not first:
            self._claimed_elsewhere(new_paths)
            new_paths = [rel for rel in to_read if rel not in self.notes]
        self._trash_cache = None
        db_id = self.store.meta("db_id")
        self.skipped = {rel: v for rel, v in self.skipped.items() if rel in files}

        for start in range(0, len(to_read), BATCH_FILES):
            batch = to_read[start:start + BATCH_FILES]
            parsed: list[ParsedNote] = []
            for rel in batch:
                try:
                    # (again: the file may have been swapped for a link, or a folder on its path, since the scan)
                    if not inside(os.path.realpath(self.root / rel), self.root_key):
                        raise Skip(OUTSIDE_FILE)
                    note = read_note(self.root / rel, rel, self.max_bytes)
                    if has_git_conflict(note.source):
                        raise Skip(GIT_MARKERS)
                except Skip as exc:
                    self.skipped[rel] = (files[rel], str(exc))
                    report.skipped.append((rel, str(exc)))
                    done += 1
                    if progress:
                        progress(done, total)
                    continue
                self.skipped.pop(rel, None)
                parsed.append(note)
            current = {n["id"]: n for n in self.store.get_nodes(
                [self.notes[p.rel].node_id for p in parsed if p.rel in self.notes])}
            with self.store.db.transaction() as conn:
                for note in parsed:
                    conn.execute("SAVEPOINT vault_file")
                    try:
                        self._apply(note, current, files, missing, missing_by_sha, db_id, report,
                                    pair_renames and len(new_paths) == 1)
                        conn.execute("RELEASE vault_file")
                    except CairnError as exc:
                        conn.execute("ROLLBACK TO vault_file")
                        conn.execute("RELEASE vault_file")
                        report.skipped.append((note.rel, str(exc)))
                    state = self.notes.get(note.rel)
                    if note.mtime_ns >= racy_after and state is not None:
                        state.size = None  # maybe rewritten in the same mtime tick: read it next time
                        self._reread.add(note.rel)
                    for warning in note.warnings:
                        report.warnings.append((note.rel, warning))
                    done += 1
                    if progress:
                        progress(done, total)

        # Files gone: trash (prune) or keep and list.
        gone = [rel for rel in missing if rel in self.notes and rel not in files]
        if gone and prune and prune_grace > 0:
            time.sleep(prune_grace)
            back = [rel for rel in gone if (self.root / rel).is_file()]
            for rel in back:  # an editor's save in progress: read it on the next run
                self.notes[rel].size = None
                self._reread.add(rel)
                try:
                    st = os.stat(self.root / rel)
                    files[rel] = (st.st_size, st.st_mtime_ns)  # (files is the scan the next sync starts from)
                except OSError:
                    pass
            gone = [rel for rel in gone if rel not in back]
        if gone:
            if prune and not files:
                report.warnings.append(("", f"the folder has no notes now; {len(gone)} nodes were not moved to the trash"))
                prune = False
            with self.store.db.transaction():
                for rel in gone:
                    state = self.notes.pop(rel)
                    self._touched.add(rel)
                    self.by_node.pop(state.node_id, None)
                    if prune:
                        try:
                            with history.acting_as(history.import_of(rel)):
                                self.store.delete_node(state.node_id)
                        except CairnError:
                            continue  # already deleted in Cairn
                        self.trashed_by_sha[state.sha] = state.node_id
                        report.trashed.append(rel)
                    else:
                        self.kept[rel] = state.node_id
                        report.missing.append(rel)

        sources = self._refresh_links(full=first)
        if sources is not None and self._restored:
            # A node back from the trash brought its old edges, some from notes that did not change:
            # look at those notes' links again too.
            sources.update(self.by_node[r[0]] for r in self.store.db.execute(
                "SELECT from_node_id FROM edges WHERE to_node_id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(self._restored)),)) if r[0] in self.by_node)
        self._restored.clear()
        if sources is None or sources:
            try:
                self._reconcile_edges(report, sources)
            except BaseException:
                self._links = None  # the database may be behind: check every edge next time
                raise
        self._link_stats(report)
        self._complete = True
        report.seconds = round(time.monotonic() - started, 3)
        return report

    def _vault_meta(self, note: ParsedNote) -> dict:
        return {"root": self.root_key, "path": note.rel, "mtime": note.mtime_ns / 1e9, "size": note.size,
                "sha256": note.sha, "dimensions": note.dims, "fields": sorted(note.fields)}

    def _like(self, node_id: int, text: str) -> bool:
        """Whether a new file's text is the gone file's note renamed and edited (the watcher's pairing of
        one file gone with one new): most of the lines in common (difflib's ratio at least RENAME_LIKENESS).
        A file deleted while another, different one was made is no rename: the pairing wrote the new
        file's text over the deleted note's (found by the property test); now that note goes to the trash."""
        row = self.store.db.execute("SELECT source FROM nodes WHERE id = ?", (node_id,)).fetchone()
        if row is None:
            return False
        # by lines: two short notes of different words share most of their characters, not their lines
        matcher = difflib.SequenceMatcher(None, row[0].splitlines(), text.splitlines(), autojunk=False)
        return matcher.real_quick_ratio() >= RENAME_LIKENESS and matcher.quick_ratio() >= RENAME_LIKENESS \
            and matcher.ratio() >= RENAME_LIKENESS

    def _exists(self, node_id: int) -> bool:
        return self.store.db.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone() is not None

    def _claim(self, note: ParsedNote, files, missing, missing_by_sha, db_id, pair) -> tuple[int | None, str]:
        """The existing node a new path belongs to: (node_id, how) or (None, '')."""
        if note.cairn_id is not None and db_id and note.cairn_db == db_id:
            owner = self.by_node.get(note.cairn_id)
            if (owner is None or owner not in files) and self._exists(note.cairn_id):
                return note.cairn_id, "moved" if owner else "matched"
        kept = self.kept.pop(note.rel, None)  # its file was gone for a while, the node kept
        if kept is not None and kept not in self.by_node and self._exists(kept):
            return kept, "matched"
        for old in missing_by_sha.get(note.sha, []):
            if old in missing:
                return self.notes[old].node_id, "moved"
        if self._trash_cache is None:
            self._trash_cache = self._trash_by_path()
        if pair and len(missing) == 1 and note.rel not in self._trash_cache:
            # (a file at the path of a note trashed in Cairn is that note's, brought back below; it was taken
            # for another file renamed when one file was gone in the same events: two notes became one)
            old = next(iter(missing))
            if self._like(self.notes[old].node_id, note.source):
                return self.notes[old].node_id, "moved"
        orphans = self.orphans.get(note.rel, [])
        same = [o for o in orphans if o[1] == note.sha]
        if same or len(orphans) == 1:
            node_id = (same or orphans)[0][0]
            orphans.remove((same or orphans)[0])
            if self._exists(node_id):
                return node_id, "adopted"
        if self._trash_cache is None:
            self._trash_cache = self._trash_by_path()
        node_id = self.trashed_by_sha.pop(note.sha, None) or self._trash_cache.pop(note.rel, None)
        if node_id is not None:
            try:
                self.store.restore_node(node_id)
                return node_id, "restored"
            except CairnError:
                pass
        return None, ""

    def _apply(self, note: ParsedNote, current: dict, files, missing, missing_by_sha, db_id,
               report: SyncReport, pair: bool) -> bool:
        """Write one parsed file; True if anything in the graph changed."""
        state = self.notes.get(note.rel)
        node = current.get(state.node_id) if state else None
        how = ""
        if state is not None and node is None:  # deleted in Cairn meanwhile
            self.notes.pop(note.rel)
            self._touched.add(note.rel)
            self.by_node.pop(state.node_id, None)
            state = None
        if state is not None and node is not None and state.sha != note.sha \
                and ((node.get("metadata") or {}).get("vault") or {}).get("sha256") == note.sha:
            state.sha = note.sha  # Cairn wrote it in another process and recorded it as the node's own (core/vault/twoway.py)
        if state is not None and state.sha == note.sha:
            state.size, state.mtime_ns = note.size, note.mtime_ns
            fresh = state.links is None
            if fresh:  # (else the same bytes parse the same: nothing to look at again)
                state.links, state.title, state.aliases = note.links, note.title, note.aliases
                self._touched.add(note.rel)
            report.unchanged += 1
            return fresh
        if state is None:
            node_id, how = self._claim(note, files, missing, missing_by_sha, db_id, pair)
            if node_id is not None:
                node = self.store.get_node(node_id)
                old_rel = self.by_node.get(node_id)
                if old_rel is not None and old_rel != note.rel:
                    missing.pop(old_rel, None)
                    self.notes.pop(old_rel, None)
                    self._touched.add(old_rel)
                    report.renamed.append((old_rel, note.rel))
        if node is None:
            meta = {"vault": self._vault_meta(note)}
            if note.aliases:
                meta["aliases"] = note.aliases
            if note.extra:
                meta["frontmatter"] = note.extra
            with history.acting_as(history.import_of(note.rel)):
                node = self.store.add_node(
                    note.title, note.source, description=note.fields.get("description", ""),
                    link=note.fields.get("link"), event_date=note.fields.get("event_date"),
                    type=note.fields.get("type", "note"), dimensions=note.dims, metadata=meta,
                    origin=provenance.VAULT,
                )
            report.created += 1
            report.changed.append(note.rel)
            report.added.append(note.rel)
        else:
            before = node
            with history.acting_as(history.import_of(note.rel)):
                node = self.store.update_node(node["id"], origin=provenance.VAULT, **self._changes(node, note))
            # Whether the store wrote anything, told by the values: a moved updated_at missed a write in
            # the same tick of the clock as the node's last one (its millisecond stamp did not move).
            wrote = any(node.get(k) != v for k, v in before.items() if k != "updated_at")
            if how == "restored":
                report.restored += 1
                self._restored.add(node["id"])
            elif how == "moved":
                pass  # counted in renamed
            elif wrote:
                report.updated += 1
            else:
                report.unchanged += 1
            if how or wrote:
                report.changed.append(note.rel)
        self.notes[note.rel] = NoteState(node["id"], note.rel, note.sha, note.title, note.aliases, note.size,
                                         note.mtime_ns, note.links)
        self._touched.add(note.rel)
        self.by_node[node["id"]] = note.rel
        return True

    def _changes(self, node: dict, note: ParsedNote) -> dict:
        meta = dict(node.get("metadata") or {})
        old = meta.get("vault") or {}
        # A node that belongs to another folder which still exists (say, this folder is a `cairn export`
        # of it, matched by cairn_id): take the file's content, keep the node's own folder.
        keep_home = bool(old.get("root")) and old["root"] != self.root_key and os.path.isdir(str(old["root"]))
        old_dims = {d.lower() for d in old.get("dimensions", [])}
        mine = {d.lower() for d in note.dims}
        dims = note.dims + [d for d in node["dimensions"] if d.lower() not in old_dims and d.lower() not in mine]
        for key in ("aliases", "frontmatter"):
            meta.pop(key, None)
        if note.aliases:
            meta["aliases"] = note.aliases
        if note.extra:
            meta["frontmatter"] = note.extra
        meta["vault"] = old if keep_home else self._vault_meta(note)
        changes: dict[str, Any] = {"title": note.title, "source": note.source, "dimensions": dims, "metadata": meta}
        defaults = {"description": "", "link": None, "event_date": None, "type": "note"}
        for key, empty in defaults.items():
            if key in note.fields:
                changes[key] = note.fields[key]
            elif key in old.get("fields", []):
                changes[key] = empty  # the file gave it before and no longer does
        return changes

    # -- edges ---------------------------------------------------------------------------------
    def _explain(self, link: Link, title: str) -> str:
        if link.kind == "edge":  # a `cairn_edges` entry: its explanation as written, empty too (an
            return cap(link.explanation, 10_000)  # export of an edge with none: "no explanation yet")
        short = cap(title, 120)
        if link.kind == "embed":
            text = f'Embeds {link.shown()} in "{short}"'
        elif link.kind == "property":
            text = f'Links to {link.shown()} in the "{link.prop}" property of "{short}"'
        else:
            text = f'Links to {link.shown()} in "{short}"'
        return cap(text, MAX_EXPLANATION)

    def _resolve_note(self, rel: str, state: NoteState) -> _NoteLinks:
        """One note's links resolved against the current notes: the edges they ask for, their counts."""
        entry = _NoteLinks(state.links, state.node_id, state.title, list(state.aliases))
        if state.links is None:
            return entry
        resolve = self._resolver.resolve
        same = wikilinks = wikilinks_resolved = md_links = md_links_resolved = 0
        desired: dict[tuple[int, int], str] = {}
        explicit: dict[tuple[int, int], str] = {}
        deps: set[tuple[str, str]] = set()
        for link in state.links:
            if not link.target:
                same += 1
                continue
            counts_wiki = link.kind in ("wiki", "embed", "property")
            if counts_wiki:
                wikilinks += 1
            elif link.kind == "md":
                md_links += 1
            kind, target = resolve(link.target, rel, deps)
            if kind == "attachment":
                entry.attachments.append(link.shown())
                continue
            if kind == "unresolved":
                entry.unresolved.append(link.shown())
                continue
            if counts_wiki:
                wikilinks_resolved += 1
            elif link.kind == "md":
                md_links_resolved += 1
            pair = (state.node_id, self.notes[target].node_id)
            if pair[0] == pair[1]:
                continue
            if link.kind == "edge":
                explicit.setdefault(pair, self._explain(link, state.title))
            else:
                desired.setdefault(pair, self._explain(link, state.title))
        desired.update(explicit)
        entry.pairs, entry.deps = desired, deps
        entry.counts = (same, wikilinks, wikilinks_resolved, md_links, md_links_resolved)
        return entry

    def _keep_links(self, rel: str, entry: _NoteLinks) -> None:
        self._links[rel] = entry
        for key in entry.deps:
            self._dependents[key].add(rel)
        self._link_totals = [a + b for a, b in zip(self._link_totals, entry.counts)]
        self._edge_total += len(entry.pairs)

    def _forget_links(self, rel: str) -> _NoteLinks | None:
        entry = self._links.pop(rel, None)
        if entry is not None:
            for key in entry.deps:
                waiting = self._dependents.get(key)
                if waiting is not None:
                    waiting.discard(rel)
                    if not waiting:
                        del self._dependents[key]
            self._link_totals = [a - b for a, b in zip(self._link_totals, entry.counts)]
            self._edge_total -= len(entry.pairs)
        return entry

    def _refresh_links(self, full: bool) -> set[str] | None:
        """Bring the resolved links in step with `self.notes`. Returns the notes whose outgoing edges
        may have changed, or None after resolving everything again (first sync, or after a failure).

        A note is looked at again when it changed itself (new links, title, aliases, node or path:
        `_touched`), or when one of the keys its links are looked up by (a file name, a title or
        alias, an attachment's name) now belongs to a different set of notes: a new note, a renamed
        one, a changed title or alias, a deleted one. Every other note's links resolve as before."""
        touched, self._touched = self._touched, set()
        if not (full or self._links is None):
            affected = self._refresh_some(touched)
            if len(self._links) == len(self.notes):
                return affected
        # Everything again (a count that does not add up would be a change this class did not see).
        self._resolver = Resolver(((rel, s.title, s.aliases) for rel, s in self.notes.items()),
                                  self.other_files)
        self._resolver_files = set(self.other_files)
        self._links, self._dependents = {}, defaultdict(set)
        self._link_totals, self._edge_total, self._listed = [0] * 5, 0, None
        for rel, state in self.notes.items():
            self._keep_links(rel, self._resolve_note(rel, state))
        return None

    def _refresh_some(self, touched: set[str]) -> set[str]:
        links, resolver = self._links, self._resolver
        changed: set[tuple[str, str]] = set()
        present = []
        for rel in touched:
            state, old = self.notes.get(rel), links.get(rel)
            if old is not None:
                if state is not None and old.links is state.links and old.node_id == state.node_id \
                        and old.title == state.title and old.aliases == state.aliases:
                    continue
                resolver.remove(rel, old.title, old.aliases)
                before = {(k, old.node_id) for k in Resolver.provides(rel, old.title, old.aliases)}
            else:
                before = set()
            if state is None:
                gone = self._forget_links(rel)
                if gone is not None and (gone.unresolved or gone.attachments):
                    self._listed = None
                now: set = set()
            else:
                resolver.add(rel, state.title, state.aliases)
                now = {(k, state.node_id) for k in Resolver.provides(rel, state.title, state.aliases)}
                present.append(rel)
            changed.update(k for k, _ in before ^ now)
        if self.other_files != self._resolver_files:
            changed.update(("file", name) for name in self.other_files ^ self._resolver_files)
            self._resolver_files = set(self.other_files)
        resolver.other_files = self.other_files
        affected = set(present)
        for key in changed:
            affected.update(self._dependents.get(key, ()))
        for rel in affected:
            old = self._forget_links(rel)
            new = self._resolve_note(rel, self.notes[rel])
            self._keep_links(rel, new)
            if (new.unresolved, new.attachments) != ((old.unresolved, old.attachments) if old else ([], [])):
                self._listed = None  # the report's folder-wide lists are made again
        return affected

    def _link_stats(self, report: SyncReport) -> None:
        """The folder-wide link counts of the report, from the resolved links."""
        (report.same_note_links, report.wikilinks, report.wikilinks_resolved, report.md_links,
         report.md_links_resolved) = self._link_totals
        report.edges = self._edge_total
        if self._listed is None:
            unresolved: list[tuple[str, str]] = []
            attachments: list[tuple[str, str]] = []
            for rel in sorted(rel for rel, e in self._links.items() if e.unresolved or e.attachments):
                entry = self._links[rel]
                unresolved.extend((rel, shown) for shown in entry.unresolved)
                attachments.extend((rel, shown) for shown in entry.attachments)
            self._listed = (unresolved, attachments)
        report.unresolved = list(self._listed[0])
        report.attachments = list(self._listed[1])

    def _reconcile_edges(self, report: SyncReport, sources: set[str] | None) -> None:
        """Make the importer's edges from `sources` (None: every note) what their links ask for."""
        rels = sorted(rel for rel in (self.notes if sources is None else sources)
                      if rel in self.notes and self.notes[rel].links is not None)
        if not rels:
            return
        desired: dict[tuple[int, int], str] = {}
        for rel in rels:
            for pair, explanation in self._links[rel].pairs.items():
                desired.setdefault(pair, explanation)
        parsed_ids = [self.notes[rel].node_id for rel in rels]
        db = self.store.db
        # The importer's edges: of this folder, or of a vault folder that is gone when this one took
        # over its notes (a moved vault); those are handed over to this folder.
        query = ("SELECT id, from_node_id, to_node_id, explanation, context, json_extract(context, '$.vault_root') AS root"
                 " FROM edges WHERE source = ? AND json_extract(context, '$.vault_root') IN (SELECT value FROM json_each(?))")
        params: tuple = (EDGE_SOURCE, json.dumps([self.root_key, *self.gone_roots]))
        if sources is not None:
            query += " AND from_node_id IN (SELECT value FROM json_each(?))"
            params += (json.dumps(parsed_ids),)
        mine = {(r["from_node_id"], r["to_node_id"]): r for r in db.execute(query, params)}
        taken = {(r[0], r[1]) for r in db.execute(
            "SELECT from_node_id, to_node_id FROM edges WHERE from_node_id IN (SELECT value FROM json_each(?))",
            (json.dumps(parsed_ids),))}
        parsed = set(parsed_ids)
        with db.transaction():
            for pair, row in mine.items():
                if pair[0] in parsed and pair not in desired:
                    self.store.delete_edge(row["id"])
                    report.edges_removed += 1
                elif pair[0] in parsed and row["root"] != self.root_key:
                    self.store.update_edge(row["id"], context={"vault_root": self.root_key})
            for pair, explanation in desired.items():
                row = mine.get(pair)
                if row is not None:
                    if row["explanation"] != explanation:
                        context = json.loads(row["context"] or "{}")
                        if row["explanation"] == context.get("vault_explanation"):  # not edited in Cairn
                            self.store.update_edge(row["id"], explanation=explanation,
                                                   context={"vault_explanation": explanation},
                                                   allow_empty=not explanation)
                            report.edges_updated += 1
                    continue
                if pair in taken:
                    continue  # an edge made another way already joins them: keep it as it is
                try:
                    self.store.add_edge(pair[0], pair[1], explanation, source=EDGE_SOURCE, allow_empty=not explanation, context={
                        "type": "link", "vault_root": self.root_key, "vault_explanation": explanation})
                except NotFound:
                    continue  # a node deleted in Cairn while its file stays: its file's next change re-creates it
                report.edges_created += 1


def import_vault(store: Store, folder: str | Path, progress: Progress | None = None, *, prune: bool = False,
                 max_bytes: int = MAX_NOTE_BYTES) -> SyncReport:
    """Import (or re-import) a folder of markdown notes; see the module docstring."""
    return VaultSync(store, folder, max_bytes=max_bytes).sync(progress, prune=prune)
