"""`[[links]]` in a Focus tab followed (tui/flows/note_links.py, core/vault/link_target.py): enter while
reading a note, a click on the link, the list for a note with several, the cursor in a long note, a
link with an alias, and a link to a note that does not exist (created on yes). Pilot tests on a real
database; the lookup rule is the vault import's (core/vault/resolve.py)."""

from __future__ import annotations

import pytest
from textual.widgets import Markdown, TextArea

from core.graph import merge
from tui.app import CairnApp
from tui.screens.confirm import ConfirmScreen
from tui.widgets.focus_panel import FocusPanel
from tui_support import settle, wait_for


@pytest.fixture(autouse=True)
def _no_indexing(monkeypatch):
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)


@pytest.fixture
def notes(store):
    beta = store.add_node("Beta", "The second note.")["id"]
    gamma = store.add_node("Gamma ray bursts", "Third.")["id"]
    alpha = store.add_node("Alpha", "See [[beta]] first, then [[Gamma ray bursts|the bursts]].\n\n"
                                    "Not `[[Beta]]` in code, nor ![[picture.png]].")["id"]
    lone = store.add_node("Lone", "Only one: [[Gamma ray bursts#History|history]].")["id"]
    missing = store.add_node("Wanting", "Someday: [[Sourdough starter]].")["id"]
    return {"alpha": alpha, "beta": beta, "gamma": gamma, "lone": lone, "missing": missing}


async def reading(app, pilot, node_id: int) -> FocusPanel:
    panel = app.query_one(FocusPanel)
    panel.open_node(node_id)
    await settle(app, pilot)
    await wait_for(pilot, lambda: panel.view(node_id) is not None and panel.view(node_id).node is not None,
                   what="the note loaded")
    await settle(app, pilot)
    assert app.focused is panel.strip  # reading: the keyboard is on the tab strip
    return panel


async def test_enter_follows_the_only_link_and_a_list_offers_several(db_path, store, notes):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await reading(app, pilot, notes["lone"])
        await pilot.press("enter")  # one link (with a heading and an alias): opened at once
        await settle(app, pilot)
        await wait_for(pilot, lambda: panel.primary == notes["gamma"], what="the linked note opened")
        assert panel.open_ids == (notes["lone"], notes["gamma"])

        await reading(app, pilot, notes["alpha"])
        markdown = panel.view(notes["alpha"]).query_one(".node-source", Markdown)
        assert "[the bursts](<cairn-link:1>)" in markdown.source  # shown by its alias
        assert "`[[Beta]]`" in markdown.source and "![[picture.png]]" in markdown.source  # code, embeds: as written
        await pilot.press("enter")
        await settle(app, pilot)
        picker = app.screen
        assert type(picker).__name__ == "LinkPicker"
        shown = [str(o.prompt) for o in picker.query_one("OptionList")._options]
        assert shown == ["beta", "the bursts  → Gamma ray bursts"]
        await pilot.press("enter")  # the first: [[beta]], found whatever its case
        await settle(app, pilot)
        await wait_for(pilot, lambda: panel.primary == notes["beta"], what="Beta opened")
        assert app.focused is panel.strip  # the keyboard followed to the opened note

        await pilot.press("enter")  # Beta has no links: enter does nothing there
        await settle(app, pilot)
        assert panel.primary == notes["beta"] and app.screen is app.screen_stack[0]


async def test_a_click_on_a_link_opens_its_note(db_path, store, notes):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await reading(app, pilot, notes["alpha"])
        markdown = panel.view(notes["alpha"]).query_one(".node-source", Markdown)
        paragraph = next(block for block in markdown.query("MarkdownParagraph") if "the bursts" in str(block._content))
        column = str(paragraph._content).index("the bursts") + 2
        await pilot.click(paragraph, offset=(column, 0))
        await settle(app, pilot)
        await wait_for(pilot, lambda: panel.primary == notes["gamma"], what="the clicked link's note")


async def test_a_link_to_a_missing_note_offers_to_create_it(db_path, store, notes):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await reading(app, pilot, notes["missing"])
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "There is no note “Sourdough starter”" in str(app.screen.question)
        await pilot.press("n")  # no: nothing made
        await settle(app, pilot)
        assert store.db.execute("SELECT COUNT(*) FROM nodes WHERE title = 'Sourdough starter'").fetchone()[0] == 0
        assert panel.primary == notes["missing"]

        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        made = store.db.execute("SELECT id, source FROM nodes WHERE title = 'Sourdough starter'").fetchall()
        assert len(made) == 1 and made[0]["source"] == ""
        await wait_for(pilot, lambda: panel.primary == made[0]["id"], what="the new note opened")

        await reading(app, pilot, notes["missing"])  # the link now finds the note made
        await pilot.press("enter")
        await settle(app, pilot)
        await wait_for(pilot, lambda: panel.primary == made[0]["id"], what="the made note")
        assert not isinstance(app.screen, ConfirmScreen)
        assert store.db.execute("SELECT COUNT(*) FROM nodes WHERE title = 'Sourdough starter'").fetchone()[0] == 1


async def test_in_a_long_note_enter_follows_the_link_under_the_cursor(db_path, store, notes):
    lines = [f"Paragraph {i} of a long note." for i in range(120)]
    lines[60] = "Here [[Alpha]] and there [[Gamma ray bursts|bursts]]."
    long = store.add_node("Long read", "\n\n".join(lines))["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = await reading(app, pilot, long)
        text = panel.view(long).query_one(".node-source-text", TextArea)
        assert text.display and "[[Gamma ray bursts|bursts]]" in text.text  # shown as text, with a cursor
        text.focus()
        row = text.text.split("\n").index(lines[60])
        text.move_cursor((row, lines[60].index("bursts]]")))
        await pilot.press("enter")
        await settle(app, pilot)
        await wait_for(pilot, lambda: panel.primary == notes["gamma"], what="the link under the cursor")

        await reading(app, pilot, long)
        text.focus()
        text.move_cursor((0, 0))  # not on a link: the list
        await pilot.press("enter")
        await settle(app, pilot)
        assert type(app.screen).__name__ == "LinkPicker"


def test_the_lookup_is_the_vault_rule_and_finds_a_merged_note_by_its_old_title(store):
    from core.vault.link_target import node_for

    made_here = store.add_node("Bread", "made in Cairn")["id"]
    from_file = store.add_node("Something else", "imported", metadata={
        "vault": {"root": "/v", "path": "kitchen/Bread.md"}, "aliases": ["Loaf"]})["id"]
    assert node_for(store, "Bread") == from_file  # a file's name wins over a title, as on import
    assert node_for(store, "bread.md") == from_file
    assert node_for(store, "loaf") == from_file  # an alias, any case
    assert node_for(store, "Nothing by that name") is None
    starter = store.add_node("Ärger", "ä")["id"]
    assert node_for(store, "ärger") == starter  # case beyond ASCII
    old = store.add_node("Levain", "a duplicate")["id"]
    merge.apply(store, merge.plan(store, made_here, old))
    assert node_for(store, "Levain") == made_here  # its title is an alias of the node kept
