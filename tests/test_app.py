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


async def test_command_palette_offers_pane_actions_that_run(store, db_path):
    from tui.widgets.focus_panel import FocusPanel

    a = store.add_node("First", "text")["id"]
    b = store.add_node("Second", "text")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.right_panes()
        titles = lambda: {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Focus: close tab" not in titles()  # nothing open: not offered
        assert {"Nodes: search", "Chat: new chat", "Context: toggle the Settings / Context viewer"} <= set(titles())
        panel = app.query_one(FocusPanel)
        panel.open_node(a)
        panel.open_node(b)
        for _ in range(200):
            await pilot.pause(0.05)
            view = panel.active_view
            if panel.primary == b and view is not None and view.node is not None:
                break
        assert panel.primary == b
        commands = titles()
        assert {"Focus: next tab", "Focus: edit node", "Focus: link to another node"} <= set(commands)
        commands["Focus: close tab"].callback()
        for _ in range(20):
            await pilot.pause(0.05)
            if panel.open_ids == (a,):
                break
        assert panel.open_ids == (a,)
        await commands["Context: toggle the Settings / Context viewer"].callback()
        assert app.query_one("#right").current == "viewer"
        await pilot.press("ctrl+p")  # the palette itself opens over the app
        await pilot.pause()
        assert type(app.screen).__name__ == "CommandPalette"


async def test_the_app_keeps_the_vault_watch_folder_in_sync(store, db_path, tmp_path):
    from core.config import Config
    from tui.services import Services
    from tui.widgets.node_browser import NodeList

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Garden.md").write_text("# Garden\n\nTomatoes need sun. See [[Compost]].\n", encoding="utf-8")
    (vault / "Compost.md").write_text("# Compost\n\nBrown and green layers.\n", encoding="utf-8")
    app = CairnApp(db_path, services=Services(db_path, config=Config(vault_watch=str(vault))), first_run_prompt=False)
    listed = lambda: [str(o.prompt).split("\n")[0] for o in app.query_one(NodeList)._options]
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if {"Garden", "Compost"} <= set(listed()):
                break
        assert {"Garden", "Compost"} <= set(listed())  # the initial import reached the list
        (vault / "Seeds.md").write_text("# Seeds\n\nSave them dry.\n", encoding="utf-8")
        for _ in range(200):
            await pilot.pause(0.05)
            if "Seeds" in listed():
                break
        assert "Seeds" in listed()  # a file saved while the app runs shows up
    assert app._vault_watcher is not None and not app._vault_watcher.running  # stopped on exit


async def test_a_missing_vault_watch_folder_is_a_clear_notice(store, db_path, tmp_path):
    from core.config import Config
    from tui.services import Services

    missing = tmp_path / "nowhere"
    app = CairnApp(db_path, services=Services(db_path, config=Config(vault_watch=str(missing))), first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        notice = lambda: [n.message for n in app._notifications if "Folder sync is off" in n.message]
        for _ in range(100):
            await pilot.pause(0.05)
            if notice():
                break
        assert notice() and "does not exist" in notice()[0]
