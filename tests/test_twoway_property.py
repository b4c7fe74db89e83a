"""Random interleavings of edits on two replicas, a markdown folder and a Cairn database, kept in step by
`TwoWaySync(store, folder).round(create_new=True)` (issue 23, item 6: the property part).

Hypothesis draws a list of operations; each runs against real parts (a Store on a real SQLite file, real
files in a temp folder, the real round):

- in Cairn: append a line to a note's text, replace a line, insert a line (`store.update_node`); make a
  note (`store.add_node`); trash a note (`store.delete_node`); restore a trashed one (`store.restore_node`);
- in the folder: append / replace / insert a line of a file's body (its frontmatter left alone); make a
  new `.md` file; rename a file; move a file into the vault's `.trash/` (Obsidian's delete); remove a
  file outright (`rm`);
- edges in Cairn: link two notes, remove an edge (`cairn_edges` in the files);
- a sync round, of a new TwoWaySync (`cairn sync`) or of one kept between rounds (a watcher's: a whole
  round, or one for file events, given the paths changed since its last round, as inotify names them); the
  write-back a command runs when it ends (`TwoWaySync.write_back` of a new one), and a watcher's when the
  database alone changed (of the kept one, which looks only at the notes written since its last pass);
- `same_ms`: the next operation happens in the same millisecond as the one before (see the clock below).

Every edit writes a token of its own (`tok-N`) on a line of its own: each line holds one token, and a lost
edit is a missing token.

The model. A token is *deliberately removed* only
- by an edit that replaces the line holding it, in the replica where the edit is made (Cairn's text or
  the file's body: the user saw the token and typed over it), and
- by `rm` of a file, for the tokens that file held and Cairn did not know then (in no note's text and not
  in Cairn's trash: lines typed into a file and deleted with it before any round saw them).
Nothing else removes a token: trashing (either side), restoring, renaming and rounds never may.

The properties:
(a) no edit is lost: after every round, and after the final ones, every token written and not
    deliberately removed is in a note's text, in a conflict file the store lists (`open_conflicts`), in
    Cairn's trash (a trashed node's text) or in a file under the vault's `.trash/`;
(b) convergence: once the edits stop, two more rounds leave every live node with a file of its own whose
    body (`read_note`) is the node's text and every note file with a live node; a third round then
    writes, merges, creates, trashes, restores and imports nothing.

The clock. Stamps (`core.clock.now`) come from a fake clock that moves one millisecond before each
operation, so a run does not depend on the machine's speed; `same_ms` keeps it still for the next one.

Failures this test found in the round's first version, fixed since and kept as regressions in
`test_each_failure_found_before_is_fixed` (the smallest interleaving of each):
  RENAME  a file renamed while its note has a Cairn edit not yet synced (either order): the import paired
          the new path with the node by the old content hash and overwrote the node with the file (now
          the Cairn edit is merged into the file where the import found it);
  TRASH   a note edited and then trashed in Cairn while its file is edited: the import restored the node
          from Cairn's trash and overwrote it with the file's text (now Cairn's version is kept as a
          conflict file first);
  SAME_MS a Cairn edit in the same millisecond as the last round's agreement: the round thought the node
          unchanged (now the agreement records the node's latest history id, exact where time is not).
Each was lost from every replica (only `cairn history` still had it). One more kept the replicas apart:
  CREATED a note made in Cairn kept the stand-in agreement of its file's creation until a round touched it;
          trashed, restored and edited, it reported a conflict that was none and stayed apart for good
          (now its agreement is recorded in the round that writes its file).
Found when the kinds grew a watcher's write-back (the draws changed):
  CLAIMED a note made in Cairn, its file written by another instance's round (`cairn sync` while the app
          watches): the watcher's importer, which remembers the folder, took the file for a new note, so
          two nodes had one file; a later round wrote one's text over the other's edit (now a path new
          to the importer is looked up in the database first). The convergence check now also asserts
          one note per file.
  WRITES_ONLY a watcher's write-back that found nothing written since its last pass returned before
          its mode was reset, so its later rounds skipped every note changed on both sides (left, as in
          a write-back, for "the next whole round") and the import wrote the file's text over Cairn's edit.
Found when the kinds grew a watcher's round for file events (the property test had only whole rounds):
  PAIRED  a note edited and trashed in Cairn, its file edited meanwhile, and another file deleted in the
          same events: the import took the edited file for the deleted one renamed (one file gone, one
          new: the watcher's pairing), so the trashed note stayed trashed and every later round kept
          Cairn's version as one more conflict file (now a file at a trashed note's path is that note's).
  RM_NEW  a file removed and another, different one made in the same events: the pairing took them for
          a rename and wrote the new file's text over the removed one's note (now a pair must share most
          of its lines; else the removed file's note goes to the trash and the new file is a new note).

The default run draws a few hundred interleavings; `make soak` runs more than 1,000 per property.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from core import clock
from core.graph.store import Store
from core.vault.parse import read_note
from core.vault.sync import CONFLICT_MARK
from core.vault.conflicts import open_conflicts
from core.vault.twoway import RoundReport, TwoWaySync

TOKEN = re.compile(r"tok-\d+")
# A note no operation touches: the folder never runs out of notes. An import that finds no note at all
# trashes nothing (an unmounted folder looks like that; core/vault/sync.py), by design, so without it
# an interleaving that removes every file would keep nodes whose files are gone.
ANCHOR, ANCHOR_TITLE = "anchor.md", "anchor"

KINDS = (
    "sync", "watched_sync",  # rounds come about as often as two edits: a `cairn sync`, or a watcher's round
    "write_back",  # what a command that changed notes runs when it ends (core/vault/write_back.py)
    "watched_write_back",  # a watcher's answer to a change of the database alone: its kept instance's write_back
    "watched_event_round",  # a watcher's round for file events: the kept instance, the paths changed since its last round
    "cairn_append", "cairn_replace", "cairn_insert", "cairn_new", "cairn_delete", "cairn_restore",
    "cairn_link", "cairn_unlink",
    "file_append", "file_replace", "file_insert", "file_new", "file_rename", "file_trash", "file_rm",
    "same_ms",
)
# (kind, which note or file: an index into the sorted ones, modulo; which line, modulo)
OPERATION = st.tuples(st.sampled_from(KINDS), st.integers(0, 40), st.integers(0, 40))
OPERATIONS = st.lists(OPERATION, min_size=6, max_size=30)
START = datetime(2030, 1, 1, tzinfo=timezone.utc)


@dataclass
class Replicas:
    """The folder, the database, and the model of which tokens must survive."""

    base: Path
    store: Store = field(init=False)
    root: Path = field(init=False)
    counter: int = 0
    ms: int = 0  # the fake clock
    still: bool = False  # the next operation in the same millisecond
    written: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)
    watcher: TwoWaySync | None = None  # the round kept between rounds (watched_sync)
    seen_files: dict[str, bytes] | None = None  # the folder as the kept round last left it (its events since)

    def __post_init__(self) -> None:
        self.root = self.base / "vault"
        self.root.mkdir()
        self.store = Store(self.base / "cairn.db")

    def close(self) -> None:
        self.store.close()

    def now(self) -> str:
        return (START + timedelta(milliseconds=self.ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    # -- tokens -----------------------------------------------------------------------------------
    def token(self) -> str:
        self.counter += 1
        tok = f"tok-{self.counter}"
        self.written.add(tok)
        return tok

    def drop(self, line: str) -> None:
        self.removed.update(TOKEN.findall(line))

    # -- what there is to act on ------------------------------------------------------------------
    def node_ids(self, *, anchor: bool = False) -> list[int]:
        return [r[0] for r in self.store.db.execute("SELECT id, title FROM nodes ORDER BY id")
                if anchor or r[1] != ANCHOR_TITLE]

    def trashed_ids(self) -> list[int]:
        return [r[0] for r in self.store.db.execute(
            "SELECT DISTINCT node_id FROM trash WHERE node_id NOT IN (SELECT id FROM nodes) ORDER BY node_id")]

    def note_files(self, *, anchor: bool = False) -> list[str]:
        """The note files of the folder (not .trash/, not conflict files), as paths in it."""
        found = []
        for path in self.root.rglob("*.md"):
            rel = path.relative_to(self.root).as_posix()
            if rel.split("/")[0].startswith(".") or CONFLICT_MARK in path.name or (rel == ANCHOR and not anchor):
                continue
            found.append(rel)
        return sorted(found)

    def node_of(self, rel: str) -> int | None:
        row = self.store.db.execute("SELECT id FROM nodes WHERE json_extract(metadata, '$.vault.path') = ?",
                                    (rel,)).fetchone()
        return row[0] if row else None

    def free_name(self, stem: str, folder: Path | None = None) -> Path:
        folder = folder or self.root
        n = 1
        while True:
            path = folder / (f"{stem}.md" if n == 1 else f"{stem} {n}.md")
            if not path.exists():
                return path
            n += 1

    # -- an edit of a list of lines ---------------------------------------------------------------
    def edit_lines(self, text: str, how: str, at: int) -> str:
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        tok = self.token() + "\n"
        if how == "append" or not lines:
            lines.append(tok)
        elif how == "replace":
            i = at % len(lines)
            self.drop(lines[i])
            lines[i] = tok
        else:  # insert
            lines.insert(at % (len(lines) + 1), tok)
        return "".join(lines)

    # -- the operations ---------------------------------------------------------------------------
    def apply(self, kind: str, a: int, b: int) -> None:
        if kind == "same_ms":
            self.still = True
            self.log.append(kind)
            return
        if not self.still:
            self.ms += 1
        self.still = False
        side, _, how = kind.partition("_")
        if kind == "sync":
            self.sync()
        elif kind == "watched_sync":
            self.sync(watched=True)
        elif kind == "watched_event_round":
            self.sync(watched=True, events=True)
        elif kind in ("write_back", "watched_write_back"):
            # a command's write-back is of a new TwoWaySync (it looks at every note's stamp); a watcher's is
            # of its kept one (it looks at the notes written since its last pass)
            report = (self.kept() if kind == "watched_write_back" else TwoWaySync(self.store, self.root)).write_back()
            self.log.append(f"{kind} written={report.written} created={report.created} trashed={report.trashed}")
        elif side == "cairn":
            self.cairn(kind, how, a, b)
        else:
            self.file(kind, how, a, b)

    def cairn(self, kind: str, how: str, a: int, b: int) -> None:
        ids = self.node_ids()
        if how in ("append", "replace", "insert") and ids:
            node = self.store.get_node(ids[a % len(ids)])
            self.store.update_node(node["id"], source=self.edit_lines(node["source"], how, b))
            self.log.append(f"{kind} node {node['id']} ({node['title']})")
        elif how == "new":
            title = f"c-{self.counter + 1}"
            node = self.store.add_node(title, self.token() + "\n")
            self.log.append(f"{kind} node {node['id']} ({title})")
        elif how == "delete" and ids:
            node_id = ids[a % len(ids)]
            self.store.delete_node(node_id)
            self.log.append(f"{kind} node {node_id}")
        elif how == "link" and len(ids) > 1:
            one, other = ids[a % len(ids)], ids[b % len(ids)]
            if one == other or self.store.db.execute("SELECT 1 FROM edges WHERE from_node_id = ? AND to_node_id = ?",
                                                     (one, other)).fetchone():
                return
            self.store.add_edge(one, other, f"edge {self.counter}")
            self.log.append(f"{kind} {one} -> {other}")
        elif how == "unlink":
            edges = [r[0] for r in self.store.db.execute("SELECT id FROM edges ORDER BY id")]
            if edges:
                edge_id = edges[a % len(edges)]
                self.store.delete_edge(edge_id)
                self.log.append(f"{kind} edge {edge_id}")
        elif how == "restore":
            gone = self.trashed_ids()
            if not gone:
                return
            node_id = gone[a % len(gone)]
            self.store.restore_node(node_id)
            self.log.append(f"{kind} node {node_id}")

    def file(self, kind: str, how: str, a: int, b: int) -> None:
        if how == "new":
            path = self.free_name(f"f-{self.counter + 1}")
            path.write_text(self.token() + "\n", encoding="utf-8")
            self.log.append(f"{kind} {path.name}")
            return
        files = self.note_files()
        if not files:
            return
        rel = files[a % len(files)]
        path = self.root / rel
        if how in ("append", "replace", "insert"):
            text = path.read_text(encoding="utf-8")
            body = read_note(path, rel).source
            assert text.endswith(body), (rel, text)
            head = text[: len(text) - len(body)]
            path.write_text(head + self.edit_lines(body, how, b), encoding="utf-8")
            self.log.append(f"{kind} {rel}")
        elif how == "rename":
            self.counter += 1
            new = self.free_name(f"r-{self.counter}")
            os.rename(path, new)
            self.log.append(f"{kind} {rel} -> {new.name}")
        elif how == "trash":
            (self.root / ".trash").mkdir(exist_ok=True)
            os.rename(path, self.free_name(path.stem, self.root / ".trash"))
            self.log.append(f"{kind} {rel}")
        elif how == "rm":
            known = self.cairn_tokens()
            self.removed.update(t for t in TOKEN.findall(path.read_text(encoding="utf-8")) if t not in known)
            path.unlink()
            self.log.append(f"{kind} {rel}")

    def kept(self) -> TwoWaySync:
        if self.watcher is None:
            self.watcher = TwoWaySync(self.store, self.root)
        return self.watcher

    def folder_files(self) -> dict[str, bytes]:
        return {p.relative_to(self.root).as_posix(): p.read_bytes() for p in self.root.rglob("*") if p.is_file()}

    def sync(self, watched: bool = False, events: bool = False) -> RoundReport:
        """A round: of a new TwoWaySync (as `cairn sync` makes), or of the one kept between rounds (as the
        watcher of the app and `cairn watch` keep it, with its importer's memory of the folder)."""
        if watched:
            # events: the paths a watcher's events name, every file added, changed or removed since the
            # kept round last ran (its own writes included, as inotify reports them)
            paths = None
            if events and self.seen_files is not None:
                now = self.folder_files()
                paths = {str(self.root / rel) for rel in set(now) | set(self.seen_files)
                         if now.get(rel) != self.seen_files.get(rel)}
            report = self.kept().round(create_new=True, paths=paths, pair_renames=paths is not None)
            self.seen_files = self.folder_files()
        else:
            report = TwoWaySync(self.store, self.root).round(create_new=True)
        done = {k: v for k, v in report.as_dict().items()
                if v and k in ("written", "merged", "conflicts", "trashed", "restored", "held", "created")}
        self.log.append(("watched event round" if events else "watched sync" if watched else "sync") + "".join(f" {k}={v}" for k, v in done.items()))
        return report

    # -- where tokens may be ----------------------------------------------------------------------
    def cairn_tokens(self) -> set[str]:
        """Tokens in Cairn: the notes' texts and the trashed nodes' texts."""
        found = set()
        for (source,) in self.store.db.execute("SELECT source FROM nodes"):
            found.update(TOKEN.findall(source))
        for (payload,) in self.store.db.execute("SELECT payload FROM trash"):
            found.update(TOKEN.findall(json.loads(payload)["node"]["source"]))
        return found

    def kept_tokens(self) -> set[str]:
        found = self.cairn_tokens()
        for conflict in open_conflicts(self.store):
            found.update(TOKEN.findall((self.root / conflict.conflict_rel).read_text(encoding="utf-8")))
        trash = self.root / ".trash"
        if trash.is_dir():
            for path in trash.rglob("*"):
                if path.is_file():
                    found.update(TOKEN.findall(path.read_text(encoding="utf-8")))
        return found

    def story(self) -> str:
        return "\n  ".join(self.log)

    # -- the properties ---------------------------------------------------------------------------
    def check_nothing_lost(self, when: str) -> None:
        lost = self.written - self.removed - self.kept_tokens()
        assert not lost, f"{when}: lost {sorted(lost, key=lambda t: int(t[4:]))} after:\n  {self.story()}"

    def check_converged(self) -> None:
        by_path = {}
        for node_id in self.node_ids(anchor=True):
            node = self.store.get_node(node_id)
            vault = (node.get("metadata") or {}).get("vault") or {}
            assert vault.get("root") == str(self.root.resolve()), \
                f"node {node_id} ({node['title']}) has no file after the final rounds:\n  {self.story()}"
            rel = vault["path"]
            path = self.root / rel
            assert path.is_file(), f"node {node_id}'s file {rel} is missing:\n  {self.story()}"
            body = read_note(path, rel).source
            assert body == node["source"], (
                f"node {node_id} ({rel}): the note's text {node['source']!r} is not its file's {body!r} after:"
                f"\n  {self.story()}")
            assert rel not in by_path, (
                f"nodes {by_path[rel]} and {node_id} are both the note of {rel} (one file, one note) after:\n  {self.story()}")
            by_path[rel] = node_id
        strays = sorted(set(self.note_files(anchor=True)) - set(by_path))
        assert not strays, f"files no live node has: {strays} after:\n  {self.story()}"
        self.ms += 1
        again = self.sync()
        quiet = (again.written, again.merged, again.conflicts, again.created, again.trashed, again.restored,
                 again.held, again.imported.changed, again.imported.trashed, again.imported.renamed)
        assert quiet == ([],) * 10 and again.imported.created == again.imported.updated == 0, (
            f"a round after convergence still did something: {again.as_dict()} after:\n  {self.story()}")


def run(base: Path, operations: list[tuple[str, int, int]], *, lost: bool, converge: bool,
        ) -> None:
    base = Path(tempfile.mkdtemp(dir=base))  # one folder and one database per interleaving
    replicas = Replicas(base)
    real_now = clock.now
    clock.now = replicas.now
    try:
        # A vault of two notes and the anchor, a note made in Cairn, agreed once: where the operations start.
        (replicas.root / "a.md").write_text(f"{replicas.token()}\n{replicas.token()}\n", encoding="utf-8")
        (replicas.root / "b.md").write_text(f"{replicas.token()}\n", encoding="utf-8")
        (replicas.root / ANCHOR).write_text(f"# {ANCHOR_TITLE}\n", encoding="utf-8")
        replicas.store.add_node("c-0", replicas.token() + "\n")
        replicas.apply("sync", 0, 0)
        for kind, a, b in operations:
            replicas.apply(kind, a, b)
            if kind in ("sync", "watched_sync", "watched_event_round") and lost:
                replicas.check_nothing_lost("after a round")
        replicas.apply("sync", 0, 0)
        replicas.apply("sync", 0, 0)
        if lost:
            replicas.check_nothing_lost("after the final rounds")
        if converge:
            replicas.check_converged()
    finally:
        clock.now = real_now
        replicas.close()
        shutil.rmtree(base, ignore_errors=True)


def _settings(examples: int, **more) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], **more)


DEFAULT, SOAK = 300, 1200  # interleavings per property
QUICK = [Phase.explicit, Phase.generate]  # an xfail's failure is known: no time spent shrinking it
# The smallest interleaving of each known failure (as Hypothesis and a shrink found them), after the
# opening round; nodes by index among c-0 (1), a (2), b (4); files among a.md, b.md, c-0.md.
SMALLEST = {
    "RENAME": ("lost", [("cairn_append", 0, 0), ("file_rename", 2, 0)]),
    "TRASH": ("lost", [("cairn_append", 0, 0), ("cairn_delete", 0, 0), ("file_append", 2, 0)]),
    "SAME_MS": ("lost", [("same_ms", 0, 0), ("cairn_append", 1, 0), ("file_append", 0, 0)]),
    "SAME_MS apart": ("converge", [("same_ms", 0, 0), ("cairn_append", 1, 0)]),
    "CREATED": ("converge", [("cairn_delete", 0, 0), ("sync", 0, 0), ("cairn_restore", 0, 0), ("cairn_append", 0, 0)]),
    "CLAIMED": ("lost", [("watched_sync", 0, 0), ("cairn_new", 0, 0), ("sync", 0, 0), ("watched_sync", 0, 0),
                         ("cairn_append", 3, 0), ("cairn_link", 3, 0)]),
    "CLAIMED once": ("converge", [("watched_sync", 0, 0), ("cairn_new", 0, 0), ("sync", 0, 0), ("watched_sync", 0, 0)]),
    "WRITES_ONLY": ("lost", [("watched_sync", 0, 0), ("watched_write_back", 0, 0), ("cairn_delete", 0, 0),
                             ("file_append", 0, 0), ("cairn_append", 0, 0), ("watched_sync", 0, 0)]),
    "RM_NEW": ("lost", [("watched_sync", 0, 0), ("file_new", 0, 0), ("file_rm", 0, 0), ("watched_event_round", 0, 0)]),
    "PAIRED": ("converge", [("watched_sync", 0, 0), ("cairn_append", 1, 0), ("cairn_delete", 1, 0), ("file_append", 0, 0),
                            ("file_new", 0, 0), ("file_trash", 1, 0), ("watched_event_round", 0, 0)]),
}


def _examples(prop: str):
    def add(test):
        for kind, operations in SMALLEST.values():
            if kind == prop:
                test = example(operations=operations)(test)
        return test
    return add


@_settings(DEFAULT)
@given(operations=OPERATIONS)
@_examples("lost")
def test_no_edit_is_lost(tmp_path, operations):
    run(tmp_path, operations, lost=True, converge=False)


@_settings(DEFAULT)
@given(operations=OPERATIONS)
@_examples("converge")
def test_the_replicas_converge_once_the_edits_stop(tmp_path, operations):
    run(tmp_path, operations, lost=False, converge=True)


@pytest.mark.parametrize("name", list(SMALLEST))
def test_each_failure_found_before_is_fixed(tmp_path, name):
    """The smallest interleavings of the losses this test found in the first version of the round
    (RENAME, TRASH, SAME_MS, CREATED: the module's doc), kept as regressions."""
    prop, operations = SMALLEST[name]
    run(tmp_path, operations, lost=prop == "lost", converge=prop == "converge")


@pytest.mark.soak
@_settings(SOAK)
@given(operations=OPERATIONS)
def test_soak_no_edit_is_lost(tmp_path, operations):
    run(tmp_path, operations, lost=True, converge=False)


@pytest.mark.soak
@_settings(SOAK)
@given(operations=OPERATIONS)
def test_soak_the_replicas_converge(tmp_path, operations):
    run(tmp_path, operations, lost=False, converge=True)
