"""Toasts (issue 26, finding 4): never over an open dialog (styles/notices.tcss), none for a save's
routine indexing, one "Indexing N notes…" per piece of work (CairnApp.index_pending, tui/run_requests.py).
The real app at 80x24, a real database, the real embedder, the real sync rounds."""

from __future__ import annotations

import asyncio
import threading

from textual.widgets import Static
from textual.widgets._toast import Toast, ToastRack

from core.graph.store import Store
from core.vault.twoway import TwoWaySync
from tui.app import CairnApp
from tui.run_requests import RunRequests
from tui.screens.help import HelpScreen
from tui.screens.quick_capture import QuickCapture
from tui.screens.sync_conflicts import SyncConflicts
from tui.screens.welcome import WelcomeScreen
from tui_support import wait_for

TOMATOES = "# Tomatoes\n\nWater them in the morning.\nFeed them every two weeks.\nPick them when red.\n"


def record(app) -> list[str]:
    """Every message passed to the app's notify (workers call it by attribute, so it is wrapped here)."""
    said: list[str] = []
    notify = app.notify

    def recording(message, **kwargs):
        said.append(str(message))
        notify(message, **kwargs)

    app.notify = recording
    return said


def toasts(screen) -> dict[str, Toast]:
    """The toasts laid out on the screen, by message."""
    return {str(t._notification.message): t for t in screen.query(Toast) if t.region.area}


def dialog_parts(screen):
    """What the dialog's screen shows besides its toasts: the dialog box and its footer."""
    return [w for w in screen.children if w.display and not isinstance(w, ToastRack) and w.region.area]


def pending(db_path) -> int:
    with Store(db_path) as store:
        return store.db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status = 'pending'").fetchone()[0]


def index_idle(app) -> bool:
    return not [w for w in app.workers if w.group == "index" and not w.is_finished]


# -- never over a dialog ---------------------------------------------------------------------------
async def test_a_toast_from_background_work_is_drawn_clear_of_an_open_dialog_and_stays_after_it(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help dialog")
        dialog = app.screen
        # As a worker says it (index_pending, the folder sync): from another thread, onto the loop.
        await asyncio.to_thread(app.call_from_thread, app.notify, "Folder sync (notes): the disk is full.",
                                severity="error", timeout=60)
        await wait_for(pilot, lambda: "Folder sync (notes): the disk is full." in toasts(dialog), what="the toast")
        await pilot.pause()
        toast = toasts(dialog)["Folder sync (notes): the disk is full."]
        parts = dialog_parts(dialog)
        assert dialog.query_one("#help-dialog") in parts
        for part in parts:
            assert not toast.region.overlaps(part.region), (toast.region, part, part.region)
        # Still the whole help: its title and its note are on screen below the toast.
        assert dialog.query_one("#help-dialog").region.y > toast.region.bottom - 1
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="the dialog closed")
        await wait_for(pilot, lambda: "Folder sync (notes): the disk is full." in toasts(app.screen),
                       what="the toast on the main screen")


async def test_the_conflicts_dialogs_own_notice_shows_beside_it_not_over_it(store, db_path, tmp_path):
    """The sync-conflict notice the conflicts dialog (f6) is about, raised while it is open: shown, and
    the full-height dialog laid out below it."""
    from tui.flows.vault_sync import VaultSyncFlow

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Tomatoes.md").write_text(TOMATOES, encoding="utf-8")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        flow = VaultSyncFlow(app, str(vault))
        flow.after_round(TwoWaySync(store, vault).round())  # the first round: counted, nothing open
        await pilot.press("f6")
        await wait_for(pilot, lambda: isinstance(app.screen, SyncConflicts) and "No sync conflict" in str(
            app.screen.query_one("#conflicts-status", Static).render()), what="the empty conflicts dialog")
        dialog = app.screen
        box = dialog.query_one("#conflicts-box")
        full_height = box.region.height
        node = store.get_node(store.db.execute("SELECT id FROM nodes WHERE title = 'Tomatoes'").fetchone()[0])
        store.update_node(node["id"], source=node["source"].replace("in the morning", "at dawn"))
        (vault / "Tomatoes.md").write_text(TOMATOES.replace("in the morning", "in the evening"), encoding="utf-8")
        report = TwoWaySync(store, vault).round()
        assert report.conflicts
        flow.after_round(report)
        shown = lambda: [t for m, t in toasts(dialog).items() if m.startswith("1 sync conflict to resolve")]
        await wait_for(pilot, shown, what="the conflicts notice drawn")
        await wait_for(pilot, lambda: len(dialog.conflicts) == 1, what="the dialog listing it")
        await pilot.pause()
        [toast] = shown()
        for part in dialog_parts(dialog):
            assert not toast.region.overlaps(part.region), (toast.region, part, part.region)
        assert box.region.height < full_height and box.region.y >= toast.region.bottom


# -- the indexing's toasts ------------------------------------------------------------------------------
async def test_a_save_makes_no_indexing_toast(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    said = record(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, QuickCapture), what="the capture dialog")
        await pilot.press(*"A thought", "ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, QuickCapture), what="the dialog closed")
        await wait_for(pilot, lambda: store.counts()["nodes"] == 1 and pending(db_path) == 0, timeout=60,
                       what="the note indexed")
        await pilot.pause(0.6)  # the database watcher's echo of the write (150 ms debounce) and its request
        await wait_for(pilot, lambda: index_idle(app), timeout=60, what="the indexing done")
    assert any(m.startswith("Saved node") for m in said), said
    assert not [m for m in said if m.startswith(("Indexing", "Indexed"))], said


async def test_the_guide_is_announced_once_and_its_end_too(db_path):
    app = CairnApp(db_path, first_run_prompt=True)
    said = record(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, WelcomeScreen), timeout=30, what="the welcome")
        await pilot.press("g")
        await wait_for(pilot, lambda: any(m.startswith("Indexing") for m in said), timeout=30, what="the indexing")
        await wait_for(pilot, lambda: pending(db_path) == 0, timeout=120, what="the guide indexed")
        await pilot.pause(0.6)  # the database watcher's echo of the indexer's commits, and its request
        await wait_for(pilot, lambda: index_idle(app), timeout=60, what="the indexing done")
    announced = [m for m in said if m.startswith("Indexing")]
    assert announced == ["Indexing 14 notes…"], said
    assert len([m for m in said if m.startswith("Indexed 14 notes in")]) == 1, said


def test_a_request_during_a_run_gets_one_more_pass_not_a_second_run():
    requests, passes, inside = RunRequests(), [], threading.Event()
    release = threading.Event()

    def one_pass() -> bool:
        passes.append(threading.get_ident())
        inside.set()
        release.wait(10)
        return True

    assert requests.start()  # no run: the caller starts one
    run = threading.Thread(target=requests.serve, args=(one_pass,))
    run.start()
    assert inside.wait(10)
    assert not requests.start() and not requests.start()  # during the pass: one more pass, no second run
    release.set()
    run.join(10)
    assert len(passes) == 2
    assert requests.start()  # the run ended: the next request starts one


def test_a_failed_or_stopped_run_lets_the_next_request_start_one():
    requests = RunRequests()
    assert requests.start()

    def failing() -> bool:
        raise OSError("disk full")

    try:
        requests.serve(failing)
    except OSError:
        pass
    assert requests.start()
    requests.serve(lambda: False)  # stopped: the app closing
    assert requests.start()
