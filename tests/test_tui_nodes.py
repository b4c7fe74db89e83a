"""The Nodes pane, quick capture and the first-run welcome, driven with Pilot on a real database."""

from __future__ import annotations

import asyncio
import time

import pytest

from core.search import browse
from core.graph import getting_started
from core.errors import DatabaseError
from core.graph.store import Store
from tui.app import CairnApp
from tui.screens.quick_capture import QuickCapture
from tui.screens.welcome import WelcomeScreen
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
    """These tests are about the UI; embedding every note at startup would only slow them down."""
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)


async def wait_until(pilot, condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within the timeout")
        await pilot.pause(0.01)


def titles(app) -> list[str]:
    return [option.prompt.plain.split("\n")[0] for option in app.query_one(NodeList).options]


def status(app) -> str:
    return str(app.query_one("#node-status").render())


def settled(app, text: str | None = None) -> bool:
    """The list shows the results of what is in the search box now."""
    browser = app.query_one(NodeBrowser)
    shown = browser._shown
    return shown is not None and shown.generation == browser._generation and (text is None or shown.text == text)


async def test_typing_narrows_the_list_and_enter_opens_the_node(store, db_path, opened):
    quantum = store.add_node("Quantum entanglement", "Spooky action at a distance.")
    store.add_node("Banana bread", "Flour, ripe bananas, butter.")
    store.add_node("Sailing knots", "The bowline and the cleat hitch.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 3)
        assert "3 nodes" in status(app) and "3 pending" in str(app.query_one(NodeBrowser).border_title)
        app.query_one(NodeBrowser).focus_search()
        await pilot.press(*"quant")
        await wait_until(pilot, lambda: settled(app, "quant"))
        assert titles(app) == ["Quantum entanglement"]
        await pilot.press("enter")  # in the search box: opens the top hit
        await wait_until(pilot, lambda: opened == [quantum["id"]])
        # down moves into the list; enter there opens the highlighted node too
        app.query_one(NodeBrowser).focus_search()
        await pilot.press("down")
        assert isinstance(app.focused, NodeList)
        await pilot.press("enter")
        await wait_until(pilot, lambda: opened == [quantum["id"], quantum["id"]])
        # nothing matches: an empty list, no crash (focusing the box selects its text: `end` keeps it)
        app.query_one(NodeBrowser).focus_search()
        await pilot.press("end", *" zebra")
        await wait_until(pilot, lambda: settled(app, "quant zebra"))
        assert titles(app) == [] and "0 matches" in status(app)


async def test_search_finds_by_meaning_and_leaves_unrelated_nodes_out(store, db_path, indexer):
    store.add_node("Banana bread", "Flour, ripe bananas, butter, an hour in the oven.")
    store.add_node("Sailing knots", "The bowline and the cleat hitch.")
    store.add_node("Quantum entanglement", "Spooky action at a distance.")
    indexer.run()
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 3)
        app.query_one(NodeBrowser).focus_search()
        await pilot.press(*"baking")  # no word in common with the note
        await wait_until(pilot, lambda: settled(app, "baking"), timeout=20)
        assert titles(app) == ["Banana bread"]
        app.query_one(SearchBox).value = "tying rope on a boat"
        await wait_until(pilot, lambda: settled(app, "tying rope on a boat"))
        assert titles(app) == ["Sailing knots"]


async def test_sort_toggles_between_recently_updated_and_most_connected(store, db_path):
    a = store.add_node("Alpha hub", "a")
    c = store.add_node("Charlie", "c")
    b = store.add_node("Bravo newest", "b")
    store.add_edge(a["id"], b["id"], "a knows b")
    store.add_edge(c["id"], a["id"], "c cites a")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 3)
        assert titles(app) == ["Bravo newest", "Charlie", "Alpha hub"]  # recently updated first
        assert "2 edges" in app.query_one(NodeList).options[2].prompt.plain
        app.query_one(NodeBrowser).focus_search()
        await pilot.press("s")  # in the search box `s` is just a letter
        assert app.query_one(SearchBox).value == "s"
        await pilot.press("backspace")
        app.query_one(NodeBrowser).focus_list()
        await pilot.press("s")
        await wait_until(pilot, lambda: settled(app) and app.query_one(NodeBrowser)._shown.sort == "edges")
        assert titles(app) == ["Alpha hub", "Bravo newest", "Charlie"]  # 2 edges, then 1 each (newest first)
        assert "most connected" in str(app.query_one(NodeBrowser).border_title)  # the title shows the sort
        await pilot.press("s")
        await wait_until(pilot, lambda: settled(app) and app.query_one(NodeBrowser)._shown.sort == "updated")
        assert titles(app) == ["Bravo newest", "Charlie", "Alpha hub"]


async def test_dimension_filter_by_tag_and_by_key(store, db_path):
    store.add_node("Cell biology", "mitochondria", dimensions=["bio"])
    store.add_node("Protein folding", "alphafold", dimensions=["bio", "ai"])
    store.add_node("Transformers", "attention", dimensions=["ai"])
    store.add_node("Untagged", "nothing")
    store.add_node("Gradient descent", "optimisation", dimensions=["ai"])
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 5)
        app.query_one(NodeBrowser).focus_search()
        await pilot.press(*"#bio")
        await wait_until(pilot, lambda: settled(app, "#bio"))
        assert sorted(titles(app)) == ["Cell biology", "Protein folding"]
        assert "#bio" in status(app)
        await pilot.press(*" protein")  # words and a dimension together
        await wait_until(pilot, lambda: settled(app, "#bio protein"))
        assert titles(app) == ["Protein folding"]
        # `d` in the list cycles dimensions (most used first) by rewriting the #tag in the search box
        # (a space after it: what is typed next is a search word, not more of the tag)
        app.query_one(SearchBox).value = ""
        await wait_until(pilot, lambda: settled(app, "") and len(titles(app)) == 5)
        app.query_one(NodeBrowser).focus_list()
        await pilot.press("d")
        await wait_until(pilot, lambda: settled(app, "#ai "))
        assert sorted(titles(app)) == ["Gradient descent", "Protein folding", "Transformers"]
        await pilot.press("d")
        await wait_until(pilot, lambda: settled(app, "#bio "))
        assert len(titles(app)) == 2
        await pilot.press("d")  # past the last dimension: no filter
        await wait_until(pilot, lambda: settled(app, ""))
        assert len(titles(app)) == 5
        # a tag that matches no dimension says so
        app.query_one(SearchBox).value = "#nosuch"
        await wait_until(pilot, lambda: settled(app, "#nosuch"))
        assert titles(app) == [] and "no dimension matches #nosuch" in status(app)


async def test_rich_markup_in_a_title_shows_literally(store, db_path):
    store.add_node("[bold]x[/] and [link=http://evil]y[/link]", "text", dimensions=["[red]z"])
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        prompt = app.query_one(NodeList).options[0].prompt.plain
        assert prompt.startswith("[bold]x[/] and [link=http://evil]y[/link]\n")
        assert "#[red]z" in prompt
        await pilot.pause()
        screen = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "[bold]x[/]" in screen


async def test_browse_list_pages_instead_of_loading_everything(store, db_path):
    import tui.widgets.node_browser as node_browser

    with store.db.transaction():
        for i in range(450):
            store.add_node(f"Note {i:03d}", "")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        node_list = app.query_one(NodeList)
        first = node_browser.FIRST_PAGE
        await wait_until(pilot, lambda: node_list.option_count == first)
        assert f"{first} of 450" in status(app)
        node_list.focus()
        await pilot.press("end")
        await wait_until(pilot, lambda: node_list.option_count == first + browse.PAGE)
        await pilot.press("end")
        await wait_until(pilot, lambda: node_list.option_count == 450)
        assert titles(app)[-1] == "Note 000"
        # reload keeps the rows already paged in and the highlighted node
        highlighted = node_list.highlighted_option.id
        app.query_one(NodeBrowser).reload()
        await wait_until(pilot, lambda: settled(app))
        assert node_list.option_count == 450 and node_list.highlighted_option.id == highlighted


async def test_search_hits_come_in_pages_without_searching_again(store, db_path, monkeypatch):
    """A search puts its best SEARCH_PAGE hits in the list and reads the rows of the rest (of the best
    MAX_HITS) as the list scrolls, without running the search again; the status counts them all."""
    import tui.widgets.node_browser as node_browser

    with store.db.transaction():
        for i in range(120):
            store.add_node(f"Glacier {i:03d}", "ice")
        store.add_node("Unrelated", "")
    searches = []
    real_search = browse.search
    monkeypatch.setattr(browse, "search", lambda *a, **k: searches.append(a[1]) or real_search(*a, **k))
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        node_list = app.query_one(NodeList)
        await wait_until(pilot, lambda: settled(app))
        app.query_one(SearchBox).value = "glacier"
        await wait_until(pilot, lambda: settled(app, "glacier"))
        assert node_list.option_count == node_browser.FIRST_PAGE
        assert "120 matches" in status(app)
        first_page = titles(app)
        node_list.focus()
        await pilot.press("end")
        await wait_until(pilot, lambda: node_list.option_count == 2 * node_browser.FIRST_PAGE)
        await pilot.press("end")
        await wait_until(pilot, lambda: node_list.option_count == 120)
        assert titles(app)[:node_browser.FIRST_PAGE] == first_page
        assert len(set(titles(app))) == 120 and all(t.startswith("Glacier") for t in titles(app))
        assert searches.count("glacier") == 1
        assert "120 matches" in status(app)
        # a reload keeps the hits already paged in and the highlighted node
        highlighted = node_list.highlighted_option.id
        app.query_one(NodeBrowser).reload()
        await wait_until(pilot, lambda: settled(app) and searches.count("glacier") == 2)
        await wait_until(pilot, lambda: node_list.option_count == 120)
        assert node_list.highlighted_option.id == highlighted


async def test_a_search_error_shows_inline(store, db_path, monkeypatch):
    store.add_node("Something", "text")

    def locked(*args, **kwargs):
        raise DatabaseError("The database stayed locked by another process for too long; try again.")

    monkeypatch.setattr(browse, "search", locked)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        app.query_one(NodeBrowser).focus_search()
        await pilot.press(*"some")
        await wait_until(pilot, lambda: "locked" in status(app))
        assert app.is_running


async def test_quick_capture_saves_a_node_that_appears_in_the_list(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: settled(app))
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, QuickCapture))
        await pilot.press("tab", *"# Idea", "enter", *"more")
        await pilot.press("tab", *"ai, Inbox")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not isinstance(app.screen, QuickCapture))
        await wait_until(pilot, lambda: titles(app) == ["Idea"])  # the title is the text's first line
        with Store(db_path) as other:
            node = other.recent(1)[0]
        assert node["source"] == "# Idea\nmore"
        assert node["dimensions"] == ["ai", "Inbox"]


async def test_quick_capture_refuses_empty_and_invalid_input_and_keeps_the_text(store, db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, QuickCapture))
        modal = app.screen
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, QuickCapture)
        assert "Nothing to save" in str(modal.query_one("#capture-error").render())
        # a bad event date: an inline message, the modal stays open with everything typed
        await pilot.press(*"Trip", "tab", *"Lisbon", "tab", "tab", "tab", *"2024-13-01", "ctrl+s")
        await wait_until(pilot, lambda: "not a date" in str(modal.query_one("#capture-error").render()))
        assert app.screen is modal
        assert modal.values()["title"] == "Trip" and modal.values()["source"] == "Lisbon"
        # a NUL byte in the text is refused the same way
        modal.query_one("#capture-date").value = ""
        modal.query_one("#capture-body").text = "bad\x00byte"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: "NUL" in str(modal.query_one("#capture-error").render()))
        assert app.screen is modal
        # escape with text typed asks first; a second escape discards
        await pilot.press("escape")
        assert app.screen is modal
        await pilot.press("escape")
        assert not isinstance(app.screen, QuickCapture)
    with Store(db_path) as check:
        assert check.counts()["nodes"] == 0


async def test_welcome_on_an_empty_database_loads_the_getting_started_graph(db_path, opened):
    app = CairnApp(db_path, first_run_prompt=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, WelcomeScreen))
        await pilot.press("g")
        await wait_until(pilot, lambda: not isinstance(app.screen, WelcomeScreen))
        await wait_until(pilot, lambda: len(titles(app)) >= 12)
        assert "Welcome to Cairn" in titles(app)
        assert len(opened) == 1  # the welcome node opens in Focus
    with Store(db_path) as check:
        counts = check.counts()
        assert counts["nodes"] >= 12 and counts["edges"] >= 12
        assert check.get_node(opened[0])["title"] == "Welcome to Cairn"


async def test_welcome_skip_leaves_the_database_empty(db_path):
    app = CairnApp(db_path, first_run_prompt=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, WelcomeScreen))
        await pilot.press("s")
        await wait_until(pilot, lambda: not isinstance(app.screen, WelcomeScreen))
        await pilot.pause()
    with Store(db_path) as check:
        assert check.counts()["nodes"] == 0


async def test_no_welcome_when_the_database_has_nodes(store, db_path):
    store.add_node("Already here", "")
    app = CairnApp(db_path, first_run_prompt=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        await app.workers.wait_for_complete([w for w in app.workers if w.name == "check_first_run"])
        await pilot.pause()
        assert not isinstance(app.screen, WelcomeScreen)


def test_getting_started_load_is_idempotent(store):
    ids = getting_started.load(store)
    assert len(ids) >= 12
    counts = store.counts()
    assert counts["edges"] >= 12
    assert store.get_node(ids[0])["title"] == "Welcome to Cairn"
    assert all(store.get_node(i)["metadata"]["getting_started"] is True for i in ids)
    # every edge has an explanation; every node is reachable from the welcome node
    reachable, frontier = {ids[0]}, [ids[0]]
    while frontier:
        for edge in store.edges(frontier.pop()):
            assert edge["explanation"].strip()
            for other in (edge["from_node_id"], edge["to_node_id"]):
                if other not in reachable:
                    reachable.add(other)
                    frontier.append(other)
    assert reachable == set(ids)
    assert getting_started.load(store) == []
    assert store.counts() == counts


def test_search_syntax_helpers():
    assert browse.split_tags('quantum #ai #"machine learning" x') == ("quantum x", ["ai", "machine learning"])
    assert browse.split_tags("c#sharp #") == ("c#sharp", [])
    assert browse.format_tag("machine learning") == '#"machine learning"'
    assert browse._fts_expression("quantum g") == '(("quantum" AND "g")) OR ("quantum")'
    assert browse._fts_expression('"open phrase') == '"open phrase"'


def test_a_short_unfinished_word_completes_titles_and_a_longer_one_also_bodies(store, embedder):
    """2–3 typed letters of a word match as a prefix in titles and descriptions only (ranking every
    body containing such a prefix is slow on a large graph); from 4 letters bodies match too; whole
    words always match everywhere."""
    from core.search.searcher import Searcher

    titled = store.add_node("Photosynthesis basics", "Light reactions.")["id"]
    body_only = store.add_node("Plant notes", "Chlorophyll drives photosynthesis in leaves.")["id"]
    described = store.add_node("Leaves", "Green.", description="photosynthetic tissue")["id"]
    searcher = Searcher(store, embedder)

    def fts_ids(text: str) -> set[int]:
        expr = browse._fts_expression(text)
        return {r[0] for r in store.db.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?", (expr,))}

    assert fts_ids("pho") == {titled, described}  # a 3-letter prefix: titles and descriptions
    assert fts_ids("phot") == {titled, body_only, described}  # 4 letters: bodies too
    assert body_only in fts_ids("photosynthesis")  # a whole word: everywhere
    assert fts_ids("plant chl") == set()  # "chl" is only in the body: it waits for a 4th letter
    assert fts_ids("plant chlo") == {body_only}
    assert browse._fts_expression("pho") == '("pho") OR ({title description} : "pho"*)'
    assert browse._fts_expression("leaves -ph").startswith('("leaves" NOT "ph")')  # negation keeps its meaning
    ids, note = browse.search(searcher, "pho")
    assert titled in ids and note is None


def test_semantic_results_join_from_the_third_typed_character(store, embedder):
    from core.search.searcher import Searcher

    store.add_node("Abacus", "Counting frames.")
    searcher = Searcher(store, embedder)
    asked: list[str] = []
    original = searcher.vector_candidates
    searcher.vector_candidates = lambda text, *a, **k: asked.append(text) or original(text, *a, **k)
    ids, _ = browse.search(searcher, "ab")
    assert asked == [] and ids  # the title prefix still finds it
    browse.search(searcher, "aba")
    assert asked == ["aba"]


def test_exclusions_hold_for_meaning_matches_too(store, embedder, indexer):
    """`-word` drops notes containing the word from the semantic side as well, and the excluded word
    is not embedded (before, `-cats` alone found the notes about cats by meaning)."""
    from core.search.searcher import Searcher

    cats = store.add_node("Cats", "Cats purr and chase mice around the house.")["id"]
    store.add_node("Sailing knots", "The bowline and the cleat hitch.")
    indexer.run()
    searcher = Searcher(store, embedder)
    ids, note = browse.search(searcher, "pets that purr")
    assert cats in ids and note is None  # found by meaning alone ("pets" is in no note)
    assert cats not in browse.search(searcher, "pets that purr -cats")[0]
    assert browse.search(searcher, "-cats") == ([], browse.ONLY_EXCLUSIONS)
    assert browse.search(searcher, "-cats -dogs") == ([], browse.ONLY_EXCLUSIONS)


@pytest.mark.parametrize("text", ["-", "*", '"', '""', "()", "- * :", "\x01\x7f"])
def test_a_query_with_no_words_says_so(store, embedder, text):
    from core.search.searcher import Searcher

    store.add_node("Anything", "Some text.")
    assert browse.search(Searcher(store, embedder), text) == ([], browse.NOTHING_TO_SEARCH)


async def test_the_status_line_says_why_a_malformed_query_finds_nothing(store, db_path):
    store.add_node("Cats", "Cats purr.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:  # the narrowest Nodes pane: the reason fits whole
        width = app.query_one("#node-status").content_region.width
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        app.query_one(NodeBrowser).focus_search()
        await pilot.press("-")
        await wait_until(pilot, lambda: settled(app, "-"))
        assert titles(app) == [] and status(app) == browse.NOTHING_TO_SEARCH and len(status(app)) <= width
        await pilot.press(*"cats")
        await wait_until(pilot, lambda: settled(app, "-cats"))
        assert titles(app) == [] and status(app) == browse.ONLY_EXCLUSIONS and len(status(app)) <= width
        app.query_one(SearchBox).value = "cats"
        await wait_until(pilot, lambda: settled(app, "cats"))
        assert titles(app) == ["Cats"] and "1 match" in status(app)


async def test_a_pasted_paragraph_is_searched_whole(store, db_path):
    """Input keeps only the first line of a paste; the search box keeps every line, joined."""
    from textual import events

    store.add_node("Herons", "Herons stand still in shallow water.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.right_panes()  # this test ends fast: exiting while they mount trips the Context viewer
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        box = app.query_one(SearchBox)
        box.focus()
        box.post_message(events.Paste("birds\nherons\r\n\tshallow"))
        await wait_until(pilot, lambda: settled(app, "birds herons shallow"))
        assert box.value == "birds herons shallow"


async def test_the_empty_database_hint_fits_the_nodes_pane_at_120_columns(db_path):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: "No nodes yet" in status(app))
        line = app.query_one("#node-status")
        assert "ctrl+n" in status(app)
        assert len(status(app)) <= line.content_region.width  # whole, not cut with an ellipsis


async def test_quick_capture_tab_moves_on_before_the_next_key_arrives(store, db_path):
    """Keys that arrive together ("T", tab, "B" in one read, as from a fast typist on a busy machine
    or over SSH) land in the right fields: tab changes field before the next key is delivered."""
    from textual import events

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, QuickCapture))
        modal = app.screen
        for key, char in [("T", "T"), ("tab", "\t"), ("B", "B"), ("tab", "\t"), ("d", "d")]:
            app.post_message(events.Key(key, char))
        await wait_until(pilot, lambda: modal.values()["dimensions"] == ["d"])
        assert modal.values()["title"] == "T" and modal.values()["source"] == "B"


async def test_slash_in_the_search_box_keeps_the_query(store, db_path):
    """The documented search key pressed where the keyboard already is: the query stays (it used to
    be replaced by "/", since taking the keyboard selects the whole query); a slash inside is typed."""
    store.add_node("Privacy", "never_send keeps dimensions local.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        box = app.query_one(SearchBox)
        box.value = "privacy"
        app.query_one(NodeList).focus()
        await pilot.pause()
        app.query_one(NodeBrowser).focus_search()  # as f3 or / do: the whole query is selected
        await pilot.pause()
        await pilot.press("/")
        assert box.value == "privacy"
        await pilot.press(*"/x")  # not leading: typed
        assert box.value == "privacy/x"
        box.value = ""
        await pilot.press("/")
        assert box.value == ""


async def test_keys_arriving_together_move_from_the_search_box_through_the_list(store, db_path, opened):
    """"down", "down", "enter" in one read (key repeat, a fast typist over SSH): the second down
    moves in the list and enter opens that row."""
    from textual import events

    store.add_node("Older", "first")
    newer = store.add_node("Newer", "second")["id"]
    store.add_node("Newest", "third")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: titles(app) == ["Newest", "Newer", "Older"])
        app.query_one(NodeBrowser).focus_search()
        await pilot.pause()
        for key in ("down", "down", "enter"):
            app.post_message(events.Key(key, None))
        await wait_until(pilot, lambda: opened != [])
        assert opened == [newer]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_quick_capture_fields_show_their_whole_placeholder(db_path, size):
    """The dimensions field (2fr) and the date field (its placeholder's width) read in full; the
    dimensions rule used to lose to `#capture-meta Input` and every field got a third."""
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=size) as pilot:
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, QuickCapture))
        await pilot.pause()
        for field in ("#capture-dimensions", "#capture-link", "#capture-date"):
            control = app.screen.query_one(field)
            assert control.content_region.width >= len(control.placeholder), field


async def test_one_node_is_counted_in_the_singular(store, db_path):
    store.add_node("First note", "")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: titles(app) == ["First note"])
        assert status(app) == "1 node"  # the sort is in the title


async def test_escape_while_saving_does_not_offer_to_discard_the_note(store, db_path, monkeypatch):
    """A slow save (a busy database): escape says it is saving instead of 'press esc again to
    discard'; the note is saved, the modal then closes and the list shows the note."""
    import threading

    release = threading.Event()
    original = Store.add_node

    def slow_add_node(self, *args, **kwargs):
        release.wait(10)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Store, "add_node", slow_add_node)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.right_panes()
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, QuickCapture))
        modal = app.screen
        await pilot.press(*"Kept", "ctrl+s", "escape", "escape")
        assert app.screen is modal
        assert "Saving" in str(modal.query_one("#capture-error").render())
        release.set()
        await wait_until(pilot, lambda: not isinstance(app.screen, QuickCapture))
        await wait_until(pilot, lambda: titles(app) == ["Kept"])


async def test_no_match_while_notes_wait_for_indexing_says_so(store, db_path, indexer):
    """A meaning query finds nothing in notes not yet embedded: the status line says how many wait,
    and once they are indexed the same query finds them."""
    store.add_node("Banana bread", "Flour, ripe bananas, butter, an hour in the oven.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.right_panes()
        await wait_until(pilot, lambda: len(titles(app)) == 1)
        app.query_one(SearchBox).value = "baking"
        await wait_until(pilot, lambda: settled(app, "baking"))
        assert titles(app) == [] and status(app) == "0 matches · 1 not indexed yet"
        assert len(status(app)) <= app.query_one("#node-status").content_region.width
        indexer.run()
        app.query_one(NodeBrowser).reload()  # what the app does when indexing finishes
        # The app's database watcher also sees the indexer's commit and reloads the list once more, at its
        # own time: that reload keeps the rows on screen and shows "searching…" until its results are in.
        # So wait for the list to show the latest request's results, not only for the rows.
        await wait_until(pilot, lambda: settled(app, "baking") and titles(app) == ["Banana bread"], timeout=20)
        assert status(app).startswith("1 match")
