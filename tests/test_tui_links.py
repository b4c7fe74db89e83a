"""The link review screen (tui/screens/link_review.py) driven with Pilot on a real database: integrate
with drafts from the fake Anthropic server (accept one, reject one, edit one, apply -> exactly those
edges), escape writes nothing, an unexplained link is refused, and mention suggestions announced
after quick capture and opened with L. Background indexing is off (the graph is indexed up front)."""

from __future__ import annotations

import json

import pytest
from textual.widgets import Input, OptionList

from chat_support import _no_proxies, anth, config, searcher  # noqa: F401
from core.assist.integrate import propose
from fakes import text
from tui.app import CairnApp
from tui.screens.link_review import NO_EXPLANATION, LinkReviewScreen
from tui.screens.quick_capture import QuickCapture
from tui.services import Services
from tui.widgets.chat_pane import ChatPane
from tui.widgets.focus_panel import FocusPanel
from tui.widgets.node_browser import NodeBrowser
from tui_support import settle


@pytest.fixture(autouse=True)
def quiet(monkeypatch):
    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    monkeypatch.setattr(ChatPane, "set_focus", lambda self, focus: None)


@pytest.fixture
def graph(store, indexer):
    notes = {
        "Transformers": "The transformer architecture uses self-attention to model sequences without recurrence.",
        "Attention Is All You Need": "The 2017 paper by Vaswani et al. introduced the transformer, built on attention.",
        "BERT": "BERT is a bidirectional transformer encoder pretrained with masked language modelling.",
        "Recurrent neural networks": "RNNs process sequences step by step with a hidden state.",
        "Sourdough bread": "Sourdough uses a wild yeast starter and long fermentation.",
    }
    ids = {title: store.add_node(title, body)["id"] for title, body in notes.items()}
    indexer.run()
    return ids



def edges_from(store, node_id: int) -> list[dict]:
    return sorted(store.edges(node_id, "out"), key=lambda e: e["to_node_id"])


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


async def open_review(app, pilot, node_id: int) -> LinkReviewScreen:
    app.query_one(FocusPanel).open_node(node_id)
    await settle(app, pilot)
    await pilot.press("i")
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, LinkReviewScreen) and screen.state == "review"
    return screen


def anthropic_app(db_path, anth, monkeypatch) -> CairnApp:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anth.base_url)
    return CairnApp(db_path, first_run_prompt=False, services=Services(db_path, config=config(provider="anthropic")))


async def test_accept_reject_edit_then_apply_writes_exactly_those(db_path, store, searcher, graph, anth, monkeypatch):
    node = graph["Transformers"]
    expected = propose(store, searcher, node)
    assert len(expected) >= 3
    anth.script.add(text(json.dumps([{"target_id": p.target_id, "explanation": f"Draft for {p.target_title}.",
                                      "confidence": 0.8} for p in expected])))
    app = anthropic_app(db_path, anth, monkeypatch)
    async with app.run_test(size=(140, 44)) as pilot:
        screen = await open_review(app, pilot, node)
        shown = [p.target_id for p in screen.proposals]
        assert set(shown) == {p.target_id for p in expected} and not screen.warnings
        first, second, third = screen.proposals[:3]
        assert first.explanation == f"Draft for {first.target_title}."
        assert store.edges(node) == []  # nothing written yet

        await pilot.press("a")  # accept the first; the cursor moves on
        await pilot.press("r")  # reject the second
        await pilot.press("e")  # edit the third
        await settle(app, pilot)
        field = screen.query_one("#links-edit", Input)
        assert app.focused is field and field.value == f"Draft for {third.target_title}."
        await pilot.press("ctrl+a", "ctrl+k", *"Mine: rarely related")  # "a", "r", "e" type here
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.decisions[:3] == ["accepted", "rejected", "accepted"] and screen.state == "review"
        assert store.edges(node) == []
        await pilot.press("ctrl+s")
        await settle(app, pilot)

        assert not isinstance(app.screen, LinkReviewScreen)
        written = {e["to_node_id"]: e for e in edges_from(store, node)}
        assert set(written) == {first.target_id, third.target_id}
        assert written[first.target_id]["explanation"] == f"Draft for {first.target_title}."
        assert written[third.target_id]["explanation"] == "Mine: rarely related"
        for edge, p in ((written[first.target_id], first), (written[third.target_id], third)):
            assert edge["source"] == "user"
            assert edge["context"]["created_via"] == "integrate" and edge["context"]["type"] == "related"
            assert edge["context"]["confidence"] == p.confidence
        assert any(n.startswith("Linked “Transformers” to 2 nodes") for n in notices(app))


async def test_escape_writes_nothing_and_an_unexplained_link_is_refused(db_path, store, graph):
    node = graph["Transformers"]
    before = store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]
    app = CairnApp(db_path, first_run_prompt=False)  # offline: no drafts
    async with app.run_test(size=(140, 44)) as pilot:
        screen = await open_review(app, pilot, node)
        assert any("not drafted without a model" in w for w in screen.warnings)
        assert all(p.explanation == "" for p in screen.proposals)
        await pilot.press("a")
        await settle(app, pilot)
        assert screen.decisions[0] is None and NO_EXPLANATION in notices(app)
        # an edit left empty is refused too, and escape drops it
        await pilot.press("e")
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.state == "editing" and screen.decisions[0] is None
        await pilot.press("escape")
        await settle(app, pilot)
        assert screen.state == "review" and isinstance(app.screen, LinkReviewScreen)
        # write one, accept it, then cancel the whole review
        await pilot.press("e", *"A reason")
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.decisions[0] == "accepted"
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, LinkReviewScreen)
    assert store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == before


async def test_quick_capture_announces_mentions_and_L_reviews_them(db_path, store, graph):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(app, pilot)
        app.query_one(NodeBrowser).focus_list()  # the keyboard in the Nodes list, not its search box
        await pilot.press("ctrl+n")
        await settle(app, pilot)
        assert isinstance(app.screen, QuickCapture)
        app.screen.query_one("#capture-title", Input).value = "Reading list"
        app.screen.query_one("#capture-body").text = "Next: read about BERT. Then sourdough bread for dinner."
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert not isinstance(app.screen, QuickCapture)
        assert any(n == "2 link suggestions for “Reading list” — press L" for n in notices(app))
        node = max(r[0] for r in store.db.execute("SELECT id FROM nodes"))

        await pilot.press("L")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, LinkReviewScreen) and screen.mode == "mention"
        assert not any("press L" in n for n in notices(app))  # the toast does not sit on the review
        assert [(p.target_title, p.explanation) for p in screen.proposals] == [
            ("Sourdough bread", "Then sourdough bread for dinner."), ("BERT", "Next: read about BERT.")]
        await pilot.press("r", "a", "enter")  # reject sourdough, accept BERT, apply
        await settle(app, pilot)
        assert not isinstance(app.screen, LinkReviewScreen)
        [edge] = store.edges(node, "out")
        assert edge["to_node_id"] == graph["BERT"] and edge["explanation"] == "Next: read about BERT."
        assert edge["context"]["created_via"] == "mention" and edge["context"]["type"] == "mentions"


async def test_the_bare_keys_stand_aside_in_text_fields(db_path, store, graph):
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(app, pilot)
        await pilot.press("/")
        await pilot.press("i", "L")
        await settle(app, pilot)
        assert not isinstance(app.screen, LinkReviewScreen)
        assert app.focused.value.endswith("iL")
        # L with nothing announced and nothing open says so instead of guessing
        await pilot.press("escape")
        app.query_one(FocusPanel).focus_default()
        await settle(app, pilot)
        await pilot.press("L")
        await settle(app, pilot)
        assert not isinstance(app.screen, LinkReviewScreen)
        assert any("No node to suggest links for" in n for n in notices(app))
        # the palette names both workflows for an open node
        app.query_one(FocusPanel).open_node(graph["BERT"])
        await settle(app, pilot)
        from tui.palette.commands import pane_commands

        names = [c.title for c in pane_commands(app)]
        assert "Focus: integrate" in names and "Focus: link suggestions" in names


async def test_saving_in_the_editor_announces_new_mentions_once(db_path, store, graph):
    from textual.widgets import TextArea

    from tui.widgets.node_view import NodeEditor

    node = graph["Sourdough bread"]
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(140, 44)) as pilot:
        app.query_one(FocusPanel).open_node(node)
        await settle(app, pilot)
        for round_ in range(2):
            await pilot.press("e")
            await settle(app, pilot)
            editor = app.query_one(NodeEditor)
            editor.query_one("#edit-source", TextArea).text = "Baked while reading about BERT" + "." * (round_ + 1)
            await pilot.press("ctrl+s")
            await settle(app, pilot)
            assert not app.query(NodeEditor)
        announced = [n for n in notices(app) if "link suggestion" in n]
        assert announced == ["1 link suggestion for “Sourdough bread” — press L"]  # the second save is no news
        app.query_one(FocusPanel).focus_default()
        await pilot.press("L")
        await settle(app, pilot)
        assert isinstance(app.screen, LinkReviewScreen)
        assert [p.target_title for p in app.screen.proposals] == ["BERT"]


async def test_escape_while_the_model_drafts_closes_and_writes_nothing(db_path, store, graph, anth, monkeypatch):
    from fakes import slow

    anth.script.add(slow(3), text("[]"))
    app = anthropic_app(db_path, anth, monkeypatch)
    async with app.run_test(size=(140, 44)) as pilot:
        app.query_one(FocusPanel).open_node(graph["Transformers"])
        await settle(app, pilot)
        await pilot.press("i")
        for _ in range(200):  # until the request is on its way
            await pilot.pause(0.05)
            if anth.requests:
                break
        screen = app.screen
        assert isinstance(screen, LinkReviewScreen) and screen.state == "finding"
        assert "finding…" in str(screen.query_one("#links-status").render())
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, LinkReviewScreen)
    assert store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 0


async def test_with_nothing_to_propose_offline_integrate_says_only_that(db_path, store, graph):
    lone = store.add_node("Qzxv", "Plorf wumbeq.")["id"]  # no word or meaning shared with the graph
    app = CairnApp(db_path, first_run_prompt=False)  # offline
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_review(app, pilot, lone)
        assert screen.proposals == []
        assert "No related nodes found" in str(screen.query_one("#links-status").render())
        assert screen.warnings == []  # not "press e to write one" with nothing to edit
