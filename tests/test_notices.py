"""Toasts (issue 26, finding 4): none for a save's routine indexing, one per event, and none over an
open dialog (tui/notices.py, CairnApp.index_pending)."""

import asyncio

from core.graph.store import Store
from tui.app import CairnApp
from tui.screens.help import HelpScreen
from tui.screens.quick_capture import QuickCapture
from tui.screens.welcome import WelcomeScreen
from tui_support import wait_for


def record(app) -> list[str]:
    """Every message passed to the app's notify, shown or not (workers call it by attribute)."""
    said: list[str] = []
    notify = app.notify

    def recording(message, **kwargs):
        said.append(str(message))
        notify(message, **kwargs)

    app.notify = recording
    return said


def pending(db_path) -> int:
    with Store(db_path) as store:
        return store.db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status = 'pending'").fetchone()[0]


def toasts(app) -> list[str]:
    from textual.widgets._toast import Toast

    return [str(t._notification.message) for t in app.screen.walk_children() if isinstance(t, Toast)]


async def test_a_save_in_the_app_makes_no_indexing_toast(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    said = record(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, QuickCapture), what="the capture dialog")
        await pilot.press(*"A thought", "ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, QuickCapture), what="the dialog closed")
        await wait_for(pilot, lambda: store.counts()["nodes"] == 1 and pending(db_path) == 0, timeout=30,
                       what="the note indexed")
        await pilot.pause(0.5)  # the database watch's NodesChanged for the same write, and its run
    assert any(m.startswith("Saved node") for m in said)
    assert not [m for m in said if m.startswith(("Indexing", "Indexed"))], said


async def test_the_guides_indexing_is_announced_once(db_path):
    app = CairnApp(db_path, first_run_prompt=True)
    said = record(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, WelcomeScreen), what="the welcome")
        await pilot.press("g")
        try:
            await wait_for(pilot, lambda: any(m.startswith("Indexed") for m in said), timeout=15,
                           what="the guide indexed")
        except AssertionError:
            raise AssertionError((said, pending(db_path)))
        await pilot.pause(0.5)
    announced = [m for m in said if m.startswith("Indexing")]
    assert len(announced) == 1 and announced[0].startswith("Indexing 1"), said  # "Indexing 14 notes…"
    assert len([m for m in said if m.startswith("Indexed")]) == 1, said


async def test_a_toast_raised_while_a_dialog_is_open_waits_until_it_closes(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help dialog")
        # As a worker says it (index_pending, folder sync): from another thread, onto the loop.
        await asyncio.to_thread(app.call_from_thread, app.notify, "Background news", severity="error")
        await pilot.pause(0.3)
        assert "Background news" not in toasts(app)
        assert "Background news" not in [n.message for n in app._notifications]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="the dialog closed")
        await wait_for(pilot, lambda: "Background news" in toasts(app), what="the held toast shown")


async def test_a_toast_on_screen_when_a_dialog_opens_is_held_and_the_dialogs_own_shows(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        app.notify("Earlier news", timeout=30)
        await wait_for(pilot, lambda: "Earlier news" in toasts(app), what="the toast shown")
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help dialog")
        app.screen.notify("The dialog's own word")  # feedback from the dialog itself shows in it
        await wait_for(pilot, lambda: "The dialog's own word" in toasts(app), what="the dialog's toast")
        assert "Earlier news" not in toasts(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "Earlier news" in toasts(app), what="the earlier toast back")
