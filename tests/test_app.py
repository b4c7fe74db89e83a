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
