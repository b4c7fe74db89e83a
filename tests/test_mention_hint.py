"""Link suggestions while writing (tui/widgets/mention_hint.py): the Focus editor and quick capture
name the notes their draft mentions, after a pause in typing, on a real database; nothing is written
until the user saves and accepts. Also core.assist.mentions' `draft` (the unsaved text, the node's edges)."""

from __future__ import annotations

import pytest

from core.assist.mentions import suggest_links
from tui.app import CairnApp
from tui.screens.quick_capture import QuickCapture
from tui.widgets.chat_pane import ChatPane
from tui.widgets.focus_panel import FocusPanel
from tui.widgets.mention_hint import MentionHint, describe
from tui_support import settle, wait_for


@pytest.fixture(autouse=True)
def quiet(monkeypatch):
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    monkeypatch.setattr(ChatPane, "set_focus", lambda self, focus: None)


@pytest.fixture
def notes(store):
    ids = {title: store.add_node(title, body)["id"] for title, body in {
        "Water chemistry": "Soft water keeps the machine free of scale.",
        "Grinder settings": "The burr grinder sits at 2.5 for espresso.",
        "Espresso ratio": "One to two, in about thirty seconds.",
        "Reading list": "Books for the spring.",
    }.items()}
    store.add_edge(ids["Espresso ratio"], ids["Grinder settings"], "The ratio only holds at the right grind.")
    return ids


def edge_count(store) -> int:
    return store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]


async def edit(app, pilot, node_id: int) -> MentionHint:
    """Open the node in a Focus tab and press e: the editor's mention line."""
    app.query_one(FocusPanel).open_node(node_id)
    await settle(app, pilot)
    await pilot.press("e")
    await settle(app, pilot)
    return app.query_one(MentionHint)


def test_describe_names_three_and_counts_the_rest():
    assert describe([]) == ""
    assert describe(["Compost"]) == "Mentions “Compost” — save, then L to link it"
    line = describe(["A1", "B2", "C3", "D4", "E5"])
    assert line == "Mentions “A1”, “B2”, “C3” and 2 more — save, then L to link them"


def test_a_draft_is_scanned_instead_of_the_stored_text_and_linked_nodes_stay_out(store, notes):
    ratio = notes["Espresso ratio"]
    assert suggest_links(store, ratio) == []  # the stored text mentions nothing
    draft = ["Espresso ratio", "", "Check the grinder settings and the water chemistry; see the Espresso ratio."]
    found = [s.target_title for s in suggest_links(store, ratio, draft=draft)]
    assert found == ["Water chemistry"]  # Grinder settings is linked already; the note's own title is no mention


async def test_the_focus_editor_names_mentions_while_typing_and_writes_nothing(db_path, store, notes):
    app = CairnApp(db_path, first_run_prompt=False)
    before = edge_count(store)
    async with app.run_test(size=(160, 48)) as pilot:
        hint = await edit(app, pilot, notes["Espresso ratio"])
        assert not hint.display  # nothing mentioned yet
        app.query_one("#edit-source").focus()
        await pilot.press("end", "ctrl+end", *" Soft water chemistry and the reading list matter.")
        await wait_for(pilot, lambda: hint.settled and hint.titles, what="the mentions of the draft")
        assert sorted(hint.titles) == ["Reading list", "Water chemistry"]
        assert hint.display and "save, then L to link them" in str(hint.render())
        await pilot.press(*" Or not.")  # typing on: the line stays until the next scan replaces it
        assert hint.display
        await wait_for(pilot, lambda: hint.settled, what="the next scan")
        assert sorted(hint.titles) == ["Reading list", "Water chemistry"]
        assert edge_count(store) == before  # offered, never written from the editor


async def test_quick_capture_names_mentions_of_an_unsaved_note(db_path, store, notes):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, QuickCapture), what="quick capture")
        hint = app.screen.query_one(MentionHint)
        await pilot.press(*"Descaling", "tab", *"Soft water chemistry saves the grinder settings too.")
        await wait_for(pilot, lambda: hint.settled and hint.titles, what="the mentions of the draft")
        assert sorted(hint.titles) == ["Grinder settings", "Water chemistry"]
        app.screen.query_one("#capture-body").text = "Nothing here."  # the mentions are gone: so is the line
        await wait_for(pilot, lambda: hint.settled and not hint.titles, what="an empty scan")
        assert not hint.display


async def test_a_deleted_note_while_editing_says_the_mentions_were_not_checked(db_path, store, notes):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        hint = await edit(app, pilot, notes["Reading list"])
        store.delete_node(notes["Reading list"])
        app.query_one("#edit-source").focus()
        await pilot.press(*" water chemistry")
        await wait_for(pilot, lambda: hint.settled and hint.display, what="the scan's answer")
        assert str(hint.render()).startswith("Mentions not checked:")


async def test_L_reviews_the_note_saved_last_even_when_its_mentions_were_announced_before(db_path, store, notes):
    from textual.widgets import TextArea

    from tui.screens.link_review import LinkReviewScreen
    from tui.widgets.node_view import NodeEditor

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(140, 44)) as pilot:
        panel = app.query_one(FocusPanel)
        for title, ending in (("Reading list", "."), ("Espresso ratio", "."), ("Reading list", "!")):
            panel.open_node(notes[title])
            await settle(app, pilot)
            await pilot.press("e")
            await settle(app, pilot)
            app.query_one(NodeEditor).query_one("#edit-source", TextArea).text = f"Soft water chemistry{ending}"
            await pilot.press("ctrl+s")
            await settle(app, pilot)
            assert not app.query(NodeEditor)
        panel.focus_default()
        await pilot.press("L")
        await settle(app, pilot)
        assert isinstance(app.screen, LinkReviewScreen) and app.screen.node_id == notes["Reading list"]
