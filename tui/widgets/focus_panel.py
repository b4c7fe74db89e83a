"""Focus pane (centre). CONTRACT (used by tui/app.py):
- FocusPanel(services, id=..., classes=...)
- open_node(node_id): open in a new tab or switch to its tab; posts tui.messages.FocusChanged(focus).
- reload(node_ids): refresh open tabs showing these nodes (empty tuple: all).
- posts FocusChanged whenever tabs open/close or the active tab changes.

Tabs of open nodes (one NodeView each); the active tab is the primary focused node. The panel's keys
(ctrl+w, [, ], e, E, ctrl+e, c) act only when the keyboard is not in a text field. While a tab is
read, the keyboard sits on the tab strip (up/down/page keys scroll the tab, left/right switch, tab
enters it), so switching tabs moves no focus; a tab being edited takes it into its editor.

E asks the app (EditInEditor) for an $EDITOR round on the active node: tui/flows/external_editor.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.content import Content
from textual.widgets import Static, TabbedContent, TabPane, Tabs

from core.chat.focus import Focus
from core.safe_text import printable
from tui.messages import EditInEditor, FocusChanged, NodesChanged, ReviewLinks
from tui.services import Services
from tui.tab_labels import TAB_LABEL_WIDTH, tab_labels
from tui.widgets.text_field import is_text_field

if TYPE_CHECKING:  # NodeView (markdown, the editor) is imported when the first tab opens, not at startup
    from tui.widgets.node_view import NodeView

EMPTY_HINT = "Open a node with enter in the Nodes pane, / to search."
TAB_ACTIONS = {"close_tab", "prev_tab", "next_tab", "edit_node", "edit_in_editor", "new_edge", "copy_node",
               "integrate", "follow_link"}
NEEDS_NODE = {"edit_node", "edit_in_editor", "new_edge", "copy_node", "integrate", "node_history", "neighbourhood",
              "follow_link"}


# Frames _align_strip waits for a tab to be laid out at its label's width: usually one or two. A tab
# laid out later keeps an underline at its unsettled width (Textual measures it once, after a frame);
# with four, a full-suite run under load once timed out waiting for the underline
# (test_reference_size::test_the_node_editor; not reproduced since). A retry is one callback a frame.
ALIGN_FRAMES = 20


def tab_label(title: str, others: tuple[str, ...] = ()) -> Content:
    """A tab's label; `others`, the other open tabs' titles, for telling apart titles that share a
    start (tui/tab_labels.py)."""
    label = tab_labels([printable(title), *map(printable, others)], TAB_LABEL_WIDTH)[0]
    return Content(label)  # plain Content: a "[bold]" in a title stays literal


class EmptyHint(Static, can_focus=True):
    """What the panel shows with no tab open; focusable so the pane can hold the keyboard."""


class FocusPanel(Vertical):
    PANE_NAME = "the Focus pane"  # what f1 help calls it
    BINDINGS = [
        Binding("ctrl+w", "close_tab", "Close tab", id="close_tab"),
        Binding("[", "prev_tab", "Prev tab", id="prev_tab"),
        Binding("]", "next_tab", "Next tab", id="next_tab"),
        Binding("e", "edit_node", "Edit", id="edit_node"),
        # Not in the footer (it is full at 80 columns; `e` is there): F1 help and the README list it.
        Binding("E", "edit_in_editor", "Edit in $EDITOR", id="edit_in_editor", show=False),
        Binding("ctrl+e", "new_edge", "Link", id="new_edge"),
        Binding("c", "copy_node", "Copy", id="copy_node"),
        Binding("i", "integrate", "Integrate the focused node", id="integrate", show=False),
        Binding("h", "node_history", "History", id="node_history", show=False),  # f1 help, the palette, README
        Binding("g", "neighbourhood", "Neighbourhood", id="neighbourhood", show=False),
        # Reading a note: its [[link]] (the one under a long text's cursor, else a list). f1, README
        Binding("enter", "follow_link", "Follow [[link]]", id="follow_link", show=False),
        # With the keyboard on the tab strip, the reading keys scroll the active tab (its read view
        # has the same keys when it holds the keyboard itself).
        Binding("up", "scroll_view('scroll_up')", "Scroll up", id="tab_scroll_up", show=False),
        Binding("down", "scroll_view('scroll_down')", "Scroll down", id="tab_scroll_down", show=False),
        Binding("pageup", "scroll_view('page_up')", "Page up", id="tab_page_up", show=False),
        Binding("pagedown", "scroll_view('page_down')", "Page down", id="tab_page_down", show=False),
        Binding("home", "scroll_view('scroll_home')", "Top", id="tab_top", show=False),
        Binding("end", "scroll_view('scroll_end')", "Bottom", id="tab_bottom", show=False),
    ]

    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services
        self._order: list[int] = []  # node ids in tab order
        # The node the panel means to show (set by every open, tab key and click). Textual activates
        # the first tab of an empty TabbedContent a moment after adding it, which would otherwise
        # win over a second node opened in the same moment; _tab_changed puts the wanted one back
        # then. Any other tab the strip activates itself (left/right on it, a click) is the user's
        # choice and becomes the wanted one.
        self._wanted: int | None = None
        self._auto_pane: str | None = None  # a pane added to an empty strip, which Textual activates itself
        self._tabs: TabbedContent | None = None
        self._strip: Tabs | None = None
        self._views: dict[int, "NodeView"] = {}  # node id -> the view in its current tab
        self._adding: set[str] = set()  # panes whose tab is being added (not yet switchable to)
        self._panes: dict[int, str] = {}  # node id -> its TabPane's id (fresh per opening, so a tab
        self._serial = 0  # reopened while its old pane is still being removed never clashes)
        self._posted: Focus | None = None
        self._title = ""  # the border title last set
        self._titles: dict[int, str] = {}  # node id -> its tab's title, for the labels (_relabel)

    def compose(self) -> ComposeResult:
        yield EmptyHint(Text(EMPTY_HINT), classes="focus-empty")
        yield TabbedContent(id="focus-tabs")

    def on_mount(self) -> None:
        self._title = self.border_title = "Focus"
        self.query_one("#focus-tabs", TabbedContent).display = False
        _ = self.strip  # routes Textual's own scroll to the active tab through _align_strip (see strip)

    # -- state ---------------------------------------------------------------------------------------
    @property
    def tabs(self) -> TabbedContent:
        # Held, not queried: check_action asks for the active view for every binding on every
        # bindings refresh; the DOM queries there were ~30 % of a tab switch's calls (cProfile).
        if self._tabs is None:
            self._tabs = self.query_one("#focus-tabs", TabbedContent)
        return self._tabs

    @property
    def open_ids(self) -> tuple[int, ...]:
        return tuple(self._order)

    @property
    def primary(self) -> int | None:
        return self._node_of(self.tabs.active or "")

    def _node_of(self, pane: str) -> int | None:
        for node_id, pid in self._panes.items():
            if pid == pane and node_id in self._order:
                return node_id
        return None

    @property
    def active_view(self) -> NodeView | None:
        return self.view(self.primary) if self.primary is not None else None

    def view(self, node_id: int) -> NodeView | None:
        """The open tab's view of a node (not one whose tab is closing)."""
        view = self._views.get(node_id)
        if view is not None and view.parent is not None and view.parent.id == self._panes.get(node_id):
            return view  # mounted in its tab
        return None

    @property
    def strip(self) -> Tabs:
        """The row of tab labels, which holds the keyboard while a tab is being read."""
        if self._strip is None:
            self._strip = self.tabs.query_one(Tabs)
            # Textual scrolls to the active tab from where it was before the next layout, a frame
            # later and animated: for a tab just opened or relabelled that scroll landed after ours
            # and took the label off the strip. Its callers (activation, resize) align through ours.
            self._strip._scroll_active_tab = self._align_strip
        return self._strip

    def focus_default(self) -> None:
        primary = self.primary
        if primary is not None and self.view(primary) is not None:
            self._keyboard_to(primary)
        elif not self._order:
            self.query_one(EmptyHint).focus()

    def _keyboard_to(self, node_id: int) -> None:
        """Give the keyboard to a tab: one being edited takes it into its editor (where it last was);
        one being read leaves it on the tab strip, where the reading keys scroll the tab and tab
        enters it. The strip is the same widget for every tab, so a tab switch moves no focus:
        moving it into each tab's own view made Textual repaint the whole screen and restyle both
        views' subtrees, ~40 % of a switch's CPU time (bench/tui.py, tab_switch_ms)."""
        view = self.view(node_id)
        if view is None:
            return
        if view.editing:
            view.focus_body()
        elif self.app.focused is not self.strip:
            self.strip.focus()

    def _sync(self) -> None:
        """Post FocusChanged if the open tabs or the primary changed; refresh the footer and hint."""
        empty = not self._order
        self.query_one(".focus-empty").display = empty
        self.tabs.display = not empty
        title = f"Focus · {len(self._order)} open" if self._order else "Focus"
        if title != self._title:  # setting a border title repaints the whole panel, even when unchanged
            self._title = self.border_title = title
        self.refresh_bindings()
        active = self.primary
        if self._order and active is None:
            return  # between a tab change and its activation; the settled state posts
        if active is not None and (view := self.view(active)) is not None:
            view.shown()  # a tab reopened at start reads its node once it is first shown
        focus = Focus(open=tuple(self._order), primary=active if self._order else None)
        if focus != self._posted:
            self._posted = focus
            # Straight to the App: bubbling through the Screen would wait behind its relayout of the
            # newly shown tab (~150–300 ms measured), and the Context viewer must update at once.
            self.app.post_message(FocusChanged(focus))

    # -- opening and closing -------------------------------------------------------------------------
    def open_node(self, node_id: int, title: str = "", *, take_keyboard: bool = True, load_now: bool = True) -> None:
        """Open a node in a new tab, or switch to its tab; the keyboard follows (see _keyboard_to) unless
        `take_keyboard` is False. `load_now=False` (tabs reopened at start): the tab reads its node when
        first shown."""
        node_id = int(node_id)
        self._wanted = node_id
        if node_id in self._order:
            if self._panes.get(node_id) not in self._adding:
                self._activate(node_id, take_keyboard=take_keyboard)
            # else its tab is still being added: the pending activate() below switches to it (it
            # checks _wanted); switching now raised "No Tab with id" (the guide opened Welcome twice)
            return
        self._order.append(node_id)
        self._serial += 1
        self._panes[node_id] = pane = f"node-{node_id}-{self._serial}"
        from tui.widgets.node_view import NodeView

        view = self._views[node_id] = NodeView(self.services, node_id, classes="node-view", load_now=load_now)
        if not self.tabs.tab_count:
            self._auto_pane = pane
        self._titles[node_id] = title or f"#{node_id}"
        others = tuple(self._titles[n] for n in self._order if n != node_id and n in self._titles)
        added = self.tabs.add_pane(TabPane(tab_label(self._titles[node_id], others), view, id=pane))
        self.tabs.display = True
        self.query_one(".focus-empty").display = False

        self._adding.add(pane)

        async def activate() -> None:
            try:
                await added
            finally:
                self._adding.discard(pane)
            self._relabel()  # the other tabs, if the new title shares their labels
            if self._panes.get(node_id) == pane and self._wanted == node_id and self._tab_there(pane):
                self._activate(node_id, take_keyboard=take_keyboard)  # not overtaken by a later open, nor torn down

        self.call_next(activate)

    def _tab_there(self, pane: str) -> bool:
        """Whether the pane's tab is in the strip: an app shutting down removes it after its add began
        (switching to it then raised "No Tab with id" while the app quit)."""
        if not self.is_attached:
            return False
        try:
            self.tabs.get_tab(pane)
        except (NoMatches, ValueError):
            return False
        return True

    def _activate(self, node_id: int, *, take_keyboard: bool = True) -> None:
        # Announce the new primary before switching panes: the switch makes the screen lay out the
        # newly shown tab, and the Context viewer should not wait behind that.
        self._wanted = node_id
        focus = Focus(open=tuple(self._order), primary=node_id)
        if focus != self._posted:
            self._posted = focus
            self.app.post_message(FocusChanged(focus))
        self.tabs.active = self._panes[node_id]
        self._align_strip()
        if take_keyboard:
            self._keyboard_to(node_id)
        self._sync()

    def _align_strip(self, retries: int = ALIGN_FRAMES) -> None:
        """Scroll the tab strip to the active tab and put its underline there now, from the labels'
        current places (a switch does not move them). Textual does both after the next frame: the
        scroll then cost a second frame that, coming right after a layout, repainted the whole
        screen (~15 ms), and the underline a third; its own later alignment now finds nothing to do.

        A tab just opened, or relabelled from '#id' to its title, is not laid out at its label's
        width yet, and the strip's scrollable width may not count it yet: then again after each
        next frame, up to ALIGN_FRAMES (found in tmux: a fifth tab opened active with its label off the
        strip and no underline in view)."""
        strip = self.strip
        tab = strip.active_tab
        if tab is None:
            return
        region = tab.virtual_region
        settled = bool(region) and region.width == tab.label.cell_length + tab.styles.gutter.width
        if not settled and retries:
            self.call_after_refresh(self._align_strip, retries - 1)
        if not region:
            return
        scroller = strip.query_one("#tabs-scroll")
        before = scroller.scroll_x
        scroller.scroll_to_center(tab, animate=False, force=True, immediate=True)
        if retries < ALIGN_FRAMES and scroller.scroll_x != before:
            scroller.refresh()  # a scroll made in a later frame's callback was not painted without it
        start, end = region.shrink(tab.styles.gutter).column_span
        underline = strip.query_one("Underline")
        underline.highlight_start, underline.highlight_end = start, end
        if settled and retries and not (scroller.scroll_x <= start and end <= scroller.scroll_x + scroller.size.width):
            self.call_after_refresh(self._align_strip, retries - 1)  # the scroll stopped at the old width

    def close_node(self, node_id: int) -> None:
        """Close a node's tab; the tab to its right (else left) becomes primary."""
        if node_id not in self._order:
            return
        index = self._order.index(node_id)
        was_primary = self.primary == node_id
        had_keyboard = self.has_focus_within
        self._order.remove(node_id)
        successor = self._order[min(index, len(self._order) - 1)] if self._order else None
        self._views.pop(node_id, None)
        self._titles.pop(node_id, None)
        removed = self.tabs.remove_pane(self._panes.pop(node_id))

        async def settle() -> None:
            await removed
            self._relabel()  # a tab that shared its label with the closed one shows its start again
            if was_primary and successor is not None and successor in self._order:
                self._activate(successor, take_keyboard=had_keyboard)
            else:
                self._sync()
                if had_keyboard and not self._order:
                    self.query_one(EmptyHint).focus()

        self.call_next(settle)

    @on(TabbedContent.TabActivated)
    @on(TabbedContent.Cleared)
    def _tab_changed(self, event) -> None:
        activated = getattr(getattr(event, "pane", None), "id", None)  # the pane this event activated
        automatic = activated is not None and activated == self._auto_pane
        if automatic:
            self._auto_pane = None
        active = self.tabs.active or ""
        wanted = self._wanted
        pane = self._panes.get(wanted) if wanted is not None else None
        if automatic and pane is not None and active != pane:
            # Textual activated the first tab on its own, after a later open: not the user's choice
            if self.view(wanted) is not None:
                self._activate(wanted)
            else:
                self._sync()  # the wanted tab activates itself once mounted (open_node)
            return
        node = self._node_of(active)
        if node is not None:
            self._wanted = node  # ours, or the strip's own left/right or a click: the user's choice
        self._sync()

    # -- reloading -----------------------------------------------------------------------------------
    def reload(self, node_ids=()) -> None:
        """Refresh the tabs showing these nodes, or linked to them (their titles show in edges); () = all."""
        wanted = {int(i) for i in node_ids}
        for view in self.query(".node-view"):
            linked = {e["from_node_id"] for e in view.edges} | {e["to_node_id"] for e in view.edges}
            if not wanted or view.node_id in wanted or linked & wanted:
                view.load()

    def on_node_view_loaded(self, message: NodeView.Loaded) -> None:
        if self.view(message.view.node_id) is not message.view:
            return  # a closing tab's late answer
        try:
            self.tabs.get_tab(self._panes[message.view.node_id])
        except Exception:  # the tab closed while the node loaded
            return
        self._titles[message.view.node_id] = message.node["title"]
        self._relabel()  # opened without its title (or renamed since)
        self.refresh_bindings()  # e, ctrl+e and c apply now that the node is loaded

    def _realign_underline(self) -> None:
        self._align_strip()

    def _relabel(self) -> None:
        """Label each open tab from its title, told apart from the other tabs' (tui/tab_labels.py)."""
        ids = [n for n in self._order if n in self._titles]
        changed = False
        for node_id, label in zip(ids, tab_labels([printable(self._titles[n]) for n in ids], TAB_LABEL_WIDTH)):
            try:
                tab = self.tabs.get_tab(self._panes[node_id])
            except (NoMatches, ValueError):
                continue  # still being added
            if tab.label != Content(label):
                tab.label = Content(label)  # plain Content: a "[bold]" in a title stays literal
                changed = True
        if changed:
            # Textual measures the underline before the new label is laid out: re-align it after.
            self.call_after_refresh(self._realign_underline)

    def on_node_view_missing(self, message: NodeView.Missing) -> None:
        view = message.view
        if self.view(message.node_id) is not view:
            return  # a closing tab's late answer
        editor = view.editor
        if editor is not None and editor.dirty:
            return  # keep unsaved text on screen; the editor says the node is gone
        self.close_node(message.node_id)
        self.refresh_bindings()
        if view.node is None:
            self.app.notify(f"There is no node {message.node_id}.", severity="warning")
        else:
            self.app.notify(f"“{printable(view.node['title'])}” is no longer there (moved to the trash or merged); "
                            "its tab is closed. `cairn trash` lists it.", markup=False, severity="warning")

    def on_node_view_editing_changed(self, message: NodeView.EditingChanged) -> None:
        self.refresh_bindings()

    # -- keys ----------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "scroll_view":
            focused = self.app.focused  # only on the tab strip: elsewhere the focused widget has its own keys
            return isinstance(focused, Tabs) and focused.parent is self._tabs
        if action not in TAB_ACTIONS:
            return True
        if is_text_field(self.app.focused):
            return False  # a text field's own keys win
        view = self.active_view
        if view is None:
            return False
        if action in ("prev_tab", "next_tab") and len(self._order) < 2:
            return False
        if action in NEEDS_NODE and (view.node is None or view.editing):
            return False
        if action == "follow_link" and not view.links:
            return False  # enter does nothing on a note without [[links]]
        return True

    def action_close_tab(self) -> None:
        node_id, view = self.primary, self.active_view
        if node_id is None or view is None:
            return
        editor = view.editor
        if editor is None or not editor.dirty:
            self.close_node(node_id)
            return
        from tui.screens.confirm import ConfirmScreen

        def answered(discard: bool | None) -> None:
            if discard:
                self.close_node(node_id)

        self.app.push_screen(ConfirmScreen("This tab has unsaved changes. Close it and discard them?",
                                           yes="Discard", no="Keep editing"), answered)

    def _step(self, step: int) -> None:
        if self.primary is None or not self._order:
            return
        index = (self._order.index(self.primary) + step) % len(self._order)
        self._activate(self._order[index])

    def action_scroll_view(self, action: str) -> None:
        """Scroll the active tab's read view (the keyboard is on the tab strip)."""
        view = self.active_view
        if view is not None and not view.editing:
            view.scroll_reading(action)

    def action_prev_tab(self) -> None:
        self._step(-1)

    def action_next_tab(self) -> None:
        self._step(1)

    async def action_edit_node(self) -> None:
        view = self.active_view
        if view is not None:
            await view.start_edit()

    def action_edit_in_editor(self) -> None:
        view = self.active_view
        if view is not None and view.node is not None:
            self.app.post_message(EditInEditor(view.node_id))

    def action_new_edge(self) -> None:
        view = self.active_view
        if view is None or view.node is None:
            return
        from tui.screens.edge_modal import EdgeModal

        from_id = view.node_id

        def linked(edge: dict | None) -> None:
            if not edge:
                return
            self.app.notify(f"Linked to “{printable(edge.get('to_title') or str(edge['to_node_id']))}”.",
                            markup=False, timeout=3)
            self.reload((edge["from_node_id"], edge["to_node_id"]))
            self.app.post_message(NodesChanged((edge["from_node_id"], edge["to_node_id"])))
            if self.view(from_id) is not None and self.primary == from_id:
                self._keyboard_to(from_id)

        self.app.push_screen(EdgeModal(self.services, from_id, view.node["title"]), linked)

    def action_copy_node(self) -> None:
        view = self.active_view
        if view is None or view.node is None:
            return
        source = view.node.get("source") or ""
        if not source:
            self.app.notify("This node has no source text to copy.", severity="warning")
            return
        self.app.copy_to_clipboard(source)
        self.app.notify(f"Copied the source of “{printable(view.node['title'])}” ({len(source):,} characters).",
                        markup=False, timeout=3)

    def action_node_history(self) -> None:
        """h: the History view of the active node: its changes, who made them, undo and revert."""
        view = self.active_view
        if view is not None and view.node is not None:
            from tui.screens.node_history import NodeHistory

            self.app.push_screen(NodeHistory(self.services, view.node_id, view.node["title"]))

    def action_neighbourhood(self) -> None:
        """g: the picture of the active node's one- and two-hop neighbourhood."""
        view = self.active_view
        if view is not None and view.node is not None:
            from tui.screens.neighbourhood import NeighbourhoodScreen

            self.app.push_screen(NeighbourhoodScreen(self.services, view.node_id))

    def action_follow_link(self) -> None:
        """enter while reading: follow a [[link]] in the note's text (tui/flows/note_links.py)."""
        view = self.active_view
        if view is not None and view.node is not None:
            view.follow_link()

    def action_integrate(self) -> None:
        """i: proposed edges for the active node; the app opens the review (tui.flows.link_review)."""
        view = self.active_view
        if view is not None and view.node is not None:
            self.app.post_message(ReviewLinks(view.node_id, view.node["title"], "integrate"))
