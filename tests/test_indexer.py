"""The pending queue: chunk + embed, reuse unchanged chunks, skip nodes edited mid-run, re-embed on model change."""

from __future__ import annotations

import numpy as np
import pytest

from core.index.indexer import TITLE_PREFIX_TOKENS, Indexer
from core.graph.store import Store, content_hash


def _section(i: int, topic: str) -> str:
    body = " ".join(f"Observation {k} in part {i} concerns {topic} and how it behaves." for k in range(8))
    return f"## Part {i}: {topic}\n\n{body}\n"


TOPICS = ["glaciers", "volcanoes", "coral reefs", "deserts", "rainforests"]
LONG = "\n".join(_section(i, t) for i, t in enumerate(TOPICS))


def _chunk_vectors(store: Store, node_id: int) -> dict[str, bytes]:
    rows = store.db.execute(
        "SELECT c.text, v.embedding FROM chunks c JOIN vec_chunks v ON v.rowid = c.id WHERE c.node_id = ?"
        " ORDER BY c.chunk_idx",
        (node_id,),
    ).fetchall()
    return {r[0]: bytes(r[1]) for r in rows}


def _node_vector(store: Store, node_id: int) -> np.ndarray | None:
    row = store.db.execute("SELECT embedding FROM vec_nodes WHERE rowid = ?", (node_id,)).fetchone()
    return None if row is None else np.frombuffer(row[0], dtype=np.float32)


def test_pending_nodes_become_indexed(store, indexer):
    a = store.add_node("Alpha", "First note about herons.")
    b = store.add_node("Beta", LONG, description="Five landscapes")
    assert indexer.pending_count() == 2
    seen = []
    report = indexer.run(progress=lambda p: seen.append((p.notes_done, p.notes_total)))
    assert report.indexed == 2 and report.errors == 0 and report.skipped == 0
    assert seen[0] == (0, 2) and seen[-1] == (2, 2)
    assert indexer.pending_count() == 0
    for node in (a, b):
        row = store.db.execute("SELECT chunk_status, content_hash FROM nodes WHERE id = ?", (node["id"],)).fetchone()
        assert row["chunk_status"] == "indexed"
        assert row["content_hash"] == content_hash(node["title"], node["description"], node["source"])
        assert _node_vector(store, node["id"]) is not None
    chunks = store.db.execute("SELECT COUNT(*) FROM chunks WHERE node_id = ?", (b["id"],)).fetchone()[0]
    assert chunks >= len(TOPICS)
    assert store.db.execute("SELECT COUNT(*) FROM vec_chunks WHERE node_id = ?", (b["id"],)).fetchone()[0] == chunks
    assert report.chunks == chunks + 1
    assert store.db.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'herons'").fetchone()[0] == 1
    # nothing left to do: a second run embeds nothing
    again = indexer.run()
    assert again.indexed == 0 and again.embedded == 0


def assert_embeds(actual, expected, not_=None) -> None:
    """`actual` is the vector of `expected`'s text: the quantised graph's vectors move a little with
    their batch mates (tests/test_embedder.py), so within cosine 0.97, and nearer to it than to
    `not_` (the vector of the text it must no longer be)."""
    actual, expected = np.asarray(actual, dtype=np.float32), np.asarray(expected, dtype=np.float32)
    assert float(actual @ expected) >= 0.97
    if not_ is not None:
        assert float(actual @ expected) > float(actual @ np.asarray(not_, dtype=np.float32))


def test_unchanged_chunks_are_reused(store, indexer, embedder):
    node = store.add_node("Landscapes", LONG)
    first = indexer.run()
    before = _chunk_vectors(store, node["id"])
    assert first.embedded >= len(before)  # every chunk (the node vector may share the first chunk's input)

    changed = LONG.replace("concerns deserts", "concerns sand dunes")
    assert changed != LONG
    store.update_node(node["id"], source=changed)
    report = indexer.run()
    after = _chunk_vectors(store, node["id"])
    assert report.indexed == 1
    assert report.reused > 0
    assert report.embedded < first.embedded
    kept = set(before) & set(after)
    assert len(kept) == report.reused
    for text in kept:
        assert after[text] == before[text]
    new_texts = set(after) - set(before)
    assert new_texts and all("sand dunes" in t for t in new_texts)
    assert len(new_texts) <= report.embedded <= len(new_texts) + 1  # the changed chunks (+ the node vector)
    # a reused vector is still the right vector for its chunk (title prefixed, as embedded): nearest
    # to that chunk's own embedding among all the chunks'. The quantised graph's vectors move a little
    # with their batch mates (tests/test_embedder.py), so "the same" is a cosine >= 0.97, not equality.
    texts = sorted(after)
    fresh = np.stack([embedder.embed_one(f"Landscapes\n{t}") for t in texts])
    for text in kept:
        cosines = fresh @ np.frombuffer(after[text], dtype=np.float32)
        assert texts[int(np.argmax(cosines))] == text and cosines.max() >= 0.97


def _expected_node_vector(indexer, embedder, title, description, source):
    return embedder.embed_one(indexer.node_text(title, description, indexer.chunker.split(source)))


def test_title_change_refreshes_the_node_vector(store, indexer, embedder):
    node = store.add_node("Herons", "Grey birds standing in shallow water.", description="Birds")
    indexer.run()
    old = _node_vector(store, node["id"])
    expected = _expected_node_vector(indexer, embedder, "Herons", "Birds", node["source"])
    assert_embeds(old, expected)
    for part in ("Herons", "Birds", "Grey birds"):
        assert part in indexer.node_text("Herons", "Birds", indexer.chunker.split(node["source"]))

    store.update_node(node["id"], title="Tax deadlines")
    report = indexer.run()
    assert report.indexed == 1
    new = _node_vector(store, node["id"])
    assert not np.allclose(old, new, atol=1e-3)
    expected = _expected_node_vector(indexer, embedder, "Tax deadlines", "Birds", node["source"])
    assert_embeds(new, expected, not_=old)
    # the chunk was re-embedded with the new title in front
    chunk_vec = np.frombuffer(next(iter(_chunk_vectors(store, node["id"]).values())), dtype=np.float32)
    assert_embeds(chunk_vec, embedder.embed_one(f"Tax deadlines\n{node['source']}"),
                  not_=embedder.embed_one(f"Herons\n{node['source']}"))


def test_description_change_refreshes_the_node_vector(store, indexer):
    node = store.add_node("Herons", "Grey birds.")
    indexer.run()
    old = _node_vector(store, node["id"])
    store.update_node(node["id"], description="Also about volcanoes and lava")
    indexer.run()
    assert not np.allclose(old, _node_vector(store, node["id"]), atol=1e-3)


def test_node_edited_mid_run_is_skipped_then_indexed_next_run(store, embedder, db_path, monkeypatch):
    victim = store.add_node("Draft", "The first version of the text about herons.")
    bystander = store.add_node("Other", "Unrelated text about trains.")
    indexer = Indexer(store, embedder)
    real_embed = embedder.embed
    calls = {"n": 0}

    def embed_and_edit(texts, progress=None):
        calls["n"] += 1
        if calls["n"] == 1:  # another process saves an edit while the batch is being embedded
            with Store(db_path) as other:
                other.update_node(victim["id"], source="The second version, about kingfishers.")
        return real_embed(texts)

    monkeypatch.setattr(embedder, "embed", embed_and_edit)
    report = indexer.run()
    assert report.skipped == 1 and report.indexed == 1
    assert store.get_node(victim["id"])["chunk_status"] == "pending"
    assert store.get_node(bystander["id"])["chunk_status"] == "indexed"
    # nothing made from the old text was written
    assert store.db.execute("SELECT COUNT(*) FROM chunks WHERE node_id = ?", (victim["id"],)).fetchone()[0] == 0
    assert _node_vector(store, victim["id"]) is None

    report = indexer.run()
    assert report.indexed == 1 and report.skipped == 0
    node = store.get_node(victim["id"])
    assert node["chunk_status"] == "indexed"
    texts = [r[0] for r in store.db.execute("SELECT text FROM chunks WHERE node_id = ?", (victim["id"],))]
    assert texts == ["The second version, about kingfishers."]
    assert store.db.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'kingfishers'").fetchone()[0] == 1
    assert store.db.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'herons'").fetchone()[0] == 0


def test_a_crash_while_embedding_loses_nothing(store, embedder, monkeypatch):
    nodes = [store.add_node(f"Note {i}", f"Text number {i} about rivers.") for i in range(3)]
    indexer = Indexer(store, embedder)
    real_embed = embedder.embed

    def boom(texts, progress=None):
        raise KeyboardInterrupt  # the user kills `cairn index`

    monkeypatch.setattr(embedder, "embed", boom)
    with pytest.raises(KeyboardInterrupt):
        indexer.run()
    assert indexer.pending_count() == 3
    assert store.counts()["chunks"] == 0

    monkeypatch.setattr(embedder, "embed", real_embed)
    report = indexer.run()
    assert report.indexed == 3
    assert all(store.get_node(n["id"])["chunk_status"] == "indexed" for n in nodes)


def test_limit_and_stop_leave_the_rest_pending(store, indexer):
    for i in range(4):
        store.add_node(f"Note {i}", f"Body {i}.")
    assert indexer.run(limit=1).indexed == 1
    assert indexer.pending_count() == 3
    assert indexer.run(should_stop=lambda: True).indexed == 0
    assert indexer.pending_count() == 3
    assert indexer.run().indexed == 3
    assert indexer.pending_count() == 0


def test_empty_source_indexes_with_a_node_vector_and_no_chunks(store, indexer, embedder):
    node = store.add_node("Call the dentist about the cracked molar")
    report = indexer.run()
    assert report.indexed == 1 and report.chunks == 0
    assert store.get_node(node["id"])["chunk_status"] == "indexed"
    assert store.db.execute("SELECT COUNT(*) FROM chunks WHERE node_id = ?", (node["id"],)).fetchone()[0] == 0
    vec = _node_vector(store, node["id"])
    assert_embeds(vec, embedder.embed_one("Call the dentist about the cracked molar"))


def test_a_failing_node_is_marked_error_and_does_not_stop_the_queue(store, indexer, monkeypatch):
    bad = store.add_node("Bad", "POISON text")
    good = store.add_node("Good", "Fine text.")
    real_split = indexer.chunker.split

    def split(source, page_starts=None, **kwargs):
        if "POISON" in source:
            raise ValueError("cannot chunk this")
        return real_split(source, page_starts, **kwargs)

    monkeypatch.setattr(indexer.chunker, "split", split)
    report = indexer.run()
    assert report.errors == 1 and report.indexed == 1
    bad_now = store.get_node(bad["id"])
    assert bad_now["chunk_status"] == "error"
    assert "cannot chunk this" in bad_now["index_error"]
    assert store.get_node(good["id"])["chunk_status"] == "indexed"
    # editing the text re-queues it
    assert store.update_node(bad["id"], source="now fine")["chunk_status"] == "pending"
    assert indexer.run().indexed == 1


def test_changing_the_embedder_requeues_everything(store, indexer):
    nodes = [store.add_node(f"Note {i}", f"Text {i} about mountains.") for i in range(3)]
    indexer.run()
    assert store.meta("embedder") == indexer.embedder.name
    assert store.meta("dimensions") == "384"
    assert indexer.ensure_embedder() is False  # same model: nothing to do
    generation = store.meta("vec_generation")

    store.set_meta("embedder", "some-older-model")
    assert indexer.ensure_embedder() is True
    assert store.meta("embedder") == indexer.embedder.name
    assert store.meta("vec_generation") != generation
    assert indexer.pending_count() == 3
    counts = store.db.execute(
        "SELECT (SELECT COUNT(*) FROM chunks), (SELECT COUNT(*) FROM vec_chunks), (SELECT COUNT(*) FROM vec_nodes)"
    ).fetchone()
    assert tuple(counts) == (0, 0, 0)

    report = indexer.run()
    assert report.indexed == 3
    assert all(store.get_node(n["id"])["chunk_status"] == "indexed" for n in nodes)
    assert store.db.execute("SELECT COUNT(*) FROM vec_nodes").fetchone()[0] == 3


def test_every_embedding_input_fits_the_model_window(store, embedder, monkeypatch):
    """Chunks are embedded with the title in front; the whole input must fit 256 word pieces untruncated."""
    from tokenizers import Tokenizer

    from core.index.embedder import tokenizer_path

    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    seen: list[str] = []
    real_embed = embedder.embed

    def spy(texts, progress=None):
        seen.extend(texts)
        return real_embed(texts)

    monkeypatch.setattr(embedder, "embed", spy)
    long_title = " ".join(f"Extraordinarily{k} verbose title" for k in range(40))
    body = " ".join(f"Sentence {k} about the migration of arctic terns across oceans." for k in range(45))
    store.add_node(long_title[:480], body)
    store.add_node("Short", body.replace(" ", "") + "\n\n" + body)  # a 600-piece run with no spaces too
    Indexer(store, embedder).run()
    assert len(seen) > 4
    sizes = [len(tok.encode(t).ids) for t in seen]
    assert max(sizes) <= embedder.max_tokens, max(sizes)
    titled = [t for t in seen if t.startswith("Extraordinarily0")]
    assert titled
    assert all(len(tok.encode(t.split("\n", 1)[0], add_special_tokens=False).ids) <= TITLE_PREFIX_TOKENS
               for t in titled)
