"""Keys typed and then ctrl+s in one read (a fast typist, a paste, a laggy SSH link: found in the
issue 26 walkthrough over SSH at 80x24): the save takes every key typed before it. ctrl+s is a
priority binding, run as the app reads the key, while the letters before it may still wait in the
field's own queue; the dialog used to save without them (a quick capture lost its dimensions, or
its text and dimensions) and then closed, dropping them."""

from __future__ import annotations

import time

import pytest
from textual import events

from core.graph.store import Store
from tui.app import CairnApp
from tui.screens.journal_entry import JournalEntry
from tui.screens.quick_capture import QuickCapture


@pytest.fixture(autouse=True)
def _no_background_indexing(monkeypatch):
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)


async def wait_until(pilot, condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within the timeout")
        await pilot.pause(0.01)


def burst(app, keys: list[tuple[str, str | None]]) -> None:
    """Every key into the app's queue at once, as one read of the terminal delivers them."""
    for key, char in keys:
        app.post_message(events.Key(key, char))


def typed(text: str) -> list[tuple[str, str]]:
    return [(c if c.isalnum() else {" ": "space", ",": "comma", ".": "full_stop"}[c], c) for c in text]


async def test_quick_capture_saves_every_key_typed_before_ctrl_s(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, QuickCapture))
        burst(app, typed("Bread log") + [("tab", "\t")] + typed("Fed the starter.") + [("tab", "\t")]
              + typed("baking, log") + [("ctrl+s", None)])
        await wait_until(pilot, lambda: not isinstance(app.screen, QuickCapture))
    with Store(db_path) as check:
        node = check.recent(1)[0]
    assert (node["title"], node["source"], node["dimensions"]) == ("Bread log", "Fed the starter.", ["baking", "log"])


async def test_journal_entry_adds_every_key_typed_before_ctrl_s(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f4")
        await wait_until(pilot, lambda: isinstance(app.screen, JournalEntry))
        burst(app, typed("Fed the starter at seven, baked two loaves.") + [("ctrl+s", None)])
        await wait_until(pilot, lambda: not isinstance(app.screen, JournalEntry))
    with Store(db_path) as check:
        node = check.recent(1)[0]
    assert node["source"].rstrip().endswith("Fed the starter at seven, baked two loaves."), node["source"]


async def test_a_merge_takes_every_key_typed_before_ctrl_s(store, db_path):
    from textual.widgets import TextArea

    from tui.screens.merge_review import MergeReview
    from tui.widgets.focus_panel import FocusPanel

    keep = store.add_node("Sleep", "Dark rooms help.")["id"]
    other = store.add_node("Sleeping well", "Cool rooms help too.")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.right_panes()
        panel = app.query_one(FocusPanel)
        panel.open_node(other)
        panel.open_node(keep)
        await wait_until(pilot, lambda: all(panel.view(n) is not None and panel.view(n).node is not None
                                            for n in (keep, other)) and panel.primary == keep)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["Focus: merge “Sleeping well” into this node"].callback()
        await wait_until(pilot, lambda: isinstance(app.screen, MergeReview) and app.screen.plan is not None)
        area = app.screen.query_one(TextArea)
        area.load_text("Reviewed")
        area.focus()
        area.move_cursor(area.document.end)
        await pilot.pause()
        burst(app, typed(" and done.") + [("ctrl+s", None)])
        await wait_until(pilot, lambda: not isinstance(app.screen, MergeReview))
    with Store(db_path) as check:
        assert check.get_node(keep)["source"] == "Reviewed and done."
