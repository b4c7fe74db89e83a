"""80×24 as the reference size (issue 26 item 3): f1 help, the footer, the neighbourhood's edge line and
the Focus tabs fit or degrade on purpose, and every screen a user can open has a snapshot at 80×24.

Found cut off before: help's Id column (`send_messag`, `regenerate_`) although its note asks for those
ids; the footer's last key under the palette key (`^n Captur▏^p palette`); the neighbourhood's
explanation line stopping after its second line with nothing to say so; two Focus tabs both labelled
"Sourdough starter feedi…".

The 80×24 snapshots, with tests/test_snapshots.py and tests/test_app_conflicts.py (which hold the
others): the Nodes pane, the Focus pane (test_main_screen_with_an_open_tab), the Focus pane with two
tabs alike and the node editor, the Chat pane, the Context viewer (test_context_viewer), f1 help over
the Focus pane (test_help) and over the chat, and the dialogs: quick capture (test_quick_capture),
today's journal entry, a new link, a link's edit, a question (delete a link), integrate's link proposals
(test_link_review), distil's proposals (test_distil_review), earlier chats, the History
(test_node_history), the neighbourhood (test_neighbourhood_picture, and here with a long explanation),
a merge, the command palette, the sync conflicts (test_sync_conflicts_screen) and the welcome screen.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from textual.widgets import DataTable

import core.graph.journal
from chat_support import _no_proxies, anth, anthropic_provider, new_chat, searcher, send  # noqa: F401
from fakes import text
from test_snapshots import (NODES, QuietApp, app, keys, open_top_node, settle, snapshot_db,  # noqa: F401
                            underline_settled, wait_until)
from tui.widgets.focus_panel import FocusPanel

SIZE = (80, 24)
SCHEDULE, LOG = "Sourdough starter feeding schedule", "Sourdough starter feeding log"
LONG_EXPLANATION = ("Soft water extracts less from the same grind, so the ratio that tastes right with hard "
                    "water needs a finer grind or a longer shot once the machine runs on bottled water.")


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def screen_name(app) -> str:
    return type(app.screen).__name__


# -- fixtures --------------------------------------------------------------------------------------------
@pytest.fixture
def sourdough_app(snapshot_db, store, indexer, app) -> QuietApp:
    """Two notes whose titles differ only after 24 characters, just before they are merged; the log is
    the newest (the top of the list)."""
    for title, source, updated_at in ((SCHEDULE, "Feed at 8 and 20 with equal weights of flour and water.",
                                       "2025-03-14T09:40:00.000Z"),
                                      (LOG, "Fed at 8:05; doubled by 13:30.", "2025-03-14T09:41:00.000Z")):
        node = store.add_node(title, source, dimensions=["baking"])["id"]
        store.db.execute("UPDATE nodes SET created_at = ?2, updated_at = ?2 WHERE id = ?1", (node, updated_at))
    indexer.run()
    return app


@pytest.fixture
def long_edge_app(snapshot_db, store, app) -> QuietApp:
    store.db.execute("UPDATE edges SET explanation = ? WHERE explanation LIKE 'Water hardness%'", (LONG_EXPLANATION,))
    return app


@pytest.fixture
def chats_app(snapshot_db, store, searcher, anth, app) -> QuietApp:
    """Two earlier chats, their times pinned."""
    for question, answer in (("How fine should the grind be for 18 g?", "About 2.5 on the burr grinder."),
                             ("Does soft water change the ratio?", "Not the ratio; the grind, a little.")):
        chat = new_chat(store, anthropic_provider(anth), searcher)
        anth.script.add(text(answer))
        send(chat, question)
    store.db.execute("UPDATE chats SET created_at = '2025-03-13T10:00:00.000Z', "
                     "updated_at = strftime('%Y-%m-%dT%H:%M:00.000Z', '2025-03-13 10:00', '+' || id || ' hours')")
    return app


async def open_both_sourdough_tabs(pilot) -> None:
    """The log (the top node) opened from the list, then the schedule."""
    app = pilot.app
    await open_top_node(pilot, len(NODES) + 2)
    panel = app.query_one(FocusPanel)
    with app.services.store() as store:
        schedule = store.db.execute("SELECT id FROM nodes WHERE title = ?", (SCHEDULE,)).fetchone()[0]
    panel.open_node(schedule)
    await wait_until(pilot, lambda: panel.active_view is not None and panel.active_view.node_id == schedule
                     and panel.active_view.node is not None, "the tab to open")
    await settle(pilot)
    await wait_until(pilot, lambda: underline_settled(app), "the tab underline")


def tab_strip(app) -> str:
    return next(line for line in screen_lines(app)[1:4] if "Sourdough" in line or "…" in line)


# -- the Focus tabs ----------------------------------------------------------------------------------------
async def test_two_tabs_whose_titles_differ_at_the_end_show_where_they_differ(sourdough_app):
    app = sourdough_app
    async with app.run_test(size=SIZE) as pilot:
        await open_both_sourdough_tabs(pilot)
        strip = tab_strip(app)
        assert "…feeding log  …feeding schedule" in strip, strip
        assert "Sourdough starter feedi…" not in strip
        await pilot.press("ctrl+w")  # the schedule's tab closes: the log's shows its start again
        panel = app.query_one(FocusPanel)
        await wait_until(pilot, lambda: len(panel.open_ids) == 1, "the tab to close")
        await settle(pilot)
        assert "Sourdough starter…" in tab_strip(app) and "…feeding" not in tab_strip(app)


# -- the footer ----------------------------------------------------------------------------------------------
def assert_footer_whole(app) -> list[str]:
    """Every key the footer shows is whole on screen, none under the palette key; returns them."""
    keys_shown = [key for key in app.screen.query("FooterKey") if key.region.width]
    palette = [key for key in keys_shown if key.has_class("-command-palette")]
    edge = palette[0].region.x if palette else app.size.width
    line = screen_lines(app)[-1]
    shown = []
    for key in keys_shown:
        label = f"{key.key_display} {key.description}".strip()
        if key not in palette:
            assert key.region.right <= edge, f"{label!r} runs under the palette key: {line!r}"
        assert label in line, f"{label!r} is not whole in the footer: {line!r}"
        shown.append(label)
    return shown


@pytest.mark.parametrize("size", [(80, 24), (130, 40)], ids=["80x24", "130x40"])
async def test_the_footer_shows_whole_keys_in_every_pane(app, size):
    async with app.run_test(size=size) as pilot:
        await open_top_node(pilot)
        focus = assert_footer_whole(app)
        assert "f1 Help" in focus and "f3 Next pane" in focus and "e Edit" in focus
        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: app.focused is not None and app.focused.id == "chat-input", "the chat")
        await settle(pilot)
        chat = assert_footer_whole(app)
        assert "^j Send" in chat and "f1 Help" in chat
        await pilot.press("f2")
        await wait_until(pilot, lambda: app.query_one("#right").current == "viewer", "the Context viewer")
        await settle(pilot)
        assert "f1 Help" in assert_footer_whole(app)
        await pilot.press("/")
        await settle(pilot)
        assert "f1 Help" in assert_footer_whole(app)
        if size == (130, 40):
            assert len(focus) == 12  # every key fits at 130 columns: nothing left out there


# -- f1 help ---------------------------------------------------------------------------------------------
async def assert_every_id_whole(pilot) -> list[str]:
    """Move down the help table row by row; each row's id is a whole word on screen when it is reached."""
    app = pilot.app
    table = app.screen.query_one("#help-table", DataTable)
    ids = []
    for row in range(table.row_count):
        table.move_cursor(row=row)
        await pilot.pause()
        ident = str(table.get_row_at(row)[3])
        if ident:
            screen = "\n".join(screen_lines(app))
            assert re.search(rf"(?<![\w]){re.escape(ident)}(?![\w])", screen), f"{ident!r} is not whole on screen"
            ids.append(ident)
    return ids


@pytest.mark.parametrize("size", [(80, 24), (130, 40)], ids=["80x24", "130x40"])
async def test_help_shows_every_binding_id_whole(app, size):
    async with app.run_test(size=size) as pilot:
        await open_top_node(pilot)
        for go, pane in (((), "Focus"), (("ctrl+l",), "Chat"), (("/",), "Nodes")):
            await pilot.press(*go, "f1")
            await wait_until(pilot, lambda: screen_name(app) == "HelpScreen", "help")
            await settle(pilot)
            ids = await assert_every_id_whole(pilot)
            assert "help" in ids and "quit" in ids
            if pane == "Chat":
                assert {"send_message", "regenerate_reply", "skip_citation_check", "edit_last_message"} <= set(ids)
            if pane == "Focus":
                assert {"edit_in_editor", "tab_scroll_down", "neighbourhood"} <= set(ids)
            await pilot.press("escape")
            await wait_until(pilot, lambda: screen_name(app) == "Screen", "help to close")


# -- the neighbourhood's edge line ------------------------------------------------------------------------
async def show_the_long_edge(pilot) -> None:
    await open_top_node(pilot)
    await pilot.press("g")
    app = pilot.app
    await wait_until(pilot, lambda: screen_name(app) == "NeighbourhoodScreen"
                     and app.screen.query_one("NeighbourhoodMap").hood is not None, "the picture")
    await pilot.press("left")
    await wait_until(pilot, lambda: "Soft water" in str(app.screen.query_one("#map-edge").render()), "the edge")
    await settle(pilot)


@pytest.mark.parametrize("size", [(80, 24), (130, 40)], ids=["80x24", "130x40"])
async def test_the_neighbourhoods_edge_line_ends_at_a_word_with_an_ellipsis_when_cut(long_edge_app, size):
    app = long_edge_app
    async with app.run_test(size=size) as pilot:
        await show_the_long_edge(pilot)
        line = app.screen.query_one("#map-edge")
        rows = screen_lines(app)[line.content_region.y:line.content_region.bottom]
        shown = " ".join(row.strip(" │") for row in rows).strip()
        whole = f"Water chemistry → Espresso ratios: “{LONG_EXPLANATION}”"
        if size == (80, 24):
            assert shown.endswith("…") and shown != whole, shown  # cut, and says so
            words = shown[:-1].split()
            assert words == whole.split()[:len(words)], shown  # whole words, in order
        else:
            assert shown == whole  # 130 columns: it all fits in the two lines


# -- the snapshots at 80×24 --------------------------------------------------------------------------------
def test_nodes_pane(app, snap_compare):
    """The app as it starts: the Nodes pane, the search box holding the keyboard."""
    async def run_before(pilot) -> None:
        await wait_until(pilot, lambda: pilot.app.query_one("NodeList").option_count == len(NODES), "the list")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_chat_pane(app, snap_compare):
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: pilot.app.focused is not None and pilot.app.focused.id == "chat-input",
                         "the chat input")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_over_the_chat(app, snap_compare):
    """The Chat pane's keys: the ids whole, the longer actions wrapped."""
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("ctrl+l", "f1")
        await wait_until(pilot, lambda: screen_name(pilot.app) == "HelpScreen", "help")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_two_tabs_alike(sourdough_app, snap_compare):
    assert snap_compare(sourdough_app, terminal_size=SIZE, run_before=open_both_sourdough_tabs)


def test_the_node_editor(app, snap_compare):
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("e")
        await wait_until(pilot, lambda: pilot.app.query_one(FocusPanel).active_view.editing, "the editor")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def palette_shows_merge(pilot) -> None:
    await pilot.press("ctrl+p")
    await wait_until(pilot, lambda: screen_name(pilot.app) == "CommandPalette", "the palette")
    await pilot.press(*keys("merge"))
    await wait_until(pilot, lambda: "into this node" in "\n".join(screen_lines(pilot.app)), "the merge command")


def test_command_palette(sourdough_app, snap_compare):
    async def run_before(pilot) -> None:
        await open_both_sourdough_tabs(pilot)
        await palette_shows_merge(pilot)
        await settle(pilot)

    assert snap_compare(sourdough_app, terminal_size=SIZE, run_before=run_before)


def test_merge_review(sourdough_app, snap_compare):
    async def run_before(pilot) -> None:
        await open_both_sourdough_tabs(pilot)
        await palette_shows_merge(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen_name(pilot.app) == "MergeReview", "the merge dialog")
        await wait_until(pilot, lambda: "Merged from" in "\n".join(screen_lines(pilot.app)), "the merged text")
        await settle(pilot)

    assert snap_compare(sourdough_app, terminal_size=SIZE, run_before=run_before)


def test_new_link(app, snap_compare):
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("ctrl+e")
        await wait_until(pilot, lambda: screen_name(pilot.app) == "EdgeModal", "the new link dialog")
        await pilot.press(*keys("water"))
        await wait_until(pilot, lambda: "Water chemistry  #3" in "\n".join(screen_lines(pilot.app)), "the match")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def _on_the_edges(pilot) -> None:
    await open_top_node(pilot)
    edges = pilot.app.query_one(FocusPanel).active_view.query_one(".node-edges")
    edges.focus()
    await settle(pilot)


def test_link_edit(app, snap_compare):
    async def run_before(pilot) -> None:
        await _on_the_edges(pilot)
        await pilot.press("r")
        await wait_until(pilot, lambda: screen_name(pilot.app) == "EdgeEditModal", "the link's edit")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_question(app, snap_compare):
    """ConfirmScreen, as x on a link asks it."""
    async def run_before(pilot) -> None:
        await _on_the_edges(pilot)
        await pilot.press("x")
        await wait_until(pilot, lambda: screen_name(pilot.app) == "ConfirmScreen", "the question")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_journal_entry(app, snap_compare, monkeypatch):
    monkeypatch.setattr(core.graph.journal, "local_now", lambda: datetime(2025, 3, 14, 9, 41, tzinfo=timezone.utc))

    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("f4")
        await wait_until(pilot, lambda: screen_name(pilot.app) == "JournalEntry", "today's entry")
        await pilot.press(*keys("Dialled in the new beans"))
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_earlier_chats(chats_app, snap_compare):
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("ctrl+l", "ctrl+o")
        await wait_until(pilot, lambda: screen_name(pilot.app) == "ChatListScreen", "the chat list")
        await wait_until(pilot, lambda: "Does soft water" in "\n".join(screen_lines(pilot.app)), "the chats")
        await settle(pilot)

    assert snap_compare(chats_app, terminal_size=SIZE, run_before=run_before)


def test_neighbourhood_with_a_long_explanation(long_edge_app, snap_compare):
    assert snap_compare(long_edge_app, terminal_size=SIZE, run_before=show_the_long_edge)


def test_welcome(db_path, snap_compare):
    """The first run on an empty database."""
    welcome = QuietApp(db_path)
    welcome.animation_level = "none"

    async def run_before(pilot) -> None:
        await wait_until(pilot, lambda: screen_name(pilot.app) == "WelcomeScreen", "the welcome screen")
        await settle(pilot)

    assert snap_compare(welcome, terminal_size=SIZE, run_before=run_before)
