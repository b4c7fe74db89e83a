"""The pending queue: chunk and embed nodes whose text changed, in resumable batches.

A node is `pending` from the moment its title, description or source changes. `Indexer.run` reads a
batch of pending nodes, chunks and embeds them outside any transaction, then swaps each node's
chunks, FTS rows and vectors in one short write transaction, but only if the node still has the text
that was embedded (another process may have edited it meanwhile; then it stays pending). Killing the
process at any point loses nothing: uncommitted work is rolled back and the node is still pending.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

from core import clock
from core.index.chunker import Chunk, Chunker, has_headings
from core.graph.migrations import vec_tables
from core.graph.store import Store, content_hash, title_from_text

# Titles longer than this many word pieces are cut in the chunk prefix, so the chunk keeps its room.
TITLE_PREFIX_TOKENS = 48
# A batch is filled up to about this many embedding inputs (estimated from text length) and at
# most BATCH_NODES nodes: big enough that sorting by length keeps padding low (measured: 64 fixed
# nodes ran at 0.54x of raw embedding speed, 256 inputs ~0.8x, 512 ~0.9x), small enough that a kill
# loses little work; progress moves inside a batch as sub-batches are embedded.
BATCH_INPUTS = 512
BATCH_NODES = 1024
CHARS_PER_CHUNK_ESTIMATE = 700

Progress = Callable[[int, int], None]


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
            limit: int | None = None, on_wait: Callable[[], None] | None = None) -> IndexReport:
        """Index pending nodes until none are left (or `limit` nodes, or `should_stop()`, asked between
        batches). One run at a time per database (core/index/run_lock.py): while another holds it this
        waits (`on_wait()` says so once); stopped while waiting, it returns with `busy` set."""
        from core.index.run_lock import held

        with held(self.store.path, should_stop=should_stop, on_wait=on_wait) as mine:
            if not mine:
                return IndexReport(busy=True)
            return self._run(progress, should_stop, limit)

    def _run(self, progress, should_stop, limit) -> IndexReport:
        self.ensure_embedder()
        report = IndexReport()
        started = time.perf_counter()
        total = self.pending_count() if limit is None else min(limit, self.pending_count())
        done = 0
        attempted: set[int] = set()
        if progress:
            progress(0, total)
        while limit is None or done < limit:
            if should_stop and should_stop():
                report.stopped = True
                break
            size = self.batch_nodes if limit is None else min(self.batch_nodes, limit - done)
            rows = self._next_batch(size, attempted)
            if not rows:
                break
            attempted.update(r["id"] for r in rows)
            on_embedded = None
            if progress:
                def on_embedded(fraction: float, base: int = done, size: int = len(rows)) -> None:
                    # Embedding is most of the work; committed at the end of the batch.
                    progress(base + int(fraction * size * 0.95), max(total, base + size))
            self._index_batch(rows, report, on_embedded)
            done += len(rows)
            if progress:
                progress(min(done, max(total, done)), max(total, done))
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _next_batch(self, size: int, attempted: set[int]):
        # Nodes skipped because they changed mid-batch are retried by the next run, not this one,
        # so a node edited in a tight loop by another process cannot keep this run from finishing.
        sizes = self.store.db.execute(
            "SELECT id, length(source) FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'pending'"
            " AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY id LIMIT ?",
            (json.dumps(sorted(attempted)), size),
        ).fetchall()
        chosen, inputs = [], 0
        for node_id, length in sizes:
            estimate = 1 + (length or 0) // CHARS_PER_CHUNK_ESTIMATE
            if chosen and inputs + estimate > BATCH_INPUTS:
                break
            chosen.append(node_id)
            inputs += estimate
        if not chosen:
            return []
        return self.store.db.execute(
            "SELECT id, title, description, source, json_extract(metadata, '$.capture.page_starts') AS page_starts,"
            " json_extract(metadata, '$.capture.outline') AS outline,"
            " json_extract(metadata, '$.capture.kind') AS capture_kind"
            " FROM nodes WHERE id IN (SELECT value FROM json_each(?))"
            " AND chunk_status != 'indexed' AND chunk_status = 'pending' ORDER BY id",
            (json.dumps(chosen),),
        ).fetchall()

    # -- one batch -------------------------------------------------------------------------------
    def embed_text_of_chunk(self, title: str, chunk: Chunk) -> str:
        """Chunks are embedded with the node's title in front, unless the chunk already starts with it
        or the title was made from the chunk's opening (`cairn add` without --title)."""
        title = title.strip()
        if not title or chunk.text.lstrip().startswith(title) or title == title_from_text(chunk.text):
            return chunk.text  # the title is the chunk's own opening (or was made from it)
        prefix = title
        if self.chunker.count(title) > TITLE_PREFIX_TOKENS:
            offsets = self.embedder.token_offsets(title)
            prefix = title[: offsets[TITLE_PREFIX_TOKENS - 1][1]]
        return f"{prefix}\n{chunk.text}"

    def node_text(self, title: str, description: str, chunks: list[Chunk]) -> str:
        """The node-level vector's text: title, description and the start of the source (its first
        chunk). Without a description this is exactly the first chunk's embedding input, so a short
        note costs one pass through the model, not two."""
        first = chunks[0] if chunks else None
        if not description.strip():
            return self.embed_text_of_chunk(title, first) if first else title
        body = first.text if first else ""
        return "\n".join(p for p in (title.strip(), description.strip(), body) if p)

    def _index_batch(self, rows, report: IndexReport, on_embedded: Callable[[float], None] | None = None) -> None:
        import numpy as np

        model = self.embedder.name
        reusable = self._reusable_vectors([r["id"] for r in rows], model)
        plans = []
        texts: dict[str, int] = {}  # unique embedding input → position in the batch
        for row in rows:
            try:
                # A paged document (a captured PDF) keeps its pages' offsets in metadata.capture.
                pages = json.loads(row["page_starts"]) if row["page_starts"] else None
                outline = json.loads(row["outline"]) if row["outline"] else None  # a PDF's bookmarks
                chunks = self.chunker.split(row["source"], pages, headings=has_headings(row["capture_kind"]),
                                            outline=outline if isinstance(outline, list) else None)
                inputs = [self.embed_text_of_chunk(row["title"], c) for c in chunks]
                ntext = self.node_text(row["title"], row["description"], chunks)
            except Exception as exc:  # a bug or pathological text must not stop the queue
                self._mark_error(row["id"], row, f"chunking failed: {exc}")
                report.errors += 1
                report.failures.append((row["id"], str(exc)))
                continue
            hashes = [_hash(t) for t in inputs]
            old = reusable.get(row["id"], {})
            for text, h in zip(inputs, hashes):
                if h not in old:
                    texts.setdefault(text, len(texts))
            nhash = _hash(ntext)
            if nhash not in old:
                texts.setdefault(ntext, len(texts))
            plans.append((row, chunks, inputs, hashes, ntext, nhash))
        if not plans:
            return
        if texts:
            vectors = self.embedder.embed(list(texts), progress=on_embedded)
        else:
            vectors = np.zeros((0, self.embedder.dimensions), np.float32)
        report.embedded += len(texts)
        stamp = clock.now()
        with self.store.db.transaction() as conn:
            # Only nodes that still hold the text that was embedded are written; others stay pending.
            current = {
                r["id"]: r for r in conn.execute(
                    "SELECT id, title, description, source, chunk_status FROM nodes"
                    " WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps([p[0]["id"] for p in plans]),),
                )
            }
            fresh = []
            for plan in plans:
                row = plan[0]
                now = current.get(row["id"])
                if now is None or now["chunk_status"] != "pending" or any(
                    now[k] != row[k] for k in ("title", "description", "source")
                ):
                    report.skipped += 1
                else:
                    fresh.append(plan)
            if not fresh:
                return
            ids = json.dumps([p[0]["id"] for p in fresh])
            conn.execute("DELETE FROM chunks WHERE node_id IN (SELECT value FROM json_each(?))", (ids,))
            conn.execute("DELETE FROM vec_nodes WHERE rowid IN (SELECT value FROM json_each(?))", (ids,))
            # This transaction holds the write lock, so chunk ids can be assigned here and the chunk
            # and vector rows inserted in bulk (AUTOINCREMENT's sequence is respected).
            next_id = conn.execute(
                "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0),"
                " COALESCE((SELECT MAX(id) FROM chunks), 0)) + 1"
            ).fetchone()[0]
            chunk_rows, vec_rows, node_rows, status_rows = [], [], [], []
            for row, chunks, inputs, hashes, ntext, nhash in fresh:
                old = reusable.get(row["id"], {})
                for chunk, text, h in zip(chunks, inputs, hashes):
                    chunk_rows.append((next_id, row["id"], chunk.idx, chunk.text, chunk.start_char, chunk.end_char,
                                       json.dumps(list(chunk.heading_path), ensure_ascii=False), h, model, stamp,
                                       chunk.page))
                    if h in old:
                        report.reused += 1
                        blob = old[h]
                    else:
                        blob = vectors[texts[text]].tobytes()
                    vec_rows.append((next_id, row["id"], blob))
                    next_id += 1
                node_rows.append((row["id"], old[nhash] if nhash in old else vectors[texts[ntext]].tobytes()))
                status_rows.append((content_hash(row["title"], row["description"], row["source"]), row["id"]))
                report.indexed += 1
                report.chunks += len(chunks)
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
