"""The placeholder app starts on a real database and says plainly what is and is not built."""

from tui.app import CairnApp


async def test_app_shows_counts_and_placeholder_notice(store, db_path):
    store.add_node("First", "text")
    app = CairnApp(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = str(app.query_one("#placeholder").render())
        assert "1 nodes" in text
        assert "not built yet" in text
        await pilot.press("ctrl+q")
    assert app.return_code == 0
