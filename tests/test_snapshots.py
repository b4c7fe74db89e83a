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

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from textual.widgets import Input, Tabs, TextArea
from textual.widgets._tabs import Underline

import core.context
import core.paths
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
    monkeypatch.setattr(core.context, "datetime", FixedDatetime)  # the suffix's date/time block
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
    await pilot.pause()


def keys(text: str) -> list[str]:
    return ["space" if ch == " " else ch for ch in text]


async def open_top_node(pilot) -> None:
    """Start, wait for the list, and open the top node with enter from the search box."""
    app = pilot.app
    await wait_until(pilot, lambda: app.query_one(NodeList).option_count == len(NODES), "the node list")
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
