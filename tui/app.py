"""The Textual app: Nodes (browser) · Focus (tabs of open nodes) · Chat / Context viewer.

The App owns the state that crosses panes (the Focus tabs, the chat) and reacts to the panes'
messages. Every database, search, index or LLM call runs in a worker; the UI thread only renders.
"""

from __future__ import annotations

import asyncio
import gc
import time
from pathlib import Path
from types import MappingProxyType

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import ContentSwitcher, Header

from core.chat.focus import Focus
from core.graph import history
from core.safe_text import printable
from tui.flows.focus_tabs import TabKeeper
from tui.index_status import IndexStatus
from tui.key_handoff import KeyHandoff
from tui.messages import (EditInEditor, FocusChanged, FollowLink, IndexStatusChanged, NodesChanged, OpenNode,
                           ReviewLinks)
from tui.run_requests import RunRequests
from tui.services import Services
from tui.widgets.focus_panel import FocusPanel
from tui.widgets.footer import Footer
from tui.widgets.node_browser import NodeBrowser

STYLES = Path(__file__).resolve().parent.parent / "styles"
GC_THRESHOLDS = (5_000, 20, 100)  # Python's defaults: (700, 10, 10)
NARROW_WIDTH = 120  # below this, one pane at a time (f3 cycles)
PANES = ("nodes", "focus", "right")
# Indexing fewer notes than this (a save, an edit: the save said so already) makes no toast, unless
# one fails; the guide, an import or a re-embedding says when it starts and ends (issue 26, finding 4).
QUIET_INDEXING_BELOW = 5


class CairnApp(App):
    CSS_PATH = [str(STYLES / name) for name in ("app.tcss", "nodes.tcss", "focus.tcss")]
    # Read just after the first frame (_read_later_css), before anything they style exists: a Focus
    # tab, the chat pane, the Context viewer and the dialogs. Parsing them cost ~15 ms of the startup;
    # a test checks that none of their rules matches a widget of the first frame.
    # review.tcss is the review screen's CSS_PATH too: read here, its first push does not reparse
    # every source into a fresh stylesheet (Textual's _load_screen_css, ~60 ms).
    LATER_CSS = [str(STYLES / name) for name in ("node_view.tcss", "chat.tcss", "modals.tcss", "review.tcss",
                                                       "notices.tcss")]
    TITLE = "Cairn"
    BINDINGS = [
        Binding("/", "search", "Search", id="search_nodes"),
        Binding("ctrl+n", "quick_capture", "Capture", id="quick_capture"),
        Binding("ctrl+l", "focus_chat", "Chat", id="focus_chat"),
        Binding("f2", "toggle_viewer", "Context", id="toggle_viewer"),
        Binding("f3", "cycle_pane", "Next pane", id="cycle_pane"),
        Binding("f4", "journal_today", "Today", id="journal_today", show=False),  # in the palette, f1, README
        Binding("f6", "sync_conflicts", "Sync conflicts", id="sync_conflicts", show=False),  # the palette, f1
        Binding("f1", "help", "Help", id="help"),
        Binding("L", "link_suggestions", "Link suggestions", id="link_suggestions", show=False),
        Binding("N", "new_in_editor", "New note in $EDITOR", id="new_in_editor", show=False),  # f1, README
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
    ]

    def __init__(self, db: Path, *, services: Services | None = None, first_run_prompt: bool = True,
                 manage_gc: bool = False):
        super().__init__()
        history.set_process_actor(history.APP)  # who the history records for this process's own writes
        # `cairn` (run_app) lets the app own the garbage collector: paused for startup (tui/cli/app.py),
        # then everything alive after the first frame and after the embedder loads is frozen, so
        # full collections stop rescanning ~250k long-lived objects (~120 ms pauses on a 100k-node
        # graph, bench/tui.py). Off in tests, where many apps come and go in one process.
        self.manage_gc = manage_gc
        self.started = time.perf_counter()
        self.db = Path(db)
        self.services = services or Services(self.db)
        self.first_run_prompt = first_run_prompt
        self.startup_ms: float | None = None
        self._pane = 0
        with self.services.store() as store:  # before the node list's first read: see watch_database
            self._data_version: int = store.db.execute("PRAGMA data_version").fetchone()[0]
        self._signature: tuple = ()
        self._focus = Focus()
        self._right_ready = asyncio.Event()  # set once the chat and viewer panes are mounted
        self._right_mounting = asyncio.Event()  # while their mount is under way
        self._quitting = False  # set when shutdown begins: a mount not started by then never starts
        self._right_mounted = asyncio.Event()  # once it ended (mounted, or cut short by a close)
        # The chat pane and the Context viewer once mounted: held, not queried, since a query walks
        # the whole DOM (~15 ms a Focus tab switch with ten tabs open, bench/tui.py).
        self._right: tuple = ()
        self._marked = None  # the pane shown as holding the keyboard
        self._handoff = KeyHandoff(self)  # keys typed after a key that moves the keyboard follow it
        self._vault_watcher = None  # core.vault.watch.Watcher when the config names a folder (vault.watch)
        self._vault_flow = None  # tui.flows.vault_sync.VaultSyncFlow: what its rounds mean for the user
        self._index_requests = RunRequests()  # index_pending: one run, later calls ask it for another pass
        # the header's line about meaning search, fitted to the terminal's width
        self._index_status = IndexStatus(self._show_index_status, lambda: self.size.width)
        self._tab_keeper = TabKeeper(self)  # the Focus tabs kept between runs (tui/flows/focus_tabs.py)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded and self._handoff.intercept(event):
            return  # held until the keyboard has moved (tui/key_handoff.py)
        await super().on_event(event)

    def _handle_exception(self, error: Exception) -> None:
        """An error that stops the app: its traceback goes to the log file too (core/logfile.py)."""
        import logging

        logging.getLogger("cairn.app").error("the app stopped on an error", exc_info=error)
        super()._handle_exception(error)

    def notify(self, message: str, *, title: str = "", **kwargs) -> None:
        """Every toast (a widget's or a screen's notify comes here): its text shown, never interpreted; a
        provider's error or a title can carry escape sequences (core/safe_text.py)."""
        super().notify(printable(str(message)), title=printable(title), **kwargs)

    async def handle_key_now(self, event: events.Key) -> None:
        """A held key, handled as if it had just arrived."""
        await super().on_event(event)

    @property
    def available_themes(self):
        """A read-only view of the themes. Textual's copies the dict on every call, and it is called
        for each line it renders (~10 % of a Focus tab switch's layout and render time under cProfile)."""
        return MappingProxyType(self._registered_themes)

    def get_system_commands(self, screen):
        """Textual's own commands (theme, keys, quit…), then the panes' actions on the main screen."""
        yield from super().get_system_commands(screen)
        if screen is self.screen_stack[0]:
            from tui.palette.commands import pane_commands

            yield from pane_commands(self)

    # -- layout --------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            yield NodeBrowser(self.services, id="nodes", classes="pane current")
            yield FocusPanel(self.services, id="focus", classes="pane")
            # The chat and the Context viewer (and their imports: markdown, the context engine) are
            # mounted just after the first frame, so the app appears sooner (see _mount_right).
            yield ContentSwitcher(id="right", classes="pane")
        yield Footer()

    def on_mount(self) -> None:
        cfg = self.services.config
        for warning in cfg.warnings:
            self.notify(warning, severity="warning")
        if cfg.ui.theme:
            if cfg.ui.theme in self.available_themes:
                self.theme = cfg.ui.theme
            else:
                self.notify(f"Unknown theme {cfg.ui.theme!r}; using the default.", severity="warning")
        if cfg.keymap:
            self.set_keymap(cfg.keymap)
        self.animation_level = cfg.ui.animations
        self._apply_width(self.size.width)
        self.watch(self.screen, "focused", lambda focused: self._mark_pane(focused), init=False)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._mark_pane(self.screen.focused, force=True))
        self.call_after_refresh(self._first_frame)

    def _first_frame(self) -> None:
        self.startup_ms = (time.perf_counter() - self.started) * 1000
        self.log(f"startup {self.startup_ms:.0f} ms")
        if self.manage_gc:
            gc.freeze()  # startup's objects live as long as the app: never scan them again
            # Rendering allocates tens of thousands of short-lived tuples per frame; with the default
            # thresholds a full collection (~80 ms over the open tabs' widgets) came every second tab
            # switch. Collect the young generations less often and the old one rarely.
            gc.set_threshold(*GC_THRESHOLDS)
            gc.enable()
        self._read_later_css()
        self.call_later(self._mount_right)
        self._tab_keeper.restore()
        self.index_pending()
        self.apply_memory_retention()
        self.watch_database()
        self._start_vault_watch()
        if self.first_run_prompt:
            self.check_first_run()

    def _read_later_css(self) -> None:
        """Add LATER_CSS to the stylesheet (the sources already parsed come from its cache)."""
        if self.css_monitor is not None:  # `textual run --dev` reloads them on change, as CSS_PATH's
            self.css_monitor.add_paths(self.LATER_CSS)
        for path in self.LATER_CSS:
            if not self.stylesheet.has_source(path, ""):
                self.stylesheet.read(path)
        self.stylesheet.parse()
        if len(self.screen_stack) > 1 or any(panel.open_ids for panel in self.query(FocusPanel)):
            self.stylesheet.update(self)  # a dialog or a tab opened before the first frame: style it again

    async def _mount_right(self) -> None:
        from tui.widgets.chat_pane import ChatPane
        from tui.widgets.context_viewer import ContextViewer

        if self._quitting:
            return  # quit before the panes were due: nothing to mount into a closing app
        switcher = self.query_one("#right", ContentSwitcher)
        if not switcher.is_attached:  # an exit under way (App.exit, not yet _shutdown): the screen is going
            self._right_mounted.set()
            return
        chat, viewer = ChatPane(self.services, id="chat"), ContextViewer(self.services, id="viewer")
        viewer.display = False  # f2 shows it
        self._right_mounting.set()
        try:
            await switcher.mount(chat, viewer)
        finally:
            self._right_mounting.clear()
            self._right_mounted.set()
        if not (chat.is_attached and viewer.is_attached):
            return  # the app closed while they mounted (a quit in the first moment)
        switcher.current = "chat"
        chat.set_focus(self._focus)
        viewer.set_focus(self._focus)
        self._right = (chat, viewer)
        self._right_ready.set()

    async def _shutdown(self) -> None:
        """A quit in the first moment waits (at most 2 s) for the right panes' mount under way: the
        viewer's Select widgets, torn down mid-mount, raised NoMatches('#label') from their on_mount."""
        self._quitting = True
        if self._right_mounting.is_set():
            try:
                await asyncio.wait_for(self._right_mounted.wait(), 2.0)
            except asyncio.TimeoutError:
                pass  # the message loop has stopped (a quit key): nothing more will mount
        await super()._shutdown()

    async def right_panes(self) -> tuple:
        """The chat and the Context viewer, waiting for them if the app has only just started."""
        await self._right_ready.wait()
        return self._right

    def _mark_pane(self, focused, force: bool = False) -> None:
        """Give the pane holding the keyboard an accent border. Inline styles on the pane alone: a CSS
        class or `:focus-within` would restyle the pane's whole subtree (ten Focus tabs: ~50 ms)."""
        from textual.color import Color

        if focused is None:
            return  # a modal took the keyboard (or nothing holds it): the pane keeps its border
        pane = next((w for w in focused.ancestors_with_self if w.has_class("pane")), None)
        if pane is self._marked and not force:
            return
        if self._marked is not None:
            for rule in ("border_top", "border_right", "border_bottom", "border_left", "border_title_color",
                         "auto_border_title_color"):
                self._marked.styles.clear_rule(rule)  # back to the CSS
        if pane is not None:
            accent = Color.parse(self.theme_variables["accent"])
            pane.styles.border = ("round", accent)
            pane.styles.border_title_color = accent
            pane.styles.auto_border_title_color = False  # the CSS's $text-muted is an "auto" colour
        self._marked = pane

    def on_resize(self, event) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        # The main screen, also when a dialog is on top (the terminal may be resized under it).
        self.screen_stack[0].set_class(width < NARROW_WIDTH, "narrow")

    def action_cycle_pane(self) -> None:
        panes = [self.query_one(f"#{p}") for p in PANES]
        self._pane = (self._pane + 1) % len(panes)
        for i, pane in enumerate(panes):
            pane.set_class(i == self._pane, "current")
        target = panes[self._pane]
        if isinstance(target, ContentSwitcher):  # the chat / viewer switcher cannot take focus itself
            target = target.visible_content or target
        target.focus_default() if hasattr(target, "focus_default") else target.focus()

    def _show_pane(self, name: str) -> None:
        self._pane = PANES.index(name)
        for p in PANES:
            self.query_one(f"#{p}").set_class(p == name, "current")

    # -- actions -------------------------------------------------------------------------------------
    def action_search(self) -> None:
        self._show_pane("nodes")
        self.query_one(NodeBrowser).focus_search()

    async def action_focus_chat(self) -> None:
        chat, _viewer = await self.right_panes()
        self._show_pane("right")
        self.query_one("#right", ContentSwitcher).current = "chat"
        chat.focus_input()

    async def action_toggle_viewer(self) -> None:
        """Show the Context viewer (or the chat again); the keyboard follows, at every width."""
        chat, viewer = await self.right_panes()
        switcher = self.query_one("#right", ContentSwitcher)
        switcher.current = "viewer" if switcher.current == "chat" else "chat"
        self._show_pane("right")
        # Title the pane here, not only in the panes' on_show: a late Show of the pane just hidden
        # could otherwise leave its title up (seen in a real terminal, tests/test_e2e_tmux.py).
        # Focus after the next refresh: the pane just shown has no layout yet, and a text field
        # focused now would put the terminal cursor at the screen's top (the tmux e2e saw it).
        if switcher.current == "viewer":
            viewer.show_title()
            self.call_after_refresh(viewer.focus)
        else:
            chat.settings_changed()
            self.call_after_refresh(chat.focus_input)

    def action_quick_capture(self) -> None:
        from tui.screens.quick_capture import QuickCapture

        if isinstance(self.screen, QuickCapture):
            return
        self.push_screen(QuickCapture(self.services), self._captured)

    def action_journal_today(self) -> None:
        """f4: an entry for today's journal note (core/graph/journal.py); the note opens in Focus."""
        from tui.screens.journal_entry import JournalEntry

        if isinstance(self.screen, JournalEntry):
            return
        self.push_screen(JournalEntry(self.services), self._journal_written)

    def action_sync_conflicts(self) -> None:
        """f6: the bound folder's sync conflicts, to compare and resolve (tui/screens/sync_conflicts.py)."""
        from tui.screens.sync_conflicts import SyncConflicts

        if isinstance(self.screen, SyncConflicts):
            return
        self.push_screen(SyncConflicts(self.services))

    def _journal_written(self, node_id: int | None) -> None:
        if node_id is not None:
            self.query_one(FocusPanel).open_node(node_id)

    def _captured(self, node_id: int | None) -> None:
        """Quick capture closed: the note it made (or the page captured before) opens in Focus."""
        if node_id is not None:
            from tui.flows.link_review import after_save

            self.post_message(OpenNode(node_id))
            after_save(self, node_id)  # "N link suggestions — press L" when the note mentions others

    def on_node_view_saved(self, message) -> None:
        """A Focus tab saved its editor (NodeView.Saved bubbles up): look for mentions to suggest."""
        from tui.flows.link_review import after_save

        after_save(self, message.node["id"])

    def action_link_suggestions(self) -> None:
        from tui.flows.link_review import link_suggestions

        link_suggestions(self)

    @on(ReviewLinks)
    def _review_links(self, message: ReviewLinks) -> None:
        """A pane asks for a node's link review (i in the Focus panel)."""
        from tui.flows.link_review import open_review

        open_review(self, message.node_id, message.title, message.mode)

    def action_new_in_editor(self) -> None:
        """N: a new note written in $VISUAL / $EDITOR; it opens in Focus once saved."""
        from tui.flows import external_editor

        external_editor.start_new(self)

    @on(FollowLink)
    def _follow_link(self, message: FollowLink) -> None:
        """enter on (or a click at) a [[link]] in a Focus tab: its note opens (tui/flows/note_links.py)."""
        from tui.flows import note_links

        note_links.follow_links(self, message.node, message.links, message.chosen)

    @on(EditInEditor)
    def _edit_in_editor(self, message: EditInEditor) -> None:
        """E in the Focus panel: the node's source in $VISUAL / $EDITOR."""
        from tui.flows import external_editor

        external_editor.start(self, message.node_id)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("link_suggestions", "new_in_editor"):  # a bare key: not while typing, not over a dialog
            from tui.widgets.text_field import is_text_field

            return self.screen is self.screen_stack[0] and not is_text_field(self.focused)
        return True

    async def action_quit(self) -> None:
        """Quit, asking first if a Focus tab has unsaved edits."""
        from tui.widgets.node_view import NodeEditor

        if any(editor.dirty for editor in self.query(NodeEditor)):
            from tui.screens.confirm import ConfirmScreen

            self.push_screen(ConfirmScreen("A Focus tab has unsaved edits. Quit and discard them?", yes="Quit",
                                           no="Stay"), lambda quit_: self.exit() if quit_ else None)
            return
        self.exit()

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.focused))

    # -- cross-pane state ----------------------------------------------------------------------------
    @on(OpenNode)
    def _open_node(self, message: OpenNode) -> None:
        if not self.query(FocusPanel):
            return  # closing: a worker's OpenNode (the guide, the welcome) came after the panes went
        self._show_pane("focus")
        self.query_one(FocusPanel).open_node(message.node_id, title=message.title)

    @on(FocusChanged)
    def _focus_changed(self, message: FocusChanged) -> None:
        self._focus = message.focus
        self._tab_keeper.changed(message.focus)
        # Until they are mounted, _mount_right hands the panes the latest focus; a message handled
        # while the app closes finds them detached.
        for pane in self._right:
            if pane.is_attached:
                pane.set_focus(message.focus)

    @on(NodesChanged)
    def _nodes_changed(self, message: NodesChanged) -> None:
        if not self.is_running or not self.query(NodeBrowser):
            return  # closing
        self._reload_views(message.node_ids)
        self.index_pending()

    def _reload_views(self, node_ids: tuple[int, ...] = ()) -> None:
        """Reload the node list and the Focus tabs; query, not query_one: either may already be gone
        while the app closes (a late NodesChanged, a worker finishing)."""
        for browser in self.query(NodeBrowser):
            browser.reload()
        for panel in self.query(FocusPanel):
            panel.reload(node_ids)

    # -- background work -----------------------------------------------------------------------------
    def index_pending(self) -> None:
        """Chunk and embed pending nodes (written here or by other processes), in a worker.

        One run at a time: a call while the app's run is going does not restart it (its next batch
        takes what was written meanwhile) but asks it for one more pass when it ends
        (tui/run_requests.py); `cairn index` in another terminal is waited for (core/index/run_lock.py).
        Closing the app cancels the worker, so the app never waits for more than one batch to quit."""
        if self._index_requests.start():
            self._index_run()

    @work(thread=True, group="index", exit_on_error=False, name="indexing")
    def _index_run(self) -> None:
        from textual.worker import get_current_worker

        worker = get_current_worker()
        self._index_requests.serve(lambda: self._index_pass(worker))

    def _index_pass(self, worker) -> bool:
        """One pass over what is pending, with its own connection; False when the app's closing stopped
        it. A few notes (a save, an edit) are indexed without a word unless one fails; a larger piece
        of work (the guide, an import, a re-embedding) says when it starts and when it is done."""
        from core.index.indexer import Indexer, coverage
        from core.graph.store import Store

        # Another process indexing (`cairn import`, `cairn index`): follow it rather than run beside it.
        self._index_status.follow(self.db, lambda: worker.is_cancelled)
        with Store(self.db) as store:
            indexer = Indexer(store)
            pending = indexer.pending_count()
            other = indexer.other_model()
            if not pending and not other and not worker.is_cancelled:
                self._index_status.coverage(*coverage(store.db))
            if other:
                nodes = store.counts()["nodes"]
                self.call_from_thread(self.notify, f"Re-embedding {nodes} note{'s' if nodes != 1 else ''} with "
                                      f"{indexer.embedder.name} (the vectors were made by {other}); search by "
                                      "meaning is partial until it finishes.", timeout=10, markup=False)
            elif not pending:
                return True
            elif pending >= QUIET_INDEXING_BELOW:
                self.call_from_thread(self.notify, f"Indexing {pending} note{'s' if pending != 1 else ''}…", timeout=3)
            report = indexer.run(should_stop=lambda: worker.is_cancelled, progress=self._index_status.progress,
                                 while_waiting=lambda: self._index_status.other_now(self.db))
            if not worker.is_cancelled:
                self._index_status.coverage(*coverage(store.db))
        if report.busy or worker.is_cancelled:
            return False  # the app is closing: the next start indexes the rest and says so
        if report.indexed:
            self.call_from_thread(self._reload_views)
        if report.indexed and (other or max(pending, report.indexed) >= QUIET_INDEXING_BELOW):
            self.call_from_thread(self.notify, f"Indexed {report.indexed} note{'s' if report.indexed != 1 else ''} "
                                  f"in {report.seconds:.1f} s.", timeout=3)
        if report.errors:
            self.call_from_thread(self.notify, f"{report.errors} notes failed to index; run `cairn doctor`.",
                                  severity="error")
        return True

    def _show_index_status(self, text: str) -> None:
        """From the index run's threads: the header's line about meaning search (tui/index_status.py)."""
        self.post_message(IndexStatusChanged(text))

    def on_index_status_changed(self, message: IndexStatusChanged) -> None:
        self.sub_title = message.text

    @work(thread=True, exclusive=True, group="retention", exit_on_error=False)
    def apply_memory_retention(self) -> None:
        """The user's memory retention policy ([memory] in the config), once per start: memory nodes
        past it go to the trash, and a notification says which (no policy: nothing runs). The history's
        bound ([history] keep_versions) is applied first."""
        from core.graph import history, retention

        with self.services.store() as store:
            history.prune(store.db, self.services.config.history.keep_versions)
        policy = retention.Policy.from_config(self.services.config)
        if not policy.active:
            return
        with self.services.store() as store:
            removed = retention.apply(store, policy)
        if removed:
            self.call_from_thread(self.notify, retention.summary(removed), title="Memory retention", timeout=10,
                                  markup=False)
            self.post_message(NodesChanged())

    @work(exclusive=True, group="watch", exit_on_error=False)
    async def watch_database(self) -> None:
        """Notice nodes written by other processes (`cairn add`, the MCP server). In WAL mode a write
        touches cairn.db-wal, not cairn.db, so the WAL is watched (debounce lowered from watchfiles'
        1.6 s default); `PRAGMA data_version` confirms another connection committed, and a signature
        of the node tables tells node changes from chat messages. A commit made before the first
        reading (while the node list loaded) is caught by comparing it with the version at open."""
        import watchfiles

        version, self._signature = await self._read_versions()
        if version != self._data_version:  # another connection committed since the app opened the database
            self._data_version = version
            self.post_message(NodesChanged())
        names = {self.db.name, self.db.name + "-wal"}
        # No event for 2 s also reads the version (microseconds when it has not moved): a commit made
        # while awatch was still starting, or a lost event, shows within 2 s.
        async for _changes in watchfiles.awatch(self.db.parent, debounce=150, step=50, rust_timeout=2_000,
                                                yield_on_timeout=True,
                                                watch_filter=lambda _c, path: Path(path).name in names):
            version, signature = await self._read_versions(unless=self._data_version)
            if version != self._data_version:
                self._data_version = version
                if signature != self._signature:
                    self._signature = signature
                    self.post_message(NodesChanged())

    async def _read_versions(self, unless: int | None = None) -> tuple[int, tuple]:
        """(data_version, signature of the node tables); the signature is not read when the version
        is still `unless`."""
        import asyncio

        def read() -> tuple[int, tuple]:
            with self.services.store() as store:
                version = store.db.execute("PRAGMA data_version").fetchone()[0]
                if version == unless:
                    return version, self._signature
                signature = tuple(store.db.execute(
                    "SELECT (SELECT COUNT(*) FROM nodes), (SELECT MAX(updated_at) FROM nodes),"
                    " (SELECT COUNT(*) FROM edges), (SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed')"
                ).fetchone())
                return version, signature

        return await asyncio.to_thread(read)

    @work(thread=True, exit_on_error=False)
    def check_first_run(self) -> None:
        with self.services.store() as store:
            empty = store.counts()["nodes"] == 0
        if empty:
            from tui.screens.welcome import WelcomeScreen

            self.call_from_thread(self.push_screen, WelcomeScreen(self.services))

    def on_worker_state_changed(self, event) -> None:
        """One place turns a failed worker into a visible error instead of a crash."""
        from textual.worker import WorkerState

        if event.state == WorkerState.ERROR:
            from core.errors import disk_full

            error = disk_full(event.worker.error) or event.worker.error  # ENOSPC: the sentence, not errno 28
            self.notify(f"{event.worker.name or 'background task'} failed: {error}", severity="error",
                        timeout=8, markup=False)

    def _start_vault_watch(self) -> None:
        """Keep the folder named by `vault.path` (or `vault.watch`) in step with the database both ways
        (as `cairn watch` does), in a thread with its own connection; the database watcher then shows
        what it writes, and each round's questions and conflicts reach the user (tui/flows/vault_sync.py)."""
        folder = self.services.config.vault.path or self.services.config.vault.watch
        if not folder:
            return
        from core.errors import CairnError
        from core.vault.watch import start_from_config
        from tui.flows.vault_sync import VaultSyncFlow

        def from_thread(callback, *args, **kwargs) -> None:
            if self.is_running:
                try:
                    self.call_from_thread(callback, *args, **kwargs)
                except RuntimeError:  # the app closed meanwhile
                    pass

        self._vault_flow = flow = VaultSyncFlow(self, folder)
        try:
            self._vault_watcher = start_from_config(
                self.services.config, self.db,
                on_ready=lambda report: self._vault_ready(folder, report, from_thread),
                on_round=lambda report: from_thread(flow.after_round, report),
                on_change=lambda _report: from_thread(self.post_message, NodesChanged()),
                on_error=lambda exc: from_thread(self.notify, f"Folder sync ({folder}): {exc}", severity="error",
                                                 timeout=8, markup=False),
            )
        except CairnError as exc:
            self.notify(f"Folder sync is off: {exc}", severity="error", timeout=8, markup=False)

    def _vault_ready(self, folder: str, report, from_thread) -> None:
        """The watcher's first import is done (in its thread). Its writes may have landed before the
        database watcher took its first reading, so they are announced here, not left to it."""
        from_thread(self.notify, f"Keeping {folder} in sync.", timeout=3, markup=False)
        if report.changes:
            from_thread(self.post_message, NodesChanged())

    def freeze_long_lived(self) -> None:
        """After a large one-time load (the embedder): keep full collections from rescanning it."""
        if self.manage_gc:
            gc.freeze()

    def on_unmount(self) -> None:
        if self._vault_watcher is not None:
            self._vault_watcher.stop()
        self._tab_keeper.at_exit()
        self.services.close()


def run_app(db: Path) -> int:
    CairnApp(db, manage_gc=True).run()
    return 0
