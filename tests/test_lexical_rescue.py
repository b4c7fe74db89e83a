"""The chat finds the note that plainly answers the question (core.search.lexical_rescue) and, on a small
graph that is mostly unindexed, falls back to keywords (core.search.retrieval_fallback).

Walkthrough: with the Getting started guide loaded and indexed, "What does never_send do?" got no
passage (the note "Privacy: never_send" is BM25's first hit but its cosine, 0.345, is under the 0.35
floor); right after loading the guide (14 of 14 notes pending) the chat found nothing at all."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from chat_support import searcher  # noqa: F401  (fixture)
from core.agent import profiles
from core.search import lexical_rescue
from core.search import retrieval_fallback
from core.graph import getting_started
from core.chat.context import MIN_COSINE, ContextEngine, cut

QUESTION = "What does never_send do?"
VAGUE = ["tell me something", "how does it work?", "what is this?", "how do I cook pasta?"]


def engine(store, searcher) -> ContextEngine:
    return ContextEngine(store, searcher, profiles.get("orchestrator"))


@pytest.fixture
def guide(store):
    ids = getting_started.load(store)
    return {store.get_node(i)["title"]: i for i in ids}


@pytest.fixture
def indexed_guide(guide, indexer):
    indexer.run()
    return guide


# -- the rescue, on the real guide with the real embedder ---------------------------------------------
def test_the_note_named_by_the_question_is_retrieved(store, searcher, indexed_guide):
    eng = engine(store, searcher)
    passages = eng.retrieve(QUESTION)
    assert eng.retrieval_note is None
    assert passages[0].node_id == indexed_guide["Privacy: never_send"]
    assert passages[0].via == "search"
    assert "never_send" in passages[0].text
    suffix = eng.suffix(QUESTION)
    assert f'[NODE:{indexed_guide["Privacy: never_send"]}:"Privacy: never_send"]' in suffix.retrieved


def test_the_floor_alone_drops_it(store, searcher, indexed_guide):
    """What the rescue fixes: the note is BM25's best hit, but under the cosine floor."""
    scored = engine(store, searcher).scored_hits(QUESTION)
    by_fts = max(scored, key=lambda p: p[1]["match"]["fts"] or 0.0)
    assert by_fts[1]["title"] == "Privacy: never_send"
    assert lexical_rescue.MIN_COSINE <= by_fts[0] < MIN_COSINE
    assert "Privacy: never_send" not in [h["title"] for _, h in cut(scored)]
    assert "Privacy: never_send" in [h["title"] for _, h in cut(scored, message=QUESTION)]


@pytest.mark.parametrize("question", VAGUE)
def test_a_vague_question_gets_no_weak_passage(store, searcher, indexed_guide, question):
    eng = engine(store, searcher)
    passages = eng.retrieve(question)
    assert all(p.cosine >= MIN_COSINE for p in passages), [(p.title, p.cosine) for p in passages]
    assert [p.node_id for p in passages] == [h["id"] for _, h in cut(eng.scored_hits(question))]


# -- the rule, on made-up hits ------------------------------------------------------------------------
def hit(title: str, score: float, fts: float | None) -> dict:
    return {"id": hash(title) % 1000, "title": title, "score": score, "match": {"fts": fts, "vector": None}}


def test_title_term_matches_whole_content_words_in_order():
    assert lexical_rescue.title_term(QUESTION, "Privacy: never_send") == ("never", "send")
    assert lexical_rescue.title_term("What is Focus?", "Focus tabs") == ("focus",)
    assert lexical_rescue.title_term('the "kiln schedule" please', "Kiln schedule for May") == ("kiln", "schedule")
    assert lexical_rescue.title_term('the "kiln schedule"', "Schedule the kiln") is None  # not in order
    assert lexical_rescue.title_term("how does it work?", "What you are working on") is None  # whole words only
    assert lexical_rescue.title_term("what is this?", "What this is") is None  # stop-words are not evidence
    assert lexical_rescue.title_term("what's it?", "What s it") is None  # nor the pieces of a contraction
    assert lexical_rescue.title_term("recipes -pasta", "Pasta") is None  # an excluded term
    assert lexical_rescue.title_term("", "Anything") is None


def test_only_the_best_keyword_hit_and_only_over_the_lower_floor():
    a, b = hit("Notes on grog", 1.0, 1.0), hit("Grog ratio", 0.9, 3.0)
    scored = [(0.5, a), (0.30, b)]
    assert lexical_rescue.rescued("grog ratio", scored, 0.8) == 1
    assert cut(scored, message="grog ratio") == scored
    assert cut(scored) == [(0.5, a)]
    assert lexical_rescue.rescued("grog ratio", [(0.5, a), (0.24, b)], 0.8) is None  # under MIN_COSINE
    assert lexical_rescue.rescued("grog ratio", scored, 0.95) is None  # under the relative bar
    assert lexical_rescue.rescued("grog ratio", [(0.5, a), (0.3, hit("Stoneware", 0.9, 3.0))], 0.8) is None  # no
    # term of the question in the best keyword hit's title (its text matched)
    # a title match that is not BM25's best is not rescued, and never more than one passage
    c = hit("Grog again", 0.85, 2.0)
    assert lexical_rescue.rescued("grog", [(0.3, c), (0.3, hit("Other", 0.9, 2.5))], 0.8) is None
    assert len(cut([(0.3, c), (0.3, b)], message="grog")) == 1
    assert lexical_rescue.rescued("grog", [(0.3, hit("Grog", 1.0, None))], 0.8) is None  # no keyword match


# -- the fallback on a small, mostly unindexed graph -------------------------------------------------
def test_the_freshly_loaded_guide_falls_back_to_keywords(store, searcher, guide):
    assert retrieval_fallback.backlog(store) == (14, 14)
    eng = engine(store, searcher)
    passages = eng.retrieve(QUESTION)
    assert eng.retrieval_note == ("Retrieval: keyword search only — 14 of 14 nodes are waiting to be indexed "
                                  "(run `cairn index`, or leave the app open); passages are keyword matches "
                                  "plus the most recent notes.")
    assert passages[0].node_id == guide["Privacy: never_send"] and passages[0].via == "keyword"


def test_most_pending_falls_back_and_half_does_not(store, searcher, indexer):
    a = store.add_node("Kiln firing", "Fire the kiln slowly to 1,240 degrees. " * 3)
    eng = engine(store, searcher)
    eng.retrieve("kiln")
    assert eng.retrieval_note.startswith("Retrieval: keyword search only — 1 of 1 nodes")
    indexer.run()
    store.add_node("Clay recipe", "Mix the stoneware clay with grog.")
    passages = eng.retrieve("kiln")
    assert eng.retrieval_note is None  # 1 of 2 pending: not most
    assert [p.node_id for p in passages] == [a["id"]]
    store.add_node("Glaze", "Glaze recipes for the kiln.")
    eng.retrieve("kiln")
    assert eng.retrieval_note.startswith("Retrieval: keyword search only — 2 of 3 nodes")
    assert retrieval_fallback.backlog_is_large(8, 14) and not retrieval_fallback.backlog_is_large(7, 14)
    assert not retrieval_fallback.backlog_is_large(0, 0)


def test_cairn_context_says_so_for_a_small_unindexed_graph(cairn_cmd, cli_env):
    from core.graph.store import Store

    home = Path(cli_env["CAIRN_HOME"])
    home.mkdir(parents=True)
    with Store(home / "cairn.db") as s:
        getting_started.load(s)
    r = subprocess.run([*cairn_cmd, "context", QUESTION, "--json"], env=cli_env, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["retrieval_note"].startswith("Retrieval: keyword search only — 14 of 14 nodes")


def test_a_common_title_word_is_not_evidence(store):
    """With the store, the title's term must be rare: in at most RARE_DOCS notes (or RARE_SHARE)."""
    for i in range(lexical_rescue.RARE_DOCS):
        store.add_node(f"Long walk {i}", "Notes from a long walk.")
    raptor = store.add_node("Raptor long binding", "Raptor binds mTOR.")
    top = hit("Raptor long binding", 0.9, 3.0) | {"id": raptor["id"]}
    scored = [(0.5, hit("Other", 1.0, 1.0)), (0.3, top)]
    assert lexical_rescue.is_rare(store, ("raptor",)) and not lexical_rescue.is_rare(store, ("long",))
    assert lexical_rescue.rescued("how long is it?", scored, 0.8, store) is None  # 9 notes say "long"
    assert lexical_rescue.rescued("how long is it?", scored, 0.8) == 1  # without the store: any term
    assert lexical_rescue.rescued("what does raptor bind?", scored, 0.8, store) == 1
