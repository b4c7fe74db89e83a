"""SVG snapshots of the main screens at 80×24 (one pane at a time) and 160×48 (three panes).

pytest-textual-snapshot's `snap_compare` renders the real app on a real database and compares it
with the accepted SVG in tests/__snapshots__/test_snapshots/. After an intended change to the UI,
look at the new pictures and accept them with `pytest tests/test_snapshots.py --snapshot-update`
(the failure report, snapshot_report.html, shows the old and new side by side).

Everything that could vary from run to run is pinned: the database is built here with fixed titles,
text and timestamps (set with SQL after indexing), the context suffix's date/time is a fixed
instant, the config path shown by help is fixed, nothing indexes or watches the database in the
background, nothing animates, and the text cursors do not blink.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from textual.widgets import Input, Tabs, TextArea
from textual.widgets._tabs import Underline

import core.chat.context
import core.paths
from chat_support import _no_proxies, anth, anthropic_provider, new_chat, searcher, send  # noqa: F401
from fakes import text
from tui.app import CairnApp
from tui.widgets.context_viewer import ContextViewer
from tui.widgets.focus_panel import FocusPanel
from tui.widgets.node_browser import NodeList

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
FIXED_NOW = datetime(2025, 3, 14, 9, 41, tzinfo=timezone.utc)

# (title, source, description, dimensions, updated_at): the newest first in the list.
NODES = [
    ("Espresso ratios",
     "# Espresso ratios\n\nUse **18 g** of coffee for **36 g** of espresso, in about 28 seconds.\n\n"
     "- Finer grind: a slower shot\n- Coarser grind: a faster shot\n",
     "Brew notes for the home machine", ["coffee", "recipes"], "2025-03-14T09:30:00.000Z"),
    ("Grinder settings", "The burr grinder sits at 2.5 for espresso and 18 for filter.", "",
     ["coffee"], "2025-03-13T18:05:00.000Z"),
    ("Water chemistry", "Soft water (about 50 ppm) keeps the machine free of scale.", "",
     ["coffee", "maintenance"], "2025-03-12T07:45:00.000Z"),
    ("Reading list", "Books to read this spring.", "", [], "2025-03-10T21:15:00.000Z"),
]
EDGES = [
    (0, 1, "The ratio only holds at the right grind."),
    (2, 0, "Water hardness changes the extraction."),
]


class FixedDatetime(datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW if tz is None else FIXED_NOW.astimezone(tz)


class QuietApp(CairnApp):
    """The real app without its background work: nothing indexes or watches the database."""

    def index_pending(self) -> None:
        pass

    def watch_database(self) -> None:
        pass


@pytest.fixture
def snapshot_db(store, indexer, db_path) -> Path:
    ids = []
    for title, source, description, dimensions, _ in NODES:
        ids.append(store.add_node(title, source, description=description, dimensions=dimensions)["id"])
    for a, b, explanation in EDGES:
        store.add_edge(ids[a], ids[b], explanation)
    indexer.run()  # the notes show as indexed, as they would a moment after capture
    for node_id, (*_, updated_at) in zip(ids, NODES):
        store.db.execute("UPDATE nodes SET created_at = ?, updated_at = ? WHERE id = ?",
                         (updated_at, updated_at, node_id))
    store.db.execute("UPDATE edges SET created_at = '2025-03-14T09:35:00.000Z'")
    return db_path


@pytest.fixture
def app(snapshot_db, monkeypatch) -> QuietApp:
    monkeypatch.setattr(core.chat.context, "datetime", FixedDatetime)  # the suffix's date/time block
    monkeypatch.setattr(core.paths, "config_path", lambda: Path("/home/you/.config/cairn/config.toml"))
    quiet = QuietApp(snapshot_db, first_run_prompt=False)
    quiet.animation_level = "none"  # nothing moves between the last wait and the screenshot
    return quiet


# -- driving the app -------------------------------------------------------------------------------
async def wait_until(pilot, condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


async def settle(pilot) -> None:
    """Let every worker finish (none runs for ever here) and the screen catch up; stop cursor blink."""
    app = pilot.app
    for _ in range(50):
        await pilot.pause()
        busy = [w for w in app.workers if not w.is_finished]
        if not busy:
            break
        await app.workers.wait_for_complete(busy)
    else:
        raise AssertionError("workers did not settle")
    for widget in [*app.screen.query(Input), *app.screen.query(TextArea)]:
        widget.cursor_blink = False
    for area in app.screen.query(TextArea):
        # Textual's TextArea keys its cached lines without the cursor when it does not blink, so a line
        # drawn while the blink was in its "off" phase was kept with no cursor (a flake under load):
        # draw every line again now that the cursor is steady.
        area._line_cache.clear()
        area.refresh()
    await pilot.pause()


def keys(text: str) -> list[str]:
    return ["space" if ch == " " else ch for ch in text]


async def open_top_node(pilot, count: int = len(NODES)) -> None:
    """Start, wait for the list (of `count` nodes), and open the top node with enter from the search box."""
    app = pilot.app
    await wait_until(pilot, lambda: app.query_one(NodeList).option_count == count, "the node list")
    await pilot.press("enter")
    panel = app.query_one(FocusPanel)

    def shown() -> bool:
        view = panel.active_view
        return view is not None and view.node is not None and not view.loading and view._cover_widget is None

    await wait_until(pilot, shown, "the node to open")
    await settle(pilot)
    # The tab is labelled with the node's title from the start (the list knows it), so its underline
    # is measured once, for the right label; this only checks that it is.
    await wait_until(pilot, lambda: underline_settled(app), "the tab underline")


def underline_settled(app) -> bool:
    for tabs in app.screen.query(Tabs):
        active = tabs.active_tab
        if active is None:
            continue
        start, end = active.virtual_region.shrink(active.styles.gutter).column_span
        underline = tabs.query_one(Underline)
        if (underline.highlight_start, underline.highlight_end) != (start, end):
            return False
    return True


# -- the snapshots ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES)
def test_main_screen_with_an_open_tab(app, snap_compare, size):
    assert snap_compare(app, terminal_size=size, run_before=open_top_node)


@pytest.mark.parametrize("size", SIZES)
def test_context_viewer(app, snap_compare, size):
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("f2")
        viewer = pilot.app.query_one(ContextViewer)
        await wait_until(pilot, lambda: bool(viewer.blocks) and "Espresso ratios" in viewer.focus_text,
                         "the viewer's blocks")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_quick_capture(app, snap_compare, size):
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "QuickCapture", "quick capture")
        await pilot.press(*keys("Brew temperature"), "tab", *keys("93 degrees for medium roasts; soft water chemistry."))
        hint = pilot.app.screen.query_one("MentionHint")
        await wait_until(pilot, lambda: hint.settled and hint.titles, "the mention of Water chemistry")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_help(app, snap_compare, size):
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("f1")
        await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen", "help")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


# -- found while making the snapshots deterministic: the footer did not follow a tab's load -------------
def footer_keys(app) -> list[str]:
    return [key.key for key in app.screen.query("FooterKey")]


async def test_footer_offers_the_node_keys_once_the_tab_has_loaded(app):
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.query_one(NodeList).option_count == len(NODES), "the node list")
        panel = app.query_one(FocusPanel)
        with app.services.store():  # hold the database: the tab opens, and the footer is drawn, first
            await pilot.press("enter")
            await wait_until(pilot, lambda: panel.active_view is not None and app.focused is panel.strip,
                             "the tab to open (the keyboard on its tab strip)")
            await pilot.pause()
            await pilot.pause()
            assert "e" not in footer_keys(app)  # nothing to edit yet
        await wait_until(pilot, lambda: panel.active_view.node is not None, "the node to load")
        for _ in range(5):
            await pilot.pause()
        assert {"e", "ctrl+e", "c"} <= set(footer_keys(app))


# -- the History view (tui/screens/node_history.py) -----------------------------------------------------
@pytest.fixture
def history_app(snapshot_db, store, indexer, app) -> QuietApp:
    """Espresso ratios changed by the model in chat 3 and linked by an MCP client, every stamp pinned."""
    from core.graph import history

    espresso, reading = (store.db.execute("SELECT id FROM nodes WHERE title = ?", (t,)).fetchone()[0]
                         for t in ("Espresso ratios", "Reading list"))
    with history.acting_as(history.model_in_chat(3)):
        store.update_node(espresso, description="Brew notes for the home machine, checked against the manual",
                          source=NODES[0][1] + "- Preinfuse for 5 seconds for a sweeter shot\n")
    with history.acting_as(history.mcp_client("claude-ai")):
        store.add_edge(espresso, reading, "The spring reading list includes a book on espresso.")
    indexer.run()
    for title, *_, updated_at in NODES:
        store.db.execute("UPDATE nodes SET updated_at = ?1 WHERE title = ?2", (updated_at, title))
    store.db.execute("UPDATE edges SET created_at = '2025-03-14T09:35:00.000Z'")
    store.db.execute("UPDATE history SET actor = 'you (command line)' WHERE actor = 'you'")
    store.db.execute("UPDATE history SET created_at = strftime('%Y-%m-%dT%H:%M:00.000Z', '2025-03-14 09:00', "
                     "'+' || id || ' minutes')")
    return app


def test_node_history(history_app, snap_compare):
    """80×24: the changes of Espresso ratios, the model's highlighted, its diff below."""
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "NodeHistory", "the History view")
        screen = pilot.app.screen
        await wait_until(pilot, lambda: len(screen.changes) == 5, "the changes")
        await pilot.press("down")
        await wait_until(pilot, lambda: "Preinfuse" in str(screen.query_one("#history-diff").render()),
                         "the model's change, shown")
        await settle(pilot)

    assert snap_compare(history_app, terminal_size=(80, 24), run_before=run_before)


# -- the neighbourhood picture (tui/screens/neighbourhood.py) ---------------------------------------------
@pytest.fixture
def map_app(snapshot_db, store, app) -> QuietApp:
    grinder, reading = (store.db.execute("SELECT id FROM nodes WHERE title = ?", (t,)).fetchone()[0]
                        for t in ("Grinder settings", "Reading list"))
    store.add_edge(grinder, reading, "The spring reading list has a chapter on burr grinders.")
    store.db.execute("UPDATE edges SET created_at = '2025-03-14T09:35:00.000Z'")
    store.db.execute("UPDATE nodes SET updated_at = '2025-03-13T18:05:00.000Z' WHERE id = ?", (grinder,))
    return app


def test_neighbourhood_picture(map_app, snap_compare):
    """80×24: Espresso ratios, Water chemistry linked to it (highlighted, its explanation below),
    Grinder settings linked from it with one more node beyond."""
    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        await pilot.press("g")
        await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == "NeighbourhoodScreen"
                         and pilot.app.screen.query_one("NeighbourhoodMap").hood is not None, "the picture")
        await pilot.press("left")
        await wait_until(pilot, lambda: "Water hardness" in str(pilot.app.screen.query_one("#map-edge").render()),
                         "the highlighted edge explained")
        await settle(pilot)

    assert snap_compare(map_app, terminal_size=(80, 24), run_before=run_before)


# -- the review dialogs (tui/screens/review.py) ------------------------------------------------------
# Two notes linked from Grinder settings, so integrating Espresso ratios (offline: search alone)
# proposes them with a reason line that wraps at 80 columns; the explanation typed for the first
# wraps at both sizes. Wrapped lines must stay under their own text, not start at the row's edge.
LINK_NODES = [
    ("Extraction yield", "Espresso ratio and grind set the extraction yield; the espresso ratios note lists the "
     "shot times.", "2025-03-09T08:00:00.000Z"),
    ("Shot timing", "Time each espresso shot from the first drip; aim for 28 seconds at 18 g in and 36 g out.",
     "2025-03-08T08:00:00.000Z"),
]
LONG_EXPLANATION = ("Both notes describe the same shot from two sides: the ratio sets the target weight in the "
                    "cup, and the extraction yield measures how much of the coffee actually dissolved into it.")


@pytest.fixture
def link_app(snapshot_db, store, indexer, app) -> QuietApp:
    grinder = store.db.execute("SELECT id FROM nodes WHERE title = 'Grinder settings'").fetchone()[0]
    for title, source, updated_at in LINK_NODES:
        node = store.add_node(title, source, dimensions=["coffee"])["id"]
        store.add_edge(grinder, node, "The grind decides it.")
        store.db.execute("UPDATE nodes SET created_at = ?1, updated_at = ?1 WHERE id = ?2", (updated_at, node))
    store.db.execute("UPDATE edges SET created_at = '2025-03-14T09:35:00.000Z'")
    indexer.run()
    return app


@pytest.mark.parametrize("size", SIZES)
def test_link_review(link_app, snap_compare, size):
    async def run_before(pilot) -> None:
        await open_top_node(pilot, len(NODES) + len(LINK_NODES))
        await pilot.press("i")
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "state", None) == "review", "the link proposals")
        screen = pilot.app.screen
        assert [p.target_title for p in screen.proposals][:2] == ["Extraction yield", "Shot timing"]
        await pilot.press("e")
        edit = screen.query_one("#links-edit")
        await wait_until(pilot, lambda: edit.has_focus, "the explanation editor")
        edit.value = LONG_EXPLANATION  # set, not typed: 180 key presses took ~15 s for nothing shown
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.decisions[0] == "accepted", "the edit to be kept")
        await settle(pilot)

    assert snap_compare(link_app, terminal_size=size, run_before=run_before)


@pytest.fixture
def distil_chat(snapshot_db, store, searcher, anth, app) -> int:
    """A two-turn chat about the snapshot notes, then the model's scripted distil reply (an addition,
    an update with a diff, a retirement) waiting on the fake server."""
    ids = {r["title"]: r["id"] for r in store.db.execute("SELECT id, title FROM nodes")}
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text("Noted: bottled water at 80 ppm still keeps scale away."))
    send(chat, "We switched to bottled water at about 80 ppm; it tastes rounder and still keeps scale away.")
    anth.script.add(text("Understood: no grinder any more; pre-ground coffee from the roaster each week."))
    send(chat, "We sold the burr grinder. We buy pre-ground espresso from the roaster every week now.")
    users = [m["id"] for m in chat.messages() if m["role"] == "user" and m["text"]]
    anth.script.add(text(json.dumps({"proposals": [
        {"kind": "addition", "title": "Pre-ground coffee", "description": "Bought weekly from the roaster",
         "source": "Buy pre-ground espresso from the roaster every week; it keeps about ten days.",
         "dimensions": ["coffee"], "source_message_id": users[1]},
        {"kind": "update", "node_id": ids["Water chemistry"], "reason": "the water changed",
         "source": "Bottled water (about 80 ppm) tastes rounder and still keeps the machine free of scale.",
         "source_message_id": users[0]},
        {"kind": "retirement", "node_id": ids["Grinder settings"], "reason": "The grinder was sold.",
         "source_message_id": users[1]},
    ]})))
    return chat.id


@pytest.mark.parametrize("size", SIZES)
def test_distil_review(app, distil_chat, anth, snap_compare, size):
    from tui.widgets.chat_pane import ChatPane

    async def run_before(pilot) -> None:
        await open_top_node(pilot)
        pane = pilot.app.query_one(ChatPane)
        pane.make_provider = lambda cfg: anthropic_provider(anth)
        pane.load_chat(distil_chat)
        await wait_until(pilot, lambda: pane.chat_id == distil_chat, "the chat to load")
        await pilot.press("ctrl+l", "ctrl+t")
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "state", None) == "review", "the proposals")
        await pilot.press("a")  # the addition; the update's diff is the detail shown
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_review_footer_names_the_dialog_keys_and_the_edit_keys_while_editing(link_app):
    """The main screen's footer (`e Edit` the node) is covered by the dialog's own, which follows its state."""
    def shown(app) -> list[tuple[str, str]]:
        return [(key.key, key.description) for key in app.screen.query("FooterKey")]

    async with link_app.run_test(size=(80, 24)) as pilot:
        await open_top_node(pilot, len(NODES) + len(LINK_NODES))
        assert ("e", "Edit") in shown(link_app)  # the node's edit, before the dialog
        await pilot.press("i")
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "state", None) == "review", "the link proposals")
        screen = pilot.app.screen
        await wait_until(pilot, lambda: len(shown(link_app)) == 5, "the dialog's footer")
        assert shown(link_app) == [("a", "Accept"), ("r", "Reject"), ("e", "Edit"), ("ctrl+s", "Apply accepted"),
                                   ("escape", "Cancel")]
        await pilot.press("e")
        await wait_until(pilot, lambda: len(shown(link_app)) == 2, "the editor's keys")
        assert shown(link_app) == [("ctrl+s", "Keep the edit"), ("escape", "Drop the edit")]
        await pilot.press(*keys("Dropped"), "escape")  # drops the edit; the dialog stays open
        await wait_until(pilot, lambda: len(shown(link_app)) == 5, "the list's keys again")
        assert screen.state == "review" and pilot.app.screen is screen and screen.decisions == [None, None]
        await pilot.press("e", *keys("Kept"), "ctrl+s")  # keeps it and accepts it
        await wait_until(pilot, lambda: screen.decisions[0] == "accepted", "the edit to be kept")
        assert screen.proposals[0].explanation == "Kept" and pilot.app.screen is screen
