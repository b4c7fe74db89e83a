"""Two-way folder sync in the app (tui/flows/vault_sync.py, tui/screens/sync_conflicts.py): the sync
conflicts listed, compared and resolved in a dialog, the toast that says they are there, and the
first-sync question about notes made in Cairn. Real parts: a real SQLite file, a real folder, real
rounds of core/vault/twoway.py making a real conflict, and the app's own folder watcher."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from textual.widgets import Button, OptionList, Static

import core.vault.twoway
from core.config import Config, VaultSettings
from core.vault.conflicts import open_conflicts
from core.vault.twoway import TwoWaySync
from tui.app import CairnApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.sync_conflicts import SyncConflicts
from tui.services import Services
from tui_support import settle, wait_for

TOMATOES = "# Tomatoes\n\nWater them in the morning.\nFeed them every two weeks.\nPick them when red.\n"


@pytest.fixture
def vault(tmp_path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def make_conflict(store, vault: Path, name: str = "Tomatoes.md") -> tuple[str, str]:
    """A real conflict: imported, then the same line changed in Cairn and in the file, then a round."""
    path = vault / name
    path.write_text(TOMATOES, encoding="utf-8")
    TwoWaySync(store, vault).round()
    row = store.db.execute("SELECT id FROM nodes WHERE json_extract(metadata, '$.vault.path') = ?", (name,)).fetchone()
    node = store.get_node(row[0])
    store.update_node(node["id"], source=node["source"].replace("in the morning", "at dawn"))
    path.write_text(TOMATOES.replace("in the morning", "in the evening"), encoding="utf-8")
    report = TwoWaySync(store, vault).round()
    assert len(report.conflicts) == 1 and open_conflicts(store)
    return report.conflicts[0]


def bound_app(db_path: Path, vault: Path, app_class=CairnApp) -> CairnApp:
    """The app with `[vault] path` set: its watcher keeps the folder in step both ways."""
    return app_class(db_path, services=Services(db_path, config=Config(vault=VaultSettings(path=str(vault)))),
                     first_run_prompt=False)


def plain(widget: Static) -> str:
    return str(widget.render())


def listed(screen: SyncConflicts) -> list[str]:
    options = screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def open_conflicts_screen(pilot, how: str = "command") -> SyncConflicts:
    app = pilot.app
    await pilot.pause()
    if how == "command":
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["Sync: conflicts"].callback()
    else:
        await pilot.press(how)
    await wait_for(pilot, lambda: isinstance(app.screen, SyncConflicts) and app.screen.query("#conflicts-status"),
                   what="the conflicts dialog")
    return app.screen


async def test_the_command_lists_the_conflict_shows_both_versions_and_keeping_cairns_writes_its_file(store, db_path,
                                                                                                   vault):
    rel, conflict_rel = make_conflict(store, vault)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_conflicts_screen(pilot)
        await wait_for(pilot, lambda: len(screen.conflicts) == 1, what="the conflict listed")
        [row] = listed(screen)
        assert rel in row and conflict_rel in row
        diff = screen.query_one("#conflicts-diff", Static)
        await wait_for(pilot, lambda: "at dawn" in plain(diff), what="the two versions shown")
        assert "-Water them in the evening." in plain(diff) and "+Water them at dawn." in plain(diff)
        await pilot.press("c")
        await wait_for(pilot, lambda: not screen.conflicts and "Kept Cairn's version" in plain(
            screen.query_one("#conflicts-note", Static)), what="the conflict resolved")
        assert "No sync conflict to resolve" in plain(screen.query_one("#conflicts-status", Static))
        assert app.screen is screen  # the dialog stays, saying what was done
    assert open_conflicts(store) == []
    text = (vault / rel).read_text(encoding="utf-8")
    assert "Water them at dawn." in text and "in the evening" not in text
    assert not (vault / conflict_rel).exists()
    assert list((vault / ".trash").iterdir())  # the file's version, kept in the folder's trash


async def test_f6_opens_the_conflicts_and_keeping_the_files_version_moves_cairns_into_the_trash(store, db_path,
                                                                                              vault):
    rel, conflict_rel = make_conflict(store, vault)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(130, 40)) as pilot:
        screen = await open_conflicts_screen(pilot, "f6")
        await wait_for(pilot, lambda: len(screen.conflicts) == 1, what="the conflict listed")
        await pilot.press("f")
        await wait_for(pilot, lambda: not screen.conflicts and "Kept the file's version" in plain(
            screen.query_one("#conflicts-note", Static)), what="the conflict resolved")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SyncConflicts), what="the dialog closed")
    assert open_conflicts(store) == []
    assert not (vault / conflict_rel).exists() and (vault / ".trash" / conflict_rel).is_file()
    assert "at dawn" in (vault / ".trash" / conflict_rel).read_text(encoding="utf-8")
    assert "in the evening" in (vault / rel).read_text(encoding="utf-8")


async def test_a_conflict_resolved_elsewhere_meanwhile_is_a_sentence_in_the_dialog(store, db_path, vault):
    from core.vault.conflicts import keep

    make_conflict(store, vault)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_conflicts_screen(pilot)
        await wait_for(pilot, lambda: len(screen.conflicts) == 1, what="the conflict listed")
        keep(store, screen.conflicts[0].id, "file")  # `cairn conflicts keep` in another terminal
        await pilot.press("c")
        note = screen.query_one("#conflicts-note", Static)
        await wait_for(pilot, lambda: "was resolved on" in plain(note), what="the error shown")
        await wait_for(pilot, lambda: not screen.conflicts, what="the list read again")
        assert app.screen is screen and app.is_running


async def test_file_names_are_shown_as_text_never_as_markup_or_escape_sequences(store, db_path, vault):
    name = "Plan [bold]x[on red] \x1b[31mred.md"  # no slash: a file name
    rel, conflict_rel = make_conflict(store, vault, name)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_conflicts_screen(pilot)
        await wait_for(pilot, lambda: len(screen.conflicts) == 1, what="the conflict listed")
        diff = screen.query_one("#conflicts-diff", Static)
        await wait_for(pilot, lambda: "at dawn" in plain(diff), what="the two versions shown")
        for shown in (listed(screen)[0], plain(diff)):
            assert "[bold]x[on red]" in shown and "\\u001b[31m" in shown and "\x1b" not in shown


async def test_the_watcher_finding_open_conflicts_says_so_and_one_resolved_stays_resolved(store, db_path, vault):
    rel, _conflict_rel = make_conflict(store, vault)
    app = bound_app(db_path, vault)
    async with app.run_test(size=(80, 24)) as pilot:
        said = lambda: [n.message for n in app._notifications if "sync conflict" in n.message]
        await wait_for(pilot, said, timeout=30, what="the conflicts notice")
        assert said()[0].startswith("1 sync conflict to resolve") and "f6" in said()[0]
        assert "Sync: conflicts" in said()[0]
        # Resolved while the watcher runs: its rounds take the new file as agreed, not as a new conflict.
        screen = await open_conflicts_screen(pilot, "f6")
        await wait_for(pilot, lambda: len(screen.conflicts) == 1, what="the conflict listed")
        rounds = app._vault_flow.rounds
        await pilot.press("c")
        await wait_for(pilot, lambda: not screen.conflicts and "Kept Cairn's version" in plain(
            screen.query_one("#conflicts-note", Static)), what="the conflict resolved")
        await wait_for(pilot, lambda: app._vault_flow.rounds > rounds, timeout=30, what="the watcher's round after it")
        await settle(app, pilot)  # the conflicts counted after that round, if it kept any
        assert len(said()) == 1
    assert open_conflicts(store) == []
    assert "Water them at dawn." in (vault / rel).read_text(encoding="utf-8")
    node = store.db.execute("SELECT source FROM nodes WHERE title = 'Tomatoes'").fetchone()
    assert "Water them at dawn." in node["source"]


async def test_a_round_that_keeps_a_conflict_is_announced_and_refreshes_the_open_dialog(store, db_path, vault):
    """What the watcher hands the app after each round (on_round), given here round by round so that the
    edits on both sides land between two rounds for certain."""
    from tui.flows.vault_sync import VaultSyncFlow

    (vault / "Tomatoes.md").write_text(TOMATOES, encoding="utf-8")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        flow = VaultSyncFlow(app, str(vault))
        flow.after_round(TwoWaySync(store, vault).round())  # the first round: counted, nothing open
        screen = await open_conflicts_screen(pilot)
        await wait_for(pilot, lambda: "No sync conflict" in plain(screen.query_one("#conflicts-status", Static)),
                       what="the empty list")
        node = store.get_node(store.db.execute("SELECT id FROM nodes WHERE title = 'Tomatoes'").fetchone()[0])
        store.update_node(node["id"], source=node["source"].replace("in the morning", "at dawn"))
        (vault / "Tomatoes.md").write_text(TOMATOES.replace("in the morning", "in the evening"), encoding="utf-8")
        report = TwoWaySync(store, vault).round()
        assert report.conflicts
        flow.after_round(report)
        said = lambda: [n.message for n in app._notifications if "sync conflict" in n.message]
        await wait_for(pilot, said, what="the conflicts notice")
        assert len(said()) == 1 and said()[0].startswith("1 sync conflict to resolve")
        await wait_for(pilot, lambda: len(screen.conflicts) == 1, what="the open dialog listing it")


# -- the first-sync question ---------------------------------------------------------------------------
async def test_the_first_sync_asks_about_notes_made_in_cairn_and_yes_writes_their_files(store, db_path, vault):
    store.add_node("Seed catalogue", "Order the seeds by March.")
    (vault / "Basil.md").write_text("Basil likes warmth.\n", encoding="utf-8")
    app = bound_app(db_path, vault)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=30, what="the question")
        question = plain(app.screen.query_one("#confirm-question", Static))
        assert question.startswith(f"1 note made in Cairn has no file in {vault} yet")
        assert "every new note from now on" in question
        await pilot.press("y")
        written = lambda: [p for p in vault.glob("*.md") if "Order the seeds" in p.read_text(encoding="utf-8")]
        await wait_for(pilot, written, timeout=30, what="the note's file written by the watcher")
        said = lambda: [n.message for n in app._notifications if n.message.startswith("Wrote 1 note")]
        await wait_for(pilot, said, what="the files announced")
    assert written()[0].name == "Seed catalogue.md"


async def test_no_says_how_to_write_them_later_and_is_not_asked_again_this_run(store, db_path, vault):
    store.add_node("Seed catalogue", "Order the seeds by March.")
    app = bound_app(db_path, vault)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=30, what="the question")
        await pilot.press("n")
        said = lambda: [n.message for n in app._notifications if "cairn sync --yes" in n.message]
        await wait_for(pilot, said, what="the notice")
        rounds = app._vault_flow.rounds
        store.add_node("Bean rows", "Sow them in May.")  # another note made in Cairn: another round asks nothing
        await wait_for(pilot, lambda: app._vault_flow.rounds > rounds, timeout=30, what="another round")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
    assert not list(vault.glob("*.md"))


async def test_the_question_fits_80x24_with_many_notes(store, db_path, vault):
    for n in range(12):
        store.add_node(f"Note number {n} with a fairly long title to see it fit", "text")
    app = bound_app(db_path, vault)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=30, what="the question")
        await pilot.pause()
        screen = app.screen
        detail = str(screen.query_one("#confirm-detail Static", Static).render())
        assert "Note number 7" in detail and "Note number 8" not in detail and "… and 4 more" in detail
        for button in screen.query(Button):
            assert button.region.area and screen.region.contains_region(button.region)
        dialog = screen.query_one("#confirm-dialog")
        assert dialog.region.bottom <= 23 and dialog.region.right <= 80  # above the footer, whole


# -- how it looks ----------------------------------------------------------------------------------------
class QuietApp(CairnApp):
    """The real app without its background work: nothing indexes or watches the database."""

    def index_pending(self) -> None:
        pass

    def watch_database(self) -> None:
        pass


class FixedDatetime(datetime):
    @classmethod
    def now(cls, tz=None):
        fixed = datetime(2025, 3, 14, 9, 41, tzinfo=timezone.utc)
        return fixed if tz is None else fixed.astimezone(tz)


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((130, 40), id="130x40")])
def test_sync_conflicts_screen(store, db_path, vault, monkeypatch, snap_compare, size):
    monkeypatch.setattr(core.vault.twoway, "datetime", FixedDatetime)  # the conflict file's name
    make_conflict(store, vault)
    store.db.execute("UPDATE vault_conflicts SET created_at = '2025-03-14T09:41:07.000Z'")
    store.db.execute("UPDATE nodes SET created_at = '2025-03-14T09:30:00.000Z', updated_at = '2025-03-14T09:40:00.000Z'")
    app = QuietApp(db_path, first_run_prompt=False)
    app.animation_level = "none"

    async def run_before(pilot) -> None:
        screen = await open_conflicts_screen(pilot)
        await wait_for(pilot, lambda: "at dawn" in plain(screen.query_one("#conflicts-diff", Static)),
                       what="the two versions shown")
        for _ in range(3):
            await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
