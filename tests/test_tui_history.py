"""The History view in the app (h in Focus): the list, undoing the model's change with one key, the
refusal shown inline when it was edited since, reverting, and the palette entry."""

from __future__ import annotations

from core.graph import history
from tui.app import CairnApp
from tui.widgets.focus_panel import FocusPanel
from tui_support import settle, wait_for


async def open_history(pilot, app, node_id: int):
    await app.right_panes()
    panel = app.query_one(FocusPanel)
    panel.open_node(node_id)
    await wait_for(pilot, lambda: panel.active_view is not None and panel.active_view.node is not None,
                   what="the node to open")
    panel.strip.focus()
    await pilot.press("h")
    await wait_for(pilot, lambda: type(app.screen).__name__ == "NodeHistory", what="the History view")
    screen = app.screen
    await wait_for(pilot, lambda: screen.changes, what="the changes to load")
    return screen


def status(screen) -> str:
    return str(screen.query_one("#history-note").render())


async def test_u_undoes_the_models_change_and_the_node_view_follows(store, db_path):
    nid = store.add_node("Sleep", "Eight hours.")["id"]
    with history.acting_as(history.model_in_chat(4)):
        store.update_node(nid, source="Six hours is plenty.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_history(pilot, app, nid)
        assert [c.actor for c in screen.changes] == ["the model in chat 4", "you"]
        assert "Six hours" in str(screen.query_one("#history-diff").render())
        await pilot.press("u")
        await wait_for(pilot, lambda: len(screen.changes) == 3, what="the undo listed")
        assert "Undid change" in status(screen)
        assert screen.changes[0].actor == f"you (app), undoing change {screen.changes[1].id}"
        options = screen.query_one("#history-list")
        assert screen.changes[options.highlighted].actor == "the model in chat 4"  # the same change stays chosen
        assert store.get_node(nid)["source"] == "Eight hours."
        await pilot.press("escape")
        panel = app.query_one(FocusPanel)
        await wait_for(pilot, lambda: "Eight hours." in (panel.active_view.node or {}).get("source", ""),
                       what="the open tab to show the undone text")
        await settle(app, pilot)


async def test_an_undo_over_a_later_edit_is_refused_inline_and_r_reverts(store, db_path):
    nid = store.add_node("Sleep", "Eight hours.")["id"]
    with history.acting_as(history.mcp_client("claude-ai")):
        store.update_node(nid, source="Six hours is plenty.")
    store.update_node(nid, source="Seven, then.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_history(pilot, app, nid)
        await pilot.press("down")  # the client's change
        await pilot.press("u")
        await wait_for(pilot, lambda: "changed again since" in status(screen), what="the refusal")
        assert "choose it and press r." in status(screen) and "cairn revert" not in status(screen)  # the app's key
        assert store.get_node(nid)["source"] == "Seven, then." and len(screen.changes) == 3
        await pilot.press("down", "r")  # back to the creation
        await wait_for(pilot, lambda: "Reverted to change" in status(screen), what="the revert")
        assert store.get_node(nid)["source"] == "Eight hours."
        await settle(app, pilot)


async def test_the_palette_offers_the_history_of_the_open_node(store, db_path):
    nid = store.add_node("Sleep", "Eight hours.")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.right_panes()
        titles = lambda: {c.title for c in app.get_system_commands(app.screen)}
        assert "Focus: history of this node" not in titles()
        panel = app.query_one(FocusPanel)
        panel.open_node(nid)
        await wait_for(pilot, lambda: panel.active_view is not None and panel.active_view.node is not None,
                       what="the node to open")
        assert "Focus: history of this node" in titles()
        await settle(app, pilot)


async def test_undoing_a_creation_asks_first(store, db_path):
    from tui.screens.confirm import ConfirmScreen

    nid = store.add_node("Sleep", "Eight hours.")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_history(pilot, app, nid)
        await pilot.press("u")  # the only change: the creation
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is screen, what="back in the History")
        assert store.get_node(nid)["title"] == "Sleep"
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question again")
        await pilot.press("y")
        await wait_for(pilot, lambda: "Undid change" in status(screen), what="the undo")
        assert [t["node_id"] for t in store.trash()] == [nid]
        await settle(app, pilot)


async def test_the_header_shows_the_title_after_an_undo(store, db_path):
    """Issue 26 finding 6: after `u` the header kept the title from before the undo."""
    nid = store.add_node("Sleep", "Eight hours.")["id"]
    with history.acting_as(history.model_in_chat(4)):
        store.update_node(nid, title="Naps")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_history(pilot, app, nid)
        box = screen.query_one("#history-box")
        assert box.border_title == "History · Naps"
        await pilot.press("u")  # the model's retitling
        await wait_for(pilot, lambda: len(screen.changes) == 3, what="the undo listed")
        assert store.get_node(nid)["title"] == "Sleep"
        assert box.border_title == "History · Sleep"
        await settle(app, pilot)
