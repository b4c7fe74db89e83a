"""The app shell: starts on a real database, lays out three panes, and survives its key bindings."""

from textual import work
from tui.app import CairnApp
from tui_support import wait_for


def listed(app) -> set[str]:
    """The titles the node list shows now."""
    from tui.widgets.node_browser import NodeList

    return {str(o.prompt).split("\n")[0] for o in app.query_one(NodeList)._options}


async def until_listed(pilot, app, *titles: str, timeout: float = 10.0) -> None:
    await wait_for(pilot, lambda: set(titles) <= listed(app), timeout=timeout,
                   what=f"{', '.join(titles)} in the node list")


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


async def test_resizing_the_terminal_switches_between_one_pane_and_three_even_under_a_dialog(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        main = app.screen
        shown = lambda: [p for p in ("nodes", "focus", "right") if main.query_one(f"#{p}").styles.display != "none"]
        assert shown() == ["nodes"]
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert shown() == ["nodes", "focus", "right"]
        await pilot.press("ctrl+n")  # a dialog on top while the terminal shrinks
        await pilot.pause()
        assert app.screen is not main
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and shown() == ["nodes"]
        await pilot.press("ctrl+n")
        await pilot.pause()
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and shown() == ["nodes", "focus", "right"]


async def test_a_large_terminal_shows_all_three_panes_filling_the_width(store, db_path):
    """200x60 (the issue's large size): three panes side by side, none clipped, the full width used."""
    from tui.widgets.focus_panel import FocusPanel

    node = store.add_node("Wide screens", "A line of text.")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await app.right_panes()
        app.query_one(FocusPanel).open_node(node)
        for _ in range(200):
            await pilot.pause(0.05)
            if app.query_one(FocusPanel).active_view is not None:
                break
        regions = [app.query_one(f"#{p}").region for p in ("nodes", "focus", "right")]
        assert all(r.height == 60 - 2 for r in regions)  # between the header and the footer
        assert [r.x for r in regions] == [0, regions[0].right, regions[1].right]
        assert regions[2].right == 200
        assert all(r.width >= 40 for r in regions), regions
        assert not app.screen.has_class("narrow")


async def help_rows(pilot, app) -> list[list[str]]:
    """f1, then the help table's rows as text."""
    from textual.widgets import DataTable

    from tui.screens.help import HelpScreen

    await pilot.press("f1")
    for _ in range(200):
        await pilot.pause(0.05)
        if isinstance(app.screen, HelpScreen):
            break
    await pilot.pause()
    table = app.screen.query_one(DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_help_fits_its_columns_at_80x24_and_names_panes_as_the_user_knows_them(store, db_path):
    from textual.widgets import DataTable

    from tui.widgets.focus_panel import FocusPanel

    node = store.add_node("Help me", "A line of text.")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one(FocusPanel).open_node(node)
        for _ in range(200):
            await pilot.pause(0.05)
            if app.query_one(FocusPanel).active_view is not None and app.focused is app.query_one(FocusPanel).strip:
                break
        rows = await help_rows(pilot, app)
        table = app.screen.query_one(DataTable)
        assert {r[0] for r in rows} == {"Focus", "everywhere"}  # not FocusPanel#focus
        assert table.virtual_size.width <= table.scrollable_content_region.width  # the Id column is whole


async def test_help_for_the_node_list_names_enter(store, db_path):
    """f1 in the node list lists enter (OptionList's own binding had no id, so help left it out)."""
    from tui.widgets.node_browser import NodeList

    store.add_node("Help me", "A line of text.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one(NodeList).focus()
        await pilot.pause()
        rows = await help_rows(pilot, app)
        assert ["node list", "enter", "Open in Focus", "nodes_open"] in rows, rows
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("enter")  # still opens the highlighted node
        from tui.widgets.focus_panel import FocusPanel
        for _ in range(200):
            await pilot.pause(0.05)
            if app.query_one(FocusPanel).active_view is not None:
                break
        assert app.query_one(FocusPanel).active_view.node["title"] == "Help me"


async def test_help_and_confirm_dialogs_show_their_own_keys_in_the_footer(store, db_path):
    from tui.screens.confirm import ConfirmScreen

    app = CairnApp(db_path, first_run_prompt=False)
    footer = lambda: [(k.key, k.description) for k in app.screen.query("FooterKey")]
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.push_screen(ConfirmScreen("Delete it?"))
        await pilot.pause()
        await pilot.pause()
        assert footer() == [("y", "Yes"), ("n", "No")]  # not ^n Capture, / Search: they do nothing here
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("f1")
        for _ in range(100):
            await pilot.pause(0.05)
            if footer() == [("escape", "Close")]:
                break
        assert footer() == [("escape", "Close")]


async def test_notifications_show_top_right_clear_of_the_chat_input(store, db_path):
    from textual.widgets._toast import Toast

    from tui.widgets.chat_pane import ChatInput

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await app.right_panes()
        app.notify("Indexed 3 notes in 0.2 s.")

        def toast_shown():
            toasts = [w for w in app.screen.walk_children() if isinstance(w, Toast)]
            return toasts[0] if toasts and toasts[0].region.area else None

        await wait_for(pilot, toast_shown, what="the toast laid out")  # a slow machine: no fixed pause
        toast = toast_shown()
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
        for _ in range(200):
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
    from core.config import Config, VaultSettings
    from tui.services import Services

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Garden.md").write_text("# Garden\n\nTomatoes need sun. See [[Compost]].\n", encoding="utf-8")
    (vault / "Compost.md").write_text("# Compost\n\nBrown and green layers.\n", encoding="utf-8")
    app = CairnApp(db_path, services=Services(db_path, config=Config(vault=VaultSettings(watch=str(vault)))), first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_listed(pilot, app, "Garden", "Compost")  # the initial import reached the list
        (vault / "Seeds.md").write_text("# Seeds\n\nSave them dry.\n", encoding="utf-8")
        await until_listed(pilot, app, "Seeds")  # a file saved while the app runs shows up
    assert app._vault_watcher is not None and not app._vault_watcher.running  # stopped on exit


async def test_the_vault_watchers_first_import_reaches_the_list_on_its_own(store, db_path, tmp_path, monkeypatch):
    """The first import can commit after the indexer looked and before the database watcher took its
    first reading (CI saw it): then only the folder watcher's own notice brings its notes to the list."""
    from core.config import Config, VaultSettings
    from tui.services import Services

    async def idle(self) -> None:
        return None

    # Neither the database watcher nor the indexer (which reloads the list after indexing) sees it.
    monkeypatch.setattr(CairnApp, "watch_database", work(exclusive=True, group="watch")(idle))
    monkeypatch.setattr(CairnApp, "index_pending", work(exclusive=True, group="index")(idle))
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Garden.md").write_text("# Garden\n\nTomatoes need sun.\n", encoding="utf-8")
    app = CairnApp(db_path, services=Services(db_path, config=Config(vault=VaultSettings(watch=str(vault)))), first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_listed(pilot, app, "Garden")


async def test_a_note_written_while_the_list_first_loads_reaches_it(store, db_path, monkeypatch):
    """Another process commits after the node list's first read and before the database watcher's
    first reading: the watcher compares that reading with the version the app saw at open."""
    from core.graph.store import Store

    read_versions = CairnApp._read_versions

    async def write_then_read(self, **kwargs):
        if not getattr(self, "_wrote", False):
            self._wrote = True
            with Store(db_path) as other:
                other.add_node("Written meanwhile", "by another process")
        return await read_versions(self, **kwargs)

    monkeypatch.setattr(CairnApp, "_read_versions", write_then_read)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_listed(pilot, app, "Written meanwhile")


async def test_a_lost_file_event_is_made_up_by_the_periodic_version_check(store, db_path, monkeypatch):
    """A commit whose WAL event never arrives (awatch still starting, an inotify overflow) reaches the
    list anyway: a 2 s timeout of the file watch reads PRAGMA data_version too."""
    import watchfiles

    from core.graph.store import Store

    awatch = watchfiles.awatch

    def deaf_awatch(*paths, **kwargs):
        kwargs["watch_filter"] = lambda _change, _path: False  # every event is lost
        return awatch(*paths, **kwargs)

    monkeypatch.setattr(watchfiles, "awatch", deaf_awatch)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        with Store(db_path) as other:
            other.add_node("Event lost", "by another process")
        # the check runs on the watch's 2 s timeout, then a reload worker: past 10 s once in a loaded
        # two-worker run of the whole suite (5-6 s alone, the app's start included)
        await until_listed(pilot, app, "Event lost", timeout=30.0)


async def test_a_missing_vault_watch_folder_is_a_clear_notice(store, db_path, tmp_path):
    from core.config import Config, VaultSettings
    from tui.services import Services

    missing = tmp_path / "nowhere"
    app = CairnApp(db_path, services=Services(db_path, config=Config(vault=VaultSettings(watch=str(missing)))), first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        notice = lambda: [n.message for n in app._notifications if "Folder sync is off" in n.message]
        for _ in range(100):
            await pilot.pause(0.05)
            if notice():
                break
        assert notice() and "does not exist" in notice()[0]


async def test_the_getting_started_graph_can_be_loaded_later_from_the_palette(store, db_path):
    from core.graph import getting_started
    from tui.palette.commands import pane_commands
    from tui.widgets.focus_panel import FocusPanel

    store.add_node("My own note", "Written before the guide.")
    app = CairnApp(db_path, first_run_prompt=False)
    notices = lambda: [n.message for n in app._notifications]
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        command = next(c for c in pane_commands(app) if c.title == "Help: load the Getting started graph")
        command.callback()
        panel = app.query_one(FocusPanel)
        for _ in range(200):
            await pilot.pause(0.05)
            if panel.active_view is not None and panel.active_view.node is not None:
                break
        assert panel.active_view.node["title"] == "Welcome to Cairn"
        assert any(n.startswith("Getting started loaded:") for n in notices())
        count = store.counts()["nodes"]
        assert count == 1 + len(getting_started.NODES)
        command.callback()  # again: nothing doubled, and it says so
        for _ in range(200):
            await pilot.pause(0.05)
            if "The Getting started graph is already here." in notices():
                break
        assert "The Getting started graph is already here." in notices()
        assert store.counts()["nodes"] == count


async def test_a_focus_change_handled_while_the_app_closes_finds_no_panes_and_is_no_error(store, db_path):
    from core.chat.focus import Focus
    from tui.messages import FocusChanged

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        chat, viewer = await app.right_panes()
        await chat.remove()
        await viewer.remove()  # as when the app closes with the message still queued (CI saw it)
        app._focus_changed(FocusChanged(Focus()))
        await pilot.pause()


async def test_a_quit_while_the_right_panes_mount_is_no_error(store, db_path, monkeypatch):
    from textual.widgets import ContentSwitcher

    mount = ContentSwitcher.mount

    async def mount_then_close(self, *widgets, **kwargs):
        await mount(self, *widgets, **kwargs)
        for widget in widgets:  # the app closes in between (a quit in the first moment)
            await widget.remove()

    monkeypatch.setattr(ContentSwitcher, "mount", mount_then_close)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
    assert not app._right_ready.is_set()


async def test_an_open_node_handled_while_the_app_closes_is_no_error(store, db_path):
    from tui.messages import OpenNode
    from tui.widgets.focus_panel import FocusPanel

    node = store.add_node("Late", "")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.right_panes()
        await app.query_one(FocusPanel).remove()  # as when the app closes with the message queued
        app._open_node(OpenNode(node))
        await pilot.pause()


async def test_nodes_changed_handled_while_the_app_closes_is_no_error(store, db_path):
    """A NodesChanged (the database watcher, an indexer finishing) that arrives after the Focus panel
    went reloads what is left instead of raising NoMatches."""
    from tui.messages import NodesChanged
    from tui.widgets.focus_panel import FocusPanel

    node = store.add_node("Late", "")["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.right_panes()
        await app.query_one(FocusPanel).remove()  # as when the app closes with the message queued
        app._nodes_changed(NodesChanged((node,)))
        await pilot.pause()


async def test_an_exit_right_after_the_first_frame_stops_cleanly(store, db_path):
    """App.exit() in the first moment (before the right panes mount): it once stopped on
    "MountError: Can't mount widget(s) before ContentSwitcher(id='right') is mounted"."""

    class Quick(CairnApp):
        def _first_frame(self) -> None:
            super()._first_frame()
            self.exit()

    app = Quick(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
    assert app._exception is None and app.return_code == 0


async def test_css_read_after_the_first_frame_styles_nothing_of_it(store, db_path, tmp_path):
    """LATER_CSS is read just after the first frame without restyling what is on screen: none of its
    rules may match a widget of that frame (such a rule would not apply until something restyled it)."""
    from textual.css.match import match
    from textual.css.stylesheet import Stylesheet

    first_frame: list = []

    class Watched(CairnApp):
        def _first_frame(self):
            first_frame.extend(self.screen.walk_children(with_self=True))
            super()._first_frame()

    store.add_node("First", "text")
    app = Watched(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app._right_ready.is_set(), what="the right panes mounted")
        assert len(first_frame) > 20
        later = Stylesheet(variables=app.get_css_variables())
        later.read_all(CairnApp.LATER_CSS)
        rules = later.rules
        assert len(rules) > 40  # the chat pane's, the viewer's and the dialogs' rules really were read
        matched = [(rule.selectors, type(node).__name__) for rule in rules for node in first_frame
                   if match(rule.selector_set, node)]
        assert matched == []
        # ...and they are in the stylesheet now: the chat input has its rule's border.
        assert all(later_path in {path for path, _ in app.stylesheet.source} for later_path in CairnApp.LATER_CSS)
        assert str(app.query_one("#chat-input").styles.max_height) == "10"  # chat.tcss


async def test_a_dialog_opened_before_the_first_frame_gets_its_css(store, db_path):
    from tui.screens.help import HelpScreen

    class Early(CairnApp):
        def on_mount(self):  # Textual calls CairnApp.on_mount too (handlers run for each class)
            self.push_screen(HelpScreen(None))

    app = Early(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.startup_ms is not None, what="the first frame")
        await pilot.pause()
        # modals.tcss: `#help-table { max-height: 50vh; }` (Textual's DataTable sets none)
        assert str(app.screen.query_one("#help-table").styles.max_height) == "50vh"


async def test_a_tab_opened_before_the_first_frame_gets_its_css(store, db_path):
    from tui.widgets.focus_panel import FocusPanel
    from tui.widgets.node_view import NodeView

    node = store.add_node("Early", "opened before the first frame")

    class Early(CairnApp):
        def on_mount(self):  # Textual calls CairnApp.on_mount too
            self.query_one(FocusPanel).open_node(node["id"], title="Early")

    app = Early(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.startup_ms is not None and app.query(NodeView), what="the tab")
        await pilot.pause()
        title = app.query_one(NodeView).query_one(".node-title")
        assert title.styles.text_style.bold  # node_view.tcss: `NodeView .node-title { text-style: bold; }`
