"""Search over a small real corpus: full text, vector, hybrid, filters, node scope, the mirror."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import InvalidInput, NotFound
from core.index.indexer import Indexer
from core.search.searcher import Searcher, Tuning
from core.graph.store import Store

NODE_KEYS = {
    "id", "title", "description", "source", "link", "event_date", "type", "dimensions",
    "chunk_status", "created_at", "updated_at",
}
CHUNK_KEYS = {"idx", "start_char", "end_char", "heading_path", "text", "page"}

NOTES = [
    ("Sourdough starter maintenance", ["cooking"],
     "Feed the starter equal weights of flour and water every day. Keep it at room temperature; a jar with a "
     "loose lid works. Discard half before each feeding."),
    ("Boiling pasta", ["cooking"],
     "Bring a large pot of salted water to a rolling boil, add the spaghetti and stir. Cook until al dente, then "
     "drain and toss with sauce."),
    ("Quokka field notes", ["biology", "travel"],
     "On Rottnest Island the quokka population is habituated to visitors. Do not feed them bread."),
    ("Replacing a bicycle chain", ["repair"],
     "Use a chain tool to push out a pin, measure the new chain against the old one, and join it with a quick "
     "link. Lubricate after fitting."),
    ("Car battery", ["repair"],
     "The engine would not turn over on a cold morning. A jump start from a neighbour's vehicle got it running; "
     "the battery was five years old."),
    ("Transformer attention", ["ai", "research"],
     "Self-attention computes weighted sums of value vectors, with weights from query-key dot products scaled by "
     "the square root of the dimension."),
    ("Gradient descent", ["ai", "research"],
     "Optimisation proceeds by stepping against the gradient of the loss. The learning rate controls the step "
     "size; too large and training diverges."),
    ("Photosynthesis", ["biology"],
     "Plants convert light, water and carbon dioxide into glucose and oxygen inside chloroplasts."),
    ("Tax return checklist", ["admin"],
     "Collect payslips, bank interest statements and receipts for deductible expenses before the filing deadline."),
    ("Marathon training plan", ["health"],
     "Build weekly mileage slowly, one long run each weekend, taper for two weeks before race day."),
    ("Sleep hygiene", ["health"],
     "Keep a regular bedtime, avoid screens late in the evening and keep the bedroom cool and dark."),
    ("Roman aqueducts", ["history"],
     "Aqueducts carried water to Roman cities using a gentle gradient over many kilometres, with arches across "
     "valleys."),
    ("Git rebase", ["software"],
     "Interactive rebase rewrites history: squash fixup commits, reorder them, and edit messages before pushing."),
    ("Houseplant watering", ["home"],
     "Most houseplants prefer the soil to dry out between waterings; overwatering rots roots."),
    ("Tide tables", ["travel"],
     "High water and low water times for the harbour; the moon drives the tide twice a day."),
]

GUIDE = """# Coastal field guide

## Tides
The sea rises and falls twice a day because of the moon's pull. Check the tide table before walking out across
the sand flats; the water comes back faster than you can run.

## Seabirds
Gannets dive from great heights; cormorants dry their wings on the rocks; puffins nest in burrows on the cliff tops.

## Rock pools
Anemones, crabs and small fish live in the pools left behind. Turn stones back over the way you found them.
"""


def _build(store: Store, embedder) -> dict[str, int]:
    ids = {}
    for title, dims, source in NOTES:
        ids[title] = store.add_node(title, source, dimensions=dims)["id"]
    ids["Coastal field guide"] = store.add_node("Coastal field guide", GUIDE, dimensions=["travel"])["id"]
    report = Indexer(store, embedder).run()
    assert report.errors == 0 and report.indexed == len(ids)
    return ids


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder):
    store = Store(tmp_path_factory.mktemp("search") / "cairn.db")
    ids = _build(store, embedder)
    yield store, ids, Searcher(store, embedder)
    store.close()


def _titles(hits) -> list[str]:
    return [h["title"] for h in hits]


def test_fts_finds_an_exact_rare_keyword(corpus):
    _, ids, searcher = corpus
    hits = searcher.search("quokka", mode="fts")
    assert _titles(hits) == ["Quokka field notes"]
    assert hits[0]["match"]["fts"] > 0
    assert "quokka" in hits[0]["chunk"]["text"].lower()


def test_vector_finds_a_paraphrase_with_no_shared_words(corpus):
    _, ids, searcher = corpus
    query = "my automobile is dead"
    target = dict((t, s) for t, _, s in NOTES)["Car battery"]
    shared = {w.lower() for w in query.split()} & {w.strip(".,;'").lower() for w in f"Car battery {target}".split()}
    assert not shared, shared
    assert searcher.search(query, mode="fts") == []  # nothing for full text to find
    assert _titles(searcher.search(query, mode="vector"))[0] == "Car battery"
    assert _titles(searcher.search("fixing my bike drivetrain", mode="vector"))[0] == "Replacing a bicycle chain"


def test_hybrid_returns_keyword_and_meaning_hits(corpus):
    _, ids, searcher = corpus
    hits = searcher.search("quokka bike drivetrain", mode="hybrid", limit=3)
    by_title = {h["title"]: h for h in hits}
    assert "Quokka field notes" in by_title and by_title["Quokka field notes"]["match"]["fts"] is not None
    chain = by_title.get("Replacing a bicycle chain")
    assert chain is not None, _titles(hits)
    assert chain["match"]["fts"] is None and chain["match"]["vector"] > 0


@pytest.mark.parametrize("title", ["Gradient descent", "Sourdough starter maintenance", "Tide tables", "Boiling pasta"])
def test_exact_title_ranks_first_in_hybrid(corpus, title):
    _, ids, searcher = corpus
    hits = searcher.search(title, mode="hybrid")
    assert hits[0]["id"] == ids[title], _titles(hits)[:3]


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_dimension_filter_restricts_every_mode(corpus, mode):
    _, ids, searcher = corpus
    unfiltered = searcher.search("water", mode=mode, limit=20)
    assert {"Photosynthesis", "Roman aqueducts"} & set(_titles(unfiltered))
    for dim in ("cooking", "Cooking"):
        hits = searcher.search("water", mode=mode, limit=20, dimension=dim)
        assert hits, mode
        assert all("cooking" in [d.lower() for d in h["dimensions"]] for h in hits), _titles(hits)
        assert set(_titles(hits)) <= {"Sourdough starter maintenance", "Boiling pasta"}
    assert searcher.search("water", mode=mode, dimension="no-such-dimension") == []


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_limit_is_honoured(corpus, mode):
    _, ids, searcher = corpus
    for limit in (1, 3):
        hits = searcher.search("water in the sea and the kitchen", mode=mode, limit=limit)
        assert len(hits) == limit
    assert len(searcher.search("water", mode=mode, limit=100)) <= len(ids)
    assert len({h["id"] for h in searcher.search("water", mode=mode, limit=100)}) == len(
        searcher.search("water", mode=mode, limit=100))  # one hit per node


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_hit_record_shape(corpus, mode):
    store, ids, searcher = corpus
    hits = searcher.search("tide moon water", mode=mode, limit=5)
    assert hits
    for h in hits:
        assert set(h) >= NODE_KEYS | {"score", "chunk"}
        assert isinstance(h["score"], float)
        node = store.get_node(h["id"])
        assert {k: h[k] for k in NODE_KEYS} == node
        chunk = h["chunk"]
        assert set(chunk) == CHUNK_KEYS
        assert node["source"][chunk["start_char"]:chunk["end_char"]] == chunk["text"]
        assert isinstance(chunk["heading_path"], list)
        json.dumps(h)  # every hit is plain JSON
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_unknown_mode_is_refused(corpus):
    _, ids, searcher = corpus
    with pytest.raises(InvalidInput):
        searcher.search("water", mode="semantic")
    with pytest.raises(InvalidInput):
        searcher.search("water", mode="semantic", node_id=ids["Coastal field guide"])
    with pytest.raises(NotFound):
        searcher.search("water", node_id=987_654)


# -- node scope ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["vector", "hybrid", "fts"])
@pytest.mark.parametrize("query, heading", [
    ("when does the ocean come back in", "Tides"),
    ("birds that nest in holes", "Seabirds"),
    ("crabs and anemones", "Rock pools"),
])
def test_node_scoped_search_ranks_the_right_chunk_of_that_node(corpus, mode, query, heading):
    _, ids, searcher = corpus
    guide = ids["Coastal field guide"]
    hits = searcher.search(query, mode=mode, node_id=guide)
    assert hits
    assert {h["id"] for h in hits} == {guide}
    assert hits[0]["chunk"]["heading_path"] == ["Coastal field guide", heading]
    # the globally nearest note for the tides query is another node; the scope must not leak it
    assert "Tide tables" not in _titles(hits)


def test_node_scoped_vector_search_is_exact(corpus, embedder):
    store, ids, searcher = corpus
    guide = ids["Coastal field guide"]
    query = "high and low water"
    hits = searcher.search(query, mode="vector", node_id=guide, limit=100)
    rows = store.db.execute(
        "SELECT c.chunk_idx, v.embedding FROM vec_chunks v JOIN chunks c ON c.id = v.rowid WHERE c.node_id = ?",
        (guide,),
    ).fetchall()
    assert len(rows) >= 4
    q = embedder.embed_one(query)
    brute = sorted(
        ((float(np.frombuffer(r[1], dtype=np.float32) @ q), r[0]) for r in rows), reverse=True
    )
    assert [h["chunk"]["idx"] for h in hits] == [idx for _, idx in brute]
    np.testing.assert_allclose([h["score"] for h in hits], [s for s, _ in brute], atol=1e-5)
    # other nodes' chunks are nearer to this query than some of the guide's, so a global top-k that
    # was filtered afterwards would have lost some of the guide's chunks
    global_hits = searcher._nearest_chunks(q, len(rows))
    assert any(node != guide for _, node, _ in global_hits)


def test_mirror_and_sqlite_give_the_same_vector_ranking(corpus, embedder):
    store, ids, _ = corpus
    plain = Searcher(store, embedder, mirror=False)
    mirrored = Searcher(store, embedder, mirror=True)
    for query in ("how do neural networks learn", "water", "birds that nest in holes", "paperwork deadline"):
        for kwargs in ({}, {"dimension": "travel"}, {"node_id": ids["Coastal field guide"]}):
            a = plain.search(query, mode="vector", limit=20, **kwargs)
            b = mirrored.search(query, mode="vector", limit=20, **kwargs)
            assert [(h["id"], h["chunk"]["idx"]) for h in a] == [(h["id"], h["chunk"]["idx"]) for h in b]
            np.testing.assert_allclose([h["score"] for h in a], [h["score"] for h in b], atol=1e-5)


def test_mirror_follows_add_update_and_delete(store, embedder):
    ids = _build(store, embedder)
    indexer = Indexer(store, embedder)
    plain = Searcher(store, embedder)
    mirrored = Searcher(store, embedder, mirror=True)

    def both(query: str) -> list[str]:
        a = _titles(plain.search(query, mode="vector", limit=5))
        b = _titles(mirrored.search(query, mode="vector", limit=5))
        assert a == b
        return a

    def score(query: str, node_id: int) -> float:
        hits = mirrored.search(query, mode="vector", limit=50)
        return next(h["score"] for h in hits if h["id"] == node_id)

    assert both("volcanic eruption and lava")[0] != "Volcanoes"
    generation = store.meta("vec_generation")

    new = store.add_node("Volcanoes", "Magma rises, the volcano erupts and lava flows down the slopes.")
    indexer.run()
    assert store.meta("vec_generation") != generation
    assert both("volcanic eruption and lava")[0] == "Volcanoes"
    before = score("volcanic eruption and lava", new["id"])

    store.update_node(new["id"], title="Glaciers", source="Ice sheets creep downhill and carve valleys.")
    indexer.run()
    assert both("rivers of ice")[0] == "Glaciers"
    assert score("volcanic eruption and lava", new["id"]) < before - 0.2  # the old vector is gone
    hit = next(h for h in mirrored.search("rivers of ice", mode="vector") if h["id"] == new["id"])
    assert hit["chunk"]["text"] == "Ice sheets creep downhill and carve valleys."

    store.delete_node(new["id"])
    assert "Glaciers" not in both("rivers of ice")
    # the mirror itself dropped the deleted chunks (results are not just filtered when read back)
    live = {r[0] for r in store.db.execute("SELECT rowid FROM vec_chunks")}
    assert set(mirrored.mirror.rowids.tolist()) == live
    assert new["id"] not in set(mirrored.mirror.node_ids.tolist())
    store.delete_node(ids["Car battery"])
    assert "Car battery" not in both("my automobile is dead")


def test_a_note_with_only_a_title_is_found_by_meaning(store, embedder):
    """DESIGN: "Vector: k-NN over chunks and nodes". A quick capture is often just a title; it has a node
    vector but no chunks, and must still be found by a query that means the same thing."""
    _build(store, embedder)
    note = store.add_node("Call the dentist about the cracked molar")
    Indexer(store, embedder).run()
    assert store.db.execute("SELECT COUNT(*) FROM vec_nodes WHERE rowid = ?", (note["id"],)).fetchone()[0] == 1
    searcher = Searcher(store, embedder)
    assert note["id"] in [h["id"] for h in searcher.search("toothache appointment", mode="vector", limit=3)]
    assert note["id"] in [h["id"] for h in searcher.search("toothache appointment", mode="hybrid", limit=3)]


# -- the behaviour users rely on, in the default (hybrid) mode (issue 6) -----------------------------
@pytest.mark.parametrize("title", [t for t, _, _ in NOTES] + ["Coastal field guide"])
def test_every_exact_title_ranks_first_in_the_default_mode(corpus, title):
    _, ids, searcher = corpus
    hits = searcher.search(title)
    assert hits[0]["id"] == ids[title], _titles(hits)[:3]


def test_a_rare_keyword_the_embedder_misses_is_found_first(store, embedder):
    ids = _build(store, embedder)
    note = store.add_node("Espresso machine descaling", "Run the descaler through the group head, then two tanks "
                          "of clean water. The boiler gasket is part GX-7731 from Rancilio.", dimensions=["home"])
    Indexer(store, embedder).run()
    searcher = Searcher(store, embedder)
    # The embedder alone does not put the note first for the brand name (it has no idea what it is) ...
    assert _titles(searcher.search("Rancilio", mode="vector", limit=3))[0] != note["title"]
    # ... full text does, and so does the default mode.
    assert _titles(searcher.search("Rancilio"))[0] == note["title"]
    assert _titles(searcher.search("GX-7731"))[0] == note["title"]
    assert len(ids) + 1 == store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]


def test_a_paraphrase_with_no_shared_words_is_found_first_in_the_default_mode(corpus):
    _, ids, searcher = corpus
    assert searcher.search("my automobile is dead", mode="fts") == []
    assert searcher.search("my automobile is dead")[0]["id"] == ids["Car battery"]
    assert searcher.search("fixing my bike drivetrain")[0]["id"] == ids["Replacing a bicycle chain"]


@pytest.mark.parametrize("mirror", [False, True])
def test_a_keyword_match_not_indexed_yet_ranks_first_not_tied(store, embedder, mirror):
    """A note found only by full text because it has no vectors yet (still pending) is scored on BM25
    alone: the best keyword match ranks first instead of tying with the best vector-only hit."""
    _build(store, embedder)
    pending = store.add_node("Wombat burrow survey", "Counted eleven active wombat burrows along the creek.")
    assert store.get_node(pending["id"])["chunk_status"] == "pending"
    hits = Searcher(store, embedder, mirror=mirror).search("wombat burrows")
    assert hits[0]["id"] == pending["id"], _titles(hits)[:3]
    assert hits[0]["match"]["vector"] is None and hits[0]["score"] == 1.0
    assert hits[1]["score"] < hits[0]["score"]


@pytest.mark.parametrize("mirror", [False, True])
def test_hybrid_scores_every_candidate_on_both_signals(corpus, embedder, mirror):
    """A keyword-only candidate gets its exact cosine (its best chunk), so the blend compares like with
    like; scores are in [0, 1] and the sqlite-vec and mirror paths agree."""
    store, ids, _ = corpus
    hits = Searcher(store, embedder, mirror=mirror).search("quokka bread", limit=5)
    assert all(h["match"]["vector"] is not None for h in hits)
    assert all(0.0 <= h["score"] <= 1.0 for h in hits)
    assert hits[0]["id"] == ids["Quokka field notes"]
    plain = Searcher(store, embedder).search("quokka bread", limit=5)
    assert [h["id"] for h in plain] == [h["id"] for h in hits]


@pytest.mark.parametrize("combine", ["max", "sum"])
@pytest.mark.parametrize("mirror", [False, True])
def test_graph_expansion_brings_in_a_linked_note_with_no_textual_match(store, embedder, combine, mirror):
    """With graph expansion on, a note that shares nothing with the query but is linked from the top
    hit (either edge direction) enters the results; with it off (the default), it does not."""
    ids = _build(store, embedder)
    linked = store.add_node("Ferry timetable", "Departures at 7:15 and 9:40; the last boat back leaves at 17:30.",
                            dimensions=["admin"])["id"]
    Indexer(store, embedder).run()
    store.add_edge(ids["Quokka field notes"], linked, "how we got to the island")
    query = "quokka bread"
    off = Searcher(store, embedder, mirror=mirror).search(query, limit=3)
    assert off[0]["id"] == ids["Quokka field notes"]
    assert linked not in [h["id"] for h in off]
    on = Searcher(store, embedder, mirror=mirror,
                  tuning=Tuning(graph_weight=0.9, graph_seeds=1, graph_combine=combine)).search(query, limit=3)
    assert on[0]["id"] == ids["Quokka field notes"]
    assert linked in [h["id"] for h in on], _titles(on)
    scores = [h["score"] for h in on]
    assert scores == sorted(scores, reverse=True)
    # The other direction counts too, and a dimension filter still holds for the neighbours.
    store.delete_edge(store.edges(linked)[0]["id"])
    store.add_edge(linked, ids["Quokka field notes"], "how we got to the island")
    searcher = Searcher(store, embedder, mirror=mirror, tuning=Tuning(graph_weight=0.9, graph_seeds=1, graph_combine=combine))
    assert linked in [h["id"] for h in searcher.search(query, limit=3)]
    assert linked not in [h["id"] for h in searcher.search(query, limit=3, dimension="biology")]


def test_graph_expansion_changes_nothing_without_edges(corpus, embedder):
    """On a graph with no edges (SciFact's case) expansion leaves every ranking and score unchanged."""
    store, _, plain = corpus
    assert store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 0
    on = Searcher(store, embedder, tuning=Tuning(graph_weight=0.5, graph_combine="sum"))
    for query in ("tide moon water", "quokka bread", "how do I fix my bike", "gradient"):
        assert plain.search(query, limit=20) == on.search(query, limit=20)


def test_the_mirror_streams_its_load_and_scores_a_filter_in_blocks(corpus, embedder, monkeypatch):
    """Issue 16 item 3: a load into preallocated arrays (grown when the count was low: a writer between
    the count and the read) and a filtered search scored block by block give the exact ranking."""
    import numpy as np

    import core.index.vector_mirror as vm

    store = corpus[0]
    mirror = vm.VectorMirror(store.db, embedder.dimensions)
    real = store.db.execute

    def undercount(sql, *args):  # the count says one row: the load must grow its arrays
        if sql.startswith("SELECT COUNT(*)"):
            return real("SELECT 0" if "vec_nodes" in sql else "SELECT 1")
        return real(sql, *args)

    monkeypatch.setattr(store.db, "execute", undercount)
    mirror.sync()
    monkeypatch.undo()
    rows = store.db.execute("SELECT rowid, node_id, embedding FROM vec_chunks ORDER BY rowid").fetchall()
    assert sorted(mirror.rowids.tolist()) == [r[0] for r in rows]
    by_rowid = {int(r): mirror.matrix[i] for i, r in enumerate(mirror.rowids)}
    for r in rows:
        assert np.array_equal(by_rowid[r[0]], np.frombuffer(r[2], dtype=np.float32))
    monkeypatch.setattr(vm, "FILTER_BLOCK", 3)
    query = embedder.embed_one("glaciers and ice")
    some = np.array(sorted({r[1] for r in rows})[::2])
    keep = np.isin(np.array([r[1] for r in rows]), some)
    exact = sorted(((float(np.frombuffer(r[2], dtype=np.float32) @ query), r[0]) for r, k in zip(rows, keep) if k),
                   reverse=True)[:5]
    got = mirror.top(query, 5, node_ids=some)
    assert [g[0] for g in got] == [e[1] for e in exact]
    assert all(abs(g[2] - e[0]) < 1e-6 for g, e in zip(got, exact))


def test_a_listing_shows_the_passage_around_the_querys_words():
    from core.search.snippet import around

    page = ("Tax returns are due at the end of April. Keep receipts for seven years, file the schedules in "
            "order, and note every deduction with its date. Between the forms, a line from a letter: the old "
            "copper kettle whistles at dawn. Then back to the ledger: quarterly estimates and interest.")
    shown = around(page, '"old copper kettle whistles"')
    assert "the old copper kettle whistles at dawn" in shown and shown.startswith("…") and len(shown) <= 202
    assert "copper kettle whistle" in around(page, "kettle whistle")  # a word found at its start, as stemmed
    assert around(page, "sourdough").startswith("Tax returns are due")  # no match: the passage's start
    assert around("Short note.", "note") == "Short note."
    assert around(page, "") == page[:200] + "…"


@pytest.mark.parametrize("use_mirror", [False, True])
def test_vector_search_fills_its_limit_with_distinct_notes_when_long_notes_crowd_the_nearest_chunks(
        tmp_path, embedder, use_mirror):
    """Long notes whose every chunk is near the query took the nearest `limit * 3` chunks among them:
    `cairn search --mode vector` returned 4 notes for a limit of 10 on the Obsidian Tasks vault."""
    store = Store(tmp_path / "crowd.db")
    try:
        sailing = ("Trim the mainsail and ease the jib sheet as the wind backs; the sailboat heels and "
                   "picks up speed on a close reach across the bay. ")
        for i in range(3):  # three long notes about sailing: a dozen near chunks each
            store.add_node(f"Sailing log {i}", "\n\n".join(f"Day {k}. " + sailing * 6 for k in range(12)))
        for i, line in enumerate(["Reefing the sail before a squall keeps the dinghy upright.",
                                  "A catamaran tacks slowly; bear away before coming about.",
                                  "Racing yachts hoist a spinnaker when the wind comes from behind.",
                                  "The harbour master logs every sailboat that leaves the marina."]):
            store.add_node(f"Sail note {i}", line)
        Indexer(store, embedder).run()
        searcher = Searcher(store, embedder, mirror=use_mirror)
        hits = searcher.search("sailing a boat in the wind", mode="vector", limit=6)
        assert len(hits) == 6 and len({h["id"] for h in hits}) == 6
        assert len(searcher.search("sailing a boat in the wind", mode="vector", limit=20)) == 7  # every note
    finally:
        store.close()
