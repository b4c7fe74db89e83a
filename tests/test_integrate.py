"""Integrate (core.assist.integrate): proposals from search, graph and mentions on a small real graph (the
real embedder), nothing written until accepted, model drafts through the fake Anthropic server, bad
replies kept out with a warning, and privacy.never_send."""

from __future__ import annotations

import json

import pytest

from chat_support import _no_proxies, anth, anthropic_provider, raw_bodies, searcher  # noqa: F401
from core.errors import InvalidInput
from core.assist.integrate import (
    Proposal,
    apply,
    confidence,
    mention_proposals,
    parse_drafts,
    DraftError,
    propose,
)
from core.providers.offline import OfflineProvider
from fakes import http_error, text


@pytest.fixture
def graph(store, indexer):
    notes = {
        "Transformers": "The transformer architecture uses self-attention to model sequences without recurrence. "
                        "It powers modern language models.",
        "Attention Is All You Need": "The 2017 paper by Vaswani et al. introduced the transformer, built entirely "
                                     "on attention mechanisms for machine translation.",
        "BERT": "BERT is a bidirectional transformer encoder pretrained with masked language modelling.",
        "Sourdough bread": "Sourdough uses a wild yeast starter; long fermentation gives the bread its sour taste "
                           "and open crumb.",
        "Recurrent neural networks": "RNNs process sequences step by step with a hidden state; LSTMs fix "
                                     "vanishing gradients.",
        "Ashish Vaswani": "A researcher at Google Brain, first author of the transformer paper.",
        "Baking hydration": "Dough hydration is the ratio of water to flour; high hydration gives an open crumb.",
        "Tokenization": "Subword tokenization like byte-pair encoding splits words into pieces for language models.",
    }
    ids = {title: store.add_node(title, body)["id"] for title, body in notes.items()}
    ids["memory"] = store.add_node("Transformer chat memory", "The user asked about transformers and attention "
                                   "in language models.", type="memory")["id"]
    store.add_edge(ids["Attention Is All You Need"], ids["Ashish Vaswani"], "Vaswani is its first author")
    store.add_edge(ids["BERT"], ids["Attention Is All You Need"], "BERT builds on the transformer paper")
    indexer.run()
    return ids


def edge_count(store) -> int:
    return store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]


def titles(proposals) -> list[str]:
    return [p.target_title for p in proposals]


def test_search_proposes_related_nodes_in_order_and_writes_nothing(store, searcher, graph):
    before = edge_count(store)
    out = propose(store, searcher, graph["Transformers"])
    assert titles(out)[:2] == ["Attention Is All You Need", "BERT"]
    assert "Sourdough bread" not in titles(out) and "Baking hydration" not in titles(out)
    assert "Transformer chat memory" not in titles(out) and "Transformers" not in titles(out)
    assert all(p.explanation == "" for p in out) and out.warning is None and not out.drafted
    assert [p.confidence for p in out] == sorted((p.confidence for p in out), reverse=True)
    assert all(0 < p.confidence <= 1 for p in out)
    top = out[0]
    assert top.reasons[0].startswith("hybrid match ") and any(r.startswith("similar text (cosine ") for r in top.reasons)
    assert edge_count(store) == before


def test_graph_neighbours_of_neighbours_count_and_linked_nodes_are_left_out(store, searcher, graph):
    store.add_edge(graph["Transformers"], graph["Attention Is All You Need"], "The transformer comes from this paper")
    out = propose(store, searcher, graph["Transformers"])
    assert "Attention Is All You Need" not in titles(out)  # already linked
    by_title = {p.target_title: p for p in out}
    # BERT and Vaswani share the paper as a neighbour with the node
    assert "1 shared neighbour" in by_title["BERT"].reasons and "1 shared neighbour" in by_title["Ashish Vaswani"].reasons
    assert titles(out)[0] == "BERT"
    # incoming edges count as links too
    store.add_edge(graph["BERT"], graph["Transformers"], "BERT is a transformer")
    assert "BERT" not in titles(propose(store, searcher, graph["Transformers"]))


def test_a_mention_is_a_reason_and_lifts_the_confidence(store, searcher, graph):
    plain = {p.target_title: p for p in propose(store, searcher, graph["Tokenization"])}
    store.update_node(graph["Tokenization"], source="Subword tokenization like byte-pair encoding splits words into "
                      "pieces for language models; BERT uses WordPiece.")
    out = {p.target_title: p for p in propose(store, searcher, graph["Tokenization"])}
    assert "mentions its title" in out["BERT"].reasons
    assert out["BERT"].confidence > plain.get("BERT", Proposal(0, "", confidence=0)).confidence


def test_confidence_is_the_documented_noisy_or():
    assert confidence(0.25) == 0 and confidence(0.75) == 1 and confidence(0.5) == 0.5 and confidence(None) == 0
    assert confidence(None, shared=1) == 0.25 and confidence(None, shared=2) == 0.375
    assert confidence(None, shared=50) <= 0.5  # structure alone is never confident
    assert confidence(0.5, shared=1) == round(1 - 0.5 * 0.75, 3)
    assert confidence(None, mention=1.0) == 0.6


def test_apply_writes_exactly_the_accepted_with_context_and_refuses_unexplained(store, searcher, graph):
    out = propose(store, searcher, graph["Transformers"])
    before = edge_count(store)
    first, second = out[0], out[1]
    with pytest.raises(InvalidInput, match="no explanation; edges are explained"):
        apply(store, graph["Transformers"], [Proposal(first.target_id, first.target_title, "A reason", 0.5),
                                             second])
    assert edge_count(store) == before  # all or nothing
    first.explanation = "The transformer was introduced in this paper."
    edges = apply(store, graph["Transformers"], [first])
    assert edge_count(store) == before + 1
    edge = edges[0]
    assert (edge["from_node_id"], edge["to_node_id"]) == (graph["Transformers"], first.target_id)
    assert edge["source"] == "user" and edge["explanation"] == first.explanation
    assert edge["context"]["type"] == "related" and edge["context"]["created_via"] == "integrate"
    assert edge["context"]["confidence"] == first.confidence
    # a second apply of the same target fails whole, and says why
    second.explanation = "BERT is a transformer encoder."
    with pytest.raises(InvalidInput, match="already linked"):
        apply(store, graph["Transformers"], [second, first])
    assert edge_count(store) == before + 1


def test_model_drafts_explanations_and_confidences(store, searcher, graph, anth):
    offline = propose(store, searcher, graph["Transformers"])
    ids = [p.target_id for p in offline]
    reply = [{"target_id": i, "explanation": f"Transformers relates to node {i}.", "confidence": 0.9 if n == 1 else 0.2}
             for n, i in enumerate(ids)]
    anth.script.add(text("```json\n" + json.dumps(reply) + "\n```"))
    before = edge_count(store)
    out = propose(store, searcher, graph["Transformers"], provider=anthropic_provider(anth))
    assert out.warning is None and out.drafted
    assert {p.target_id: p.explanation for p in out} == {i: f"Transformers relates to node {i}." for i in ids}
    search_conf = {p.target_id: p.confidence for p in offline}
    for p in out:
        model = 0.9 if p.target_id == ids[1] else 0.2
        assert p.confidence == round((search_conf[p.target_id] + model) / 2, 3) and f"model {model:.2f}" in p.reasons
    assert out[0].target_id == ids[1]  # the model's confidence reorders
    body = anth.last.body
    sent = json.loads(body["messages"][-1]["content"][0]["text"] if isinstance(body["messages"][-1]["content"], list)
                      else body["messages"][-1]["content"])
    assert sent["node"]["title"] == "Transformers" and [c["id"] for c in sent["candidates"]] == ids
    assert "JSON array" in json.dumps(body["system"])
    log = store.db.execute("SELECT provider, node_ids FROM sent_log").fetchall()
    assert [(r[0], json.loads(r[1])) for r in log] == [("anthropic", [graph["Transformers"], *ids])]
    assert edge_count(store) == before


@pytest.mark.parametrize("reply, reason", [
    ("Sure! Here are some links.", "not JSON"),
    ('{"target_id": 1}', "not a list"),
    ('[{"target_id": 999999, "explanation": "x", "confidence": 0.5}]', "not a candidate"),
    ('[{"target_id": ID, "explanation": "", "confidence": 0.5}]', "empty explanation"),
    ('[{"target_id": ID, "explanation": "x", "confidence": 7}]', "from 0 to 1"),
    ('[{"target_id": ID, "explanation": "x"}]', "has no confidence"),
])
def test_a_bad_model_reply_keeps_the_search_proposals_and_says_why(store, searcher, graph, anth, reply, reason):
    offline = propose(store, searcher, graph["Transformers"])
    anth.script.add(text(reply.replace("ID", str(offline[0].target_id))))
    out = propose(store, searcher, graph["Transformers"], provider=anthropic_provider(anth))
    assert [p.as_dict() for p in out] == [p.as_dict() for p in offline]
    assert not out.drafted and reason in out.warning and "could not be used" in out.warning


def test_a_reply_that_skips_candidates_says_so(store, searcher, graph, anth):
    offline = propose(store, searcher, graph["Transformers"])
    first = offline[0]
    anth.script.add(text(json.dumps([{"target_id": first.target_id, "explanation": "Only this.", "confidence": 0.7}])))
    out = propose(store, searcher, graph["Transformers"], provider=anthropic_provider(anth))
    assert {p.target_id: p.explanation for p in out}[first.target_id] == "Only this."
    assert all(p.explanation == "" for p in out if p.target_id != first.target_id)
    assert f"drafted explanations for 1 of the {len(offline)} candidates" in out.warning


def test_a_failed_request_keeps_the_search_proposals_with_a_warning(store, searcher, graph, anth):
    offline = propose(store, searcher, graph["Transformers"])
    anth.script.add(http_error(401))
    out = propose(store, searcher, graph["Transformers"], provider=anthropic_provider(anth))
    assert [p.as_dict() for p in out] == [p.as_dict() for p in offline]
    assert out.warning.startswith("The model could not draft explanations (") and not out.drafted


def test_the_offline_provider_makes_no_request_and_no_drafts(store, searcher, graph, anth):
    out = propose(store, searcher, graph["Transformers"], provider=OfflineProvider())
    assert out and out.warning is None and not out.drafted and anth.requests == []


def test_never_send_nodes_do_not_reach_a_remote_model(store, searcher, graph, anth):
    store.update_node(graph["BERT"], dimensions=["private"])
    offline = propose(store, searcher, graph["Transformers"])
    assert "BERT" in titles(offline)
    visible = [p.target_id for p in offline if p.target_title != "BERT"]
    anth.script.add(text(json.dumps([{"target_id": i, "explanation": "Related.", "confidence": 0.5} for i in visible])))
    out = propose(store, searcher, graph["Transformers"], provider=anthropic_provider(anth, remote=True),
                  never_send=["Private"])
    assert "bidirectional" not in raw_bodies(anth) and f'"id": {graph["BERT"]}' not in raw_bodies(anth)
    assert {p.target_title: p.explanation for p in out}["BERT"] == ""
    assert all(p.explanation == "Related." for p in out if p.target_title != "BERT")
    assert "1 candidate with a privacy.never_send dimension was not sent" in out.warning
    logged = json.loads(store.db.execute("SELECT node_ids FROM sent_log").fetchone()[0])
    assert graph["BERT"] not in logged
    # the node being integrated is private: no request at all
    requests = len(anth.requests)
    store.update_node(graph["Transformers"], dimensions=["private"])
    out = propose(store, searcher, graph["Transformers"], provider=anthropic_provider(anth, remote=True),
                  never_send=["private"])
    assert len(anth.requests) == requests and "never_send" in out.warning and not out.drafted
    # a local (loopback) model is not remote: never_send does not hold it back
    anth.script.add(text(json.dumps([{"target_id": p.target_id, "explanation": "Local.", "confidence": 0.5}
                                     for p in out])))
    out = propose(store, searcher, graph["Transformers"], provider=anthropic_provider(anth), never_send=["private"])
    assert out.drafted and out.warning is None


def test_parse_drafts_is_strict():
    assert parse_drafts('[{"target_id": 3, "explanation": " A  b ", "confidence": 1}]', [3]) == {3: ("A b", 1.0)}
    for bad, match in [("", "empty"), ("[1]", "not an object"), ('[{"target_id": true, "explanation": "x", '
                                                                  '"confidence": 0}]', "not a node id"),
                       ('[{"target_id": 3, "explanation": "x", "confidence": 0.1}, {"target_id": 3, "explanation":'
                        ' "y", "confidence": 0.1}]', "appears twice"),
                       ('[{"target_id": 3, "explanation": "' + "x" * 501 + '", "confidence": 0.1}]', "longer than")]:
        with pytest.raises(DraftError, match=match):
            parse_drafts(bad, [3])


def test_mention_proposals_carry_the_sentence_and_apply_as_mentions(store, graph):
    note = store.add_node("Reading", "I finally read Attention is all you need. Then some sourdough bread.")
    out = mention_proposals(store, note["id"])
    assert [(p.target_title, p.explanation) for p in out] == [
        ("Attention Is All You Need", "I finally read Attention is all you need."),
        ("Sourdough bread", "Then some sourdough bread.")]
    edges = apply(store, note["id"], out[:1])
    assert edges[0]["context"]["created_via"] == "mention" and edges[0]["context"]["type"] == "mentions"
    assert [p.target_title for p in mention_proposals(store, note["id"])] == ["Sourdough bread"]
