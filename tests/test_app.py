"""The app shell: starts on a real database, lays out three panes, and survives its key bindings."""

from tui.app import CairnApp


async def test_app_starts_with_three_panes(store, db_path):
    store.add_node("First", "text")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.query_one("#nodes").display and app.query_one("#focus").display
        assert app.startup_ms is not None
        await pilot.press("f2")
        assert app.query_one("#right").current == "viewer"
        await pilot.press("f2")
        assert app.query_one("#right").current == "chat"
        await pilot.press("ctrl+q")


async def test_narrow_terminal_shows_one_pane_and_f3_cycles(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = lambda: [p for p in ("nodes", "focus", "right") if app.query_one(f"#{p}").styles.display != "none"]
        assert shown() == ["nodes"]
        await pilot.press("f3")
        assert shown() == ["focus"]
        await pilot.press("f3")
        assert shown() == ["right"]


async def test_notifications_show_top_right_clear_of_the_chat_input(store, db_path):
    from textual.widgets._toast import Toast

    from tui.widgets.chat_pane import ChatInput

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await app.right_panes()
        app.notify("Indexed 3 notes in 0.2 s.")
        await pilot.pause(0.2)
        toast = next(w for w in app.screen.walk_children() if isinstance(w, Toast))
        chat_input = app.query_one(ChatInput)
        assert toast.region.y < 10 and toast.region.right > 120  # under the header, on the right
        assert not toast.region.overlaps(chat_input.region)


async def test_the_keyboard_pane_gets_the_accent_border_and_tab_moves_it(store, db_path):
    store.add_node("First", "text")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.right_panes()
        await pilot.pause()
        accent = app.theme_variables["accent"].lower()
        border = lambda pane: app.query_one(pane).styles.border_top[1].hex.lower()
        assert app._marked is app.query_one("#nodes") and border("#nodes") == accent
        await pilot.press("ctrl+l")
        assert app._marked is app.query_one("#right") and border("#right") == accent
        assert border("#nodes") != accent  # back to the CSS border
