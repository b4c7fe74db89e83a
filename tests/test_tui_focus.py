"""The Focus panel: tabs of open nodes, what the chat is told about them, editing, linking, reloading.

Pilot tests on a real database. Background indexing is switched off (it would race the "pending"
status these tests check); the database watcher stays on.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList, Static, TextArea

from core.context import Focus
from core.fuzzy import rank_titles
from tui.app import CairnApp
from tui.messages import OpenNode
from tui.screens.confirm import ConfirmScreen
from tui.screens.edge_modal import EdgeModal
from tui.widgets.chat_pane import ChatPane
from tui.widgets.focus_panel import FocusPanel
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


async def settle(app, pilot) -> None:
    """Let messages and workers finish (the database watcher runs for ever, so it is left out)."""
    for _ in range(100):
        await pilot.pause()
        busy = [w for w in app.workers if w.group != "watch" and not w.is_finished]
        if not busy:
            await pilot.pause()
            return
        await app.workers.wait_for_complete(busy)
    raise AssertionError("workers did not settle")


async def open_nodes(app, pilot, *node_ids: int) -> FocusPanel:
    panel = app.query_one(FocusPanel)
    for node_id in node_ids:
        panel.open_node(node_id)
        await settle(app, pilot)
    return panel


def view_of(app, node_id: int) -> NodeView:
    return app.query_one(FocusPanel).view(node_id)


def text_of(widget: Static) -> str:
    return str(widget.render())


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


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
        assert view_of(app, alpha) in app.focused.ancestors_with_self  # the keyboard follows the tab

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
        assert "Beta" in str(edges.get_option_at_index(0).prompt)
        assert "Alpha cites Beta" in str(edges.get_option_at_index(0).prompt)

        edges.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        panel = app.query_one(FocusPanel)
        assert panel.open_ids == (alpha, beta) and panel.primary == beta
        incoming = view_of(app, beta).query_one(".node-edges", OptionList)
        assert "Alpha" in str(incoming.get_option_at_index(0).prompt)  # edges in are listed too
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


async def test_edit_saves_every_field_and_marks_pending(db_path, store, nodes, focuses):
    alpha, _, _ = nodes
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await open_nodes(app, pilot, alpha)
        await pilot.press("e")
        await settle(app, pilot)
        editor = app.query_one(NodeEditor)
        assert app.focused is editor.query_one("#edit-title", Input)

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
        assert any("Gamma ray bursts" in str(edges.get_option_at_index(i).prompt) for i in range(2))

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
        assert any("Beta" in n and "deleted elsewhere" in n for n in notices(app))
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
