"""`cairn integrate ID` and `cairn links ID` (tui/cli/workflows.py), run in-process through tui.cli.main
on a real database: numbered proposals, the offline note said once, --accept with drafts or
--explanation, the kept list, --json, and each bad input refused with nothing written."""

from __future__ import annotations

import json

import pytest

from chat_support import _no_proxies, anth  # noqa: F401
from fakes import text
from tui.cli.main import main
from tui.cli.workflows import OFFLINE_NOTE


@pytest.fixture
def graph(store, indexer):
    notes = {
        "Transformers": "The transformer architecture uses self-attention; see BERT for an encoder.",
        "Attention Is All You Need": "The 2017 paper by Vaswani et al. introduced the transformer, built on attention.",
        "BERT": "BERT is a bidirectional transformer encoder pretrained with masked language modelling.",
        "Sourdough bread": "Sourdough uses a wild yeast starter and long fermentation.",
    }
    ids = {title: store.add_node(title, body)["id"] for title, body in notes.items()}
    indexer.run()
    return ids


def cli(capsys, db_path, *argv):
    rc = main([*argv, "--db", str(db_path)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def edges(store) -> list[dict]:
    rows = store.db.execute("SELECT from_node_id, to_node_id, explanation, context FROM edges ORDER BY id").fetchall()
    return [{"from": r[0], "to": r[1], "explanation": r[2], "context": json.loads(r[3])} for r in rows]


def test_integrate_lists_numbered_proposals_and_says_once_it_drafts_nothing_offline(capsys, db_path, store, graph):
    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]))
    assert rc == 0, err
    assert out.count("Explanations are not drafted without a model") == 1
    assert "  1. [" in out and "Attention Is All You Need" in out and "Sourdough" not in out
    assert "(no explanation drafted)" in out and "--accept 1,2 [--explanation 1=" in out
    assert edges(store) == []

    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--json")
    data = json.loads(out)
    assert data["node_id"] == graph["Transformers"] and data["warnings"] == [OFFLINE_NOTE]
    assert [p["n"] for p in data["proposals"]] == list(range(1, len(data["proposals"]) + 1))
    first = data["proposals"][0]
    assert set(first) >= {"target_id", "target_title", "explanation", "confidence", "reasons"}
    assert edges(store) == []


def test_accept_needs_an_explanation_then_writes_exactly_the_accepted(capsys, db_path, store, graph):
    listed = json.loads(cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--json")[1])["proposals"]
    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--accept", "1", "--yes")
    assert rc == 1 and "has no explanation; edges are explained" in err and edges(store) == []

    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--accept", "2,1", "--yes",
                       "--explanation", "1=The transformer comes from this paper.", "--explanation", "2=An encoder.")
    assert rc == 0, err
    assert "Linked “Transformers” to 2 nodes" in out
    written = edges(store)
    assert [(e["to"], e["explanation"]) for e in written] == [
        (listed[1]["target_id"], "An encoder."), (listed[0]["target_id"], "The transformer comes from this paper.")]
    assert all(e["from"] == graph["Transformers"] and e["context"]["created_via"] == "integrate" for e in written)
    assert written[0]["context"]["confidence"] == listed[1]["confidence"]
    assert store.meta(f"workflow_pending:integrate:{graph['Transformers']}") is None  # the kept list is used up


def test_accept_picks_from_the_list_that_was_shown(capsys, db_path, store, graph, indexer):
    shown = json.loads(cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--json")[1])["proposals"]
    # the graph changes after the list was shown: a new, very similar note would now rank first
    store.add_node("Transformer architecture", "The transformer architecture uses self-attention.")
    indexer.run()
    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--accept", "1", "--yes",
                       "--explanation", "1=Picked from the list.")
    assert rc == 0, err
    assert "From the list shown at" in out
    assert [e["to"] for e in edges(store)] == [shown[0]["target_id"]]


@pytest.mark.parametrize("argv, message", [
    (["--accept", "x"], "--accept takes proposal numbers such as 1,3; 'x' is not one."),
    (["--accept", "0"], "'0' is not one"),
    (["--accept", "99", "--explanation", "99=x"], "There is no proposal 99"),
    (["--accept", "1", "--explanation", "1"], "--explanation takes N=\"text\""),
    (["--accept", "1", "--explanation", "1=  "], "is empty; edges are explained"),
    (["--accept", "1", "--explanation", "1=ok", "--explanation", "2=no"], "for a link you did not --accept"),
    (["--explanation", "1=x"], "--explanation goes with --accept"),
])
def test_bad_options_are_refused_and_nothing_is_written(capsys, db_path, store, graph, argv, message):
    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), *argv, "--yes")
    assert rc == 1 and message in err, err
    assert edges(store) == []


def test_without_yes_and_without_a_terminal_nothing_is_written(capsys, db_path, store, graph, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--accept", "1",
                       "--explanation", "1=Because.")
    assert rc == 1 and "Pass --yes" in err and edges(store) == []


def test_unknown_node_is_a_clear_error(capsys, db_path, store, graph):
    rc, out, err = cli(capsys, db_path, "integrate", "424242")
    assert rc == 1 and "There is no node 424242" in err
    rc, out, err = cli(capsys, db_path, "links", "424242")
    assert rc == 1 and "There is no node 424242" in err


def test_links_lists_mentions_with_their_sentence_and_accepts_the_draft(capsys, db_path, store, graph):
    rc, out, err = cli(capsys, db_path, "links", str(graph["Transformers"]))
    assert rc == 0, err
    assert "  1. [" in out and "BERT" in out and "mentions its title" in out
    assert "“The transformer architecture uses self-attention; see BERT for an encoder.”" in out
    assert "not drafted" not in out
    rc, out, err = cli(capsys, db_path, "links", str(graph["Transformers"]), "--accept", "1", "--yes")
    assert rc == 0, err
    [edge] = edges(store)
    assert edge["to"] == graph["BERT"] and edge["context"]["created_via"] == "mention"
    assert edge["explanation"] == "The transformer architecture uses self-attention; see BERT for an encoder."
    rc, out, err = cli(capsys, db_path, "links", str(graph["Transformers"]), "--json")
    assert json.loads(out)["proposals"] == []  # linked now


def test_integrate_with_a_model_shows_and_accepts_its_drafts(capsys, db_path, store, graph, anth, monkeypatch):
    listed = json.loads(cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--json")[1])["proposals"]
    store.db.execute("DELETE FROM meta WHERE key LIKE 'workflow_pending:%'")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anth.base_url)
    anth.script.add(text(json.dumps([{"target_id": p["target_id"], "explanation": f"Drafted for {p['target_title']}.",
                                      "confidence": 0.9} for p in listed])))
    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--provider", "anthropic")
    assert rc == 0, err
    assert "not drafted" not in out and f"“Drafted for {listed[0]['target_title']}.”" in out
    assert len(anth.requests) == 1
    rc, out, err = cli(capsys, db_path, "integrate", str(graph["Transformers"]), "--accept", "1", "--yes")
    assert rc == 0, err
    assert len(anth.requests) == 1  # the kept list: no second model request
    [edge] = edges(store)
    assert edge["explanation"].startswith("Drafted for ")
