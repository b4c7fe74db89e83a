"""Two devices sharing one vault through git (issue 23, item 6): real parts only.

One bare repository stands for the remote; clone A and clone B are the two devices' vaults, each kept in
step with its own Cairn database (a real SQLite file) by `TwoWaySync(store, clone).round()`, and carried
between devices by the real `git` command (commit, push, pull --no-rebase: git's own merge). Every
scenario ends with a sync on both sides and asserts convergence (both clones hold the same files, both
databases the same titles and texts, nothing left to commit) and that no edit was lost.

The vault's `.trash/` is committed like any other folder (no .gitignore): a note trashed on one device
then stays recoverable as a file on every device, which is what "never deleted" asks of the folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.graph.store import Store
from core.vault.conflicts import open_conflicts
from core.vault.twoway import RoundReport, TwoWaySync

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git command is not installed")

TOMATOES = """---
tags: [garden]
mood: sunny
---
# Tomatoes

Water them in the morning.

Feed them every two weeks.

Pick them when red.
"""
BASIL = "Basil likes warmth.\n"
ROADMAP = """---
title: Roadmap
status: draft
---
Ship the sync.

Then measure it.
"""
NOTES = {"Tomatoes.md": TOMATOES, "Basil.md": BASIL, "Projects/Roadmap.md": ROADMAP}

# No user or system configuration, no signing, no editor, no network: the same git on every machine.
GIT_CONFIG = ["-c", "user.name=Cairn Test", "-c", "user.email=test@cairn.invalid", "-c", "init.defaultBranch=main",
              "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "merge.conflictstyle=merge",
              "-c", "advice.detachedHead=false"]


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0",
               GIT_EDITOR="true", GIT_MERGE_AUTOEDIT="no", LC_ALL="C")
    done = subprocess.run(["git", *GIT_CONFIG, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


@dataclass
class Device:
    """One device: its clone of the vault and its Cairn database."""

    name: str
    clone: Path
    store: Store

    def sync(self) -> RoundReport:
        return TwoWaySync(self.store, self.clone).round()

    def commit(self, message: str) -> bool:
        """Commit everything in the folder (`.trash/` too); False when there was nothing to commit."""
        _git(self.clone, "add", "-A")
        if _git(self.clone, "diff", "--cached", "--quiet", check=False).returncode == 0:
            return False
        _git(self.clone, "commit", "-q", "-m", message)
        return True

    def push(self) -> None:
        _git(self.clone, "push", "-q", "origin", "main")

    def pull(self, check: bool = True) -> subprocess.CompletedProcess:
        return _git(self.clone, "pull", "--no-rebase", "--no-edit", "origin", "main", check=check)

    def node(self, title: str) -> dict:
        row = self.store.db.execute("SELECT id FROM nodes WHERE title = ?", (title,)).fetchone()
        assert row is not None, f"{self.name}: no note titled {title!r}"
        return self.store.get_node(row[0])

    def edit(self, title: str, old: str, new: str) -> None:
        """An edit made in Cairn (as the app, the CLI or the model would make it: through the store)."""
        node = self.node(title)
        assert old in node["source"], f"{self.name}: {old!r} is not in {title!r}"
        self.store.update_node(node["id"], source=node["source"].replace(old, new))

    def edit_file(self, rel: str, old: str, new: str) -> None:
        """An edit made in the folder itself (another editor on this device)."""
        path = self.clone / rel
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new), encoding="utf-8")

    def text(self, rel: str) -> str:
        return (self.clone / rel).read_text(encoding="utf-8")

    def notes(self) -> list[tuple[str, str]]:
        return [tuple(r) for r in self.store.db.execute("SELECT title, source FROM nodes ORDER BY title, source")]


@pytest.fixture
def devices(tmp_path):
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    a_clone, b_clone = tmp_path / "a", tmp_path / "b"
    _git(tmp_path, "clone", "-q", str(remote), str(a_clone))
    for rel, text in NOTES.items():
        (a_clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (a_clone / rel).write_text(text, encoding="utf-8")
    _git(a_clone, "add", "-A")
    _git(a_clone, "commit", "-q", "-m", "Three notes")
    _git(a_clone, "push", "-q", "-u", "origin", "HEAD:main")
    _git(tmp_path, "clone", "-q", "--branch", "main", str(remote), str(b_clone))
    a = Device("A", a_clone, Store(tmp_path / "a.db"))
    b = Device("B", b_clone, Store(tmp_path / "b.db"))
    try:
        for device in (a, b):
            first = device.sync()
            assert first.imported.created == len(NOTES) and first.written == [] and first.conflicts == []
        _converged(a, b)
        yield a, b
    finally:
        a.store.close()
        b.store.close()


def _files(clone: Path) -> dict[str, bytes]:
    return {p.relative_to(clone).as_posix(): p.read_bytes() for p in sorted(clone.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(clone).parts}


def _converged(a: Device, b: Device) -> None:
    """After the last sync on both sides: the same files, the same notes, nothing left to carry."""
    assert _files(a.clone) == _files(b.clone)
    assert a.notes() == b.notes()
    for device in (a, b):
        assert _git(device.clone, "status", "--porcelain").stdout == "", f"{device.name} has uncommitted changes"
        assert not [p for p in device.clone.rglob("*.cairn-tmp")], f"{device.name} has a temporary file left"
        assert open_conflicts(device.store) == []
    # the files are the notes: each device's note text is what its file says (the body, without frontmatter)
    assert {t for t, _ in a.notes()} == {"Tomatoes", "Basil", "Roadmap"} - _trashed_titles(a)


def _trashed_titles(device: Device) -> set[str]:
    return {item["title"] for item in device.store.trash()}


def test_an_edit_in_cairn_a_reaches_cairn_b_through_git(devices):
    a, b = devices
    a.edit("Tomatoes", "every two weeks", "every week")
    report = a.sync()
    assert report.written == ["Tomatoes.md"]
    assert "Feed them every week." in a.text("Tomatoes.md")
    assert a.text("Tomatoes.md").startswith("---\ntags: [garden]\nmood: sunny\n---\n")  # the user's frontmatter kept
    assert a.commit("Feed weekly")
    a.push()

    b.pull()
    assert "Feed them every week." in b.text("Tomatoes.md")
    report = b.sync()
    assert "Tomatoes.md" in report.imported.changed and report.written == [] and report.conflicts == []
    assert "Feed them every week." in b.node("Tomatoes")["source"]
    assert "every two weeks" not in b.node("Tomatoes")["source"]

    a.sync()  # the last sync on both sides: nothing more to do
    assert not a.commit("nothing") and not b.commit("nothing")
    _converged(a, b)


def test_edits_to_different_paragraphs_on_both_devices_are_merged_by_git_and_reach_both(devices):
    a, b = devices
    a.edit("Tomatoes", "in the morning", "at dawn")  # in Cairn A
    b.edit_file("Tomatoes.md", "when red", "when deep red")  # in clone B's file, by another editor
    assert a.sync().written == ["Tomatoes.md"]
    assert a.commit("Water at dawn")
    a.push()

    assert b.commit("Pick when deep red")
    b.pull()  # git's own merge of two changes apart: a merge commit, no conflict
    assert len(_git(b.clone, "rev-list", "--parents", "-n", "1", "HEAD").stdout.split()) == 3
    assert "<<<<<<<" not in b.text("Tomatoes.md")
    report = b.sync()
    assert report.conflicts == [] and report.written == []
    b.push()

    a.pull()
    a.sync()
    b.sync()
    for device in (a, b):
        text, source = device.text("Tomatoes.md"), device.node("Tomatoes")["source"]
        for edit in ("Water them at dawn.", "Pick them when deep red."):
            assert edit in text and edit in source, f"{device.name} lost {edit!r}"
        assert "in the morning" not in source and "when red." not in source
    assert not a.commit("nothing") and not b.commit("nothing")
    _converged(a, b)


def test_overlapping_edits_leave_git_conflict_markers_which_are_reported_not_imported(devices):
    a, b = devices
    a.edit("Tomatoes", "Water them in the morning.", "Water them at dawn.")  # in Cairn A
    b.edit("Tomatoes", "Water them in the morning.", "Water them in the evening.")  # in Cairn B, the same line
    assert a.sync().written == ["Tomatoes.md"]
    assert a.commit("Water at dawn")
    a.push()
    assert b.sync().written == ["Tomatoes.md"]  # B's edit goes to its file
    assert b.commit("Water in the evening")
    pulled = b.pull(check=False)
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    marked = b.text("Tomatoes.md")
    assert marked.count("<<<<<<<") == 1 and "Water them at dawn." in marked and "Water them in the evening." in marked

    report = b.sync()
    # The file is reported (named, with git's markers as the reason) ...
    assert [r for r, _ in report.held] == ["Tomatoes.md"] and report.conflicts == []
    # ... not imported as the note's text: Cairn B keeps its own edit until the merge is finished ...
    source = b.node("Tomatoes")["source"]
    assert "<<<<<<<" not in source and ">>>>>>>" not in source and "=======" not in source
    assert "Water them in the evening." in source
    # ... and the file, a merge in progress, is left as git made it (a second round too)
    assert b.text("Tomatoes.md") == marked
    b.sync()
    assert b.text("Tomatoes.md") == marked and "<<<<<<<" not in b.node("Tomatoes")["source"]

    # The user finishes the merge keeping both edits; it then flows like any edit of the file.
    (b.clone / "Tomatoes.md").write_text(TOMATOES.replace("Water them in the morning.",
                                                          "Water them at dawn or in the evening."), encoding="utf-8")
    _git(b.clone, "add", "-A")
    _git(b.clone, "commit", "-q", "--no-edit")
    report = b.sync()
    assert report.conflicts == []
    b.push()
    a.pull()
    a.sync()
    b.sync()
    for device in (a, b):
        assert "Water them at dawn or in the evening." in device.node("Tomatoes")["source"]
        assert "<<<<<<<" not in device.text("Tomatoes.md")
    assert not a.commit("nothing") and not b.commit("nothing")
    _converged(a, b)


def test_a_note_trashed_in_cairn_a_goes_to_the_trash_on_both_devices_never_deleted(devices):
    a, b = devices
    basil = a.node("Basil")
    a.store.delete_node(basil["id"])
    report = a.sync()
    assert report.trashed == [("Basil.md", ".trash/Basil.md")]
    assert not (a.clone / "Basil.md").exists() and a.text(".trash/Basil.md") == BASIL
    assert a.commit("Trash Basil")  # git carries .trash/ (not ignored): the file moves, it is not deleted
    a.push()

    b.pull()
    assert not (b.clone / "Basil.md").exists() and b.text(".trash/Basil.md") == BASIL
    report = b.sync()
    assert "Basil.md" in report.imported.trashed
    assert b.store.db.execute("SELECT count(*) FROM nodes WHERE title = 'Basil'").fetchone()[0] == 0
    assert [t["title"] for t in b.store.trash()] == ["Basil"]  # in Cairn B's trash, not deleted outright
    payload = b.store.db.execute("SELECT payload FROM trash").fetchone()[0]
    assert "Basil likes warmth." in payload

    a.sync()
    assert not a.commit("nothing") and not b.commit("nothing")
    assert _trashed_titles(a) == _trashed_titles(b) == {"Basil"}
    _converged(a, b)
    # nothing deleted outright: restored from Cairn B's trash, its text is whole
    restored = b.store.restore_node(b.store.trash()[0]["node_id"])
    assert restored["source"] == BASIL
