"""A new note written in $EDITOR: `cairn add --edit` (the real `cairn` process, a small Python script as
the editor) and N in the app (a Pilot test on a real database; the hand-off runs the script without
suspending, which Pilot cannot do). The file's reading rule is core/capture/editor_note.py's."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import InvalidInput
from tui.app import CairnApp
from tui.flows import external_editor
from tui.widgets.focus_panel import FocusPanel
from tui_support import settle, wait_for

# The editor: writes what $NOTE_TEXT says over the file (nothing when unset), records what it was
# handed in $HANDED_TO, and exits with $EDITOR_STATUS (0 when unset).
EDITOR = """\
import os, sys
path = sys.argv[-1]
handed = open(path, encoding="utf-8").read()
if os.environ.get("HANDED_TO"):
    open(os.environ["HANDED_TO"], "w", encoding="utf-8").write(handed)
if "NOTE_TEXT" in os.environ:
    open(path, "w", encoding="utf-8").write(os.environ["NOTE_TEXT"])
sys.exit(int(os.environ.get("EDITOR_STATUS", "0")))
"""


@pytest.fixture
def fake_editor(tmp_path, monkeypatch) -> Path:
    script = tmp_path / "my editor.py"  # a space in the path: $EDITOR is split as a shell would
    script.write_text(f"#!{sys.executable}\n" + EDITOR, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"'{script}'")
    monkeypatch.setenv("HANDED_TO", str(tmp_path / "handed.md"))
    return tmp_path / "handed.md"


def run(cairn_cmd, db_path, *args, text: str | None = None, status: int = 0):
    env = dict(os.environ)
    env.pop("NOTE_TEXT", None)
    if text is not None:
        env["NOTE_TEXT"] = text
    env["EDITOR_STATUS"] = str(status)
    return subprocess.run([*cairn_cmd, "--db", str(db_path), "add", "--edit", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def kept_files() -> list[Path]:
    from core.paths import data_dir

    return sorted((data_dir() / "tmp").glob("cairn-new-*.md")) if (data_dir() / "tmp").exists() else []


def test_cairn_add_edit_saves_the_title_line_and_the_text(cairn_cmd, db_path, store, fake_editor):
    done = run(cairn_cmd, db_path, text="# Sourdough starter\n\nFeed it daily.\nKeep it warm.\n")
    assert done.returncode == 0, done.stderr
    node = store.get_node(int(done.stdout.strip()))
    assert node["title"] == "Sourdough starter"
    assert node["source"] == "Feed it daily.\nKeep it warm."
    assert fake_editor.read_text(encoding="utf-8") == "---\ntitle: \n---\n\n"  # the template it was handed
    assert kept_files() == []

    # a frontmatter title wins; -d and --title start the template filled in, and the file's say goes
    done = run(cairn_cmd, db_path, "--title", "Draft: bread", "-d", "baking", "--json",
               text="---\ntitle: Rye bread\ndimensions: [baking, rye]\ndate: 2024-03-01\n---\n\nDense.\n")
    assert done.returncode == 0, done.stderr
    handed = fake_editor.read_text(encoding="utf-8")
    assert "title: 'Draft: bread'" in handed and "dimensions: [baking]" in handed
    node = json.loads(done.stdout)
    assert (node["title"], node["source"], node["dimensions"], node["event_date"]) == (
        "Rye bread", "Dense.", ["baking", "rye"], "2024-03-01")


def test_cairn_add_edit_saves_nothing_for_an_empty_or_unchanged_file(cairn_cmd, db_path, store, fake_editor):
    unchanged = run(cairn_cmd, db_path)  # the editor left the template as it was
    assert unchanged.returncode == 1 and unchanged.stdout == ""
    assert "Nothing was written in the editor, so no note was saved." in unchanged.stderr
    emptied = run(cairn_cmd, db_path, text="\n\n")
    assert emptied.returncode == 1 and "no note was saved" in emptied.stderr
    assert store.counts()["nodes"] == 0
    assert kept_files() == []


def test_cairn_add_edit_keeps_the_text_when_the_editor_fails_or_the_file_is_refused(cairn_cmd, db_path, store,
                                                                                  fake_editor):
    failed = run(cairn_cmd, db_path, text="My idea\n\nworth keeping\n", status=3)
    assert failed.returncode == 1 and failed.stdout == ""
    assert "The editor exited with status 3; nothing was saved. Your text is kept in " in failed.stderr
    kept = Path(failed.stderr.split("kept in ")[1].strip())
    assert kept.read_text(encoding="utf-8") == "My idea\n\nworth keeping\n" and kept in kept_files()
    kept.unlink()

    # quitting the editor with a failure before writing anything: nothing to keep
    quit_ = run(cairn_cmd, db_path, status=1)
    assert quit_.returncode == 1 and "kept" not in quit_.stderr and kept_files() == []

    refused = run(cairn_cmd, db_path, text="---\ntitle: x\ncolour: red\n---\ntext\n")
    assert refused.returncode == 1 and "'colour' is not one a new note takes" in refused.stderr
    assert "Your text is kept in " in refused.stderr and len(kept_files()) == 1
    assert store.counts()["nodes"] == 0

    usage = subprocess.run([*cairn_cmd, "--db", str(db_path), "add", "--edit", "some text"], capture_output=True,
                           text=True, timeout=60)
    assert usage.returncode == 2 and "leave out TEXT" in usage.stderr


def test_the_reading_rule():
    from core.capture import editor_note

    handed = editor_note.template()
    assert editor_note.read(handed, handed) is None
    assert editor_note.read("", handed) is None
    note = editor_note.read("Just a title\n", handed)
    assert (note.title, note.source) == ("Just a title", "")
    long_line = "word " * 30
    note = editor_note.read(long_line + "\nmore", handed)  # a first line longer than a title stays in the text
    assert note.title.endswith("…") and note.source == long_line + "\nmore"
    with pytest.raises(InvalidInput, match="not valid YAML"):
        editor_note.read("---\ntitle: [x\n---\nbody", handed)


# -- N in the app --------------------------------------------------------------------------------------
@pytest.fixture
def in_app_editor(fake_editor, monkeypatch):
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    monkeypatch.setattr(external_editor, "run_editor", lambda app, argv: subprocess.run(argv).returncode)


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_N_writes_a_new_note_in_EDITOR_and_opens_it(db_path, store, in_app_editor, monkeypatch):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("N")  # the app starts in the search box: N is a letter of the search there
        await settle(app, pilot)
        assert app.query_one("#node-search").value == "N" and not notices(app)
        await pilot.press("f3")  # to the Focus pane: N is the key there (and in every pane but a text field)
        monkeypatch.setenv("NOTE_TEXT", "Levain\n\nA young starter, [[Sourdough]] kin.\n")
        await pilot.press("N")
        await settle(app, pilot)
        panel = app.query_one(FocusPanel)
        await wait_for(pilot, lambda: panel.primary is not None, what="the new note opened")
        node = store.get_node(panel.primary)
        assert (node["title"], node["source"]) == ("Levain", "A young starter, [[Sourdough]] kin.")
        assert "Saved “Levain” as a new note." in notices(app)
        assert kept_files() == []

        monkeypatch.delenv("NOTE_TEXT")  # closed without writing
        await pilot.press("N")
        await settle(app, pilot)
        assert "Nothing was written in the editor, so no note was saved." in notices(app)
        assert store.counts()["nodes"] == 1

        monkeypatch.setenv("NOTE_TEXT", "Half a thought\n")
        monkeypatch.setenv("EDITOR_STATUS", "2")
        await pilot.press("N")
        await settle(app, pilot)
        assert "The editor exited with status 2; nothing was saved. Your text is kept in " in notices(app)[-1]
        assert [p.read_text(encoding="utf-8") for p in kept_files()] == ["Half a thought\n"]
        assert store.counts()["nodes"] == 1


async def test_a_note_written_with_N_is_indexed_and_listed(db_path, store, in_app_editor, monkeypatch):
    """Found in the issue-26 walkthrough: the note N saved stayed 'pending: waiting to be indexed' and
    out of the header's count until some other write came (no NodesChanged was posted for it)."""
    asked = []
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: asked.append(store.counts()["nodes"]))
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("f3")
        monkeypatch.setenv("NOTE_TEXT", "Levain\n\nA young starter.\n")
        await pilot.press("N")
        await settle(app, pilot)
        panel = app.query_one(FocusPanel)
        await wait_for(pilot, lambda: panel.primary is not None, what="the new note opened")
        await settle(app, pilot)
        assert 1 in asked  # the indexer was asked once the note existed
