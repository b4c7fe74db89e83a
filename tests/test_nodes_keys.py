"""Where the keys go in the Nodes pane (issue 26, item 2), driven with Pilot on a real database.

The finding: in the search box a second escape left the box, the letters of the next query then ran
list commands (`s` re-sorted, `d` set a dimension filter) and `down enter` opened a note the search
had not found; the only sign was the footer. Now escape never leaves the box, a printable key the list
has no command for is typed into the box, the pane's borders say what typing does and which sort and
filter are shown, and a sort or filter change lasts for the session unless it is remembered.
"""

from __future__ import annotations

import threading

import pytest

from core.graph import nodes_view
from core.graph.store import Store
from textual.content import Content
from test_tui_nodes import settled, titles
from test_tui_nodes import wait_until as wait_at_most
from tui.app import CairnApp
from tui.widgets import node_browser
from tui.widgets.focus_panel import FocusPanel
from tui.widgets.node_browser import NodeBrowser, NodeList, SearchBox


@pytest.fixture
def opened(monkeypatch) -> list[int]:
    """Node ids the app asked the Focus panel to open (OpenNode reached the app)."""
    calls: list[int] = []
    monkeypatch.setattr(FocusPanel, "open_node", lambda self, node_id, title="": calls.append(node_id))
    return calls


@pytest.fixture(autouse=True)
def _no_background_indexing(monkeypatch):
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)


async def wait_until(pilot, condition, timeout: float = 30.0) -> None:
    """As long as a first search may take on a busy machine (the query embedder loads)."""
    await wait_at_most(pilot, condition, timeout)


def plain(markup) -> str:
    """A border title as shown (Textual keeps it as markup)."""
    return Content.from_markup(str(markup)).plain


def title(app) -> str:
    return plain(app.query_one(NodeBrowser).border_title)


def subtitle(app) -> str:
    return plain(app.query_one(NodeBrowser).border_subtitle)


def graph(store) -> dict[str, int]:
    """Four notes: Alpha is the most connected, Delta the newest; two dimensions."""
    ids = {t: store.add_node(t, f"{t} text", dimensions=dims)["id"]
           for t, dims in (("Alpha hub", ["ai"]), ("Bravo", ["ai"]), ("Charlie", ["bio"]), ("Delta newest", []))}
    store.add_edge(ids["Alpha hub"], ids["Bravo"], "a knows b")
    store.add_edge(ids["Charlie"], ids["Alpha hub"], "c cites a")
    return ids


MOST_CONNECTED_AI = "Nodes · 4 · most connected #ai · 4 pending"  # nothing indexed in these tests


async def test_escape_clears_the_search_box_and_never_leaves_it(store, db_path):
    graph(store)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 4)
        browser, box = app.query_one(NodeBrowser), app.query_one(SearchBox)
        browser.focus_search()
        await pilot.press(*"bravo")
        await wait_until(pilot, lambda: settled(app, "bravo"))
        await pilot.press("escape")  # clears, stays
        assert box.value == "" and app.focused is box
        await pilot.press("escape")  # the box is empty: still stays (it used to leave for the list)
        assert app.focused is box
        await pilot.press(*"sd")  # the next query's letters: typed, never list commands
        await wait_until(pilot, lambda: settled(app, "sd"))
        assert box.value == "sd" and app.focused is box
        assert browser.sort == "relevance" and "#" not in box.value


async def test_a_key_the_list_has_no_command_for_is_typed_into_the_search_box(store, db_path):
    graph(store)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 4)
        browser, box = app.query_one(NodeBrowser), app.query_one(SearchBox)
        browser.focus_search()
        await pilot.press(*"char")
        await wait_until(pilot, lambda: settled(app, "char"))
        await pilot.press("down")  # into the list, the query's cursor at its end
        assert isinstance(app.focused, NodeList)
        await pilot.press(*"lie")  # type-to-search: lands where the box's cursor was
        assert app.focused is box and box.value == "charlie"
        await wait_until(pilot, lambda: settled(app, "charlie"))
        assert titles(app)[0] == "Charlie"
        # the list's own commands stay commands: `s` sorts (and is not typed)
        await pilot.press("down", "s")
        await wait_until(pilot, lambda: settled(app) and browser._shown.sort == "updated")
        assert box.value == "charlie" and isinstance(app.focused, NodeList)


async def test_down_enter_typed_before_the_results_opens_a_note_the_search_found(store, db_path, opened,
                                                                                  monkeypatch):
    """A fast typist's `query down enter` arrives before the query's results: enter means the row of
    the results, not the row of the list still showing the previous query's rows."""
    ids = graph(store)
    gate = threading.Event()
    real_fetch = node_browser.fetch

    def slow_fetch(services, request, cancelled=lambda: False):
        if "charlie" in request.text:
            gate.wait(10)  # a search that takes a while (the embedder loading, a busy database)
        return real_fetch(services, request, cancelled)

    monkeypatch.setattr(node_browser, "fetch", slow_fetch)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 4)
        assert titles(app)[0] == "Delta newest"  # what `down enter` used to open
        app.query_one(NodeBrowser).focus_search()
        await pilot.press(*"charlie", "down", "enter")
        await pilot.pause(0.2)
        assert opened == []  # nothing opened from the previous query's rows
        gate.set()
        await wait_until(pilot, lambda: opened)
        assert opened == [ids["Charlie"]]


async def test_the_title_shows_the_sort_and_the_dimension_filter(store, db_path):
    graph(store)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 4)
        assert title(app) == "Nodes · 4 · recently updated · 4 pending"
        app.query_one(NodeBrowser).focus_list()
        await pilot.press("s")
        await wait_until(pilot, lambda: "most connected" in title(app))
        await pilot.press("d")  # the most used dimension: ai
        await wait_until(pilot, lambda: settled(app, "#ai "))
        assert title(app) == MOST_CONNECTED_AI
        assert titles(app) == ["Alpha hub", "Bravo"]


async def test_a_narrow_pane_keeps_the_filter_in_its_title(store, db_path):
    """At 120 columns the pane is 36 wide: the count goes, then the sort takes its short name,
    before the filter would be cut; the bottom border keeps the list's command keys whole."""
    store.add_node("Cell", "x", dimensions=["microbiology"])
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        browser = app.query_one(NodeBrowser)
        browser.focus_list()
        await pilot.press("s", "d")
        await wait_until(pilot, lambda: settled(app, "#microbiology ") and "#microbiology" in title(app))
        assert title(app) == "Nodes · by links #microbiology"
        assert len(title(app)) <= browser.outer_size.width - node_browser.TITLE_FRAME
        assert subtitle(app) == "s sort · d filter"  # the commands whole; the words about other keys went


async def test_the_bottom_border_says_what_typing_does(store, db_path, tmp_path, monkeypatch):
    from core.config import Config
    from tui.services import Services

    graph(store)
    config = Config(keymap={"nodes_sort": "o"})  # the border names the keys as the keymap has them
    app = CairnApp(db_path, services=Services(db_path, config=config), first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 4)
        browser = app.query_one(NodeBrowser)
        browser.focus_search()
        await wait_until(pilot, lambda: subtitle(app) == "typing searches · ↓ list")
        await pilot.press("down")
        await wait_until(pilot, lambda: subtitle(app) == "o sort · d filter · other keys search")
        await pilot.press("ctrl+l")  # the chat takes the keyboard: the Nodes pane says nothing
        await wait_until(pilot, lambda: subtitle(app) == "")


async def test_a_sort_or_filter_change_is_remembered_only_when_asked(store, db_path):
    graph(store)
    store.close()

    async def change_the_view(app, pilot) -> None:
        await wait_until(pilot, lambda: len(titles(app)) == 4)
        app.query_one(NodeBrowser).focus_list()
        await pilot.press("s", "d")  # most connected, #ai
        await wait_until(pilot, lambda: settled(app, "#ai ") and title(app) == MOST_CONNECTED_AI)

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await change_the_view(app, pilot)
    # A restart (a new app on the same database and CAIRN_HOME): the default view again.
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 4)
        assert title(app) == "Nodes · 4 · recently updated · 4 pending" and app.query_one(SearchBox).value == ""
        await change_the_view(app, pilot)
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "CommandPalette")
        await pilot.press(*"remember this view")
        await pilot.pause(0.5)  # the palette's search
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("Remembered for the next start" in str(n.message)
                                            for n in app._notifications))
    with Store(db_path) as kept:
        assert nodes_view.load(kept) == nodes_view.View("edges", ("ai",))
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: settled(app, "#ai ") and len(titles(app)) == 2)
        assert title(app) == MOST_CONNECTED_AI
        assert titles(app) == ["Alpha hub", "Bravo"]
        box = app.query_one(SearchBox)
        assert app.focused is box
        await pilot.press(*"bravo")  # typed after the remembered filter, not over it
        await wait_until(pilot, lambda: settled(app, "#ai bravo"))
        assert titles(app)[0] == "Bravo"


def test_a_remembered_view_that_cannot_be_read_gives_the_default_view(store, caplog):
    store.set_meta(nodes_view.KEY, '{"sort": "alphabetical", "dimensions": ["ai"]}')  # a later version's sort
    assert nodes_view.load(store) == nodes_view.View()
    assert "not readable" in caplog.text
    store.set_meta(nodes_view.KEY, "not json")
    assert nodes_view.load(store) == nodes_view.View()
    nodes_view.save(store, nodes_view.View("updated", ("ai", "two words")))
    assert nodes_view.load(store) == nodes_view.View("updated", ("ai", "two words"))
    with pytest.raises(ValueError, match="unknown sort"):
        nodes_view.save(store, nodes_view.View("alphabetical"))
