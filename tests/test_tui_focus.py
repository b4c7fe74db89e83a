"""The Focus panel: tabs of open nodes, what the chat is told about them, editing, linking, reloading.

Pilot tests on a real database. Background indexing is switched off (it would race the "pending"
status these tests check); the database watcher stays on.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Group
from rich.padding import Padding
from textual.widgets import Input, OptionList, Static, TextArea

from core.chat.focus import Focus
from core.search.fuzzy import rank_titles
from tui.app import CairnApp
from tui.flows import external_editor
from tui.messages import OpenNode
from tui.screens.confirm import ConfirmScreen
from tui.screens.edge_edit import EdgeEditModal
from tui.screens.edge_modal import EdgeModal
from tui.widgets.chat_pane import ChatPane
from tui.widgets.focus_panel import FocusPanel, tab_label
from tui_support import settle, wait_for
from tui.widgets.node_view import NodeEditor, NodeView


@pytest.fixture
def focuses(monkeypatch) -> list[Focus]:
    """Every Focus the app hands the chat pane (the FocusChanged messages, in order)."""
    seen: list[Focus] = []
    monkeypatch.setattr(ChatPane, "set_focus", lambda self, focus: seen.append(focus))
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    return seen


@pytest.fixture
def nodes(store):
    alpha = store.add_node("Alpha", "# Alpha\n\nThe first note.", description="first", dimensions=["research"])
    beta = store.add_node("Beta", "The second note.")
    gamma = store.add_node("Gamma ray bursts", "Third.")
    store.add_edge(alpha["id"], beta["id"], "Alpha cites Beta")
    return alpha["id"], beta["id"], gamma["id"]



async def open_nodes(app, pilot, *node_ids: int) -> FocusPanel:
    panel = app.query_one(FocusPanel)
    for node_id in node_ids:
        panel.open_node(node_id)
        await settle(app, pilot)
    return panel


async def edit_node(app, pilot, node_id: int) -> NodeEditor:
    """Open the node in a tab and press e: its editor."""
    await settle(app, pilot)
    app.post_message(OpenNode(node_id))
    await settle(app, pilot)
    await pilot.press("e")
    await settle(app, pilot)
    return app.query_one(NodeEditor)


def view_of(app, node_id: int) -> NodeView:
    return app.query_one(FocusPanel).view(node_id)


def text_of(widget: Static) -> str:
    return str(widget.render())


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


def prompt_text(prompt) -> str:
    """An option's prompt as plain text (an edge with an explanation is a Group of two lines)."""
    if isinstance(prompt, Group):
        return "\n".join(prompt_text(r) for r in prompt.renderables)
    if isinstance(prompt, Padding):
        return prompt_text(prompt.renderable)
    return str(prompt)


def footer_keys(app) -> list[str]:
    return [key.key for key in app.screen.query("FooterKey")]


async def test_tabs_open_switch_close_and_tell_the_chat(db_path, nodes, focuses):
    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        panel = app.query_one(FocusPanel)
        assert panel.query_one(".focus-empty").display  # the hint shows while nothing is open
        assert "enter in the Nodes pane" in text_of(panel.query_one(".focus-empty", Static))

        await open_nodes(app, pilot, alpha, beta)
        assert panel.open_ids == (alpha, beta) and panel.primary == beta
        assert not panel.query_one(".focus-empty").display
        assert [t.label.plain for t in panel.query("ContentTab")] == ["Alpha", "Beta"]
        assert focuses[-1] == Focus(open=(alpha, beta), primary=beta)

        panel.open_node(alpha)  # already open: switch, do not duplicate
        await settle(app, pilot)
        assert panel.open_ids == (alpha, beta)
        assert focuses[-1] == Focus(open=(alpha, beta), primary=alpha)

        await pilot.press("]")
        await settle(app, pilot)
        assert focuses[-1] == Focus(open=(alpha, beta), primary=beta)
        await pilot.press("[")
        await settle(app, pilot)
        assert focuses[-1] == Focus(open=(alpha, beta), primary=alpha)
        # The keyboard stays on the Focus panel's tab strip: the panel's keys act on the new tab, and
        # no focus moves on a switch (see test_the_tab_strip_keeps_the_keyboard_and_scrolls_the_tab).
        assert app.focused is panel.strip

        await pilot.press("ctrl+w")
        panel.open_node(alpha)  # reopened before its old tab is gone
        await settle(app, pilot)
        assert panel.open_ids == (beta, alpha) and panel.primary == alpha
        assert len(panel.query(NodeView)) == 2
        assert focuses[-1] == Focus(open=(beta, alpha), primary=alpha)
        await pilot.press("ctrl+w")
        await settle(app, pilot)
        assert panel.open_ids == (beta,)
        assert focuses[-1] == Focus(open=(beta,), primary=beta)
        await pilot.press("ctrl+w")
        await settle(app, pilot)
        assert focuses[-1] == Focus(open=(), primary=None)
        assert panel.query_one(".focus-empty").display


async def test_a_tab_shows_the_node_and_enter_on_an_edge_opens_the_other(db_path, store, nodes, focuses):
    alpha, beta, _ = nodes
    store.update_node(alpha, link="https://example.org/a", event_date="2024-05-01")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.post_message(OpenNode(alpha))  # as the Nodes pane does
        await settle(app, pilot)
        view = view_of(app, alpha)
        assert text_of(view.query_one(".node-title", Static)) == "Alpha"
        fields = text_of(view.query_one(".node-fields", Static))
        for expected in ("first", "https://example.org/a", "research", "2024-05-01"):
            assert expected in fields
        assert "pending" in text_of(view.query_one(".node-status", Static))
        assert "The first note." in view.query_one(".node-source").source
        edges = view.query_one(".node-edges", OptionList)
        assert edges.option_count == 1
        assert "Beta" in prompt_text(edges.get_option_at_index(0).prompt)
        assert "Alpha cites Beta" in prompt_text(edges.get_option_at_index(0).prompt)

        edges.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        panel = app.query_one(FocusPanel)
        assert panel.open_ids == (alpha, beta) and panel.primary == beta
        incoming = view_of(app, beta).query_one(".node-edges", OptionList)
        assert "Alpha" in prompt_text(incoming.get_option_at_index(0).prompt)  # edges in are listed too
        assert focuses[-1] == Focus(open=(alpha, beta), primary=beta)

        await pilot.press("c")
        assert app.clipboard == "The second note."
        assert any("Copied" in n for n in notices(app))


async def test_titles_and_sources_are_never_markup(db_path, store, focuses):
    node = store.add_node("[bold]Loud[/bold] \x1b[31mred", "[red]not markup[/red]")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await open_nodes(app, pilot, node["id"])
        view = view_of(app, node["id"])
        title = text_of(view.query_one(".node-title", Static))
        assert title.startswith("[bold]Loud[/bold]") and "\x1b" not in title and "\\u001b" in title
        tab = app.query_one(FocusPanel).query_one("ContentTab")
        assert tab.label.plain.startswith("[bold]Loud")
        assert "[red]not markup[/red]" in view.query_one(".node-source").source


async def test_long_sources_show_as_text_and_huge_ones_are_capped(db_path, store, focuses):
    long = store.add_node("Long", "\n\n".join(f"Paragraph {i}." for i in range(300)))
    huge = store.add_node("Huge", "x" * 250_000 + "TAIL")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await open_nodes(app, pilot, long["id"], huge["id"])
        view = view_of(app, long["id"])
        text_view = view.query_one(".node-source-text", TextArea)
        assert text_view.display and not view.query_one(".node-source").display
        assert text_view.text.startswith("Paragraph 0.") and "Paragraph 299." in text_view.text
        view = view_of(app, huge["id"])
        assert "first 200,000 of 250,004" in text_of(view.query_one(".node-source-note", Static))
        assert len(view.query_one(".node-source-text", TextArea).text) == 200_000
        await pilot.press("e")  # the editor gets the whole text
        await settle(app, pilot)
        assert app.query_one("#edit-source", TextArea).text.endswith("TAIL")


async def test_e_puts_the_cursor_at_the_end_of_the_text(db_path, store, nodes, focuses):
    """Issue 26: `e` put the cursor in the title, so "add a line to the text" typed into the title.
    The keyboard goes to the text, at its end; a note with no text starts at its title."""
    alpha, _, _ = nodes
    empty = store.add_node("Only a title", "")["id"]
    long = store.add_node("Long", "\n".join(f"Line {i}." for i in range(200)))["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        editor = await edit_node(app, pilot, alpha)
        source = editor.query_one("#edit-source", TextArea)
        assert app.focused is source and source.cursor_location == source.document.end
        await pilot.press(*" More.")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        saved = store.get_node(alpha)
        assert saved["source"] == "# Alpha\n\nThe first note. More." and saved["title"] == "Alpha"

        editor = await edit_node(app, pilot, long)
        source = editor.query_one("#edit-source", TextArea)
        assert app.focused is source and source.cursor_location == (199, len("Line 199."))
        assert source.scroll_y > 0 and source.cursor_screen_offset in source.region  # the end is in view
        await pilot.press("escape")
        await settle(app, pilot)

        editor = await edit_node(app, pilot, empty)
        assert app.focused is editor.query_one("#edit-title", Input)  # nothing to add to: the title
        await settle(app, pilot)


async def test_e_keeps_the_cursor_in_view_when_the_mentions_line_appears(db_path, store, focuses):
    """Found in the issue-26 walkthrough at 80x24: `e` on a note whose text fills the box scrolled its end
    into view, then the mentions line appeared below the box, the box lost a row and the cursor's line
    (the last one, where `e` puts the keyboard) was hidden under it."""
    from tui.widgets.mention_hint import MentionHint

    store.add_node("Rye flour", "Whole grain, thirsty.")
    long = store.add_node("Starter", "\n".join(f"Step {i}: feed the starter with rye flour." for i in range(30)))["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        editor = await edit_node(app, pilot, long)
        hint = editor.query_one(MentionHint)
        await wait_for(pilot, lambda: hint.settled and hint.titles and hint.display, what="the mentions line")
        await settle(app, pilot)
        source = editor.query_one("#edit-source", TextArea)
        assert source.cursor_location == source.document.end
        assert source.cursor_screen_offset in source.content_region  # the cursor's line is on screen


async def test_edit_saves_every_field_and_marks_pending(db_path, store, nodes, focuses):
    alpha, _, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await open_nodes(app, pilot, alpha)
        await pilot.press("e")
        await settle(app, pilot)
        editor = app.query_one(NodeEditor)
        assert app.focused is editor.query_one("#edit-source", TextArea)  # e: in the text (issue 26)
        editor.query_one("#edit-title", Input).focus()

        await pilot.press("ctrl+a", "ctrl+k", *"Alpha [edited]")  # "[" and "e" type; they are not keys here
        editor.query_one("#edit-dimensions", Input).value = "research, ai"
        editor.query_one("#edit-link", Input).value = "https://example.org"
        editor.query_one("#edit-source", TextArea).text = "New body."
        await pilot.press("ctrl+s")
        await settle(app, pilot)

        assert not app.query(NodeEditor)
        saved = store.get_node(alpha)  # a separate connection: what is really on disk
        assert saved["title"] == "Alpha [edited]"
        assert saved["dimensions"] == ["research", "ai"]
        assert saved["link"] == "https://example.org"
        assert saved["source"] == "New body."
        assert saved["chunk_status"] == "pending"
        view = view_of(app, alpha)
        assert text_of(view.query_one(".node-title", Static)) == "Alpha [edited]"
        assert "pending" in text_of(view.query_one(".node-status", Static))
        assert view.query_one(".node-source").source == "New body."
        assert app.query_one(FocusPanel).query_one("ContentTab").label.plain == "Alpha [edited]"

        # a change made elsewhere while editing is not silently overwritten
        await pilot.press("e")
        await settle(app, pilot)
        app.query_one("#edit-description", Input).value = "mine"
        store.update_node(alpha, description="theirs")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(app, pilot)
        assert app.query(NodeEditor) and store.get_node(alpha)["description"] == "theirs"
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        assert not app.query(NodeEditor) and store.get_node(alpha)["description"] == "mine"

        app.query_one(FocusPanel).open_node(987654)  # no such node: the tab closes again, with a notice
        await settle(app, pilot)
        assert app.query_one(FocusPanel).open_ids == (alpha,)
        assert any("no node 987654" in n for n in notices(app))


async def test_edit_rejects_bad_input_inline_and_escape_asks_before_discarding(db_path, store, nodes, focuses):
    alpha, _, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:  # the smallest supported terminal
        await settle(app, pilot)
        app.post_message(OpenNode(alpha))
        await settle(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
        await pilot.press("escape")  # nothing changed: straight back to reading
        await settle(app, pilot)
        assert not app.query(NodeEditor)

        await pilot.press("e")
        await settle(app, pilot)
        editor = app.query_one(NodeEditor)
        editor.query_one("#edit-event-date", Input).value = "2024-13-45"
        editor.query_one("#edit-source", TextArea).text = "Unsaved words."
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        error = editor.query_one(".edit-error", Static)
        assert error.display and "not a date" in text_of(error)
        assert editor.query_one("#edit-event-date", Input).has_class("-invalid")
        assert app.query_one(NodeEditor) is editor  # still editing, nothing lost
        assert editor.query_one("#edit-source", TextArea).text == "Unsaved words."
        assert store.get_node(alpha)["event_date"] is None

        title = editor.query_one("#edit-title", Input)
        title.focus()
        title.value = "Alpha words"
        await pilot.press("end", "ctrl+w", "[")  # the field's own keys: delete a word, type a bracket
        await settle(app, pilot)
        assert title.value == "Alpha [" and app.query_one(FocusPanel).open_ids == (alpha,)

        editor.query_one("#edit-title", Input).value = "   "
        editor.query_one("#edit-event-date", Input).value = ""
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert "title must not be empty" in text_of(error)

        await pilot.press("escape")  # unsaved changes: ask
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(app, pilot)
        assert app.query_one(NodeEditor) is editor
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        assert not app.query(NodeEditor)
        assert store.get_node(alpha)["source"] == "# Alpha\n\nThe first note."


async def test_new_edge_through_the_fuzzy_finder(db_path, store, nodes, focuses):
    alpha, beta, gamma = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await open_nodes(app, pilot, alpha)
        await pilot.press("ctrl+e")
        await settle(app, pilot)
        modal = app.screen
        assert isinstance(modal, EdgeModal)
        matches = modal.query_one("#edge-matches", OptionList)
        assert f"n{alpha}" not in [matches.get_option_at_index(i).id for i in range(matches.option_count)]

        await pilot.press(*"grb")  # a subsequence of "Gamma ray bursts"
        await settle(app, pilot)
        assert matches.get_option_at_index(0).id == f"n{gamma}"
        await pilot.press("enter")  # pick the highlighted match
        await settle(app, pilot)
        assert app.focused.id == "edge-explanation"
        await pilot.press(*"Alpha explains the bursts", "enter")
        await settle(app, pilot)

        assert not isinstance(app.screen, EdgeModal)
        linked = [e for e in store.edges(alpha, "out") if e["to_node_id"] == gamma]
        assert linked and linked[0]["explanation"] == "Alpha explains the bursts"
        edges = view_of(app, alpha).query_one(".node-edges", OptionList)
        assert edges.option_count == 2
        assert any("Gamma ray bursts" in prompt_text(edges.get_option_at_index(i).prompt) for i in range(2))

        # linking the same pair again is refused inline, and the modal stays open
        await pilot.press("ctrl+e")
        await settle(app, pilot)
        await pilot.press(*"beta", "enter")
        await settle(app, pilot)
        await pilot.press(*"again", "enter")
        await settle(app, pilot)
        modal = app.screen
        assert isinstance(modal, EdgeModal)
        error = modal.query_one("#edge-error", Static)
        assert error.display and "already linked" in text_of(error)
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, EdgeModal)
        assert len(store.edges(alpha, "out")) == 2


async def test_reload_refreshes_and_closes_nodes_deleted_elsewhere(db_path, store, nodes, focuses):
    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        panel = await open_nodes(app, pilot, alpha, beta)

        store.update_node(alpha, title="Alpha renamed elsewhere")
        store.delete_node(beta)  # as another process would
        panel.reload(())
        await settle(app, pilot)
        assert panel.open_ids == (alpha,)
        assert focuses[-1] == Focus(open=(alpha,), primary=alpha)
        assert any("Beta" in n and "no longer there" in n for n in notices(app))
        view = view_of(app, alpha)
        assert text_of(view.query_one(".node-title", Static)) == "Alpha renamed elsewhere"
        assert view.query_one(".node-edges", OptionList).option_count == 0  # the edge went with Beta


def test_rank_titles_prefers_tight_matches():
    titles = [(1, "Graph theory basics"), (2, "Gamma ray bursts"), (3, "grb"), (4, "Unrelated")]
    assert [i for i, _ in rank_titles("grb", titles)] == [3, 2, 1]
    assert [i for i, _ in rank_titles("", titles, limit=2)] == [1, 2]
    assert rank_titles("zzz", titles) == []


async def test_help_at_80x24_names_keys_as_typed_and_keeps_its_note_on_screen(db_path, nodes, focuses):
    from textual.widgets import DataTable

    from tui.screens.help import HelpScreen

    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_nodes(app, pilot, alpha, beta)
        panel.focus_default()
        await pilot.press("f1")
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one(DataTable)
        rows = {str(table.get_row_at(i)[3]): str(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert rows["prev_tab"] == "[" and rows["next_tab"] == "]"  # not "left_square_bracket"
        assert rows["search_nodes"] == "/" and rows["close_tab"] == "ctrl+w"
        title = app.screen.query_one(".dialog-title").render()
        assert str(title).startswith("Keys for the Focus pane")  # the pane's name, not a widget class
        note = app.screen.query_one(".help-note")
        inside = app.screen.query_one("#help-dialog").content_region
        assert note.region.height > 0 and note.region.bottom <= inside.bottom  # the whole note shows
        assert table.region.bottom <= note.region.y


async def test_a_long_edge_explanation_wraps_under_itself(store, db_path, focuses):
    a = store.add_node("Alpha", "x")["id"]
    b = store.add_node("Beta", "y")["id"]
    store.add_edge(a, b, "A long explanation that goes on and on so that it certainly needs to wrap across "
                         "several lines of a narrow pane.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_nodes(app, pilot, a)
        await pilot.press("f3")
        await settle(app, pilot)
        edges = app.query_one(".node-edges", OptionList)
        lines = ["".join(s.text for s in edges.render_line(y)) for y in range(edges.region.height)]
        lines = [line for line in lines if line.strip()]
        assert lines[0].startswith("→ Beta") and len(lines) >= 3
        assert all(line.startswith("  ") and line[2] != " " for line in lines[1:])  # every wrapped line indented


# -- editing and deleting edges from the edges list ---------------------------------------------------------
def edge_index(edges: OptionList, edge_id: int) -> int:
    ids = [edges.get_option_at_index(i).id for i in range(edges.option_count)]
    return ids.index(f"edge-{edge_id}")


async def test_x_deletes_the_highlighted_edge_after_asking_and_both_ends_refresh(db_path, store, nodes, focuses,
                                                                                monkeypatch):
    alpha, beta, gamma = nodes
    cites = store.edges(alpha)[0]["id"]
    store.add_edge(gamma, alpha, "Gamma mentions Alpha")
    reloads: list[set[int]] = []  # what NodesChanged asked the panel to refresh
    reload = FocusPanel.reload
    monkeypatch.setattr(FocusPanel, "reload", lambda self, ids=(): (reloads.append(set(ids)), reload(self, ids)))
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await open_nodes(app, pilot, beta, alpha)  # Beta's tab shows the edge too
        assert view_of(app, beta).query_one(".node-edges", OptionList).option_count == 1
        view = view_of(app, alpha)
        view.query_one(".node-read").focus()
        await settle(app, pilot)
        assert "x" not in footer_keys(app) and "r" not in footer_keys(app)  # only in the edges list

        edges = view.query_one(".node-edges", OptionList)
        edges.focus()
        edges.highlighted = None
        await settle(app, pilot)
        assert "x" not in footer_keys(app)
        await pilot.press("x")  # nothing highlighted: nothing to delete, nothing asked
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmScreen)

        edges.highlighted = edge_index(edges, cites)
        await settle(app, pilot)
        assert {"x", "r"} <= set(footer_keys(app))
        await pilot.press("x")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "“Alpha” → “Beta”" in app.screen.question
        await pilot.press("n")  # kept
        await settle(app, pilot)
        assert len(store.edges(alpha)) == 2

        await pilot.press("x")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        assert [e["explanation"] for e in store.edges(alpha)] == ["Gamma mentions Alpha"]
        assert {alpha, beta} in reloads  # both ends named
        assert any("Deleted the link “Alpha” → “Beta”" in n for n in notices(app))
        assert edges.option_count == 1 and "Gamma" in prompt_text(edges.get_option_at_index(0).prompt)
        assert app.focused is edges  # the keyboard stays in the list
        beta_edges = view_of(app, beta).query_one(".node-edges", OptionList)
        assert beta_edges.option_count == 0 and not beta_edges.display  # the other end refreshed too
        assert view_of(app, beta).query_one(".node-no-edges").display

        await pilot.press("x", "y")  # the last edge: the list hides and the keyboard stays in the tab
        await settle(app, pilot)
        assert store.edges(alpha) == [] and not edges.display
        assert app.focused is not None and view in app.focused.ancestors_with_self
        assert panel.open_ids == (beta, alpha)


async def test_r_edits_an_edge_explanation_and_refuses_an_empty_one(db_path, store, nodes, focuses):
    alpha, beta, _ = nodes
    edge_id = store.edges(alpha)[0]["id"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:  # the smallest supported terminal
        await open_nodes(app, pilot, alpha)
        edges = view_of(app, alpha).query_one(".node-edges", OptionList)
        edges.focus()
        edges.highlighted = 0
        await settle(app, pilot)

        await pilot.press("r")
        await settle(app, pilot)
        modal = app.screen
        assert isinstance(modal, EdgeEditModal)
        field = modal.query_one("#edge-edit-explanation", Input)
        assert app.focused is field and field.value == "Alpha cites Beta"  # prefilled
        await pilot.press(*" and more")  # typed, then escape: nothing changes
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, EdgeEditModal)
        assert store.get_edge(edge_id)["explanation"] == "Alpha cites Beta"
        assert app.focused is edges

        await pilot.press("r")
        await settle(app, pilot)
        modal = app.screen
        field = modal.query_one("#edge-edit-explanation", Input)
        field.value = "   "
        await pilot.press("enter")
        await settle(app, pilot)
        error = modal.query_one("#edge-edit-error", Static)
        assert isinstance(app.screen, EdgeEditModal) and error.display  # refused inline, still open
        assert "why these two nodes are connected" in text_of(error)
        assert store.get_edge(edge_id)["explanation"] == "Alpha cites Beta"

        field.value = ""
        await pilot.press(*"Alpha quotes [bold]Beta[/bold]", "enter")  # brackets are text, not markup
        await settle(app, pilot)
        assert not isinstance(app.screen, EdgeEditModal)
        assert store.get_edge(edge_id)["explanation"] == "Alpha quotes [bold]Beta[/bold]"
        assert "Alpha quotes [bold]Beta[/bold]" in prompt_text(edges.get_option_at_index(0).prompt)
        assert any("Saved the link" in n for n in notices(app))

        store.delete_edge(edge_id)  # deleted elsewhere while the modal is open: said inline
        await pilot.press("r")
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, EdgeEditModal)
        assert "no longer exists" in text_of(app.screen.query_one("#edge-edit-error", Static))
        await pilot.press("escape")
        await settle(app, pilot)


# -- E: the node's source in $EDITOR ----------------------------------------------------------------------
FAKE_EDITOR = """\
import sys
args, path = sys.argv[1:-1], sys.argv[-1]
if "--fail" in args:
    sys.exit(3)
if "--keep" not in args:
    with open(path, "ab") as fh:
        fh.write(b"\\xff\\xfe not utf-8\\n" if "--bad" in args else b"Added by the editor\\n")
"""


@pytest.fixture
def fake_editor(tmp_path, monkeypatch) -> list[list[str]]:
    """$EDITOR is a small script that appends a line as `echo >>` would (flags: --bad bytes, --keep as is,
    --fail status 3); the app's hand-off runs it without suspending (Pilot cannot suspend). Returns the
    argvs it ran."""
    script = tmp_path / "fake editor.py"  # a space in the path: $EDITOR is split like a shell would
    script.write_text(f"#!{sys.executable}\n" + FAKE_EDITOR, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"'{script}'")
    ran: list[list[str]] = []

    def run_editor(app, argv: list[str]) -> int:
        ran.append(argv)
        return subprocess.run(argv).returncode

    monkeypatch.setattr(external_editor, "run_editor", run_editor)
    return ran


def editor_files() -> list[Path]:
    from core.paths import data_dir

    folder = data_dir() / "tmp"
    return sorted(folder.glob("*.md")) if folder.exists() else []


def kept_file(app) -> Path:
    match = re.search(r"kept in (\S+\.md)", notices(app)[-1])
    assert match, notices(app)[-1]
    return Path(match.group(1))


async def test_E_saves_the_text_edited_in_EDITOR(db_path, store, nodes, focuses, fake_editor, monkeypatch):
    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_nodes(app, pilot, beta)
        await pilot.press("E")
        await settle(app, pilot)
        assert len(fake_editor) == 1 and fake_editor[0][0].endswith("fake editor.py")
        assert fake_editor[0][-1].endswith(".md")
        saved = store.get_node(beta)
        assert saved["source"] == "The second note.\nAdded by the editor"  # the editor's final newline dropped
        # the file handed over ended with a newline (the note has none), so the line was not glued on
        assert fake_editor[0][-1] and "The second note.Added" not in saved["source"]
        assert saved["chunk_status"] == "pending"  # queued for indexing again
        assert "Added by the editor" in view_of(app, beta).query_one(".node-source").source
        assert any("Saved the text of “Beta”" in n for n in notices(app))
        assert editor_files() == []  # the temporary file is gone once saved

        # nothing changed: nothing written; $VISUAL wins over $EDITOR
        monkeypatch.setenv("VISUAL", os.environ["EDITOR"] + " --keep")
        monkeypatch.setenv("EDITOR", "no-such-editor")
        before = store.get_node(beta)["updated_at"]
        await pilot.press("E")
        await settle(app, pilot)
        assert "--keep" in fake_editor[-1]
        assert store.get_node(beta)["updated_at"] == before
        assert "“Beta” is unchanged." in notices(app)[-1] and editor_files() == []

        # the in-app editor is open: E stands aside (its own keys, and one editor at a time)
        await pilot.press("e")
        await settle(app, pilot)
        await pilot.press("E")  # typed into the text, where e put the cursor
        await settle(app, pilot)
        assert len(fake_editor) == 2
        assert app.query_one("#edit-source", TextArea).text.endswith("E")


async def test_E_never_overwrites_a_change_made_meanwhile(db_path, store, nodes, focuses, fake_editor, monkeypatch):
    alpha, _, _ = nodes
    run_editor = external_editor.run_editor

    def edited_elsewhere_meanwhile(app, argv):
        store.update_node(alpha, source="Changed by another process.")
        return run_editor(app, argv)

    monkeypatch.setattr(external_editor, "run_editor", edited_elsewhere_meanwhile)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_nodes(app, pilot, alpha)
        await pilot.press("E")
        await settle(app, pilot)
        assert store.get_node(alpha)["source"] == "Changed by another process."  # not overwritten
        assert "changed in Cairn while you were editing" in notices(app)[-1]
        kept = kept_file(app)
        assert kept.read_text(encoding="utf-8") == "# Alpha\n\nThe first note.\nAdded by the editor\n"

        kept.unlink()

        def deleted_meanwhile(app, argv):
            store.delete_node(alpha)
            return run_editor(app, argv)

        monkeypatch.setattr(external_editor, "run_editor", deleted_meanwhile)
        await pilot.press("E")
        await settle(app, pilot)
        said = [n for n in notices(app) if "was deleted while you were editing" in n]
        assert said and "kept in" in said[0]
        kept = Path(re.search(r"kept in (\S+\.md)", said[0]).group(1))
        assert kept.read_text(encoding="utf-8") == "Changed by another process.\nAdded by the editor\n"
        assert app.query_one(FocusPanel).open_ids == ()  # its tab closes, as for any deletion


async def test_E_keeps_text_that_is_not_utf8_or_that_a_failed_editor_left(db_path, store, nodes, focuses,
                                                                            fake_editor, monkeypatch):
    _, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_nodes(app, pilot, beta)
        monkeypatch.setenv("EDITOR", os.environ["EDITOR"] + " --bad")
        await pilot.press("E")
        await settle(app, pilot)
        assert store.get_node(beta)["source"] == "The second note."
        assert "not valid UTF-8" in notices(app)[-1] and "nothing was saved" in notices(app)[-1]
        kept = kept_file(app)
        assert kept.read_bytes() == b"The second note.\n\xff\xfe not utf-8\n"  # nothing lost

        monkeypatch.setenv("EDITOR", os.environ["EDITOR"].replace("--bad", "--fail"))
        await pilot.press("E")
        await settle(app, pilot)
        assert "exited with status 3" in notices(app)[-1]
        assert kept_file(app).read_text(encoding="utf-8") == "The second note.\n"
        assert store.get_node(beta)["source"] == "The second note."


async def test_one_EDITOR_round_at_a_time(db_path, store, nodes, focuses, fake_editor):
    _, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_nodes(app, pilot, beta)
        external_editor.start(app, beta)
        external_editor.start(app, beta)  # before the first round has even written its file
        await settle(app, pilot)
        assert len(fake_editor) == 1  # one editor ran, and the second start said why it did not
        assert notices(app) == ["An $EDITOR edit is still being saved; try again in a moment.",
                                "Saved the text of “Beta” (queued for indexing)."]
        await pilot.press("E")  # the round is over: E starts the next
        await settle(app, pilot)
        assert len(fake_editor) == 2


async def test_E_says_so_when_the_terminal_cannot_suspend(db_path, store, nodes, focuses, monkeypatch):
    _, beta, _ = nodes
    monkeypatch.setenv("EDITOR", "no-such-editor-is-run")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:  # headless: App.suspend is not supported
        await open_nodes(app, pilot, beta)
        await pilot.press("E")
        await settle(app, pilot)
        assert "cannot hand the screen to an external editor" in notices(app)[-1]
        assert store.get_node(beta)["source"] == "The second note."
        assert editor_files() == []  # nothing was edited, so nothing is left behind
        await pilot.press("E")  # and the key works again afterwards
        await settle(app, pilot)
        assert sum("cannot hand the screen" in n for n in notices(app)) == 2


async def test_two_nodes_opened_at_once_end_on_the_second_and_a_click_picks_a_tab(db_path, nodes, focuses):
    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = app.query_one(FocusPanel)
        panel.open_node(alpha)
        panel.open_node(beta)  # before the first tab has even mounted
        await settle(app, pilot)
        assert panel.primary == beta and focuses[-1].primary == beta
        await pilot.click(f"#--content-tab-{panel._panes[alpha]}")  # the mouse still works
        await settle(app, pilot)
        assert panel.primary == alpha and focuses[-1].primary == alpha


async def test_a_tab_strip_reading_key_can_be_remapped(db_path, store, nodes, focuses):
    from core.config import Config
    from tui.services import Services

    long = store.add_node("Long read", "\n\n".join(f"Paragraph {i} of a long note." for i in range(80)))
    services = Services(db_path, config=Config(keymap={"tab_page_down": "J"}))
    app = CairnApp(db_path, services=services, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        panel = await open_nodes(app, pilot, long["id"])
        assert app.focused is panel.strip
        read = view_of(app, long["id"]).query_one(".node-read")
        await pilot.press("J")
        await settle(app, pilot)
        assert read.scroll_y > 0  # [keymap] tab_page_down = "J" pages the tab being read


async def test_the_tab_strip_keeps_the_keyboard_and_scrolls_the_tab(db_path, store, nodes, focuses):
    alpha, beta, _ = nodes
    long = store.add_node("Long read", "\n\n".join(f"Paragraph {i} of a long note." for i in range(80)))
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        panel = await open_nodes(app, pilot, alpha, beta, long["id"])
        assert app.focused is panel.strip  # opening a node hands the keyboard to the panel
        read = view_of(app, long["id"]).query_one(".node-read")
        assert read.max_scroll_y > 0 and read.scroll_y == 0
        await pilot.press("down", "pagedown")
        await settle(app, pilot)
        assert read.scroll_y > 0  # the reading keys scroll the active tab
        await pilot.press("end")
        await settle(app, pilot)
        assert read.scroll_y == read.max_scroll_y
        await pilot.press("home")
        await settle(app, pilot)
        assert read.scroll_y == 0

        await pilot.press("left")  # the strip's own keys switch tabs, and that choice is kept
        await settle(app, pilot)
        assert panel.primary == beta and focuses[-1].primary == beta
        assert app.focused is panel.strip
        await pilot.press("]")
        await settle(app, pilot)
        assert panel.primary == long["id"] and app.focused is panel.strip

        await pilot.press("tab")  # tab enters the tab's text; its own keys scroll it there
        await settle(app, pilot)
        assert app.focused is read
        await pilot.press("end")
        await settle(app, pilot)
        assert read.scroll_y == read.max_scroll_y
        await pilot.press("[")  # a switch from inside a tab puts the keyboard back on the strip
        await settle(app, pilot)
        assert panel.primary == beta and app.focused is panel.strip


async def test_an_unsaved_edit_survives_switching_tabs(db_path, store, nodes, focuses):
    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        panel = await open_nodes(app, pilot, alpha, beta)
        await pilot.press("e")
        await settle(app, pilot)
        editor = view_of(app, beta).editor
        editor.query_one("#edit-title", Input).focus()  # e puts the keyboard in the text; the title here
        await settle(app, pilot)
        await pilot.press("ctrl+a", "ctrl+k", *"Beta draft")
        assert app.focused is editor.query_one("#edit-title", Input)

        await pilot.click(f"#--content-tab-{panel._panes[alpha]}")  # away (the keys would type here)
        await settle(app, pilot)
        assert panel.primary == alpha and focuses[-1].primary == alpha
        assert app.focused is panel.strip
        await pilot.press("e")  # a second editor, in the other tab
        await settle(app, pilot)
        assert view_of(app, alpha).editing
        view_of(app, alpha).editor.query_one("#edit-title", Input).focus()
        await settle(app, pilot)
        await pilot.press("ctrl+a", "ctrl+k", *"Alpha draft")
        panel.open_node(beta)  # back, as enter in the Nodes pane does
        await settle(app, pilot)

        assert panel.primary == beta
        assert view_of(app, beta).editor is editor and editor.dirty
        assert editor.values()["title"] == "Beta draft"
        assert app.focused is editor.query_one("#edit-title", Input)  # back where the keyboard was
        alpha_editor = view_of(app, alpha).editor
        assert alpha_editor is not None and alpha_editor.values()["title"] == "Alpha draft"
        assert store.get_node(beta)["title"] == "Beta" and store.get_node(alpha)["title"] == "Alpha"  # unsaved


async def test_keys_typed_into_the_editor_never_replace_a_field_they_land_in(db_path, store, nodes, focuses):
    """e, and coming back to a tab being edited (another pane, then F3), put the keyboard in a field
    with its text intact: Textual's Input selects all its text when focused, so the next key typed
    replaced the whole title (found in tmux: a returning user's first key wiped their draft title)."""
    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await open_nodes(app, pilot, alpha, beta)
        await pilot.press("e")
        await settle(app, pilot)
        title = view_of(app, beta).editor.query_one("#edit-title", Input)
        title.focus()  # e puts the keyboard in the text (issue 26); the title is the field at risk here
        await settle(app, pilot)
        assert app.focused is title
        await pilot.press(*" draft")
        assert title.value == "Beta draft"

        await pilot.press("ctrl+l")  # away to the chat input
        await settle(app, pilot)
        assert app.focused is not title
        app.query_one(FocusPanel).focus_default()  # back, as F3 does
        await settle(app, pilot)
        assert app.focused is title
        await pilot.press("!")
        assert title.value == "Beta draft!"


async def test_a_newly_opened_tab_is_scrolled_into_view_and_underlined(db_path, store, focuses):
    """Found in tmux at 160x48: a fifth node opened from the Nodes pane was active but its label was
    off the strip (the strip still showed earlier tabs, no underline in view). Textual's own scroll
    to the active tab, deferred and aimed at where the new tab was before the layout, landed after
    ours. Pilot shows it with tabs opened before their titles are known ('#id', then the title)."""
    titles = ["Reading list", "Nodes: one idea per note", "Search: words, meaning, and the syntax",
              "Hubs: your most connected nodes", "cairn doctor: checking the index", "Keys"]
    nodes = [store.add_node(title, f"Note {i}.") for i, title in enumerate(titles)]
    nodes.insert(5, nodes[2])  # back to an open tab (the strip scrolls left), then a new one at the end
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        panel = app.query_one(FocusPanel)
        scroller = panel.strip.query_one("#tabs-scroll")
        for node in nodes:
            panel.open_node(node["id"])  # as a citation link in the chat opens it: '#id' until loaded
            await settle(app, pilot)
            tab = panel.strip.active_tab
            assert panel.primary == node["id"] and str(tab.label) == str(tab_label(node["title"]))

            def in_view() -> bool:
                start, end = tab.virtual_region.shrink(tab.styles.gutter).column_span
                return scroller.scroll_x <= start and end <= scroller.scroll_x + scroller.size.width

            for _ in range(20):  # a few frames at most; never a duration
                if in_view():
                    break
                await pilot.pause()
            start, end = tab.virtual_region.shrink(tab.styles.gutter).column_span
            assert in_view(), (node["title"], start, end, scroller.scroll_x, scroller.size.width)
            underline = panel.strip.query_one("Underline")
            assert (underline.highlight_start, underline.highlight_end) == (start, end)


async def test_a_tab_switch_brings_the_tab_label_into_view_at_once(db_path, store, focuses):
    ids = [store.add_node(f"A rather long node title number {i}", f"Note {i}.")["id"] for i in range(8)]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        panel = await open_nodes(app, pilot, *ids)
        strip = panel.strip
        scroller = strip.query_one("#tabs-scroll")
        assert scroller.scroll_x > 0  # the last tab's label is scrolled into view; the first is not in view

        panel.action_next_tab()  # wraps to the first tab
        # In the same frame as the switch, not one frame later: the label is in view, underlined.
        tab = strip.active_tab
        assert panel.primary == ids[0] and tab is not None
        start, end = tab.virtual_region.shrink(tab.styles.gutter).column_span
        assert scroller.scroll_x <= start and end <= scroller.scroll_x + scroller.size.width
        underline = strip.query_one("Underline")
        assert (underline.highlight_start, underline.highlight_end) == (start, end)
        await settle(app, pilot)
        assert (underline.highlight_start, underline.highlight_end) == (start, end)  # Textual agrees later


async def test_escape_in_the_source_field_cancels_the_edit_and_keeps_the_keyboard_in_the_pane(
        db_path, store, nodes, focuses):
    alpha, _, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = await edit_node(app, pilot, alpha)
        source = editor.query_one("#edit-source", TextArea)
        source.focus()
        source.move_cursor((0, 0))  # e put the cursor at the text's end
        await settle(app, pilot)
        await pilot.press("tab")  # tab indents here (markdown lists), as before
        await settle(app, pilot)
        assert source.text.startswith("    ") and app.focused is source
        await pilot.press("escape")  # changed: asks, as in the other fields (was: keyboard jumped to the chat)
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(app, pilot)
        assert app.focused is source and source.text.startswith("    ")
        await pilot.press("ctrl+s")  # so ctrl+s still reaches the editor
        await settle(app, pilot)
        assert not app.query(NodeEditor)
        assert store.get_node(alpha)["source"].startswith("    # Alpha")


async def test_the_tab_strip_reads_a_long_note_to_its_last_line(db_path, store, nodes, focuses):
    # over MARKDOWN_LINE_LIMIT lines: shown in its own text view below the fields and edges
    long = store.add_node("Very long read", "\n".join(f"Line {i} of a very long note." for i in range(400)))
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        panel = await open_nodes(app, pilot, long["id"])
        view = view_of(app, long["id"])
        read, text = view.query_one(".node-read"), view.query_one(".node-source-text", TextArea)
        assert app.focused is panel.strip and text.display and text.max_scroll_y > 0
        for _ in range(4):  # past the fields, then on into the text
            await pilot.press("pagedown")
            await settle(app, pilot)
        assert read.scroll_y == read.max_scroll_y and text.scroll_y > 0
        await pilot.press("end")
        await settle(app, pilot)
        assert text.scroll_y == text.max_scroll_y  # the note's last line is in view
        assert app.focused is panel.strip
        await pilot.press("pageup")  # going up scrolls the text back first...
        await settle(app, pilot)
        assert 0 < text.scroll_y < text.max_scroll_y and read.scroll_y == read.max_scroll_y
        await pilot.press("home")  # ...and home is the top of the tab
        await settle(app, pilot)
        assert text.scroll_y == 0 and read.scroll_y == 0
        await pilot.press("down")
        await settle(app, pilot)
        assert read.scroll_y > 0 and text.scroll_y == 0  # the tab scrolls before the text


async def test_the_error_line_drops_each_problem_as_its_field_is_corrected(db_path, store, nodes, focuses):
    alpha, _, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        editor = await edit_node(app, pilot, alpha)
        title, date = editor.query_one("#edit-title", Input), editor.query_one("#edit-event-date", Input)
        title.value, date.value = "", "2024-13-45"
        await settle(app, pilot)
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        error = editor.query_one(".edit-error", Static)
        assert "title must not be empty" in text_of(error) and "not a date" in text_of(error)
        assert app.focused is title
        await pilot.press(*"Alpha")  # the title is fixed: only the date is still blamed
        await settle(app, pilot)
        assert error.display and "title" not in text_of(error) and "not a date" in text_of(error)
        assert not title.has_class("-invalid") and date.has_class("-invalid")
        date.value = "2024-12-01"
        await settle(app, pilot)
        assert not error.display and not date.has_class("-invalid")
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert store.get_node(alpha)["event_date"] == "2024-12-01"


async def test_the_link_dialogs_footers_offer_their_own_keys_not_the_focus_panes(db_path, store, nodes, focuses):
    alpha, _, _ = nodes

    def shown(app) -> list[tuple[str, str]]:
        return [(key.key, key.description) for key in app.screen.query("FooterKey")]

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_nodes(app, pilot, alpha)
        edges = view_of(app, alpha).query_one(".node-edges", OptionList)
        edges.focus()
        edges.highlighted = 0
        await settle(app, pilot)
        assert ("r", "Edit link") in shown(app)
        await pilot.press("r")
        await settle(app, pilot)
        assert isinstance(app.screen, EdgeEditModal)
        assert shown(app) == [("escape", "Cancel")]  # not "r Edit link", "x Delete link", "e Edit"
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press("ctrl+e")
        await settle(app, pilot)
        assert isinstance(app.screen, EdgeModal)
        assert shown(app) == [("escape", "Cancel")]


async def test_at_80x24_the_new_edge_dialog_keeps_its_error_and_buttons_on_screen(db_path, store, nodes, focuses):
    alpha, _, _ = nodes
    for i in range(14):
        store.add_node(f"Another note {i}", "Text.")
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_nodes(app, pilot, alpha)
        await pilot.press("ctrl+e")
        await settle(app, pilot)
        modal = app.screen
        assert isinstance(modal, EdgeModal)
        await pilot.press(*"note")
        await settle(app, pilot)
        assert modal.query_one("#edge-matches", OptionList).option_count > 10
        await pilot.press("enter", "enter")  # pick the first match, then an empty explanation
        await settle(app, pilot)
        error = modal.query_one("#edge-error", Static)
        assert error.display and "why these two nodes are connected" in text_of(error)
        screen = modal.region
        for widget in (error, modal.query_one("#edge-link"), modal.query_one("#edge-cancel")):
            assert widget.region.height and screen.contains_region(widget.region), widget
            assert widget.region.bottom <= screen.bottom - 1  # above the footer


async def test_a_node_deleted_while_edited_closes_its_tab_once_the_edit_is_discarded(db_path, store, nodes,
                                                                                     focuses):
    alpha, beta, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_nodes(app, pilot, alpha, beta)
        await pilot.press("e")
        await settle(app, pilot)
        await pilot.press(*" draft")
        store.delete_node(beta)  # as another process would
        panel.reload(())
        await settle(app, pilot)
        editor = app.query_one(NodeEditor)
        assert "deleted elsewhere" in text_of(editor.query_one(".edit-error", Static))
        assert panel.open_ids == (alpha, beta)  # the unsaved text stays on screen
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(app, pilot)
        assert panel.open_ids == (alpha,)  # not a tab showing a node that is gone
        assert any("Beta" in n and "no longer there" in n for n in notices(app))


async def test_a_pending_note_that_meaning_search_already_reaches_says_so(db_path, store, embedder, focuses):
    """Coverage first: a long note's first chunk is embedded before the rest, and meaning search finds
    it from then on. Its status said 'pending: waiting to be indexed' while it was the top meaning hit
    (the issue-27 walkthrough)."""
    from core.index.indexer import Indexer, coverage, reached

    paragraph = "The lighthouse keeper trims the wick and winds the clockwork that turns the lens. "
    long_id = store.add_node("Lighthouse log", "\n\n".join(f"Night {k}. " + paragraph * 10 for k in range(6)))["id"]
    seen = []
    Indexer(store, embedder).run(progress=seen.append,
                                 should_stop=lambda: bool(seen) and seen[-1].covered == seen[-1].graph_notes)
    assert store.get_node(long_id)["chunk_status"] == "pending" and reached(store.db, long_id)
    fresh = store.add_node("Unread", "Not embedded at all.")["id"]
    assert not reached(store.db, fresh) and coverage(store.db) == (1, 2)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await open_nodes(app, pilot, long_id, fresh)
        assert "meaning search finds it; the rest waits to be indexed" in text_of(
            panel.view(long_id).query_one(".node-status", Static))
        assert text_of(panel.view(fresh).query_one(".node-status", Static)).endswith("pending: waiting to be indexed")
