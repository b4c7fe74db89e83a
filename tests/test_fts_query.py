"""User text → FTS5 MATCH expressions: never raw, never raising, and still finding what was meant."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.search import fts_query
from core.search.searcher import Searcher
from core.graph.store import Store

NOTES = [
    ("Graphs and networks", "Graphs are made of vertices joined by edges. Network science studies them."),
    ("Chemistry of graphite", "Graphite is a form of carbon; chemistry explains its layers."),
    ("C++ templates", "Template metaprogramming in C++ is powerful but slow to compile."),
    ("The letter g", "A note about the single letter g and nothing else."),
    ("Café culture", "Naïve visitors to a Parisian café order a crème brûlée. 東京 has cafés too."),
    ("Links", "See https://example.org/path?q=1&b=2 and mailto:a@b.example for more."),
    ("Operators", "Words like AND, OR, NOT and NEAR( appear here in plain text: a:b, it's, -x."),
    ("Cooking pasta", "Boil water, add salt, cook the pasta until al dente."),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder):
    from core.index.indexer import Indexer

    store = Store(tmp_path_factory.mktemp("fts") / "cairn.db")
    ids = {}
    for title, source in NOTES:
        ids[title] = store.add_node(title, source)["id"]
    Indexer(store, embedder).run()
    yield store, ids
    store.close()


def _match(store: Store, expr: str) -> set[int]:
    return {r[0] for r in store.db.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?", (expr,))}


def _fts(store: Store, text: str) -> set[int]:
    return {h["id"] for h in Searcher(store).search(text, mode="fts", limit=50)}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('"graph theory"', '"graph theory"'),
        ('"unbalanced', '"unbalanced"'),
        ('say "unbalanced phrase', '("say" OR "unbalanced phrase")'),
        ("c++", '"c"'),
        ("it's", '"it s"'),
        ("-x", None),
        ("a:b", '"a b"'),
        ("*", None),
        ("", None),
        ("   \t\n", None),
        ("NEAR(", '"NEAR"'),
        ("AND OR NOT", '("AND" OR "OR" OR "NOT")'),
        ("graph*", '"graph"*'),
        ("g*", '"g"'),
        ("the graph", '"graph"'),
        ("graph -chemistry", '"graph" NOT "chemistry"'),
        ('""', None),
        ("café 東京", '("café" OR "東京")'),
    ],
)
def test_build_gives_safe_sensible_expressions(text, expected):
    assert fts_query.build(text) == expected


@pytest.mark.parametrize(
    "text",
    ['"graph theory"', '"unbalanced', 'a "b" "c', "c++", "it's", "-x", "a:b", "https://example.org/path?q=1&b=2",
     "*", "", "NEAR(", "NEAR(a b)", "AND OR NOT", "naïve café 東京 Ελληνικά", "(", ")", "^", "{a b}:c",
     "col:value", "a + b", "x*y*", '"', '""""', "-", "--", "- -x", "\x00", "\u202e\u200b", "🙂 emoji*"],
)
def test_awkward_inputs_never_raise(corpus, text):
    store, _ = corpus
    expr = fts_query.build(text)
    if expr is not None:
        _match(store, expr)  # must be a valid FTS5 expression
    Searcher(store).search(text, mode="fts")


def test_operators_in_input_are_plain_text(corpus):
    store, ids = corpus
    assert _fts(store, "NEAR(") == {ids["Operators"]}
    assert ids["Operators"] in _fts(store, "a:b")
    assert ids["C++ templates"] in _fts(store, "c++ templates")
    # "example.org/path" is searched as its words, so the note holding the URL is found
    assert ids["Links"] in _fts(store, "https://example.org/path?q=1&b=2")


def test_prefix_search_finds_longer_words(corpus):
    store, ids = corpus
    found = _fts(store, "graph*")
    assert ids["Graphs and networks"] in found
    assert ids["Chemistry of graphite"] in found  # "graphite" starts with "graph"
    assert _fts(store, "vert*") == {ids["Graphs and networks"]}
    # without the star only the whole word (stemmed) matches
    assert ids["Chemistry of graphite"] not in _fts(store, "graph")


def test_one_char_prefix_is_not_expanded(corpus):
    store, ids = corpus
    assert _fts(store, "g*") == {ids["The letter g"]}


def test_negative_term_excludes(corpus):
    store, ids = corpus
    with_graphite = _fts(store, "graph*")
    assert ids["Chemistry of graphite"] in with_graphite
    without = _fts(store, "graph* -chemistry")
    assert ids["Graphs and networks"] in without
    assert ids["Chemistry of graphite"] not in without
    assert _fts(store, "-chemistry") == set()  # nothing positive left: match nothing, not everything


def test_phrase_requires_adjacent_words(corpus):
    store, ids = corpus
    assert _fts(store, '"cook the pasta"') == {ids["Cooking pasta"]}
    assert _fts(store, '"pasta cook"') == set()


def test_unicode_and_diacritics(corpus):
    store, ids = corpus
    assert _fts(store, "cafe") == {ids["Café culture"]}  # diacritics folded
    assert _fts(store, "brûlée") == {ids["Café culture"]}
    assert _fts(store, "東京") == {ids["Café culture"]}


def test_stopwords_only_query_still_searches(corpus):
    store, ids = corpus
    assert fts_query.build("the") == '"the"'
    assert ids["The letter g"] in _fts(store, "the")


def test_pasted_paragraph_is_bounded():
    text = " ".join(f"word{i}" for i in range(500))
    expr = fts_query.build(text)
    assert expr.count(" OR ") == fts_query.MAX_TERMS - 1


# -- properties ----------------------------------------------------------------------------------
_NASTY = st.lists(
    st.sampled_from(list('"*-:()^+{}[]~.,\'\\/ \t\n\r\x00\x1b') + ["NEAR", "AND", "OR", "NOT", "a", "bc", "é"]),
    max_size=30,
).map("".join)
# punctuation, separators, controls, format characters and lone surrogates (undecodable bytes)
_ODD = st.text(alphabet=st.characters(categories=["P", "S", "Z", "Cc", "Cf", "Cs", "Lo", "Mn"]), max_size=60)
_ANY_TEXT = st.one_of(st.text(), _NASTY, _ODD)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_ANY_TEXT)
def test_build_never_raises_and_always_runs(corpus, text):
    store, _ = corpus
    expr = fts_query.build(text)
    if expr is None:
        return
    assert isinstance(expr, str) and expr.strip()
    store.db.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (expr,)).fetchone()
    store.db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expr,)).fetchone()
    assert fts_query.build(text, mode="and") is not None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_ANY_TEXT)
def test_fts_search_never_raises(corpus, text):
    store, _ = corpus
    hits = Searcher(store).search(text, mode="fts", limit=5)
    assert len(hits) <= 5
