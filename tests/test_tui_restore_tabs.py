"""Focus tabs reopened on the next start (core/graph/focus_tabs.py, tui/flows/focus_tabs.py), and quick
capture opening the note it made. Pilot tests on a real database; a restart is a new app on the same
database file (and CAIRN_HOME)."""

from __future__ import annotations

import pytest

from core.graph import merge
from tui.app import CairnApp
from tui.screens.quick_capture import QuickCapture
from tui.widgets.focus_panel import FocusPanel
from test_capture_web import site  # noqa: F401  (the pages served on 127.0.0.1)
from tui_support import settle, wait_for


@pytest.fixture(autouse=True)
def _no_indexing(monkeypatch):
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)


@pytest.fixture
def four(store):
    return [store.add_node(title, f"The text of {title}.")["id"] for title in ("Alpha", "Beta", "Gamma", "Delta")]


def labels(panel: FocusPanel) -> list[str]:
    return [t.label.plain for t in panel.query("ContentTab")]


async def run_once(db_path, *, size=(160, 48), then=None):
    """Start the app, let it reopen what was kept, run `then(app, pilot, panel)`, quit."""
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        panel = app.query_one(FocusPanel)
        keeper = getattr(app, "_tab_keeper", None)  # (getattr: the same test runs against the code before it)
        if keeper is not None:
            await wait_for(pilot, lambda: keeper.restored, what="the kept tabs reopened")
        await settle(app, pilot)
        if then is not None:
            await then(app, pilot, panel)
    return app


async def test_tabs_come_back_in_order_with_the_same_active_tab(db_path, store, four):
    alpha, beta, gamma, delta = four

    async def open_some(app, pilot, panel):
        assert panel.open_ids == ()  # nothing kept yet
        for node_id in (gamma, alpha, delta):
            panel.open_node(node_id)
            await settle(app, pilot)
        panel.open_node(alpha)  # the active tab is not the last one opened
        await settle(app, pilot)

    await run_once(db_path, then=open_some)

    async def check(app, pilot, panel):
        assert panel.open_ids == (gamma, alpha, delta)
        assert panel.primary == alpha
        assert labels(panel) == ["Gamma", "Alpha", "Delta"]  # titled at once, not "#3"
        assert app._focus.open == (gamma, alpha, delta) and app._focus.primary == alpha
        # the keyboard stays where the app starts it (the node list), not on the reopened tabs
        assert not panel.has_focus_within
        # only the active tab read its node; the others read theirs when first shown
        assert panel.view(alpha).node is not None
        assert panel.view(gamma).node is None and panel.view(delta).node is None
        await pilot.press("f3")  # to the Focus pane
        await pilot.press("]")
        await settle(app, pilot)
        assert panel.primary == delta
        await wait_for(pilot, lambda: panel.view(delta).node is not None, what="Delta read once shown")
        assert panel.view(delta).node["title"] == "Delta"
        await pilot.press("ctrl+w")  # close Delta; Gamma and Alpha stay, and the active one moves
        await settle(app, pilot)

    await run_once(db_path, then=check)

    async def after_close(app, pilot, panel):
        assert panel.open_ids == (gamma, alpha)
        assert panel.primary == alpha  # the tab that took the closed one's place (else the one before)

    await run_once(db_path, then=after_close)


async def test_a_trashed_tab_is_left_out_and_a_merged_one_opens_its_survivor(db_path, store, four):
    alpha, beta, gamma, delta = four

    async def open_all(app, pilot, panel):
        for node_id in (alpha, beta, gamma, delta):
            panel.open_node(node_id)
            await settle(app, pilot)
        panel.open_node(beta)
        await settle(app, pilot)

    await run_once(db_path, then=open_all)
    # between the two runs, another process trashes Beta (the active tab) and merges Delta into Alpha
    store.delete_node(beta)
    merge.apply(store, merge.plan(store, alpha, delta))

    async def check(app, pilot, panel):
        assert panel.open_ids == (alpha, gamma)  # Delta's survivor is Alpha, open once, in its first place
        assert panel.primary == gamma  # Beta's place went to the tab after it
        assert not [n for n in app._notifications if n.severity == "error"]
        assert not [n for n in app._notifications if "no longer there" in n.message]

    await run_once(db_path, then=check)


def test_restore_follows_merges_through_later_merges(store, four):
    from core.graph import focus_tabs

    alpha, beta, gamma, delta = four
    focus_tabs.save(store, [beta, gamma], beta)
    merge.apply(store, merge.plan(store, gamma, beta))  # Beta into Gamma
    merge.apply(store, merge.plan(store, delta, gamma))  # then Gamma into Delta
    tabs = focus_tabs.restore(store)
    assert tabs.open == ((delta, "Delta"),) and tabs.primary == delta

    store.delete_node(delta)  # the survivor is gone too: nothing to open
    assert focus_tabs.restore(store) == focus_tabs.Tabs()

    a, b, c = (store.add_node(t, "")["id"] for t in ("A", "B", "C"))
    focus_tabs.save(store, [alpha, a, b, c], a)
    store.delete_node(a)
    merge.apply(store, merge.plan(store, alpha, b))  # the active tab's neighbour merged into the first tab
    tabs = focus_tabs.restore(store)
    assert [i for i, _ in tabs.open] == [alpha, c]
    assert tabs.primary == c  # the tab now standing where the active one stood, not the merged one's survivor

    store.set_meta(focus_tabs.KEY, "not json")  # a hand-edited value: nothing reopened, no error
    assert focus_tabs.restore(store) == focus_tabs.Tabs()


async def test_quick_capture_opens_the_note_it_made(db_path, store, four):
    async def capture(app, pilot, panel):
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, QuickCapture), what="quick capture")
        await pilot.press(*"Sourdough starter")
        await pilot.press("tab")
        await pilot.press(*"Feed it daily.")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        await wait_for(pilot, lambda: not isinstance(app.screen, QuickCapture), what="the capture saved")
        await settle(app, pilot)
        made = store.db.execute("SELECT id FROM nodes WHERE title = 'Sourdough starter'").fetchone()["id"]
        assert panel.open_ids == (made,) and panel.primary == made
        assert panel.view(made).node["source"] == "Feed it daily."
        assert panel.has_focus_within  # the keyboard is on the note just made

    await run_once(db_path, size=(80, 24), then=capture)


async def test_a_page_captured_from_quick_capture_opens_when_it_lands_and_so_does_one_captured_before(
        db_path, store, site):
    async def capture(app, pilot, panel):
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, QuickCapture), what="quick capture")
        app.screen.query_one("#capture-link").value = site + "/slow"  # the page answers after a while
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, QuickCapture), timeout=30, what="the page saved")
        await settle(app, pilot)
        page = store.db.execute("SELECT id FROM nodes WHERE link = ?", (site + "/slow",)).fetchone()["id"]
        assert panel.open_ids == (page,) and panel.primary == page

        other = store.add_node("Something else", "text")["id"]
        panel.open_node(other)
        await settle(app, pilot)
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, QuickCapture), what="quick capture")
        app.screen.query_one("#capture-body").text = site + "/slow\n"  # the same address again
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, QuickCapture), what="the modal closed")
        await settle(app, pilot)
        assert panel.primary == page  # the node it was captured as, not a new one
        assert store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] == 2
        assert any(f"captured before as node {page}" in n.message and "open in Focus" in n.message
                   for n in app._notifications)

    await run_once(db_path, then=capture)


async def test_a_captured_before_toast_shows_a_pages_title_as_text(db_path, store):
    """A page's title is a stranger's text: in the 'captured before' toast its [brackets] are text, never
    Textual markup (printable strips escape sequences, not markup)."""
    hostile = "[@click=app.quit]Win a prize[/]"
    node = store.add_node(hostile, "text", link="https://example.org/prize")["id"]

    async def captured_before(app, pilot, panel):
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, QuickCapture), what="quick capture")
        app.screen.post_message(QuickCapture.CapturedBefore(node, hostile, "https://example.org/prize"))
        await wait_for(pilot, lambda: not isinstance(app.screen, QuickCapture), what="the modal closed")
        shown = [n for n in app._notifications if "captured before" in n.message]
        assert shown and hostile in shown[-1].message and not shown[-1].markup

    await run_once(db_path, then=captured_before)
