"""One Focus tab: a node's fields, chunk status, edges (out and in) and source; `e` turns it into an editor.
In the edges list, `r` edits the highlighted edge's explanation and `x` deletes the edge (after asking).

The view loads itself in a thread worker (`load`) and renders what the worker posts back. Note text is
shown through `rich.text.Text(printable(...))`, never as markup. A short source is rendered by the
Markdown widget (markdown is not Rich markup); a long one is shown as highlighted markdown text in a
read-only TextArea, which draws only the visible lines, capped at 200k characters. Measured here: the
Markdown widget mounts a widget per block and took 0.9 s for 150 blocks and 59 s for 3,000; the
TextArea shows 100k characters in 0.2 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Input, Label, Markdown, OptionList, Static, TextArea
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from core.errors import InvalidInput, NotFound
from core.graph import retirement
from core.safe_text import printable
from core.graph.store import NO_EXPLANATION, clean_dimensions, clean_event_date
from core.vault.parse import wikilinks
from tui.messages import FollowLink, NodesChanged, OpenNode
from tui.widgets.mention_hint import MentionHint
from tui.services import Services
from tui.widgets.text_field import is_text_field  # noqa: F401  (node_view's keys use it too)

MARKDOWN_CHAR_LIMIT = 20_000  # a source up to this size (and line count) is rendered as Markdown...
MARKDOWN_LINE_LIMIT = 100  # ...non-blank lines, since each block becomes a widget
SOURCE_DISPLAY_LIMIT = 200_000  # characters shown when reading; the editor always gets everything
LARGE_TEXT = 200_000  # above this the editor skips highlighting and soft wrap (1 MB: 1.8 s → 0.7 s)
UNRETIRE_COMMAND = "Focus: un-retire"  # the palette command the retired line names (tui/flows/unretire.py)


def _plain(value: Any) -> str:
    return printable(str(value or ""))


def retired_text(node: dict) -> Text | None:
    """The tab's retired line (None when the node is not retired): by which chat and when, and how to
    bring it back; the reason on a second line."""
    if not retirement.is_retired(node):
        return None
    rec = retirement.record(node)
    text = Text(printable(f"retired · {retirement.describe(rec)} — palette: {UNRETIRE_COMMAND}"))
    if rec and rec.get("reason"):
        text.append(printable("\nwhy: " + " ".join(str(rec["reason"]).split())))
    return text


class SourceText(TextArea):
    """A long source, read-only. Keys that would only edit (ctrl+w) or that the Focus panel uses
    (ctrl+e, also "end of line" here; the end key still works) pass through to the panel."""

    PASSED_ON = {"delete_word_left", "cursor_line_end"}

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if self.read_only and action in self.PASSED_ON:
            return False
        return super().check_action(action, parameters)


class SourceEditor(TextArea):
    """The editor's source field. Tab indents (markdown lists), so TextArea's "indent" mode would
    make escape move the keyboard to the next widget on the screen, which is another pane: escape
    here bubbles instead, to the editor's cancel (as in its other fields and as the footer says)."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.prevent_default()  # skip TextArea's own handler; the key still bubbles to the bindings

    def on_resize(self, event: events.Resize) -> None:
        """The box shrinks when the mentions line appears below it: the cursor's line stays in view."""
        if self.has_focus:
            self.call_after_refresh(self.scroll_cursor_visible)


class EdgeList(OptionList):
    """A node's edges: enter opens the other end; `r` edits the highlighted edge's explanation, `x`
    deletes the edge. Both keys exist only while an edge is highlighted, so the footer offers them here."""

    BINDINGS = [
        Binding("r", "edit_edge", "Edit link", id="edit_edge"),
        Binding("x", "delete_edge", "Delete link", id="delete_edge"),
    ]

    @dataclass
    class EdgeRequested(Message):
        """The user asked to edit or delete an edge (handled by the NodeView, which knows the edge)."""

        edge_list: "EdgeList"
        action: str  # "edit" or "delete"
        edge_id: int

    @property
    def highlighted_edge_id(self) -> int | None:
        if self.highlighted is None or not self.option_count:
            return None
        option_id = self.get_option_at_index(self.highlighted).id or ""
        return int(option_id[len("edge-"):]) if option_id.startswith("edge-") else None

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("edit_edge", "delete_edge"):
            return self.highlighted_edge_id is not None
        return super().check_action(action, parameters)

    def watch_highlighted(self, highlighted: int | None) -> None:
        super().watch_highlighted(highlighted)
        self.refresh_bindings()

    def action_edit_edge(self) -> None:
        if (edge_id := self.highlighted_edge_id) is not None:
            self.post_message(self.EdgeRequested(self, "edit", edge_id))

    def action_delete_edge(self) -> None:
        if (edge_id := self.highlighted_edge_id) is not None:
            self.post_message(self.EdgeRequested(self, "delete", edge_id))


@dataclass(frozen=True)
class SourceDisplay:
    """How to show a source, worked out off the UI thread: as Markdown, or as text when long."""

    text: str  # printable, from the first SOURCE_DISPLAY_LIMIT characters
    markdown: bool
    length: int  # of the whole source
    truncated: bool
    # its [[links]] (tui/flows/note_links.py): where they stand in `text`, or, shown as Markdown, in order
    links: tuple = ()

    @classmethod
    def of(cls, source: str) -> "SourceDisplay":
        shown = printable(source[:SOURCE_DISPLAY_LIMIT])
        short = len(shown) <= MARKDOWN_CHAR_LIMIT and (
            sum(1 for line in shown.splitlines() if line.strip()) <= MARKDOWN_LINE_LIMIT)
        text, links = linkify(shown) if short else (shown, tuple(wikilinks(shown)))
        return cls(text, short, len(source), len(source) > SOURCE_DISPLAY_LIMIT, links)


LINK_SCHEME = "cairn-link:"  # the Markdown view's href of the [[link]] numbered after it


def linkify(text: str) -> tuple[str, tuple]:
    """The text for the Markdown view, each `[[Note]]` / `[[Note|alias]]` (core.vault.parse `wikilinks`:
    outside code, not embeds) a link that shows its alias (else its target) and that a click follows
    (tui/flows/note_links.py); and the links, in order."""
    links = tuple(wikilinks(text))
    parts, at = [], 0
    for number, link in enumerate(links):
        shown = link.shown.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")
        parts += [text[at:link.start], f"[{shown}](<{LINK_SCHEME}{number}>)"]
        at = link.end
    parts.append(text[at:])
    return "".join(parts), links


def editable_fields(node: dict) -> dict[str, Any]:
    """The fields the editor can change, in the shape Store.update_node takes."""
    return {
        "title": node.get("title") or "",
        "description": node.get("description") or "",
        "source": node.get("source") or "",
        "link": node.get("link"),
        "event_date": node.get("event_date"),
        "dimensions": list(node.get("dimensions") or []),
    }


def _hidden(widget: Widget) -> Widget:
    widget.display = False
    return widget


class NodeView(Vertical):
    """A node, read-only, with an editor swapped in on demand."""

    # -- messages (posted by the view's workers, handled here and bubbled to the FocusPanel) -----------
    @dataclass
    class Loaded(Message):
        view: "NodeView"
        node: dict
        edges: list
        source: SourceDisplay

    @dataclass
    class Missing(Message):
        """The node no longer exists (deleted here or by another process)."""

        view: "NodeView"
        node_id: int

    @dataclass
    class LoadFailed(Message):
        view: "NodeView"
        error: str

    @dataclass
    class Saved(Message):
        view: "NodeView"
        node: dict
        edges: list
        source: SourceDisplay

    @dataclass
    class SaveFailed(Message):
        view: "NodeView"
        error: str

    @dataclass
    class SaveConflict(Message):
        """The node changed elsewhere since editing began; saving would overwrite that."""

        view: "NodeView"
        changes: dict

    @dataclass
    class EditingChanged(Message):
        view: "NodeView"
        editing: bool

    @dataclass
    class EdgeDeleted(Message):
        view: "NodeView"
        edge: dict  # the edge as listed (with both titles)

    @dataclass
    class EdgeFailed(Message):
        view: "NodeView"
        error: str
        node_ids: tuple  # the ends to refresh anyway (the edge may have changed elsewhere)

    def __init__(self, services: Services, node_id: int, *, load_now: bool = True, **kwargs):
        """`load_now=False`: the view is built and its node read when it is first shown (a tab reopened
        at start behind the active one), not on mount."""
        super().__init__(**kwargs)
        self.services = services
        self.node_id = int(node_id)
        self._deferred = not load_now  # not read yet, and not to be until shown
        self.node: dict | None = None
        self.edges: list[dict] = []
        self._last_focused: Widget | None = None
        self._switcher: ContentSwitcher | None = None  # holds the read view and, while editing, the editor
        self._edge_targets: dict[str, tuple[int, str]] = {}  # option id -> (node id, title)
        self._shown_source: SourceDisplay | None = None
        self._gone = False  # found deleted while being edited: the tab closes once the edit is let go

    # -- layout --------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        if self._deferred:
            return  # composed when first shown (shown): ten tabs reopened at start built ten of these
        with ContentSwitcher(initial="node-read", classes="node-switcher"):
            with VerticalScroll(id="node-read", classes="node-read"):
                yield Static(Text(f"Node {self.node_id}"), classes="node-title")
                yield Static(classes="node-fields")
                yield Static(classes="node-status")
                yield _hidden(Static(classes="node-retired"))  # shown only for a retired node (retired_text)
                yield Label("Edges", classes="node-section node-edges-heading")
                yield _hidden(EdgeList(classes="node-edges"))
                yield Static(Text("No edges yet. ctrl+e links this node to another."), classes="node-no-edges")
                yield Label("Source", classes="node-section node-source-heading")
                yield _hidden(Static(classes="node-source-note"))
                yield Markdown(classes="node-source", open_links=False)
                yield _hidden(SourceText(classes="node-source-text", read_only=True, soft_wrap=True))

    def _watch_loading(self, loading: bool) -> None:
        # Before the view is fully mounted Textual defers the loading cover; a reload's answer may
        # turn `loading` off first, and the deferred cover would then stay up for good. Apply the
        # value current at that later moment instead.
        if not self.is_mounted:
            self.call_later(lambda: self.set_loading(self.loading))
        else:
            self.set_loading(loading)

    def on_mount(self) -> None:
        # The parts hidden until the node is read are hidden as they are composed (_hidden), not
        # queried here: a tab replaced while it mounts (loading the Getting started graph opens
        # Welcome over it) has lost its children by the time on_mount runs.
        self.loading = True
        self.load()

    @property
    def editing(self) -> bool:
        return self.editor is not None

    @property
    def editor(self) -> "NodeEditor | None":
        # The switcher's few children, not a query of the whole view: the Focus panel asks on
        # every bindings refresh.
        if self._switcher is None:
            found = self.query_children(".node-switcher") if self.is_mounted else None
            if not found:  # not mounted, or not composed yet (a tab reopened at start)
                return None
            self._switcher = found.first(ContentSwitcher)
        return next((child for child in self._switcher.children if isinstance(child, NodeEditor)), None)

    def _on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._last_focused = event.widget

    def focus_body(self) -> None:
        """Give the keyboard back to this tab: where it last was, else the editor or the view."""
        last = self._last_focused
        if last is not None and last.is_attached and self in last.ancestors and last.focusable:
            last.focus()
            return
        editor = self.editor
        if editor is not None:
            editor.focus_first()
        else:
            self.query_one(".node-read", VerticalScroll).focus()

    def scroll_reading(self, action: str) -> None:
        """Scroll the tab being read: scroll_up/down, page_up/down, scroll_home/end (the tab strip's
        reading keys). A long source sits in its own text view below the fields and edges; the keys
        carry on into it once the tab is scrolled to its end (and back out of it going up), so the
        strip reads a note to its last line rather than stopping at the text view's first screen."""
        read = self.query_one(".node-read", VerticalScroll)
        text = self.query_one(".node-source-text", TextArea)
        inner = text if text.display and text.max_scroll_y > 0 else None
        if action == "scroll_home":
            if inner is not None:
                inner.scroll_home(animate=False)
            read.scroll_home()
        elif action == "scroll_end":
            read.scroll_end()
            if inner is not None:
                inner.scroll_end(animate=False)
        elif action in ("scroll_down", "page_down"):
            target = read if inner is None or read.scroll_target_y < read.max_scroll_y else inner
            if action == "scroll_down":
                target.scroll_down()
            else:
                target.scroll_page_down()
        elif action in ("scroll_up", "page_up"):
            target = inner if inner is not None and inner.scroll_target_y > 0 else read
            if action == "scroll_up":
                target.scroll_up()
            else:
                target.scroll_page_up()

    # -- loading -------------------------------------------------------------------------------------
    def load(self) -> None:
        """Read the node and its edges (in a worker), unless the view waits to be shown first."""
        if not self._deferred:
            self._read()

    def shown(self) -> None:
        """The view's tab became the active one (FocusPanel): a deferred view is built and reads its node now."""
        if self._deferred:
            self._deferred = False
            self.call_later(self._build_and_read)

    async def _build_and_read(self) -> None:
        await self.recompose()
        self._read()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _read(self) -> None:
        """Read the node and its edges; post Loaded, Missing or LoadFailed."""
        worker = get_current_worker()
        try:
            with self.services.store() as store:
                node = store.get_node(self.node_id)
                edges = store.edges(self.node_id)
                if node.get("chunk_status") == "pending":  # coverage first: its first chunk may be in
                    from core.index.indexer import reached

                    node["searchable"] = reached(store.db, self.node_id)
        except NotFound:
            self.post_message(self.Missing(self, self.node_id))
            return
        except Exception as exc:  # a locked or broken database: say so in the tab
            self.post_message(self.LoadFailed(self, f"Could not load node {self.node_id}: {exc}"))
            return
        display = SourceDisplay.of(node.get("source") or "")
        if not worker.is_cancelled:
            self.post_message(self.Loaded(self, node, edges, display))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        # A view whose tab is being closed (or replaced) may have lost its children before its load
        # arrived (seen under load: NoMatches '.node-title'): nothing is left to show it in.
        if message.view is self and self.is_attached and self.query(".node-title"):
            self.show(message.node, message.edges, message.source)

    @on(LoadFailed)
    def _load_failed(self, message: LoadFailed) -> None:
        if message.view is not self:
            return
        self.loading = False
        self.query_one(".node-status", Static).update(Text(printable(message.error)))
        self.query_one(".node-status").set_classes("node-status -error")

    @on(Missing)
    def _missing(self, message: Missing) -> None:
        if message.view is not self:
            return
        self.loading = False
        editor = self.editor
        if editor is not None:
            self._gone = True
            editor.show_error("This node was deleted elsewhere; saving will fail. Copy what you need, then escape.")

    def show(self, node: dict, edges: list[dict], source: SourceDisplay) -> None:
        """Render a node record, its edges and its prepared source (no I/O)."""
        self.loading = False
        self.node, self.edges = node, edges
        self.query_one(".node-title", Static).update(Text(_plain(node["title"])))
        self.query_one(".node-fields", Static).update(self._fields_text(node))
        self._show_status(node)
        self._show_retired(node)
        self._show_edges(edges)
        self._show_source(source)

    def _fields_text(self, node: dict) -> Text:
        text = Text()
        if node.get("description"):
            text.append(_plain(node["description"]) + "\n", style="italic")
        rows = [
            ("Link", node.get("link")),
            ("Dimensions", ", ".join(node.get("dimensions") or [])),
            ("Event date", node.get("event_date")),
            ("Type", node.get("type") if node.get("type") not in (None, "note") else None),
        ]
        for label, value in rows:
            if value:
                text.append(f"{label}: ", style="bold")
                text.append(_plain(value) + "\n")
        updated = (node.get("updated_at") or "?")[:16].replace("T", " ")
        text.append(f"#{node['id']} · updated {updated}", style="dim")
        return text

    def _show_status(self, node: dict) -> None:
        status = node.get("chunk_status") or "pending"
        widget = self.query_one(".node-status", Static)
        if status == "indexed":
            text = Text("● indexed")
        elif status == "error":
            text = Text("● index error: " + _plain(node.get("index_error") or "unknown error"))
        elif node.get("searchable"):  # its first chunk (or its older text's vectors) already in
            text = Text(f"● {status}: meaning search finds it; the rest waits to be indexed")
        else:
            text = Text(f"● {status}: waiting to be indexed")
        widget.update(text)
        widget.set_classes(f"node-status -{status}")

    def _show_retired(self, node: dict) -> None:
        text = retired_text(node)
        widget = self.query_one(".node-retired", Static)
        widget.display = text is not None
        if text is not None:
            widget.update(text)

    def _show_edges(self, edges: list[dict]) -> None:
        options = self.query_one(".node-edges", OptionList)
        highlighted = options.highlighted
        options.clear_options()
        self._edge_targets = {}
        items = []
        for edge in edges:
            outgoing = edge["from_node_id"] == self.node_id
            other = edge["to_node_id"] if outgoing else edge["from_node_id"]
            other_title = edge.get("to_title" if outgoing else "from_title") or f"Node {other}"
            head = Text()
            head.append("→ " if outgoing else "← ", style="bold")
            head.append(_plain(other_title), style="bold")
            head.append(f"  #{other}", style="dim")
            prompt = head
            if (edge.get("explanation") or "").strip():
                # Padded, so a long explanation wraps under itself, not under the arrow.
                prompt = Group(head, Padding(Text(_plain(edge["explanation"]), style="italic"), (0, 0, 0, 2)))
            else:  # an imported edge its source left unexplained: say so (r writes one)
                prompt = Group(head, Padding(Text(NO_EXPLANATION, style="dim italic"), (0, 0, 0, 2)))
            option_id = f"edge-{edge['id']}"
            self._edge_targets[option_id] = (other, edge.get("to_title" if outgoing else "from_title") or "")
            items.append(Option(prompt, id=option_id))
        options.add_options(items)
        if not items and options.has_focus:
            self.query_one(".node-read", VerticalScroll).focus()  # the list is about to be hidden
        options.display = bool(items)
        self.query_one(".node-no-edges").display = not items
        outgoing = sum(1 for e in edges if e["from_node_id"] == self.node_id)
        self.query_one(".node-edges-heading", Label).update(
            Text(f"Edges ({outgoing} out, {len(edges) - outgoing} in)" if edges else "Edges"))
        if items:
            options.highlighted = min(highlighted or 0, len(items) - 1)

    def _show_source(self, source: SourceDisplay) -> None:
        note = self.query_one(".node-source-note", Static)
        if source.truncated:
            note.update(Text(f"Showing the first {SOURCE_DISPLAY_LIMIT:,} of {source.length:,} characters; "
                             "press e to edit the full text."))
        elif not source.text.strip():
            note.update(Text("No source text yet. Press e to write some."))
        elif not source.markdown:
            note.update(Text(f"A long note ({source.length:,} characters): shown as markdown text. "
                             "Tab into it to scroll."))
        note.display = source.truncated or not source.text.strip() or not source.markdown
        count = len(source.links)
        self.query_one(".node-source-heading", Label).update(
            Text(f"Source · enter follows its {'link' if count == 1 else f'{count} links'}" if count else "Source"))
        if source == self._shown_source:  # re-rendering an unchanged source is wasted work
            return
        self._shown_source = source
        markdown = self.query_one(".node-source", Markdown)
        text_view = self.query_one(".node-source-text", TextArea)
        markdown.display = source.markdown
        text_view.display = not source.markdown
        if source.markdown:
            markdown.update(source.text)
            text_view.load_text("")
        else:
            markdown.update("")
            text_view.language = "markdown"
            text_view.load_text(source.text)

    @property
    def links(self) -> tuple:
        """The [[links]] in the text shown (core.vault.parse.WikiLink)."""
        return self._shown_source.links if self._shown_source is not None else ()

    def follow_link(self) -> None:
        """enter while reading: the [[link]] under the long text's cursor, else the note's one link, else
        a list of them (the app's FollowLink, tui/flows/note_links.py)."""
        source, chosen = self._shown_source, None
        text_view = self.query_one(".node-source-text", TextArea)
        if text_view.has_focus and source is not None and not source.markdown:
            offset = text_view.document.get_index_from_location(text_view.cursor_location)
            chosen = next((n for n, link in enumerate(self.links) if link.start <= offset < link.end), None)
        self.app.post_message(FollowLink(self.node, self.links, chosen))

    @on(Markdown.LinkClicked)
    def _link_clicked(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        href = event.href.strip()
        if href.startswith(LINK_SCHEME):
            number = int(href.removeprefix(LINK_SCHEME))
            if number < len(self.links):
                self.app.post_message(FollowLink(self.node, self.links, number))
            return
        if href.lower().startswith(("http://", "https://")):
            self.app.open_url(href)
        else:
            self.app.notify(f"Link: {printable(href)}", markup=False)

    @on(OptionList.OptionSelected, ".node-edges")
    def _open_edge(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        target = self._edge_targets.get(event.option.id or "")
        if target is not None:
            self.post_message(OpenNode(*target))

    # -- editing and deleting edges -------------------------------------------------------------------
    def _edge(self, edge_id: int) -> dict | None:
        return next((e for e in self.edges if e["id"] == edge_id), None)

    @staticmethod
    def _edge_text(edge: dict) -> str:
        return (f"“{_plain(edge.get('from_title') or edge['from_node_id'])}” → "
                f"“{_plain(edge.get('to_title') or edge['to_node_id'])}”")

    @on(EdgeList.EdgeRequested)
    def _edge_requested(self, message: EdgeList.EdgeRequested) -> None:
        message.stop()
        edge = self._edge(message.edge_id)
        if edge is None:
            return
        if message.action == "delete":
            self._ask_delete_edge(edge)
        else:
            self._edit_edge(edge)

    def _ask_delete_edge(self, edge: dict) -> None:
        from tui.screens.confirm import ConfirmScreen

        question = f"Delete the link {self._edge_text(edge)}?"
        if edge.get("explanation"):
            question += f"\n\n{edge['explanation']}"

        def answered(delete: bool | None) -> None:
            if delete:
                self.delete_edge(edge)

        self.app.push_screen(ConfirmScreen(question, yes="Delete", no="Keep"), answered)

    @work(thread=True, group="edge-delete", exit_on_error=False)
    def delete_edge(self, edge: dict) -> None:
        """Delete an edge; post EdgeDeleted, or EdgeFailed (a missing edge is refreshed away either way)."""
        ends = (edge["from_node_id"], edge["to_node_id"])
        try:
            with self.services.store() as store:
                store.delete_edge(edge["id"])
        except NotFound:
            self.post_message(self.EdgeFailed(self, "That link no longer exists (deleted elsewhere).", ends))
            return
        except Exception as exc:
            self.post_message(self.EdgeFailed(self, f"Could not delete the link: {exc}", ends))
            return
        self.post_message(self.EdgeDeleted(self, edge))

    @on(EdgeDeleted)
    def _edge_deleted(self, message: EdgeDeleted) -> None:
        if message.view is not self:
            return
        edge = message.edge
        self.app.notify(f"Deleted the link {self._edge_text(edge)}.", markup=False, timeout=3)
        self.app.post_message(NodesChanged((edge["from_node_id"], edge["to_node_id"])))

    @on(EdgeFailed)
    def _edge_failed(self, message: EdgeFailed) -> None:
        if message.view is not self:
            return
        self.app.notify(printable(message.error), markup=False, severity="error")
        self.app.post_message(NodesChanged(message.node_ids))

    def _edit_edge(self, edge: dict) -> None:
        from tui.screens.edge_edit import EdgeEditModal

        def edited(updated: dict | None) -> None:
            if updated is None:
                return
            self.app.notify(f"Saved the link {self._edge_text(edge)}.", markup=False, timeout=3)
            self.app.post_message(NodesChanged((edge["from_node_id"], edge["to_node_id"])))

        self.app.push_screen(EdgeEditModal(self.services, edge), edited)

    # -- editing -------------------------------------------------------------------------------------
    async def start_edit(self) -> None:
        if self.node is None or self.editing:
            return
        editor = NodeEditor(self.node, self.services, id="node-editor", classes="node-editor")
        switcher = self.query_one(".node-switcher", ContentSwitcher)
        await switcher.mount(editor)
        switcher.current = "node-editor"
        editor.focus_first()
        self.post_message(self.EditingChanged(self, True))

    async def stop_edit(self) -> None:
        editor = self.editor
        if editor is None:
            return
        switcher = self.query_one(".node-switcher", ContentSwitcher)
        switcher.current = "node-read"
        await editor.remove()
        self.query_one(".node-read", VerticalScroll).focus()
        self.post_message(self.EditingChanged(self, False))

    def on_node_editor_save_requested(self, message: "NodeEditor.SaveRequested") -> None:
        message.stop()
        self.save(message.changes, message.base, force=False)

    async def on_node_editor_cancelled(self, message: "NodeEditor.Cancelled") -> None:
        message.stop()
        await self.stop_edit()
        if self._gone:  # look again: still gone, the panel closes the tab and says so (else it shows it)
            self._gone = False
            self.load()

    @work(thread=True, exclusive=True, group="save", exit_on_error=False)
    def save(self, changes: dict, base: dict, force: bool = False) -> None:
        """Write the editor's changes; refuse silently overwriting a change made elsewhere unless forced."""
        try:
            with self.services.store() as store:
                if not force:
                    current = editable_fields(store.get_node(self.node_id))
                    if current != base:
                        self.post_message(self.SaveConflict(self, changes))
                        return
                node = store.update_node(self.node_id, **changes)
                edges = store.edges(self.node_id)
        except (InvalidInput, NotFound) as exc:
            self.post_message(self.SaveFailed(self, str(exc)))
            return
        except Exception as exc:
            self.post_message(self.SaveFailed(self, f"Could not save: {exc}"))
            return
        self.post_message(self.Saved(self, node, edges, SourceDisplay.of(node.get("source") or "")))

    @on(SaveFailed)
    def _save_failed(self, message: SaveFailed) -> None:
        if message.view is self and (editor := self.editor) is not None:
            editor.saving = False
            editor.show_error(message.error)

    @on(SaveConflict)
    def _save_conflict(self, message: SaveConflict) -> None:
        if message.view is not self or (editor := self.editor) is None:
            return
        from tui.screens.confirm import ConfirmScreen

        def answered(overwrite: bool | None) -> None:
            if overwrite:
                self.save(message.changes, {}, force=True)
            else:
                editor.saving = False
                editor.show_error("Not saved: this node changed elsewhere. Escape discards your edit.")

        self.app.push_screen(
            ConfirmScreen("This node was changed elsewhere since you started editing. Overwrite it with your version?",
                          yes="Overwrite", no="Keep editing"),
            answered,
        )

    @on(Saved)
    async def _saved(self, message: Saved) -> None:
        if message.view is not self:
            return
        self.show(message.node, message.edges, message.source)
        await self.stop_edit()
        self.app.notify(f"Saved “{_plain(message.node['title'])}”.", markup=False, timeout=3)
        self.app.post_message(NodesChanged((self.node_id,)))


class NodeEditor(Vertical):
    """Every field of a node, editable; ctrl+s saves, escape cancels (asking first if anything changed)."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="save_node"),
        Binding("escape", "cancel", "Cancel", id="cancel_edit"),
    ]

    @dataclass
    class SaveRequested(Message):
        editor: "NodeEditor"
        changes: dict
        base: dict

    @dataclass
    class Cancelled(Message):
        editor: "NodeEditor"

    def __init__(self, node: dict, services, **kwargs):
        super().__init__(**kwargs)
        self.base = editable_fields(node)
        self.node_id = node["id"]
        self.services = services
        self.saving = False
        self._problems: dict[str, str] = {}  # field id -> what the last ctrl+s found wrong with it

    def compose(self) -> ComposeResult:
        base = self.base
        # The fields hold the node's text: focusing one (e, or coming back to this tab) must not
        # select it all, or the next key typed replaces it (Input's select_on_focus default).
        keep = {"compact": True, "select_on_focus": False}
        with Grid(classes="edit-fields"):
            yield Label("Title", classes="edit-label")
            yield Input(base["title"], id="edit-title", **keep, placeholder="required")
            yield Label("Description", classes="edit-label")
            yield Input(base["description"], id="edit-description", **keep, placeholder="one line")
            yield Label("Link", classes="edit-label")
            yield Input(base["link"] or "", id="edit-link", **keep, placeholder="https://…")
            yield Label("Dimensions", classes="edit-label")
            yield Input(", ".join(base["dimensions"]), id="edit-dimensions", **keep,
                        placeholder="comma-separated, e.g. research, ai")
            yield Label("Event date", classes="edit-label")
            yield Input(base["event_date"] or "", id="edit-event-date", **keep, placeholder="YYYY-MM-DD, YYYY-MM or YYYY")
        yield Label("Source (markdown)", classes="edit-label edit-source-label")
        source = base["source"]
        small = len(source) <= LARGE_TEXT
        yield SourceEditor(source, id="edit-source", language="markdown" if small else None, soft_wrap=small,
                           tab_behavior="indent")
        yield MentionHint(self.services, self.node_id)
        yield Static(classes="edit-error")

    def on_mount(self) -> None:
        self.query_one(".edit-error", Static).display = False

    @on(Input.Changed, "#edit-title, #edit-description")
    @on(TextArea.Changed, "#edit-source")
    def _draft_changed(self) -> None:
        """Mentions of other notes are looked for while typing (after a pause, in a worker)."""
        now = self.values()
        self.query_one(MentionHint).draft_changed([now["title"], now["description"], now["source"]])

    @on(Input.Changed, ".edit-fields Input")
    def _field_changed(self, event: Input.Changed) -> None:
        """A field named in the error line is being corrected: unmark it and drop its sentence, so
        the line never blames a field already fixed (it goes once none is left)."""
        field_id = event.input.id or ""
        if field_id not in self._problems:
            return
        del self._problems[field_id]
        event.input.remove_class("-invalid")
        if self._problems:
            self.show_error(" ".join(self._problems.values()))
        else:
            self.query_one(".edit-error", Static).display = False

    def focus_first(self) -> None:
        """Where `e` puts the keyboard: in the text, at its end (an edit most often adds to it, and
        typing in the title by mistake renamed the note); a note with no text starts at its title."""
        source = self.query_one("#edit-source", SourceEditor)
        if not source.text.strip():
            self.query_one("#edit-title", Input).focus()
            return
        source.focus()
        source.move_cursor(source.document.end)
        self.call_after_refresh(source.scroll_cursor_visible)  # a long text: its end in view once laid out

    def show_error(self, message: str) -> None:
        error = self.query_one(".edit-error", Static)
        error.update(Text(printable(message)))
        error.display = True

    def clear_error(self) -> None:
        self._problems = {}
        self.query_one(".edit-error", Static).display = False
        for field in self.query(Input):
            field.remove_class("-invalid")

    def values(self) -> dict[str, Any]:
        """What the fields hold now, raw (not yet validated)."""
        return {
            "title": self.query_one("#edit-title", Input).value,
            "description": self.query_one("#edit-description", Input).value,
            "link": self.query_one("#edit-link", Input).value,
            "dimensions": self.query_one("#edit-dimensions", Input).value,
            "event_date": self.query_one("#edit-event-date", Input).value,
            "source": self.query_one("#edit-source", TextArea).text,
        }

    @property
    def dirty(self) -> bool:
        now = self.values()
        base = self.base
        return (
            now["title"] != base["title"]
            or now["description"] != base["description"]
            or now["source"] != base["source"]
            or now["link"].strip() != (base["link"] or "")
            or now["event_date"].strip() != (base["event_date"] or "")
            or [d.strip() for d in now["dimensions"].split(",") if d.strip()] != base["dimensions"]
        )

    def validated(self) -> dict[str, Any] | None:
        """The changes in Store.update_node's shape, or None after marking what is wrong."""
        self.clear_error()
        raw = self.values()
        problems: list[tuple[str, str]] = []
        if not raw["title"].strip():
            problems.append(("#edit-title", "The title must not be empty."))
        try:
            event_date = clean_event_date(raw["event_date"].strip() or None)
        except InvalidInput as exc:
            problems.append(("#edit-event-date", str(exc)))
            event_date = None
        try:
            dimensions = clean_dimensions(raw["dimensions"].split(","))
        except InvalidInput as exc:
            problems.append(("#edit-dimensions", str(exc)))
            dimensions = []
        if problems:
            for selector, message in problems:
                self.query_one(selector, Input).add_class("-invalid")
                self._problems[selector.removeprefix("#")] = message
            self.show_error(" ".join(message for _, message in problems))
            self.query_one(problems[0][0], Input).focus()
            return None
        return {
            "title": raw["title"].strip(),
            "description": raw["description"],
            "source": raw["source"],
            "link": raw["link"].strip() or None,
            "event_date": event_date,
            "dimensions": dimensions,
        }

    def action_save(self) -> None:
        if self.saving:
            return
        changes = self.validated()
        if changes is None:
            return
        self.saving = True
        self.post_message(self.SaveRequested(self, changes, self.base))

    def action_cancel(self) -> None:
        if not self.dirty:
            self.post_message(self.Cancelled(self))
            return
        from tui.screens.confirm import ConfirmScreen

        def answered(discard: bool | None) -> None:
            if discard:
                self.post_message(self.Cancelled(self))

        self.app.push_screen(ConfirmScreen("Discard your unsaved changes to this node?", yes="Discard",
                                           no="Keep editing"), answered)
