"""The pending queue: chunk and embed nodes whose text changed, in resumable batches.

A node is `pending` from the moment its title, description or source changes. `Indexer.run` reads a
batch of pending nodes, chunks and embeds them outside any transaction, then swaps each node's
chunks, FTS rows and vectors in one short write transaction, but only if the node still has the text
that was embedded (another process may have edited it meanwhile; then it stays pending). Killing the
process at any point loses nothing: uncommitted work is rolled back and the node is still pending.

Issue 27: the next batch is embedded on a thread of its own while the last one is written
(core/index/background_embedding.py), and notes are taken coverage first (core/index/work_order.py):
a note of several chunks may first get its first chunk alone, committed with the note still pending
(meaning search reaches it); a later batch swaps in all its chunks, reusing that first vector, and
marks it indexed. A kill between the two leaves a pending note with its first chunk, which the next
run completes the same way.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from typing import Callable

from core import clock
from core.index.background_embedding import BackgroundEmbedding, Stopped
from core.index.chunker import Chunk, Chunker, has_headings
from core.index.progress import IndexProgress, RunTally, input_work
from core.index.work_order import WorkOrder
from core.graph.migrations import vec_tables
from core.graph.store import Store, content_hash, title_from_text

# Titles longer than this many word pieces are cut in the chunk prefix, so the chunk keeps its room.
TITLE_PREFIX_TOKENS = 48
# A batch is filled up to about this many embedding inputs (estimated from text length) and at
# most BATCH_NODES nodes: big enough that sorting by length keeps padding low, small enough that a
# kill or a quit loses little work (the batch being embedded is dropped; see BATCH_WORK); progress
# moves inside a batch as sub-batches are embedded. Splitting work into calls costs the model:
# 1,000 short notes embedded as [16, 128, 512, 315, 29] took 1.07x the time of one call, as
# [16, 512, 472] 1.04x, as [32, 900, 68] 1.03x (median of 9, interleaved; the small calls pad
# their rows to their longest).
BATCH_INPUTS = 1024
BATCH_NODES = 1024
# And at most about this much work (word pieces, core/index/progress.py input_work): 1,024 short
# notes are ~27,000 (1.4 s of the model on 2 cores), 1,024 of the vault's long chunks ~300,000
# (~11 s, all lost to a quit, and the notes counted done only when their batch is written: the SSH
# walkthrough saw "5/86 nodes" stand for 13 s). 64,000 is about 2.5 s of long chunks.
BATCH_WORK = 64_000
# The run's first batch is small: it is chunked before anything can overlap it (in the first pass
# each of its notes is chunked whole: 64 vault notes took 0.46 s). Each batch after it may be
# RAMP times the one before, up to BATCH_INPUTS: a batch is chunked while the one before it is
# embedded, and reading and chunking a short note costs about a fifteenth of embedding it
# (bench/index_pipeline.py), so the model does not wait for the plan.
FIRST_BATCH_INPUTS = 32
RAMP = 32
# The run's last batch is written after the model has nothing left to do
# (core/index/background_embedding.py), so the end of the work goes in a batch of its own, big
# enough that embedding it covers the writing of the batch before it (writing costs about a
# fifteenth of embedding): a LAST_BATCH_SHARE of the last inputs, at least FIRST_BATCH_INPUTS.
LAST_BATCH_SHARE = 1 / 12
# SQLite's page cache during a run (KiB; the default is 2,000): a batch writes ~1.5 KB of vector per
# chunk into each vec0 table's 1.5 MB chunk blob, and with the default cache the second table's
# inserts spilled dirty pages mid-transaction. 512 rows into vec_chunks and vec_nodes, 10 batches:
# 0.51 s of CPU at the default, 0.17 s at 8 MB, 0.15 s at 16 MB (issue 27, measured on 2 cores).
# Restored when the run ends.
RUN_CACHE_KIB = 8_000

Progress = Callable[[IndexProgress], None]


def coverage(db) -> tuple[int, int]:
    """(notes meaning search reaches, notes in the graph): a note is reached by any vector of its own,
    a chunk's or its node vector (an edited note's older vectors count until they are replaced).
    Only notes not indexed are looked at (the partial index nodes_status)."""
    notes = db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
    unreached = db.execute(
        "SELECT COUNT(*) FROM nodes n WHERE n.chunk_status != 'indexed'"
        " AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = n.id)"
        " AND NOT EXISTS (SELECT 1 FROM vec_nodes v WHERE v.rowid = n.id)").fetchone()[0]
    return notes - unreached, notes


def reached(db, node_id: int) -> bool:
    """Whether meaning search reaches this note now (coverage's rule: any vector of its own)."""
    return bool(db.execute(
        "SELECT EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = ?) OR EXISTS (SELECT 1 FROM vec_nodes v WHERE v.rowid = ?)",
        (int(node_id), int(node_id))).fetchone()[0])


@dataclass
class _NotePlan:
    row: object  # the node's row as read (its text is checked again at the write)
    chunks: list[Chunk]  # the chunks this batch writes: all of them, or the first only
    inputs: list[str]  # their embedding inputs (the title in front)
    hashes: list[str]
    ntext: str | None  # the node vector's input; None when only the first chunk is written
    nhash: str | None


@dataclass
class _Batch:
    plans: list[_NotePlan]
    texts: dict[str, int]  # unique embedding inputs to send through the model → their row
    work: int  # their work (word pieces, core/index/progress.py input_work): the unit of progress
    ids: frozenset[int]
    reusable: dict[int, dict[str, bytes]]  # vectors already stored, by the hash of their input


@dataclass
class IndexReport:
    indexed: int = 0
    errors: int = 0
    skipped: int = 0  # changed by another process while being embedded; still pending
    chunks: int = 0
    embedded: int = 0  # texts actually sent through the model
    reused: int = 0  # chunk vectors kept because their text did not change
    seconds: float = 0.0
    failures: list[tuple[int, str]] = field(default_factory=list)
    busy: bool = False  # stopped while another run held the database's index lock (nothing done)
    stopped: bool = False  # `should_stop` ended the run between batches; the rest stays pending

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("indexed", "errors", "skipped", "chunks", "embedded", "reused", "seconds")}


class Indexer:
    def __init__(self, store: Store, embedder=None, chunker: Chunker | None = None, batch_nodes: int = BATCH_NODES):
        if embedder is None:
            from core.index.embedder import shared_embedder

            embedder = shared_embedder()
        self.store = store
        self.embedder = embedder
        self.chunker = chunker or Chunker.for_embedder(embedder)
        self.batch_nodes = batch_nodes

    # -- queue -----------------------------------------------------------------------------------
    def pending_count(self) -> int:
        return self.store.db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'pending'").fetchone()[0]

    def other_model(self) -> str | None:
        """The model this database's vectors were made by, when it is not this embedder's (an upgrade
        changed the graph): the next run re-embeds every node."""
        name = self.store.meta("embedder")
        if name is not None and (name != self.embedder.name or self.store.meta("dimensions") != str(self.embedder.dimensions)):
            return name
        return None

    def ensure_embedder(self) -> bool:
        """If the database was embedded by another model, recreate the vector tables and re-queue all.

        Returns True when everything was re-queued."""
        name = self.store.meta("embedder")
        dims = self.store.meta("dimensions")
        if name == self.embedder.name and dims == str(self.embedder.dimensions):
            return False
        with self.store.db.transaction() as conn:
            had_vectors = name is not None
            if had_vectors or dims not in (None, str(self.embedder.dimensions)):
                conn.execute("DROP TABLE IF EXISTS vec_nodes")
                conn.execute("DROP TABLE IF EXISTS vec_chunks")
                for statement in vec_tables(self.embedder.dimensions):
                    conn.execute(statement)
                conn.execute("DELETE FROM chunks")
                conn.execute("UPDATE nodes SET chunk_status = 'pending', index_error = NULL")
            for key, value in (("embedder", self.embedder.name), ("dimensions", str(self.embedder.dimensions))):
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation'")
        return name is not None

    def run(self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None,
            limit: int | None = None, on_wait: Callable[[], None] | None = None,
            while_waiting: Callable[[], None] | None = None) -> IndexReport:
        """Index pending nodes until none are left (or `limit` nodes, or `should_stop()`, asked between
        batches and between the model's sub-batches). One run at a time per database
        (core/index/run_lock.py): while another holds it this waits (`on_wait()` says so once,
        `while_waiting()` is called at each look); stopped while waiting, it returns with `busy` set.
        `progress(IndexProgress)` follows the run, from this thread and the embedding thread."""
        from core.index.run_lock import held

        with held(self.store.path, should_stop=should_stop, on_wait=on_wait, while_waiting=while_waiting) as mine:
            if not mine:
                return IndexReport(busy=True)
            return self._run(progress, should_stop, limit)

    def _run(self, progress, should_stop, limit) -> IndexReport:
        """Plan a batch (read, chunk), embed it on a thread of its own while the batch before it is
        written, one transaction a batch (core/index/background_embedding.py); in the order of
        core/index/work_order.py."""
        from core.index.run_lock import ProgressFile

        self.ensure_embedder()
        report = IndexReport()
        started = time.perf_counter()
        published = ProgressFile(self.store.path)

        def on_progress(p: IndexProgress) -> None:
            published.write(p)
            if progress:
                progress(p)

        tally = RunTally(on_progress)
        order = WorkOrder(self.store.db, limit)
        in_flight: tuple[_Batch, BackgroundEmbedding] | None = None
        cache = self.store.db.execute("PRAGMA cache_size").fetchone()[0]
        self.store.db.execute(f"PRAGMA cache_size = -{RUN_CACHE_KIB}")
        try:
            if self._take_on(order, tally):
                load = getattr(self.embedder, "load", None)
                if load is not None:  # the model's load is no part of the rate (ETA)
                    load()
            while True:
                if should_stop and should_stop():
                    report.stopped = True
                    break
                batch = self._plan(order, report, tally, in_flight[0].ids if in_flight else frozenset())
                previous = None
                if in_flight is not None:
                    previous, embedding = in_flight
                    try:
                        vectors = embedding.result()
                    except Stopped:  # should_stop() said so between two model sub-batches
                        in_flight = None
                        report.stopped = True
                        break
                    in_flight = None
                if batch is not None:
                    in_flight = (batch, self._embed_in_background(batch, tally, should_stop))
                if previous is not None:
                    self._write(previous, vectors, report, tally, order)
                elif in_flight is None:
                    break
        except BaseException as exc:
            if in_flight is not None:  # its thread ends at its next model sub-batch, before the lock is let go
                also = in_flight[1].abandon()
                if also is not None and also is not exc:
                    exc.add_note(f"The batch being embedded meanwhile failed too: {also!r}")
            raise
        else:
            if in_flight is not None:  # stopped: the batch being embedded is dropped, nothing of it written
                also = in_flight[1].abandon()
                if also is not None:
                    raise also
        finally:
            published.close()
            self.store.db.execute(f"PRAGMA cache_size = {cache}")
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _take_on(self, order: WorkOrder, tally: RunTally) -> bool:
        """Read the pending notes the run has not seen; False when there are none."""
        fresh = order.refill()
        if fresh:
            tally.took_on({n.id: n.work_estimate for n in fresh}, *coverage(self.store.db))
        return bool(fresh)

    def _plan(self, order: WorkOrder, report: IndexReport, tally: RunTally, in_flight: frozenset[int]):
        """The next batch: first chunks of notes without a vector, else whole notes; None when nothing
        can be planned before the batch in flight is written (or nothing is left)."""
        while True:
            size = min(BATCH_INPUTS, order.batch_inputs * RAMP if order.batch_inputs else FIRST_BATCH_INPUTS)
            first_pass = True
            notes = order.first_pass(min(self.batch_nodes, size), BATCH_WORK)
            if not notes:
                first_pass = False
                notes = order.second_pass(size, self.batch_nodes, in_flight, BATCH_WORK)
            if not notes:
                if in_flight or not self._take_on(order, tally):
                    return None
                continue
            inputs = [order.inputs_of(n, first_pass) for n in notes]
            if len(notes) > 1 and not order.has_more(besides=notes, first_pass=first_pass):
                # the last batch: its end goes in a batch of its own
                tail = max(FIRST_BATCH_INPUTS, round(sum(inputs) * LAST_BATCH_SHARE))
                if sum(inputs) > 2 * tail:
                    keep = len(notes)
                    while sum(inputs[keep:]) < tail:
                        keep -= 1
                    order.give_back(notes[keep:], first_pass)
                    notes, inputs = notes[:keep], inputs[:keep]
            order.batch_inputs = sum(inputs)
            batch = self._plan_batch(notes, first_pass, order, report, tally)
            if batch is not None:
                return batch

    def _embed_in_background(self, batch: "_Batch", tally: RunTally, should_stop) -> BackgroundEmbedding:
        import numpy as np

        texts = list(batch.texts)
        reported = 0

        def on_fraction(fraction: float) -> None:
            nonlocal reported
            now = round(fraction * batch.work)
            tally.embedding(now - reported)
            reported = now

        def embed(progress):
            if not texts:
                return np.zeros((0, self.embedder.dimensions), np.float32)
            return self.embedder.embed(texts, progress=progress)

        tally.started_embedding()
        return BackgroundEmbedding(embed, on_fraction, should_stop)

    # -- one batch -------------------------------------------------------------------------------
    def embed_text_of_chunk(self, title: str, chunk: Chunk) -> str:
        """Chunks are embedded with the node's title in front, unless the chunk already starts with it
        or the title was made from the chunk's opening (`cairn add` without --title)."""
        return self._input(title.strip(), lambda: self._title_prefix(title), chunk)[0]

    def _title_prefix(self, title: str) -> tuple[str, int]:
        """The title as put in front of a chunk (cut at TITLE_PREFIX_TOKENS word pieces), with its word
        pieces; worked out once per note."""
        title = title.strip()
        tokens = self.chunker.count(title) if title else 0
        if tokens > TITLE_PREFIX_TOKENS:
            offsets = self.embedder.token_offsets(title)
            return title[: offsets[TITLE_PREFIX_TOKENS - 1][1]], TITLE_PREFIX_TOKENS
        return title, tokens

    @staticmethod
    def _input(title: str, prefix: Callable[[], tuple[str, int]], chunk: Chunk) -> tuple[str, int]:
        """A chunk's embedding input and the work it is (core/index/progress.py input_work, from its
        word pieces as counted: [CLS] and [SEP] included; a newline adds none). `prefix()` is asked
        only when the title goes in front (counting a title is a tokenizer call)."""
        if not title or chunk.text.lstrip().startswith(title) or title == title_from_text(chunk.text):
            return chunk.text, input_work(chunk.tokens + 2)  # the title is the chunk's own opening
        text, tokens = prefix()
        return f"{text}\n{chunk.text}", input_work(tokens + chunk.tokens + 2)

    def node_text(self, title: str, description: str, chunks: list[Chunk]) -> str:
        """The node-level vector's text: title, description and the start of the source (its first
        chunk). Without a description this is exactly the first chunk's embedding input, so a short
        note costs one pass through the model, not two."""
        first = chunks[0] if chunks else None
        if not description.strip():
            return self.embed_text_of_chunk(title, first) if first else title
        body = first.text if first else ""
        return "\n".join(p for p in (title.strip(), description.strip(), body) if p)

    def _plan_batch(self, notes, first_pass: bool, order: WorkOrder, report: IndexReport, tally: RunTally):
        """Read and chunk these notes (outside any transaction); None if none of them is left to do.
        In the first pass a note of several chunks gets its first chunk only; others go whole."""
        ids = [n.id for n in notes]
        found = {r["id"]: r for r in self.store.db.execute(
            "SELECT id, title, description, source, json_extract(metadata, '$.capture.page_starts') AS page_starts,"
            " json_extract(metadata, '$.capture.outline') AS outline,"
            " json_extract(metadata, '$.capture.kind') AS capture_kind"
            " FROM nodes WHERE id IN (SELECT value FROM json_each(?))"
            " AND chunk_status != 'indexed' AND chunk_status = 'pending'",
            (json.dumps(ids),),
        )}
        reusable = self._reusable_vectors([i for i in ids if i in found], self.embedder.name)
        plans: list[_NotePlan] = []
        texts: dict[str, int] = {}  # unique embedding input → position in the batch
        work = 0  # their work (word pieces, core/index/progress.py input_work)
        left: dict[int, int] = {}  # the work each note will still embed after this batch
        for node_id in ids:
            row = found.get(node_id)
            if row is None:  # indexed, deleted or failed meanwhile
                order.done.add(node_id)
                tally.dropped(node_id)
                continue
            try:
                # A paged document (a captured PDF) keeps its pages' offsets in metadata.capture.
                pages = json.loads(row["page_starts"]) if row["page_starts"] else None
                outline = json.loads(row["outline"]) if row["outline"] else None  # a PDF's bookmarks
                chunks = self.chunker.split(row["source"], pages, headings=has_headings(row["capture_kind"]),
                                            outline=outline if isinstance(outline, list) else None)
                title = row["title"].strip()
                # worked out once for this note's chunks, if any needs it (counting a title is a tokenizer call)
                prefix = functools.cache(lambda: self._title_prefix(title))
                inputs, sizes = zip(*[self._input(title, prefix, c) for c in chunks]) if chunks else ((), ())
                # without a description the node's text is its first chunk's input (node_text), already made
                ntext = (inputs[0] if inputs and not row["description"].strip()
                         else self.node_text(row["title"], row["description"], chunks))
                inputs, sizes = list(inputs), list(sizes)
                # the node text's work: its first chunk's when it is that input, else counted
                nsize = sizes[0] if inputs and ntext == inputs[0] else input_work(self.chunker.count(ntext) + 2)
            except Exception as exc:  # a bug or pathological text must not stop the queue
                self._mark_error(node_id, row, f"chunking failed: {exc}")
                report.errors += 1
                report.failures.append((node_id, str(exc)))
                order.done.add(node_id)
                tally.dropped(node_id)
                continue
            hashes = [_hash(t) for t in inputs]
            nhash = _hash(ntext)
            old = reusable.get(node_id, {})
            if first_pass and len(chunks) > 1:
                # Its first chunk now (meaning search reaches the note), the rest in the second pass.
                order.reached.add(node_id)
                later = [size for size, h in zip(sizes[1:], hashes[1:]) if h not in old]
                if nhash != hashes[0] and nhash not in old:
                    later.append(nsize)
                order.inputs_left[node_id] = len(later)
                left[node_id] = order.work_left[node_id] = sum(later)
                plan = _NotePlan(row, chunks[:1], inputs[:1], hashes[:1], None, None)
            else:
                order.done.add(node_id)
                left[node_id] = 0
                plan = _NotePlan(row, chunks, inputs, hashes, ntext, nhash)
            for text, h, size in zip(plan.inputs, plan.hashes, sizes):
                if h not in old and text not in texts:
                    texts[text] = len(texts)
                    work += size
            if plan.ntext is not None and plan.nhash not in old and plan.ntext not in texts:
                texts[plan.ntext] = len(texts)
                work += nsize
            plans.append(plan)
        if not plans:
            return None
        tally.planned_batch(work, left)
        return _Batch(plans, texts, work, frozenset(p.row["id"] for p in plans), reusable)

    def _write(self, batch: "_Batch", vectors, report: IndexReport, tally: RunTally, order: WorkOrder) -> None:
        """Swap the batch's chunks, FTS rows and vectors in one transaction: whole notes become
        indexed; a note given its first chunk only stays pending, reachable by meaning search."""
        model = self.embedder.name
        texts = batch.texts
        reusable = batch.reusable
        report.embedded += len(texts)
        stamp = clock.now()
        began = time.perf_counter()
        whole = covered = 0
        with self.store.db.transaction() as conn:
            # Only nodes that still hold the text that was embedded are written; others stay pending.
            current = {
                r["id"]: r for r in conn.execute(
                    "SELECT id, title, description, source, chunk_status FROM nodes"
                    " WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps([p.row["id"] for p in batch.plans]),),
                )
            }
            fresh = []
            for plan in batch.plans:
                row = plan.row
                now = current.get(row["id"])
                if now is None or now["chunk_status"] != "pending" or any(
                    now[k] != row[k] for k in ("title", "description", "source")
                ):
                    report.skipped += 1
                    order.done.add(row["id"])  # retried by the next run, not this one
                    tally.dropped(row["id"])
                else:
                    fresh.append(plan)
            if fresh:
                ids = json.dumps([p.row["id"] for p in fresh])
                conn.execute("DELETE FROM chunks WHERE node_id IN (SELECT value FROM json_each(?))", (ids,))
                conn.execute("DELETE FROM vec_nodes WHERE rowid IN (SELECT value FROM json_each(?))", (ids,))
                # This transaction holds the write lock, so chunk ids can be assigned here and the chunk
                # and vector rows inserted in bulk (AUTOINCREMENT's sequence is respected).
                next_id = conn.execute(
                    "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0),"
                    " COALESCE((SELECT MAX(id) FROM chunks), 0)) + 1"
                ).fetchone()[0]
                chunk_rows, vec_rows, node_rows, status_rows = [], [], [], []
                for plan in fresh:
                    row = plan.row
                    old = reusable.get(row["id"], {})
                    counted = row["id"] not in order.reached  # not reuse: this run's own first chunk
                    for chunk, text, h in zip(plan.chunks, plan.inputs, plan.hashes):
                        chunk_rows.append((next_id, row["id"], chunk.idx, chunk.text, chunk.start_char, chunk.end_char,
                                           json.dumps(list(chunk.heading_path), ensure_ascii=False), h, model, stamp,
                                           chunk.page))
                        if h in old:
                            report.reused += counted
                            blob = old[h]
                        else:
                            blob = vectors[texts[text]].tobytes()
                        vec_rows.append((next_id, row["id"], blob))
                        next_id += 1
                    if row["id"] in order.uncovered:
                        order.uncovered.discard(row["id"])
                        covered += 1
                    if plan.ntext is None:
                        continue  # a first chunk: the note stays pending
                    node_rows.append((row["id"], old[plan.nhash] if plan.nhash in old
                                      else vectors[texts[plan.ntext]].tobytes()))
                    status_rows.append((content_hash(row["title"], row["description"], row["source"]), row["id"]))
                    report.indexed += 1
                    report.chunks += len(plan.chunks)
                    whole += 1
                conn.executemany(
                    "INSERT INTO chunks(id, node_id, chunk_idx, text, start_char, end_char, heading_path,"
                    " content_hash, embedding_type, created_at, page) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    chunk_rows,
                )
                conn.executemany("INSERT INTO vec_chunks(rowid, node_id, embedding) VALUES (?, ?, ?)", vec_rows)
                conn.executemany("INSERT INTO vec_nodes(rowid, embedding) VALUES (?, ?)", node_rows)
                conn.executemany(
                    "UPDATE nodes SET chunk_status = 'indexed', content_hash = ?, index_error = NULL WHERE id = ?",
                    status_rows,
                )
                conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation'")
        tally.written(whole, len(texts), covered, batch.work, time.perf_counter() - began)

    def _reusable_vectors(self, node_ids: list[int], model: str) -> dict[int, dict[str, bytes]]:
        """Existing vectors of these nodes by the hash of their embedding input, to skip re-embedding."""
        rows = self.store.db.execute(
            "SELECT c.node_id, c.content_hash, v.embedding FROM chunks c JOIN vec_chunks v ON v.rowid = c.id"
            " WHERE c.node_id IN (SELECT value FROM json_each(?)) AND c.embedding_type = ?",
            (json.dumps(node_ids), model),
        ).fetchall()
        out: dict[int, dict[str, bytes]] = {}
        for r in rows:
            out.setdefault(r["node_id"], {})[r["content_hash"]] = r["embedding"]
        return out

    def _mark_error(self, node_id: int, row, message: str) -> None:
        with self.store.db.transaction() as conn:
            conn.execute(
                "UPDATE nodes SET chunk_status = 'error', index_error = ? WHERE id = ? AND title = ?"
                " AND description = ? AND source = ?",
                (message[:500], node_id, row["title"], row["description"], row["source"]),
            )


def _hash(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
