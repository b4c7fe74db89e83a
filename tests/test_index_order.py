"""Issue 27 items 2 and 3: coverage first (every note's first chunk before any note's later chunks, the
most recently changed notes first), and the next batch embedded on its own thread while the last one
is written, one transaction a batch, errors and stops honoured. The real embedder and SQLite file;
the embedder is wrapped only to see what it is given, when."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

import pytest

import core.index.indexer as indexer_module
from core.graph.store import Store
from core.index.indexer import Indexer, coverage
from core.search.searcher import Searcher

TOPICS = {
    "Volcanoes": "Lava erupts from the crater of a volcano and flows down its slopes as molten rock.",
    "Glaciers": "A glacier is a river of ice that grinds the valley beneath it as it creeps downhill.",
    "Coral reefs": "Coral polyps build reefs of limestone in warm shallow seas full of bright fish.",
    "Deserts": "Sand dunes drift across the desert where rain falls only a few days each year.",
}
OTHER = ["Tax returns are due in April and the forms ask for every receipt of the year.",
         "The orchestra tuned their violins before the concert hall filled with listeners.",
         "A compiler turns source code into machine instructions through several passes."]


def long_note(topic: str) -> str:
    """A note of several chunks: its topic first, then other matters at length."""
    first = "\n\n".join([TOPICS[topic]] * 6)
    rest = "\n\n".join(" ".join([OTHER[k % 3]] * 4) for k in range(9))
    return f"## {topic}\n\n{first}\n\n## Other matters\n\n{rest}"


class Spy:
    """The real embedder; records the texts of each embed() call."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[list[str]] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts, progress=None):
        self.calls.append(list(texts))
        return self.inner.embed(texts, progress)


def inputs_of(indexer: Indexer, store: Store, node_id: int) -> list[str]:
    node = store.get_node(node_id)
    return [indexer.embed_text_of_chunk(node["title"], c) for c in indexer.chunker.split(node["source"])]


def test_every_notes_first_chunk_goes_before_any_notes_later_chunks(store, embedder):
    long_ids = [store.add_node(topic, long_note(topic))["id"] for topic in TOPICS]
    short_ids = [store.add_node(f"Short {i}", text)["id"] for i, text in enumerate(OTHER)]
    spy = Spy(embedder)
    indexer = Indexer(store, spy)
    seen = []
    report = indexer.run(progress=seen.append)
    assert report.indexed == 7 and indexer.pending_count() == 0
    call_of = {text: i for i, call in enumerate(spy.calls) for text in call}
    firsts, laters = [], []
    for node_id in long_ids + short_ids:
        inputs = inputs_of(indexer, store, node_id)
        firsts.append(call_of[inputs[0]])
        laters += [call_of[t] for t in inputs[1:]]
    assert len(laters) >= 4 * 3
    assert max(firsts) < min(laters)  # meaning search reached every note before any note was finished
    reached = next(p for p in seen if p.covered == p.graph_notes)
    assert reached.notes_done < reached.notes_total  # the long notes were still pending then
    # nothing embedded twice: a long note's first chunk is reused by its completion (no description:
    # its node vector is its first chunk's)
    assert sum(len(c) for c in spy.calls) == len(call_of) == report.embedded
    for node_id in long_ids:
        n = store.db.execute("SELECT COUNT(*) FROM chunks WHERE node_id = ?", (node_id,)).fetchone()[0]
        assert n == len(inputs_of(indexer, store, node_id))
        assert store.db.execute("SELECT COUNT(*) FROM vec_chunks WHERE node_id = ?", (node_id,)).fetchone()[0] == n


def test_the_most_recently_changed_notes_come_first(store, embedder):
    texts = [f"Note {i} says something of its own about {t}." for i, t in enumerate(TOPICS)]
    ids = [store.add_node(f"Note {i}", text)["id"] for i, text in enumerate(texts)]
    # changed in this order, oldest first: note 1, 3, 0, 2
    for node_id, stamp in zip(ids, ["2026-01-03T00:00:00.000Z", "2026-01-01T00:00:00.000Z",
                                    "2026-01-04T00:00:00.000Z", "2026-01-02T00:00:00.000Z"]):
        store.db.execute("UPDATE nodes SET updated_at = ? WHERE id = ?", (stamp, node_id))
    spy = Spy(embedder)
    Indexer(store, spy, batch_nodes=1).run()
    order = [next(i for i, text in enumerate(texts) if any(text in t for t in call)) for call in spy.calls]
    assert order == [2, 0, 3, 1]


def test_a_vault_import_goes_by_the_files_modification_times(store, embedder, tmp_path):
    from core.vault.sync import import_vault

    folder = tmp_path / "vault"
    folder.mkdir()
    # a.md changed last, b.md first: not the order of their names, nor of the import (one moment)
    for name, topic, mtime in (("a", "Volcanoes", 1_700_300_000), ("b", "Glaciers", 1_700_100_000),
                               ("c", "Deserts", 1_700_200_000)):
        path = folder / f"{name}.md"
        path.write_text(f"# {name}\n\n{TOPICS[topic]}\n", encoding="utf-8")
        os.utime(path, (mtime, mtime))
    import_vault(store, folder)
    spy = Spy(embedder)
    Indexer(store, spy, batch_nodes=1).run()
    order = [next(n for n, t in (("a", "Volcanoes"), ("b", "Glaciers"), ("c", "Deserts"))
                  if any(TOPICS[t] in x for x in call)) for call in spy.calls]
    assert order == ["a", "c", "b"]


def test_a_note_reached_by_its_first_chunk_is_found_by_meaning_and_finished_by_the_next_run(store, embedder):
    volcano = store.add_node("Volcanoes", long_note("Volcanoes"))["id"]
    for i, text in enumerate(OTHER):
        store.add_node(f"Short {i}", text)
    indexer = Indexer(store, embedder)
    seen = []
    # stopped as soon as meaning search reaches every note (a quit, a kill after that commit)
    first = indexer.run(progress=seen.append, should_stop=lambda: bool(seen) and seen[-1].covered == seen[-1].graph_notes)
    assert first.stopped and coverage(store.db) == (4, 4)
    assert store.get_node(volcano)["chunk_status"] == "pending"
    rows = store.db.execute("SELECT c.chunk_idx FROM chunks c JOIN vec_chunks v ON v.rowid = c.id"
                            " WHERE c.node_id = ?", (volcano,)).fetchall()
    assert [r[0] for r in rows] == [0]  # its first chunk, with its vector
    hits = Searcher(store, embedder).search("molten rock pouring from a crater", mode="vector", limit=3)
    assert hits and hits[0]["id"] == volcano
    # the next run finishes it, reusing the first chunk's vector and embedding only the rest
    second = indexer.run()
    inputs = inputs_of(indexer, store, volcano)
    chunks = len(inputs)
    assert second.indexed == 1 and second.reused == 1
    assert second.embedded == len(set(inputs[1:])) and inputs[0] not in inputs[1:]  # equal chunks: once
    assert store.get_node(volcano)["chunk_status"] == "indexed"
    assert store.db.execute("SELECT COUNT(*) FROM vec_chunks WHERE node_id = ?", (volcano,)).fetchone()[0] == chunks


def test_the_next_batch_is_embedded_while_the_last_one_is_written(store, embedder, monkeypatch):
    monkeypatch.setattr(indexer_module, "BATCH_INPUTS", 8)
    monkeypatch.setattr(indexer_module, "FIRST_BATCH_INPUTS", 8)
    for i in range(40):
        store.add_node(f"Note {i}", f"Observation {i}: {OTHER[i % 3]}")
    transactions = threading.Condition()
    state = {"transactions": 0, "embedding": 0, "calls": 0}
    during_writes: list[int] = []  # embeddings under way as each write began
    real_transaction = store.db.transaction

    @contextmanager
    def transaction(*args, **kwargs):
        with transactions:
            state["transactions"] += 1
            during_writes.append(state["embedding"])
            transactions.notify_all()
        with real_transaction(*args, **kwargs) as conn:
            yield conn

    monkeypatch.setattr(store.db, "transaction", transaction)

    class Watched(Spy):
        def embed(self, texts, progress=None):
            with transactions:
                state["calls"] += 1
                state["embedding"] += 1
                call, seen = state["calls"], state["transactions"]
            try:
                if call == 2:  # held until a write begins: the first batch's, written meanwhile
                    with transactions:
                        transactions.wait_for(lambda: state["transactions"] > seen, timeout=10)
                if call == 4:
                    raise RuntimeError("the model failed on batch 4")
                return self.inner.embed(texts, progress)
            finally:
                with transactions:
                    state["embedding"] -= 1

    with pytest.raises(RuntimeError, match="the model failed on batch 4"):
        Indexer(store, Watched(embedder)).run()
    assert max(during_writes) == 1  # a batch was written while the next one was embedded (never two)
    # one transaction a batch: the three batches written before the failure are whole, the rest pending
    assert store.counts()["pending"] == 40 - 24
    assert store.db.execute("SELECT COUNT(*) FROM nodes n WHERE chunk_status = 'indexed' AND"
                            " (SELECT COUNT(*) FROM vec_chunks v WHERE v.node_id = n.id) = 1").fetchone()[0] == 24
    assert Indexer(store, embedder).run().indexed == 16


def test_a_stop_ends_the_batch_being_embedded_at_its_next_model_batch(store, embedder, monkeypatch):
    monkeypatch.setattr(indexer_module, "FIRST_BATCH_INPUTS", 200)  # one batch of several model batches
    for i in range(200):
        store.add_node(f"Note {i}", f"Observation {i}: {OTHER[i % 3]}")
    stop = threading.Event()
    model_batches = []
    real = embedder._embed_encoded

    def counted(encodings):
        model_batches.append(len(encodings))
        stop.set()  # the app quits while the first model batch runs
        return real(encodings)

    monkeypatch.setattr(embedder, "_embed_encoded", counted)
    report = Indexer(store, embedder).run(should_stop=stop.is_set)
    assert report.stopped and report.indexed == 0
    assert len(model_batches) == 1  # the batch's other model batches (200 notes: 5) were not run
    assert store.counts()["pending"] == 200 and store.counts()["chunks"] == 0


def test_batches_grow_from_a_small_first_one_and_the_run_ends_with_a_small_one(store, embedder):
    """The first batch is small (nothing overlaps its chunking), each after it up to RAMP times the one
    before, and the end of the work is a batch of its own, so the last write, which nothing overlaps,
    is short: also when the first pass finishes every note (one-chunk notes), where the run used to
    end with a batch of 84."""
    for i in range(100):
        store.add_node(f"Note {i}", f"Observation {i}: {OTHER[i % 3]}")
    spy = Spy(embedder)
    report = Indexer(store, spy).run()
    assert report.indexed == 100
    sizes = [len(c) for c in spy.calls]
    first, ramp = indexer_module.FIRST_BATCH_INPUTS, indexer_module.RAMP
    assert sizes[0] == first and sum(sizes) == 100
    assert all(b <= a * ramp for a, b in zip(sizes, sizes[1:]))
    assert len(sizes) >= 3 and sizes[-1] <= max(first, round(sizes[-2] * indexer_module.LAST_BATCH_SHARE) + 1)
    assert sizes[-1] < sizes[-2]


def test_a_run_of_notes_that_need_a_second_pass_ends_with_a_small_batch_too(store, embedder):
    ids = [store.add_node(topic, long_note(topic))["id"] for topic in TOPICS]
    for i in range(60):
        store.add_node(f"Note {i}", f"Observation {i}: {OTHER[i % 3]}")
    spy = Spy(embedder)
    assert Indexer(store, spy).run().indexed == 64
    sizes = [len(c) for c in spy.calls]
    later = sum(len(inputs_of(Indexer(store, embedder), store, i)) - 1 for i in ids)  # the second pass's
    assert sizes[-1] < sizes[-2] and sizes[-1] <= later


def test_no_batch_is_larger_than_batch_inputs_the_first_included(store, embedder, monkeypatch):
    monkeypatch.setattr(indexer_module, "BATCH_INPUTS", 8)
    for i in range(40):
        store.add_node(f"Note {i}", f"Observation {i}: {OTHER[i % 3]}")
    spy = Spy(embedder)
    assert Indexer(store, spy).run().indexed == 40
    assert max(len(c) for c in spy.calls) <= 8 and sum(len(c) for c in spy.calls) == 40


def test_batches_of_long_notes_are_bounded_by_their_work_not_only_by_their_inputs(store, embedder, monkeypatch):
    """1,024 long chunks are ~15 s of the model: all of it lost to a quit, and the notes counted done only
    when the batch is written. A batch holds at most about BATCH_WORK of word pieces; a note is never
    split, so a note over it goes alone: here each note's first chunk, then each note's rest."""
    monkeypatch.setattr(indexer_module, "BATCH_WORK", 1)
    for topic in TOPICS:
        store.add_node(topic, long_note(topic))
    spy = Spy(embedder)
    assert Indexer(store, spy).run().indexed == len(TOPICS)
    assert [len(c) for c in spy.calls[:len(TOPICS)]] == [1] * len(TOPICS)  # the first pass, a note a batch
    assert len(spy.calls) == 2 * len(TOPICS)  # then each note's rest, a batch each
