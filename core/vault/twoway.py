"""Cairn and a markdown folder as two replicas: one round of keeping them in step both ways (issue 23).

For each note of the vault Cairn keeps, in the database (`vault_notes`, migration 8), the version both
sides last agreed on: the file's text then (`base`) and a fingerprint of the node's fields then
(`node_fp`). Nothing of this goes into the files: other devices share them, and a field that differed
per device would make every sync a conflict. A round:

1. **Cairn → files.** A note whose node changed since the agreement while its file did not is written
   to its file (core/vault/note_file.py lays it out as the file had it; core/vault/atomic.py writes it
   whole or not at all). When both changed, the two edits are merged against the base
   (core/vault/threeway.py: the body by lines, the frontmatter field by field) and the result written;
   when they overlap, the file's version stays (in the file and, by the import below, in the note) and
   Cairn's whole version goes into a sibling file `Title (conflict from Cairn YYYY-MM-DD HHMM).md`,
   listed as a conflict until the user resolves it. A note moved to Cairn's trash moves its file into
   the vault's `.trash/` (never deleted).
2. **Files → Cairn**: the one-way import (core/vault/sync.py), which reads what changed. A file Cairn
   just wrote imports back as the same node (the layout round-trips), so nothing is imported twice.
3. **Agreement**: every note's file text and node fingerprint become the new base.

The first round of a vault imported before (no base yet) takes the import as the agreement: a file
unchanged since its import gets the node's later edits; a file changed since, whose node Cairn did not
change after the import, is imported; both changed is a conflict (nothing lost: Cairn's version goes
into the conflict file, the history keeps both).

Sync engines' leftovers: a file with git's conflict markers is held (neither read nor written) until the
merge is finished; Syncthing's `.sync-conflict-` copies and Cairn's own conflict files are no notes;
`.trash/` and editors' dot-files are never read.

Notes made in Cairn (not memories, not Cairn's built-in guide, not another vault's) get a file of their
own in the folder (`new_notes`, a sub-folder, or its top), named from the title as `cairn export` names
files, never over an existing one. The first time a database that already holds such notes is synced
with a folder, the round only lists them (`RoundReport.would_create`) unless `create_new` says yes;
once agreed, later notes follow without asking.

With `[vault] path` set, the app runs a round whenever the folder or the database changes
(core/vault/watch.py, `two_way`): a note saved in the app reaches its file in about 0.3 s at 10,000
notes (bench/twoway.py), the watcher's passes looking only at the notes written since its last one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from core import clock
from core.errors import InvalidInput
from core.graph import history
from core.graph.store import Store
from core.vault import threeway
from core.vault.atomic import move_to_trash, restore_from_trash, write_atomic
from core.vault.export import safe_name
from core.vault.note_file import render_note
from core.vault.parse import _FRONTMATTER, _yaml_load, parse_note, read_note
from core.vault.sync import CONFLICT_MARK, EDGE_SOURCE, GIT_MARKERS, NoteState, SyncReport, VaultSync, has_git_conflict



@dataclass
class RoundReport:
    folder: str
    written: list[str] = field(default_factory=list)  # notes whose Cairn edit went to their file
    merged: list[str] = field(default_factory=list)  # both sides changed, merged cleanly
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (note, the file holding Cairn's version)
    trashed: list[tuple[str, str]] = field(default_factory=list)  # (note, where it went in .trash/)
    restored: list[str] = field(default_factory=list)  # notes back from .trash/ (restored in Cairn)
    held: list[tuple[str, str]] = field(default_factory=list)  # (note, why it was left alone this round)
    created: list[str] = field(default_factory=list)  # new files for notes made in Cairn
    would_create: list[str] = field(default_factory=list)  # ... not written: the first time asks first
    imported: SyncReport | None = None

    def as_dict(self) -> dict:
        return {"folder": self.folder, "written": self.written, "merged": self.merged,
                "conflicts": [{"note": n, "conflict_file": c} for n, c in self.conflicts],
                "trashed": [{"note": n, "to": t} for n, t in self.trashed], "restored": self.restored,
                "held": [{"note": n, "why": w} for n, w in self.held], "created": self.created,
                "would_create": self.would_create,
                "imported": self.imported.as_dict() if self.imported else None}


def fingerprint(node: dict, edges: list[tuple[str, str]] = ()) -> str:
    """What of a node its file carries, hashed: a change to any of it is a change to write. `edges`: the
    ones its `cairn_edges` carries (TwoWaySync._file_edges)."""
    fields = [node["title"], node["description"], node["source"], node["link"], node["event_date"],
              node["type"], sorted(d.lower() for d in node["dimensions"]), sorted(map(list, edges))]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


class TwoWaySync:
    def __init__(self, store: Store, folder: str | Path):
        self.store = store
        self.root = Path(folder).expanduser().resolve()
        if not self.root.is_dir():
            raise InvalidInput(f"There is no folder at {self.root}; nothing was changed.")
        self.importer = VaultSync(store, self.root)
        self.root_key = self.importer.root_key
        self._touched: set[int] = set()  # node ids this round must record a new agreement for
        self._writes_only = False  # write_back(): Cairn's side only, nothing that needs the import
        self._reread: set[str] = set()
        self._seen: tuple[int, bool] | None = None  # (history id, new notes agreed) up to which Cairn's side is done
        self._forget_notes()

    # -- the round ----------------------------------------------------------------------------------
    def round(self, *, create_new: bool | None = None, new_notes: str = "", paths=None, pair_renames: bool = False,
              prune_grace: float = 0.0, actor: str | None = None, progress=None) -> RoundReport:
        """`create_new`: write files for the notes made in Cairn (None: only when this folder was agreed
        to before; True: now, and from now on; False: not). `new_notes`: the folder for them. `paths`,
        `pair_renames`, `prune_grace`: the import's (core/vault/sync.py), for a watcher's round. `actor`:
        who the history names for the round's changes (default: the import of the vault). `progress`: the
        import's (core/vault/sync.py Progress)."""
        report = RoundReport(folder=self.root_key)
        self._touched = set()
        self._reread: set[str] = set()  # files this round wrote that its import must read (merges, new links)
        self._moved: dict[int, tuple[dict, str]] = {}  # notes changed in Cairn whose file moved: (node, base)
        first_change = self._history_mark()
        only = self._event_scope(paths)  # (brings the remembered notes up to date for those it names)
        renew = self._forget_notes if only is None else lambda: self._refresh_notes(
            only | self._written_since(first_change))  # the import's changes are history rows too
        if only is None:
            self._forget_notes()
        with history.acting_as(actor or history.import_of(f"the vault {self.root.name}")):
            agreed = self._new_files(report, create_new, new_notes, only=only)
            if only is None or report.created:
                self._forget_notes()  # new notes have files now
            self._cairn_to_files(report, only=only)
            bases = self._states(only)  # as agreed before the import (each base read when asked for)
            if paths is not None:
                paths = set(paths) | self._reread
            report.imported = self.importer.sync(progress, prune=True, paths=paths, pair_renames=pair_renames,
                                                 prune_grace=prune_grace)
            renew()  # the import may have added, moved or removed notes
            self._edges_from_files(report, bases)
            self._merge_moved(report)
            renew()
            held = {rel for rel, _ in report.held}  # the import holds a file with git's markers too
            report.held += [(rel, why) for rel, why in report.imported.skipped if why == GIT_MARKERS and rel not in held]
            self._agree(report)
            self._label_conflicts(report, first_change)
            self._settle_conflicts()
        self._seen = (first_change, agreed)
        return report

    def _event_scope(self, paths) -> set[int] | None:
        """The notes a watcher's round for file events must look at on Cairn's side, or None for all.
        Cairn's side of a round can differ from the agreement only for a note written since the last pass
        (the history says which) or one whose file an event names (a note write_back left for a whole
        round: changed on both sides, its file moved or gone, all of which come as events). A round with
        no event paths (`cairn sync`, the watcher's start and its rescan every minute) looks at all: an
        event lost (an inotify overflow) is caught there. Without this a save's own file event cost a
        round of 0.5-0.8 s at 10,000 notes, and the next save waited for it."""
        if paths is None or self._seen is None or self._seen[1] != self._new_notes_agreed():
            return None
        only = self._written_since(self._seen[0])
        self._refresh_notes(only)
        by_rel = {rel: node_id for node_id, rel in self._vault_nodes().items()}
        for path in paths:
            try:
                rel = Path(path).resolve().relative_to(self.root).as_posix()
            except ValueError:
                continue
            if rel in by_rel:
                only.add(by_rel[rel])
        return only

    def write_back(self, *, new_notes: str = "") -> RoundReport:
        """Cairn's side of a round alone, for a command that just changed notes (core/vault/write_back.py)
        and for a watcher that saw the database change: a note changed in Cairn whose file did not change
        since the agreement is written, a note trashed or restored moves its file, a new note gets its
        file (once agreed to for this folder). Whatever needs the import (a file changed on both sides, a
        file moved) waits for the next whole round, which merges it; nothing is read back.

        An instance that already did a pass (a watcher's) looks only at the notes the history shows
        written since (every write of a node or edge is a history row, core/graph/history.py): a save
        costs a look at that note, not at the folder's 10,000. A fresh instance (a CLI command's) looks at
        every note's stamp once."""
        report = RoundReport(folder=self.root_key)
        self._touched, self._moved, self._reread = set(), {}, set()
        mark = self._history_mark()
        only = None
        if self._seen is not None and self._seen[1] == self._new_notes_agreed():  # new notes: the same answer as then
            only = self._written_since(self._seen[0])
            if not only:
                return report
            self._refresh_notes(only)
        else:
            self._forget_notes()
        self._writes_only = True  # (reset below, whatever happens: a round after this must merge)
        try:
            with history.acting_as(history.import_of(f"the vault {self.root.name}")):
                agreed = self._new_files(report, None, new_notes, only=only)
                if report.created:
                    self._forget_notes()
                self._cairn_to_files(report, only=only)
                self._agree(report)
        finally:
            self._writes_only = False
        self._seen = (mark, agreed)
        return report

    def _history_mark(self) -> int:
        """The id of the latest change (core/graph/history.py): what a later pass looks beyond."""
        return self.store.db.execute("SELECT coalesce(max(id), 0) FROM history").fetchone()[0]

    @property
    def _agreed_key(self) -> str:
        """The meta key recorded once new notes made in Cairn get files in this folder (tui/flows/vault_sync.py
        sets it on the user's yes)."""
        return f"vault_new_notes:{self.root_key}"

    def _new_notes_agreed(self) -> bool:
        return self.store.meta(self._agreed_key) is not None

    def _written_since(self, mark: int) -> set[int]:
        """The nodes written (their text, fields or edges: the history names the edge's source node) after
        the change `mark`."""
        return {r[0] for r in self.store.db.execute("SELECT DISTINCT node_id FROM history WHERE id > ?", (mark,))}

    def _refresh_notes(self, ids: set[int]) -> None:
        """The folder's notes as remembered (`_vault_nodes`, `_link_names`), brought up to date for the
        nodes `ids` alone: a node that got, moved or lost its file, or changed its title, is read again;
        the names [[links]] use are worked out again only when one of those changed."""
        if self._live is None:
            return  # read whole at the next need
        rows = self.store.db.execute(
            "SELECT id, title, CASE WHEN json_extract(metadata, '$.vault.root') = ?"
            " THEN json_extract(metadata, '$.vault.path') END AS rel FROM nodes"
            " WHERE id IN (SELECT value FROM json_each(?))", (self.root_key, json.dumps(sorted(ids)))).fetchall()
        now = {r["id"]: (r["rel"], r["title"]) for r in rows}
        for node_id in ids:
            rel, title = now.get(node_id, (None, None))
            if rel != self._live.get(node_id):
                if rel is None:
                    self._live.pop(node_id, None)
                else:
                    self._live[node_id] = rel
                self._names = None
            elif rel is not None and self._titles.get(node_id) != title:
                self._names = None

    def _recognise_own_write(self, node_id: int, rel: str, before: str, after: str) -> None:
        """A file write_back wrote: its content hash goes where the import looks (metadata.vault.sha256),
        so the next import knows it as the node's own text, not someone else's change. Only when the
        write changed nothing the import makes edges from (links, title, aliases): otherwise the import
        must read it to make them."""
        try:
            old, new = (parse_note(t.encode("utf-8", "surrogateescape"), rel) for t in (before, after))
        except Exception:  # core.vault.parse.Skip and kin: the import reads it and says why
            return
        if (old.links, old.title, old.aliases) != (new.links, new.title, new.aliases):
            self._reread.add(str(self.root / rel))  # this round's import reads it (a watcher's names its paths)
            return
        with self.store.db.transaction() as conn:  # bookkeeping of the import, as vault_notes: not a change of the note
            conn.execute("UPDATE nodes SET metadata = json_set(metadata, '$.vault.sha256', ?) WHERE id = ?",
                         (new.sha, node_id))
        known = self.importer.notes.get(rel)
        if known is not None:  # a watcher's importer: the file event of this write finds it unchanged
            known.sha, known.size = new.sha, None  # (size None: read once more and compared by hash, never trusted by mtime)

    def _label_conflicts(self, report: RoundReport, first_change: int) -> None:
        """The history of a conflicted note says so: the import's change that put the file's version in
        the note holds Cairn's version as its `before` and the file's as its `after`; its actor names the
        conflict file, so `cairn history` shows both versions as what they are."""
        for rel, conflict_rel in report.conflicts:
            row = self.store.db.execute(
                "SELECT id FROM nodes WHERE json_extract(metadata, '$.vault.root') = ?"
                " AND json_extract(metadata, '$.vault.path') = ?", (self.root_key, rel)).fetchone()
            if row is None:
                continue
            with self.store.db.transaction() as conn:
                conn.execute(
                    "UPDATE history SET actor = actor || ? WHERE id = (SELECT max(id) FROM history WHERE node_id = ?"
                    " AND id > ? AND edge_id IS NULL AND action = 'update')",
                    (f" (sync conflict: this is the file's version; before it, Cairn's, also kept in {conflict_rel})",
                     row["id"], first_change))

    def _settle_conflicts(self) -> None:
        """A conflict whose file the user removed (having taken what they wanted from it) is resolved."""
        rows = self.store.db.execute("SELECT id, conflict_rel FROM vault_conflicts WHERE root = ? AND resolved_at IS NULL",
                                     (self.root_key,)).fetchall()
        gone = [r["id"] for r in rows if not (self.root / r["conflict_rel"]).exists()]
        if gone:
            with self.store.db.transaction() as conn:
                conn.executemany("UPDATE vault_conflicts SET resolved_at = ? WHERE id = ?",
                                 [(clock.now(), i) for i in gone])

    def _states(self, only: set[int] | None = None) -> dict[int, dict]:
        """Each note's agreement (of the nodes `only`, when given). A write Cairn began and a kill cut short
        of its agreement (`pending`, recorded before the write) is recognised by its text: that file is
        Cairn's own, not an edit."""
        columns = "SELECT node_id, rel, node_fp, node_updated, trashed, pending, pending_fp FROM vault_notes WHERE root = ?"
        if only is None:
            rows = self.store.db.execute(columns, (self.root_key,)).fetchall()
        else:
            rows = self.store.db.execute(columns + " AND node_id IN (SELECT value FROM json_each(?))",
                                         (self.root_key, json.dumps(sorted(only)))).fetchall()
        states = {r["node_id"]: _Agreement(r, self.store) for r in rows}
        finished = []
        for state in states.values():
            if state["pending"] is None:
                continue
            path = self.root / state["rel"]
            if path.is_file() and path.read_bytes().decode("utf-8", "surrogateescape") == state["pending"]:
                finished.append((state["node_id"], state["pending"]))
                state["base"], state["node_fp"], state["node_updated"] = state["pending"], state["pending_fp"], None
                state["pending"] = state["pending_fp"] = None
        if finished:
            # Agreed now, in the database too: this round may record its own next text as pending before
            # a second kill, and the file (still this text) would then match nothing Cairn remembers
            with self.store.db.transaction() as conn:
                conn.executemany("UPDATE vault_notes SET base = pending, node_fp = pending_fp, node_updated = NULL,"
                                 " pending = NULL, pending_fp = NULL WHERE node_id = ? AND pending = ?", finished)
        return states

    def _merge_moved(self, report: RoundReport) -> None:
        """A note changed in Cairn whose file was moved (or renamed) in the folder meanwhile: the import
        found it at its new path and took its text; Cairn's edit is merged into it there (or kept as a
        conflict), and the merged file imported again."""
        again = []
        for node_id, (before, base) in self._moved.items():
            now = self.store.db.execute("SELECT json_extract(metadata, '$.vault.path') FROM nodes WHERE id = ?",
                                        (node_id,)).fetchone()
            if now is None or now[0] is None or not (self.root / now[0]).is_file():
                continue  # really gone: the import trashed it (Cairn's version is in the trash)
            rel = now[0]
            theirs = (self.root / rel).read_bytes().decode("utf-8", "surrogateescape")
            edges = self._file_edges(node_id, base, rel)
            ours = render_note(before, existing_text=base, rel=rel, edges=edges)
            with self.store.db.transaction() as conn:
                conn.execute("UPDATE vault_notes SET rel = ? WHERE node_id = ?", (rel, node_id))
            self._merge(node_id, fingerprint(before, edges), rel, base, ours, theirs, report)
            self._touched.add(node_id)
            again.append(str(self.root / rel))
        if again:
            second = self.importer.sync(prune=True, paths=again)
            report.imported.changed += [r for r in second.changed if r not in report.imported.changed]

    # -- edges in the files -------------------------------------------------------------------------
    def _link_names(self) -> tuple[dict[int, str], dict[str, int]]:
        """({node id: the name a [[link]] to its file is written with}, {a name, lower case: node id}):
        the file name without `.md` where it is unique in the folder, else the path without it; a link
        by path, by name or by the note's title is read back."""
        if self._names is None:
            live = self._vault_nodes()
            def bare(rel: str) -> str:
                return rel[:-3] if rel.lower().endswith(".md") else rel
            stems: dict[str, int] = {}
            for rel in live.values():
                stem = bare(rel).rsplit("/", 1)[-1].lower()
                stems[stem] = stems.get(stem, 0) + 1
            name_of: dict[int, str] = {}
            lookup: dict[str, int] = {}
            for node_id, rel in sorted(live.items()):
                full = bare(rel)
                stem = full.rsplit("/", 1)[-1]
                name_of[node_id] = stem if stems[stem.lower()] == 1 else full
                lookup.setdefault(full.lower(), node_id)
                if stems[stem.lower()] == 1:
                    lookup.setdefault(stem.lower(), node_id)
            self._titles = {}
            for node_id, title in self.store.db.execute(
                    "SELECT id, title FROM nodes WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(live)),)):
                lookup.setdefault(title.lower(), node_id)
                self._titles[node_id] = title
            self._names = (name_of, lookup)
        return self._names

    def _edges_in(self, text: str | None, rel: str) -> dict[int, str]:
        """{target node id: explanation} of the `cairn_edges` entries of a file's text."""
        if not text:
            return {}
        try:
            note = parse_note(text.encode("utf-8", "surrogateescape"), rel)
        except Exception:  # core.vault.parse.Skip and kin: a file the import would not read has no edges
            return {}
        _, lookup = self._link_names()
        found: dict[int, str] = {}
        for link in note.links:
            if link.kind != "edge":
                continue
            target = link.target[:-3] if link.target.lower().endswith(".md") else link.target
            node_id = lookup.get(target.strip().lower())
            if node_id is not None:
                found.setdefault(node_id, link.explanation)
        return found

    def _carried(self, text: str | None, rel: str) -> list[tuple[str, str]]:
        """The edges a file's `cairn_edges` carries, named as _file_edges names them."""
        name_of, _ = self._link_names()
        return [(name_of[t], why) for t, why in self._edges_in(text, rel).items() if t in name_of]

    def _file_edges(self, node_id: int, text: str | None, rel: str) -> list[tuple[str, str]]:
        """The edges a note's `cairn_edges` carries: its outgoing edges to notes with a file in this
        folder, but not those the import made from a link in the file's body (those stay links). An
        entry already in the file (`text`) keeps its place; new ones follow in the order they were made."""
        name_of, _ = self._link_names()
        in_file = list(self._edges_in(text, rel))
        rows = self.store.db.execute(
            "SELECT id, to_node_id, explanation, source, json_extract(context, '$.vault_root') AS root FROM edges"
            " WHERE from_node_id = ? ORDER BY id", (node_id,)).fetchall()
        kept = [r for r in rows if r["to_node_id"] in name_of and not (
            r["source"] == EDGE_SOURCE and r["root"] == self.root_key and r["to_node_id"] not in in_file)]
        kept.sort(key=lambda r: (in_file.index(r["to_node_id"]) if r["to_node_id"] in in_file else len(in_file), r["id"]))
        return [(name_of[r["to_node_id"]], (r["explanation"] or "").strip()) for r in kept]

    def _edges_from_files(self, report: RoundReport, bases: dict[int, "_Agreement"]) -> None:
        """An entry removed from a file's `cairn_edges` (on another device, or by hand) removes the edge
        Cairn made; an explanation changed there changes it, unless Cairn changed it too. (The import
        keeps its own edges, from the entries it reads, in step itself.)"""
        if report.imported is None or not report.imported.changed:
            return
        by_rel = {rel: i for i, rel in self._vault_nodes().items()}
        for rel in report.imported.changed:
            node_id = by_rel.get(rel)
            base = bases[node_id]["base"] if node_id in bases else None
            path = self.root / rel
            if base is None or not path.is_file():
                continue
            before, now = self._edges_in(base, rel), self._edges_in(path.read_bytes().decode("utf-8", "surrogateescape"), rel)
            if before == now:
                continue
            for row in self.store.db.execute(
                    "SELECT id, to_node_id, explanation, source, json_extract(context, '$.vault_root') AS root"
                    " FROM edges WHERE from_node_id = ?", (node_id,)).fetchall():
                target = row["to_node_id"]
                if target not in before or (row["source"] == EDGE_SOURCE and row["root"] == self.root_key):
                    continue
                if target not in now:
                    self.store.delete_edge(row["id"])
                elif now[target] != before[target] and row["explanation"] == before[target]:
                    self.store.update_edge(row["id"], explanation=now[target], allow_empty=not now[target])
                self._touched.add(node_id)

    def _stamps(self, node_ids) -> dict[int, str]:
        """{node id: the id of its latest change} (core/graph/history.py records every write): exact where
        a millisecond `updated_at` is not (two writes in one millisecond)."""
        rows = self.store.db.execute(
            "SELECT n.id, (SELECT max(h.id) FROM history h WHERE h.node_id = n.id) FROM nodes n"
            " WHERE n.id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(node_ids)),)).fetchall()
        return {r[0]: str(r[1]) for r in rows}

    def _write(self, node_id: int, rel: str, text: str, node_fp: str) -> None:
        """Write a note's file, its text recorded first (`pending`), so a kill between the write and the
        round's agreement cannot make Cairn's own write look like someone else's edit."""
        with self.store.db.transaction() as conn:
            conn.execute("UPDATE vault_notes SET pending = ?, pending_fp = ? WHERE node_id = ?", (text, node_fp, node_id))
        write_atomic(self.root / rel, text)

    def _forget_notes(self) -> None:
        """Read the folder's notes again at the next need (after anything that adds, moves or removes one)."""
        self._live: dict[int, str] | None = None
        self._names = None  # how [[links]] name this folder's notes (_link_names)
        self._titles: dict[int, str] = {}  # the titles _names was worked out with

    def _vault_nodes(self) -> dict[int, str]:
        """{node id: its file's path} of the nodes this vault's import made (trashed ones not among them)."""
        if self._live is None:
            self._live = self._read_vault_nodes()
        return dict(self._live)

    def _read_vault_nodes(self) -> dict[int, str]:
        rows = self.store.db.execute(
            "SELECT id, json_extract(metadata, '$.vault.path') AS rel FROM nodes"
            " WHERE json_extract(metadata, '$.vault.root') = ?", (self.root_key,)).fetchall()
        return {r["id"]: r["rel"] for r in rows}

    def _cairn_to_files(self, report: RoundReport, only: set[int] | None = None) -> None:
        """Only the notes whose node changed since the agreement (or that have none yet) have their file
        read: a round with nothing changed in Cairn reads no file of its own (the import stats them).
        `only`: the nodes to look at (write_back's written since its last pass); None: all."""
        states = self._states(only)
        live = self._vault_nodes()
        if only is not None:
            live = {i: live[i] for i in only if i in live}
        stamps = self._stamps(live)
        # Only a node written since the agreement can differ from it: those are read whole and compared.
        maybe = [i for i in live if i in stamps and (i not in states or states[i]["node_updated"] != stamps[i])]
        nodes = {n["id"]: n for n in self.store.get_nodes(maybe)}
        restamp: list[tuple[str, int]] = []
        for node_id, rel in sorted(live.items()):
            state = states.get(node_id)
            node = nodes.get(node_id)
            if node is None:
                continue  # unchanged since the agreement (a restore is a change: its file is looked for below)
            edges = self._file_edges(node_id, state["base"] if state is not None else None, rel)
            node_changed = state is None or fingerprint(node, edges) != state["node_fp"]
            if not node_changed and stamps.get(node_id) != state["node_updated"]:
                restamp.append((stamps.get(node_id), node_id))  # written, but nothing its file carries changed
            path = self.root / rel
            if state is not None and not path.exists():
                back = self._restore_file(node_id, state, rel, report)
                if back is None and self._writes_only:
                    continue  # moved in the folder, or gone: the next whole round sees to it
                if back is None:
                    if node_changed:  # moved or renamed in the folder: merged where the import finds it
                        self._moved[node_id] = (node, state["base"])
                    continue  # gone from the folder: the import trashes the node (or lists it missing)
                rel, path = back, self.root / back
                self._touched.add(node_id)
            if not node_changed or not path.is_file():
                continue  # a change of the file alone is the import's
            file_text = path.read_bytes().decode("utf-8", "surrogateescape")
            if self._writes_only and (state is None or file_text != state["base"]):
                continue  # changed on both sides (or never agreed): merged by the next whole round
            self._touched.add(node_id)
            if has_git_conflict(file_text):
                report.held.append((rel, GIT_MARKERS))  # neither written nor read until the merge is done
                continue
            if state is None:
                self._first_round(node, rel, file_text, report)
                continue
            file_changed = file_text != state["base"]
            ours = render_note(node, existing_text=state["base"] if file_changed else file_text, rel=rel, edges=edges)
            if not file_changed:
                if ours != file_text:
                    self._write(node_id, rel, ours, fingerprint(node, edges))
                    report.written.append(rel)
                    self._recognise_own_write(node_id, rel, file_text, ours)
                continue
            self._merge(node_id, fingerprint(node, edges), rel, state["base"], ours, file_text, report)
        if restamp:
            with self.store.db.transaction() as conn:
                conn.executemany("UPDATE vault_notes SET node_updated = ? WHERE node_id = ?", restamp)
        # Notes trashed in Cairn: their files go to the vault's .trash/ (Obsidian's convention), never deleted.
        for node_id, state in sorted(states.items()):
            if node_id in live or state["trashed"] or not self._in_trash(node_id):
                continue
            path = self.root / state["rel"]
            if not path.is_file():
                continue
            if path.read_bytes().decode("utf-8", "surrogateescape") != state["base"]:
                if self._writes_only:
                    continue
                # edited in the folder meanwhile: the import brings it back rather than hide that edit; an
                # edit Cairn made before trashing it would then be overwritten: it is kept as a conflict
                trashed_node = self._trashed_version(node_id)
                if trashed_node is not None and fingerprint(trashed_node, self._carried(state["base"], state["rel"])) \
                        != state["node_fp"]:
                    self._conflict(state["rel"], render_note(trashed_node, existing_text=state["base"],
                                                             rel=state["rel"]), report)
                continue
            moved = move_to_trash(self.root, state["rel"])
            self.store.db.execute("UPDATE vault_notes SET trashed = ? WHERE node_id = ?", (moved, node_id))
            report.trashed.append((state["rel"], moved))

    def _restore_file(self, node_id: int, state: dict, rel: str, report: RoundReport) -> str | None:
        """A node restored in Cairn whose file is in the vault's .trash/ (moved there by a round, by
        Obsidian, or by a sync from another device): the file comes back too. Returns where it is now."""
        trashed = state["trashed"] or rel
        where = self.root / ".trash" / trashed if not state["trashed"] else self.root / trashed
        if not where.is_file() or not self._restored_since(node_id, state):
            return None
        back = restore_from_trash(self.root, str(where.relative_to(self.root)).replace("\\", "/"), rel)
        self.store.db.execute("UPDATE vault_notes SET trashed = NULL WHERE node_id = ?", (node_id,))
        report.restored.append(back)
        return back

    def _restored_since(self, node_id: int, state: dict) -> bool:
        """Whether the node's latest change is a restore from Cairn's trash."""
        if state["trashed"]:
            return True  # its file went to .trash/ in a round while the node was in Cairn's trash
        for change in history.changes(self.store.db, node_id, limit=20):
            if change.kind == "node":
                return change.action == "restore"
        return False

    def _new_files(self, report: RoundReport, create_new: bool | None, new_notes: str,
                   only: set[int] | None = None) -> bool:
        """Files for the notes made in Cairn (of the nodes `only`, when given); the node is claimed for its
        file as an import would. Returns whether new notes get files (agreed to for this folder) as it
        acted: a later write_back that finds the agreement changed looks at every note again."""
        agreed_key = self._agreed_key
        made_here = ("SELECT id FROM nodes WHERE json_type(metadata, '$.vault') IS NULL AND type != 'memory'"
                     " AND origin != 'cairn'")
        if only is None:
            rows = self.store.db.execute(made_here + " ORDER BY id").fetchall()
        else:
            rows = self.store.db.execute(made_here + " AND id IN (SELECT value FROM json_each(?)) ORDER BY id",
                                         (json.dumps(sorted(only)),)).fetchall()
        agreed = self.store.meta(agreed_key) is not None
        if not rows:
            if create_new is None and only is None and not agreed:
                self.store.set_meta(agreed_key, clock.now())  # nothing to ask about: later notes just follow
                agreed = True
            return agreed
        if create_new is False or (create_new is None and not agreed):
            report.would_create = [self.store.get_node(r["id"])["title"] for r in rows]
            return agreed
        self.store.set_meta(agreed_key, self.store.meta(agreed_key) or clock.now())
        folder = [p for p in new_notes.strip("/").split("/") if p] if new_notes else []
        begun = {r["node_id"]: dict(r) for r in self.store.db.execute(
            "SELECT node_id, rel, pending FROM vault_notes WHERE root = ? AND pending IS NOT NULL", (self.root_key,))}
        for node in self.store.get_nodes(r["id"] for r in rows):
            was = begun.get(node["id"])
            path = self.root / was["rel"] if was else None
            if was and path.is_file() and path.read_bytes().decode("utf-8", "surrogateescape") == was["pending"]:
                rel = was["rel"]  # written by a round a kill cut short: claimed now, not written twice
            else:
                rel = self._free_name(folder, safe_name(node["title"]))
                with self.store.db.transaction() as conn:  # recorded first (see _write)
                    conn.execute("INSERT INTO vault_notes(node_id, root, rel, base, node_fp) VALUES (?, ?, ?, '', '')"
                                 " ON CONFLICT(node_id) DO UPDATE SET rel = excluded.rel", (node["id"], self.root_key, rel))
                edges = self._file_edges(node["id"], None, rel)
                self._write(node["id"], rel, render_note(node, existing_text=None, rel=rel, edges=edges),
                            fingerprint(node, edges))
            note = read_note(self.root / rel, rel)
            meta = dict(node.get("metadata") or {})
            meta["vault"] = self.importer._vault_meta(note)
            self.store.update_node(node["id"], metadata=meta)
            if self.importer._loaded:  # a watcher's importer knows the folder already: tell it whose file this is
                self.importer.notes[rel] = NoteState(node["id"], rel, note.sha, note.title, list(note.aliases))
                self.importer.by_node[node["id"]] = rel
            self._touched.add(node["id"])  # its agreement is this file: recorded at the round's end
            report.created.append(rel)
        return True

    def _free_name(self, folder: list[str], stem: str) -> str:
        n = 1
        while True:
            name = f"{stem}.md" if n == 1 else f"{stem} {n}.md"
            rel = "/".join([*folder, name])
            if not (self.root / rel).exists():
                return rel
            n += 1

    def _first_round(self, node: dict, rel: str, file_text: str, report: RoundReport) -> None:
        """No agreement yet (a vault imported before two-way sync): the import is the agreement."""
        imported_sha = ((node.get("metadata") or {}).get("vault") or {}).get("sha256")
        file_changed = hashlib.sha256(file_text.encode("utf-8", "surrogateescape")).hexdigest() != imported_sha
        node_changed = self._changed_since_import(node["id"])
        if not node_changed:
            return  # the import brings any change of the file
        edges = self._file_edges(node["id"], file_text, rel)
        ours = render_note(node, existing_text=file_text, rel=rel, edges=edges)
        if not file_changed:
            if ours != file_text:
                with self.store.db.transaction() as conn:  # the import as the agreement, then the write (_write)
                    conn.execute("INSERT INTO vault_notes(node_id, root, rel, base, node_fp) VALUES (?, ?, ?, ?, '')",
                                 (node["id"], self.root_key, rel, file_text))
                self._write(node["id"], rel, ours, fingerprint(node, edges))
                report.written.append(rel)
            return
        self._conflict(rel, ours, report)  # no base to merge against: keep both, the file's in the note

    def _changed_since_import(self, node_id: int) -> bool:
        """Whether anyone but an import wrote the node after its last import (core/graph/history.py)."""
        for change in history.changes(self.store.db, node_id, limit=50):
            if change.kind == "node":
                return not change.actor.startswith("import of")
        return False

    def _merge(self, node_id: int, node_fp: str, rel: str, base: str, ours: str, theirs: str,
               report: RoundReport) -> None:
        b_front, b_body = _split(base)
        o_front, o_body = _split(ours)
        t_front, t_body = _split(theirs)
        body = threeway.merge_text(b_body, o_body, t_body)
        fields = threeway.merge_fields(_fields(b_front), _fields(o_front), _fields(t_front))
        if not body.clean or not fields.clean:
            self._conflict(rel, ours, report)
            return
        front = t_front if fields.fields == _fields(t_front) else _dump_front(fields.fields, theirs)
        merged = front + body.text
        if merged != theirs:
            self._write(node_id, rel, merged, node_fp)
            self._reread.add(str(self.root / rel))  # Cairn's part is in the file: the import brings the rest in
        report.merged.append(rel)

    def _conflict(self, rel: str, ours: str, report: RoundReport) -> None:
        """The file's version stays (the import puts it in the note); Cairn's goes whole into a sibling
        file, named so the import skips it, and a conflict entry lists it until it is resolved."""
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H%M")
        stem, dot, suffix = rel.rpartition(".")
        name = f"{stem} {CONFLICT_MARK}{stamp}).{suffix}" if dot else f"{rel} {CONFLICT_MARK}{stamp})"
        n = 2
        while (self.root / name).exists():
            name = f"{stem} {CONFLICT_MARK}{stamp}) {n}.{suffix}"
            n += 1
        with self.store.db.transaction() as conn:  # listed first: a kill then leaves an entry, not a stray file
            conn.execute("INSERT INTO vault_conflicts(root, rel, conflict_rel, created_at) VALUES (?, ?, ?, ?)",
                         (self.root_key, rel, name, clock.now()))
        write_atomic(self.root / name, ours)
        report.conflicts.append((rel, name))

    def _trashed_version(self, node_id: int) -> dict | None:
        """The node as it went into Cairn's trash (the latest time), in the node shape."""
        row = self.store.db.execute("SELECT payload FROM trash WHERE node_id = ? ORDER BY id DESC LIMIT 1",
                                    (node_id,)).fetchone()
        return json.loads(row[0])["node"] if row else None

    def _in_trash(self, node_id: int) -> bool:
        return self.store.db.execute("SELECT 1 FROM trash WHERE node_id = ? LIMIT 1", (node_id,)).fetchone() is not None

    def _agree(self, report: RoundReport) -> None:
        """After the import: the file and node as they are now are the new agreement, for every note this
        round touched (Cairn's change, a merge, a conflict, a restore, a first round) or the import
        changed; the others' agreement stands."""
        live = self._vault_nodes()
        changed = set(report.imported.changed) if report.imported else set()
        changed |= {new for _, new in report.imported.renamed} if report.imported else set()
        if changed:
            live = {i: rel for i, rel in live.items() if i in self._touched or rel in changed}
        else:
            live = {i: live[i] for i in self._touched if i in live}
        nodes = {n["id"]: n for n in self.store.get_nodes(live)}
        stamps = self._stamps(live)
        with self.store.db.transaction() as conn:
            for node_id, rel in live.items():
                path = self.root / rel
                if node_id not in nodes or not path.is_file():
                    continue
                text = path.read_bytes().decode("utf-8", "surrogateescape")
                if has_git_conflict(text):
                    continue  # no agreement with an unfinished merge: the last one stands
                # The agreement is the file as it is: when its cairn_edges lack an edge Cairn has (one to a
                # note whose file was made later in this round), no stamp, so the next round writes it.
                carried = self._carried(text, rel)
                stamp = stamps.get(node_id) if sorted(carried) == sorted(self._file_edges(node_id, text, rel)) else None
                conn.execute(
                    "INSERT INTO vault_notes(node_id, root, rel, base, node_fp, node_updated) VALUES (?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(node_id) DO UPDATE SET root = excluded.root, rel = excluded.rel,"
                    " base = excluded.base, node_fp = excluded.node_fp, node_updated = excluded.node_updated,"
                    " trashed = NULL, pending = NULL, pending_fp = NULL",
                    (node_id, self.root_key, rel, text, fingerprint(nodes[node_id], carried), stamp))


class _Agreement(dict):
    """A note's row of `vault_notes`; its `base` (the file's whole text) is read only when asked for: a
    round looks at the bases of the notes that changed, not of the whole folder."""

    def __init__(self, row, store: Store):
        super().__init__(dict(row))
        self._store = store

    def __missing__(self, key: str):
        if key != "base":
            raise KeyError(key)
        row = self._store.db.execute("SELECT base FROM vault_notes WHERE node_id = ?", (self["node_id"],)).fetchone()
        self["base"] = row[0] if row else ""
        return self["base"]


def _split(text: str) -> tuple[str, str]:
    """(its frontmatter block, its body), as the import reads them (core/vault/parse.py)."""
    m = _FRONTMATTER.match(text)
    return (m.group(0), text[m.end():]) if m else ("", text)


def _fields(front: str) -> dict:
    m = _FRONTMATTER.match(front)
    if not m:
        return {}
    try:
        loaded = _yaml_load(m.group(1))
    except Exception:  # yaml.YAMLError and kin, as the import treats them: the block is kept whole
        return {"\0unreadable": front}  # compared as a whole: any change to it on both sides conflicts
    return loaded if isinstance(loaded, dict) else {"\0unreadable": front}


def _dump_front(fields: dict, like: str) -> str:
    import yaml

    eol = "\r\n" if "\r\n" in like else "\n"
    head = yaml.safe_dump(fields, allow_unicode=True, sort_keys=False, default_flow_style=False, width=1_000_000)
    return f"---{eol}{head.replace(chr(10), eol)}---{eol}"
