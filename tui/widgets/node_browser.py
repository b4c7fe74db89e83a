"""Nodes pane (left). CONTRACT (used by tui/app.py):
- NodeBrowser(services, id=..., classes=...)
- focus_search(): focus the search box.
- reload(): re-run the current query/sort/filter (nodes changed).
- posts tui.messages.OpenNode(node_id) when the user presses enter on a node.

How it works: every keystroke in the search box starts an exclusive thread worker (cancelling the
previous one) that runs a hybrid search (`core.search.browse.search`, at most 200 hits) or, for an empty
query, reads the first page of nodes (`core.search.browse.page`, 200 rows; the next page loads when the
highlight or the scroll nears the end). Results land in an OptionList (virtual: one line cache, no
widget per node), each row showing title, updated date, edge count and dimensions.

Keys — search box: type to search, `#tag` (or `#"two words"`) filters by a dimension (`#res` means
the most used dimension starting with "res"), `enter` opens the highlighted (or top) node, `down`
moves into the list, `escape` clears the search (and never leaves the box). List: `enter` opens, `s`
cycles the sort (relevance → updated → connections), `d` cycles the dimension filter (it rewrites the
`#tag` in the search box), `up` on the first row goes back to the search box, and any other printable
key is typed into the search box, as if it had the keyboard (type-to-search).

Where the keys go (issue 26): the keyboard leaves the box only by a key that visibly moves it into
the list (`down`, `tab`, a click), never by `escape`. Before, a second `escape` left the box, and a new
query typed after it ran list commands (`s` re-sorted, `d` filtered) and `down enter` opened a note
the search had not found. The pane's bottom border says what typing does now, its title shows the
sort and the dimension filter, and both last for the session unless "Nodes: remember this view"
(core/graph/nodes_view.py) keeps them for the next start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual import events, on, work
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from core.graph import nodes_view
from core.search import browse
from core.safe_text import printable
from tui.messages import OpenNode
from tui.services import Services

MORE_MARGIN = 40  # load the next page when the highlight comes this close to the end
# Rows put in the list at once, for a search's hits and a browse list's first page; more as it
# scrolls (a search's further hits without searching again, a browse list by browse.PAGE). Building
# and setting 200 options was ~18 ms of each keystroke at 200k nodes (bench/tui.py), and part of the
# app's first frame, for ~20 rows on screen.
FIRST_PAGE = 50
MAX_RELOAD = 2000  # rows a reload re-reads to keep the user's place in a long browse list
SORT_LABELS = {"relevance": "best match", "updated": "recently updated", "edges": "most connected"}
SORT_SHORT = {"relevance": "best match", "updated": "by update", "edges": "by links"}  # a narrow pane's title
TITLE_FRAME = 6  # border columns around the title: "╭─ " and " ─╮"


@dataclass(frozen=True)
class Request:
    generation: int
    text: str
    sort: str
    offset: int = 0
    limit: int = browse.PAGE
    ids: tuple[int, ...] | None = None  # the next hits of a search already run: their rows only
    first_hits: int = FIRST_PAGE  # a search's hits put in the list with its first page


@dataclass
class Result:
    request: Request
    rows: list[dict] = field(default_factory=list)
    searching: bool = False  # a text query (hits, capped) rather than a browse page
    dimensions: list[str] = field(default_factory=list)
    total: int | None = None  # nodes matching a browse filter (first page only)
    has_more: bool = False
    totals: dict | None = None  # all nodes / pending / errors (first page only)
    note: str | None = None
    options: list[Option] = field(default_factory=list)  # built in the worker: plain data, not widgets
    hits: int | None = None  # a search's hits, all pages (first page only)
    more_ids: tuple[int, ...] = ()  # a search's hits after this page, best first


def fetch(services: Services, request: Request, cancelled=lambda: False) -> Result | None:
    """Run one query (in a worker thread); None if it was cancelled on the way."""
    result = _fetch(services, request, cancelled)
    if result is not None:
        result.options = [Option(row_prompt(r), id=str(r["id"])) for r in result.rows]
    return result


def _fetch(services: Services, request: Request, cancelled) -> Result | None:
    text, tags = browse.split_tags(request.text)
    result = Result(request, searching=bool(text))
    if request.ids is not None:  # a further page of a search's hits
        with services.store() as store:
            result.rows = browse.rows(store, request.ids)
        return result
    with services.store() as store:
        for tag in tags:
            dim = browse.resolve_dimension(store, tag)
            if dim is None:
                result.note = f"no dimension matches #{tag}"
                result.total = 0
                result.totals = browse.totals(store)
                return result
            result.dimensions.append(dim)
        first = request.offset == 0
        if first:
            result.totals = browse.totals(store)
        if not text:
            sort = "updated" if request.sort == "relevance" else request.sort
            result.rows = browse.page(store, sort=sort, dimensions=result.dimensions, offset=request.offset,
                                      limit=request.limit)
            result.has_more = len(result.rows) == request.limit
            if first:
                result.total = browse.count(store, result.dimensions) if result.dimensions else result.totals["nodes"]
            return result
    if cancelled():
        return None
    with services.searcher() as searcher:
        ids, result.note = browse.search(searcher, text, dimensions=result.dimensions)
        if cancelled():
            return None
        result.hits = len(ids)
        if request.sort == "relevance":  # best first: the rest are read as the list scrolls
            ids, result.more_ids = ids[:request.first_hits], tuple(ids[request.first_hits:])
            result.has_more = bool(result.more_ids)
        result.rows = browse.rows(searcher.store, ids)
    if request.sort != "relevance":  # every hit's row, to sort them all
        result.rows = browse.sort_rows(result.rows, request.sort)
    return result


def describe_error(exc: BaseException) -> str:
    from core.errors import CairnError

    if isinstance(exc, CairnError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def describe_view(view: nodes_view.View) -> str:
    """A view in words: "most connected #research"."""
    sort = "best match (recently updated with no search)" if view.sort == "relevance" else SORT_LABELS[view.sort]
    if not view.dimensions:
        return f"{sort}, no dimension filter"
    return " ".join([sort, *(printable(browse.format_tag(d)) for d in view.dimensions)])


def row_prompt(row: dict) -> Content:
    """Two lines: the title, then updated date · edges · dimensions. User text is never markup."""
    edges = row["edge_count"]
    meta = [row["updated_at"][:10], f"{edges} edge" + ("" if edges == 1 else "s")]
    if row["chunk_status"] != "indexed":
        meta.append(row["chunk_status"])
    dims = " ".join(browse.format_tag(d) for d in row["dimensions"])
    title = " ".join(printable(row["title"]).split()) or "(untitled)"  # one line, whatever was pasted
    parts: list = [(title, "bold"), "\n", (" · ".join(meta), "$text-muted")]
    if dims:
        parts += [(" · ", "$text-muted"), (printable(dims), "$accent")]
    return Content.assemble(*parts)


class SearchBox(Input):
    BINDINGS = [
        # Not a priority binding: it acts after the letters typed before it (a priority binding ran
        # as the key arrived, before the box had typed them, so `query down enter` opened a row of the
        # previous query's list). The keys after it wait for the list (tui/key_handoff.py MOVERS), so
        # "down down" arriving together moves two rows.
        Binding("down", "to_list", "Results", id="nodes_to_list", show=False),
        Binding("escape", "clear_search", "Clear search", id="nodes_clear_search", show=False),
    ]

    def _on_key(self, event: events.Key) -> None:
        """`/` is "search nodes" everywhere: here, typed with nothing before it (an empty box, or the
        whole query selected as it is when the pane takes the keyboard), it keeps the query instead
        of replacing it with "/". A leading slash means nothing to the search; later ones are typed.
        (Textual runs Input._on_key next unless the default is prevented.)"""
        if event.character == "/" and (not self.value or sorted(self.selection) == [0, len(self.value)]):
            event.stop()
            event.prevent_default()
            self.cursor_position = len(self.value)

    def _on_paste(self, event: events.Paste) -> None:
        """A pasted paragraph is searched whole: Input keeps only the first line, so its lines are
        joined first. (No super() call: Textual runs Input._on_paste itself, next in the MRO.)"""
        if event.text:
            event.text = " ".join(event.text.split())

    keep_selection_once = False  # the next focus leaves the cursor and selection where they are

    def _on_focus(self, event: events.Focus) -> None:
        """Input selects the whole query on focus, so typing replaces it. Not when the list hands on a
        key typed into it (it lands where the cursor was), nor when the box holds only a #dimension
        filter (the search typed next joins the filter instead of replacing it). Textual runs
        Input._on_focus next, which reads select_on_focus."""
        text, tags = browse.split_tags(self.value)
        self.select_on_focus = not self.keep_selection_once and not (tags and not text)
        if tags and not text and not self.keep_selection_once:
            self.value = self.value.rstrip() + " "
            self.cursor_position = len(self.value)
        self.keep_selection_once = False

    def action_to_list(self) -> None:
        self.parent.focus_list()  # type: ignore[union-attr]

    def action_clear_search(self) -> None:
        """Clear the box; the keyboard stays in it. (A second escape used to leave for the list, and
        the next query's first letters ran list commands: `s` re-sorted, `d` filtered.)"""
        self.value = ""


class NodeList(OptionList):
    """The results. Bare keys live here, so they act only when the list (not the search box) has focus."""

    BINDINGS = [
        Binding("s", "cycle_sort", "Sort", id="nodes_sort"),
        Binding("d", "cycle_dimension", "Dimension", id="nodes_dimension"),
        # OptionList's own enter, named: f1 help lists it (a binding without an id is not listed there)
        Binding("enter", "select", "Open in Focus", id="nodes_open", show=False),
    ]

    def types_into_search(self, event: events.Key) -> bool:
        """Whether this key, pressed in the list, is typed into the search box: a printable key that
        is no command here (the list's own, or the app's such as `/` and `L`, as the keymap has them)."""
        return event.is_printable and event.key not in self.screen.active_bindings

    def _on_key(self, event: events.Key) -> None:
        """Type-to-search: the key goes to the search box, which takes the keyboard now (the keys
        after it are held for it by tui/key_handoff.py) with its cursor and selection as they were."""
        if self.types_into_search(event):
            event.stop()
            event.prevent_default()
            self.parent.type_into_search(event)  # type: ignore[union-attr]

    def action_select(self) -> None:
        """Enter: decided here, as the key is handled, not when OptionSelected reaches the browser (the
        results of the query typed just before may have replaced the rows by then)."""
        browser = self.parent
        if browser.waiting_for_results():  # type: ignore[union-attr]
            browser.open_when_loaded(self.highlighted or 0)  # type: ignore[union-attr]
            return
        super().action_select()

    def action_cycle_sort(self) -> None:
        self.parent.cycle_sort()  # type: ignore[union-attr]

    def action_cycle_dimension(self) -> None:
        self.parent.cycle_dimension()  # type: ignore[union-attr]

    def action_cursor_up(self) -> None:
        if not self.highlighted:
            self.parent.focus_search()  # type: ignore[union-attr]
        else:
            super().action_cursor_up()


class NodeBrowser(Vertical):
    PANE_NAME = "the Nodes pane"  # what f1 help calls it
    class Loaded(Message):
        def __init__(self, result: Result) -> None:
            super().__init__()
            self.result = result

    class Failed(Message):
        def __init__(self, generation: int, error: str) -> None:
            super().__init__()
            self.generation = generation
            self.error = error

    class DimensionsLoaded(Message):
        def __init__(self, names: list[str]) -> None:
            super().__init__()
            self.names = names

    def __init__(self, services: Services, **kwargs):
        super().__init__(**kwargs)
        self.services = services
        with services.store() as store:  # one meta row, before the first query: the view it starts with
            remembered = nodes_view.load(store)
        self.sort = remembered.sort  # a change lasts for the session unless remember_view() keeps it
        self._first_query = " ".join(browse.format_tag(d) for d in remembered.dimensions)
        self._generation = 0
        self._requested_text: str | None = None  # the box's text the latest query was asked for
        self._shown: Request | None = None  # the request whose rows are on screen
        self._has_more = False
        self._more_ids: list[int] = []  # a search's hits not yet in the list, best first
        self._loading_more = False
        self._dimension_names: list[str] | None = None
        self._totals: dict | None = None
        self._total: int | None = None
        self._result: Result | None = None
        self._keep_place = False
        self._titles: dict[str, str] = {}  # option id -> node title, for the new tab's label
        self._open_when_loaded: int | None = None  # enter came before the results: open a row of them
        self._index_while_waiting: int | None = None  # the row the list was moved to before the results came
        self.border_title = "Nodes"

    def compose(self):
        yield SearchBox(self._first_query + (" " if self._first_query else ""),
                        placeholder="search · #dimension", id="node-search")
        yield NodeList(id="node-list")
        yield Static("", id="node-status")

    def on_mount(self) -> None:
        self.watch(self.query_one(NodeList), "scroll_y", self._scrolled, init=False)
        self._start()

    # -- contract ------------------------------------------------------------------------------
    def focus_search(self) -> None:
        self.query_one(SearchBox).focus()

    def focus_default(self) -> None:
        self.focus_search()

    def focus_list(self) -> None:
        if self.query_text != self._requested_text:
            # The box typed more than the queries asked so far (its Input.Changed messages are still
            # queued): ask now, so the list knows it does not show these results yet.
            self._start()
        node_list = self.query_one(NodeList)
        if node_list.option_count and node_list.highlighted is None:
            node_list.highlighted = 0
        self.screen.set_focus(node_list)  # now, not deferred as focus() is: the next key goes to the list

    def reload(self) -> None:
        self._dimension_names = None
        self._start(keep_place=True)

    def type_into_search(self, event: events.Key) -> None:
        """A key pressed in the list that is no command there: typed into the search box, which takes
        the keyboard now, its cursor and selection kept (the key lands where typing would have)."""
        box = self.query_one(SearchBox)
        box.keep_selection_once = True
        self.screen.set_focus(box)  # now: the next keys of a burst go to the box (tui/key_handoff.py)
        box.post_message(events.Key(event.key, event.character))

    # -- where the keys go -------------------------------------------------------------------------
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._show_keys()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._show_keys()

    def _show_keys(self) -> None:
        """The bottom border says what typing does now: search (the box has the keyboard), or which
        letters are list commands (the list has it; other keys search). Empty when neither has it. In
        a narrow pane the words about other keys shorten, then go; the commands stay."""
        focused = self.screen.focused
        if isinstance(focused, SearchBox):
            candidates = [" · ".join(["typing searches", *self._keys_for(("nodes_to_list", "list"))])]
        elif isinstance(focused, NodeList):
            commands = self._keys_for(("nodes_sort", "sort"), ("nodes_dimension", "filter"))
            candidates = [" · ".join([*commands, tail]) for tail in ("other keys search", "others search")]
            candidates.append(" · ".join(commands))
        else:
            candidates = [""]
        room = self.outer_size.width - TITLE_FRAME if self.outer_size.width else None
        self.border_subtitle = next((c for c in candidates if room is None or len(c) <= room), candidates[-1])

    def _keys_for(self, *wanted: tuple[str, str]) -> list[str]:
        """"KEY label" for each binding id active where the keyboard is, with the key the keymap gives."""
        keys = {active.binding.id: active.binding for active in self.screen.active_bindings.values()}
        return [f"{self.app.get_key_display(keys[ident])} {label}" for ident, label in wanted if ident in keys]

    # -- queries -------------------------------------------------------------------------------
    @property
    def query_text(self) -> str:
        return self.query_one(SearchBox).value

    def _start(self, keep_place: bool = False) -> None:
        self._generation += 1
        self._requested_text = self.query_text
        self._keep_place = keep_place
        self._loading_more = False
        self._status("searching…" if browse.split_tags(self.query_text)[0] else "loading…")
        limit, first_hits = FIRST_PAGE, FIRST_PAGE
        if keep_place:  # a reload keeps the pages already scrolled through (within reason)
            limit = min(max(limit, self.query_one(NodeList).option_count), MAX_RELOAD)
            first_hits = max(first_hits, self.query_one(NodeList).option_count)
        self._run(Request(self._generation, self.query_text, self.sort, limit=limit, first_hits=first_hits))

    @work(thread=True, exclusive=True, group="node-browser", exit_on_error=False)
    def _run(self, request: Request) -> None:
        # No debounce delay: a paste is one change, people type ~100 ms apart, and a newer keystroke
        # cancels this worker (checked between the full-text and the vector step).
        worker = get_current_worker()
        try:
            result = fetch(self.services, request, lambda: worker.is_cancelled)
        except Exception as exc:  # a locked or damaged DB, a bad query: shown inline, never a crash
            self.post_message(self.Failed(request.generation, describe_error(exc)))
            return
        if result is not None and not worker.is_cancelled:
            self.post_message(self.Loaded(result))

    @work(thread=True, exclusive=True, group="node-browser-warm", exit_on_error=False)
    def _warm_embedder(self) -> None:
        """Load the query embedder's model and tokenizer once the list is up (after the first frame),
        so the first search does not wait ~1 s for them (outside the services lock: the model loads
        while other panes use the database)."""
        from core.index.embedder import shared_embedder

        try:
            shared_embedder().load()
        except Exception as exc:  # search says so itself (a note in the status line) and uses full text
            self.log.warning(f"query embedder not loaded: {exc}")
            return
        self.app.freeze_long_lived()  # gc.freeze: safe from this thread

    @on(Input.Changed, "#node-search")
    def _query_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.query_text != self._requested_text:  # else focus_list asked for it already
            self._index_while_waiting = None  # a row chosen for an earlier query means nothing for this one
            self._start()

    @on(Input.Submitted, "#node-search")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        node_list = self.query_one(NodeList)
        if self._shown is None or self._shown.generation != self._generation:
            # Results for what was typed are not in yet: open the top hit once they arrive.
            self._open_when_loaded = self._generation
            return
        if not node_list.option_count:
            return
        index = node_list.highlighted or 0
        self._open(node_list.get_option_at_index(index))

    def waiting_for_results(self) -> bool:
        """The list does not show the results of what the box holds yet (a query is running)."""
        return self._shown is None or self._shown.generation != self._generation

    def open_when_loaded(self, index: int) -> None:
        """`down enter` typed with the query, before its results came: enter means that row of the
        results (the top hit after one `down`), not of the rows of the previous query still shown."""
        self._open_when_loaded = self._generation
        self._index_while_waiting = index

    @on(OptionList.OptionSelected, "#node-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._open(event.option)  # the row enter was pressed on, even if a reload has landed since

    def _open(self, option: Option) -> None:
        if option.id is not None:
            self.post_message(OpenNode(int(option.id), title=self._titles.get(option.id, "")))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        message.stop()
        result = message.result
        request = result.request
        if request.generation != self._generation:
            return  # typed on since; a newer query is running
        node_list = self.query_one(NodeList)
        options = result.options
        if request.offset == 0:
            self._titles = {}
        self._titles.update((str(r["id"]), r["title"]) for r in result.rows)
        if request.offset == 0:
            previous = node_list.highlighted_option.id if (self._keep_place and node_list.highlighted_option) else None
            scroll = node_list.scroll_y
            node_list.set_options(options)
            self._totals, self._total, self._result = result.totals, result.total, result
            self._more_ids = list(result.more_ids)
            if options:
                index = min(self._index_while_waiting or 0, len(options) - 1)
                if previous is not None:
                    try:
                        index = node_list.get_option_index(previous)
                    except Exception:
                        index = 0
                node_list.highlighted = index
                if self._keep_place:
                    node_list.scroll_to(y=scroll, animate=False)
            self._index_while_waiting = None
        else:
            node_list.add_options([o for o in options if o.id not in node_list._id_to_option])
        if self._shown is None:
            self._warm_embedder()
        self._shown = request
        self._has_more = result.has_more or bool(self._more_ids)
        self._loading_more = False
        self._render_counts()
        if self._open_when_loaded == request.generation:
            self._open_when_loaded = None
            if options:
                self._open(node_list.get_option_at_index(node_list.highlighted or 0))

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        message.stop()
        if message.generation != self._generation:
            return
        self._loading_more = False
        self._open_when_loaded = None
        self._index_while_waiting = None
        self._status(Content.assemble(("⚠ ", "$error"), (printable(message.error), "$error")))

    # -- paging --------------------------------------------------------------------------------
    @on(OptionList.OptionHighlighted, "#node-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if self.waiting_for_results() and self.screen.focused is event.option_list:
            self._index_while_waiting = event.option_index  # a row chosen before the results came
        if event.option_index >= event.option_list.option_count - MORE_MARGIN:
            self._load_more()

    def _scrolled(self, scroll_y: float) -> None:
        node_list = self.query_one(NodeList)
        if scroll_y > 0 and scroll_y >= node_list.max_scroll_y - node_list.scrollable_content_region.height:
            self._load_more()

    def _load_more(self) -> None:
        shown = self._shown
        if not self._has_more or self._loading_more or shown is None or shown.generation != self._generation:
            return
        self._loading_more = True
        self._keep_place = False
        offset = self.query_one(NodeList).option_count
        if self._more_ids:  # a search's next hits, without searching again
            ids, self._more_ids = tuple(self._more_ids[:FIRST_PAGE]), self._more_ids[FIRST_PAGE:]
            self._run(Request(self._generation, shown.text, shown.sort, offset=offset, ids=ids))
            return
        self._run(Request(self._generation, shown.text, shown.sort, offset=offset))

    # -- sort and filter -------------------------------------------------------------------------
    def sort_options(self) -> tuple[str, ...]:
        searching = bool(browse.split_tags(self.query_text)[0])
        return ("relevance", "updated", "edges") if searching else ("updated", "edges")

    def effective_sort(self) -> str:
        return self.sort if self.sort in self.sort_options() else "updated"

    def cycle_sort(self) -> None:
        options = self.sort_options()
        self.sort = options[(options.index(self.effective_sort()) + 1) % len(options)]
        self._start()  # the title shows the new sort (no toast: it says the same thing)

    def cycle_dimension(self) -> None:
        """Next dimension (most used first, then none), written as the `#tag` in the search box."""
        if self._dimension_names is None:
            self._load_dimensions()
            return
        self._apply_next_dimension()

    @work(thread=True, exclusive=True, group="node-browser-dimensions", exit_on_error=False)
    def _load_dimensions(self) -> None:
        try:
            with self.services.store() as store:
                names = browse.dimension_names(store)
        except Exception as exc:
            self.post_message(self.Failed(self._generation, describe_error(exc)))
            return
        self.post_message(self.DimensionsLoaded(names))

    @on(DimensionsLoaded)
    def _dimensions_loaded(self, message: DimensionsLoaded) -> None:
        message.stop()
        self._dimension_names = message.names
        self._apply_next_dimension()

    def _apply_next_dimension(self) -> None:
        names = self._dimension_names or []
        if not names:
            self.notify("No node has a dimension yet.", timeout=2)
            return
        text, tags = browse.split_tags(self.query_text)
        current = self._result.dimensions[0].lower() if (self._result and self._result.dimensions) else None
        lowered = [n.lower() for n in names]
        if current in lowered:
            index = lowered.index(current) + 1
            nxt = names[index] if index < len(names) else None
        else:
            nxt = names[0]
        value = " ".join(p for p in (text, browse.format_tag(nxt) if nxt else "") if p)
        # A space after the filter: what is typed next is a search word, not more of the #tag.
        box = self.query_one(SearchBox)
        box.value = value + (" " if nxt else "")  # Input.Changed re-runs the query; the title shows it
        box.cursor_position = len(box.value)

    # -- the view kept across starts ---------------------------------------------------------------
    def current_view(self) -> nodes_view.View:
        """The sort and the dimension filter shown now (the filter as the dimensions its #tags mean)."""
        dimensions = tuple(self._result.dimensions) if self._result is not None else ()
        return nodes_view.View(self.sort, dimensions)

    def remember_view(self) -> None:
        """Keep the sort and dimension filter shown now for the next start (the palette's "Nodes:
        remember this view"); any other change of them lasts for the session only."""
        self._save_view(self.current_view())

    @work(thread=True, exclusive=True, group="node-browser-view", exit_on_error=False)
    def _save_view(self, view: nodes_view.View) -> None:
        try:
            with self.services.store() as store:
                nodes_view.save(store, view)
        except Exception as exc:  # a locked or read-only database: said, and the session's view stays
            self.app.call_from_thread(self.notify, f"The view was not remembered: {describe_error(exc)}",
                                      severity="error", markup=False)
            return
        self.app.call_from_thread(self.notify, f"Remembered for the next start: {describe_view(view)}.",
                                  timeout=4, markup=False)

    # -- status --------------------------------------------------------------------------------
    def _status(self, text: str | Content) -> None:
        # layout=False: the line is one row high and as wide as the pane whatever it says (nodes.tcss),
        # so its text never changes the layout; Static.update's default lays the whole screen out
        # again, twice per keystroke ("searching…", then the counts).
        self.query_one("#node-status", Static).update(Content(text) if isinstance(text, str) else text, layout=False)

    def on_resize(self, event: events.Resize) -> None:
        self._render_title()
        self._show_keys()

    def _render_title(self) -> None:
        """"Nodes · 14 · most connected #research · 3 pending": the sort and the dimension filter
        shown, so a change of them is seen where the list is. Where that does not fit the border (the
        pane is 36-39 columns at 120-130), the count goes first (the status line has it), then the
        sort takes its short name, then the pending count; the filter and the failures stay."""
        totals = self._totals or {}
        dims = Content("")
        for dim in (self._result.dimensions if self._result is not None else ()):
            dims += Content.styled(" " + printable(browse.format_tag(dim)), "$accent")
        pending = Content.styled(f" · {totals['pending']:,} pending", "$text-muted") if totals.get("pending") \
            else Content("")
        failed = Content.styled(f" · {totals['errors']:,} failed", "$warning") if totals.get("errors") \
            else Content("")
        sort = self.effective_sort()
        count = Content.styled(f" · {totals.get('nodes', 0):,}", "$text-muted")
        candidates = [Content.assemble("Nodes", count, " · ", SORT_LABELS[sort], dims, pending, failed),
                      Content.assemble("Nodes · ", SORT_LABELS[sort], dims, pending, failed),
                      Content.assemble("Nodes · ", SORT_SHORT[sort], dims, pending, failed),
                      Content.assemble("Nodes · ", SORT_SHORT[sort], dims, failed)]
        room = self.outer_size.width - TITLE_FRAME if self.outer_size.width else None
        self.border_title = next((c for c in candidates if room is None or c.cell_length <= room), candidates[-1])

    def _render_counts(self) -> None:
        totals = self._totals or {}
        self._render_title()
        result = self._result
        if result is None:
            return
        shown = self.query_one(NodeList).option_count
        parts: list = []
        if result.searching and not shown and result.note:  # why nothing matched comes first (narrow pane)
            line = Content.styled(printable(result.note), "$warning")
            for dim in result.dimensions:
                line += Content.styled(" " + printable(browse.format_tag(dim)), "$accent")
            self._status(line)
            return
        if result.searching and not shown and totals.get("pending"):
            # Notes waiting to be indexed cannot match by meaning yet: say so (in place of the sort).
            line = Content("0 matches · ") + Content.styled(f"{totals['pending']:,} not indexed yet", "$warning")
            for dim in result.dimensions:
                line += Content.styled(" " + printable(browse.format_tag(dim)), "$accent")
            self._status(line)
            return
        if result.searching:
            hits = result.hits if result.hits is not None else shown
            capped = hits >= browse.MAX_HITS
            parts.append(f"{'best ' if capped else ''}{hits:,} match" + ("" if hits == 1 else "es"))
        elif totals.get("nodes") == 0:
            self._status(Content("No nodes yet: ctrl+n adds one."))  # fits the pane at 120 columns
            return
        elif self._total is not None:
            parts.append(f"{shown:,} of {self._total:,}" if shown < self._total
                         else f"{shown:,} node" + ("" if shown == 1 else "s"))
        line = Content(" · ".join(parts))  # the sort is in the title, with the filter
        for dim in result.dimensions:
            line += Content.styled(" " + printable(browse.format_tag(dim)), "$accent")
        if result.note:
            line += Content.styled(" · " + printable(result.note), "$warning")
        self._status(line)
