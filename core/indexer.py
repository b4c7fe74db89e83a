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
from core.chunker import Chunk, Chunker
from core.migrations import vec_tables
from core.store import Store, content_hash

# Titles longer than this many word pieces are cut in the chunk prefix, so the chunk keeps its room.
TITLE_PREFIX_TOKENS = 48
BATCH_NODES = 64

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

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("indexed", "errors", "skipped", "chunks", "embedded", "reused", "seconds")}


class Indexer:
    def __init__(self, store: Store, embedder=None, chunker: Chunker | None = None, batch_nodes: int = BATCH_NODES):
        if embedder is None:
            from core.embedder import shared_embedder

            embedder = shared_embedder()
        self.store = store
        self.embedder = embedder
        self.chunker = chunker or Chunker.for_embedder(embedder)
        self.batch_nodes = batch_nodes

    # -- queue -----------------------------------------------------------------------------------
    def pending_count(self) -> int:
        return self.store.db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status = 'pending'").fetchone()[0]

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
            limit: int | None = None) -> IndexReport:
        """Index pending nodes until none are left (or `limit` nodes, or `should_stop()`)."""
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
                break
            size = self.batch_nodes if limit is None else min(self.batch_nodes, limit - done)
            rows = self._next_batch(size, attempted)
            if not rows:
                break
            attempted.update(r["id"] for r in rows)
            self._index_batch(rows, report)
            done += len(rows)
            if progress:
                progress(min(done, max(total, done)), max(total, done))
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _next_batch(self, size: int, attempted: set[int]):
        # Nodes skipped because they changed mid-batch are retried by the next run, not this one,
        # so a node edited in a tight loop by another process cannot keep this run from finishing.
        rows = self.store.db.execute(
            "SELECT id, title, description, source FROM nodes WHERE chunk_status = 'pending'"
            " AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY id LIMIT ?",
            (json.dumps(sorted(attempted)), size),
        ).fetchall()
        return rows

    # -- one batch -------------------------------------------------------------------------------
    def embed_text_of_chunk(self, title: str, chunk: Chunk) -> str:
        """Chunks are embedded with the node's title in front (unless the chunk already starts with it)."""
        if not title or chunk.text.lstrip().startswith(title.strip()):
            return chunk.text
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

    def _index_batch(self, rows, report: IndexReport) -> None:
        import numpy as np

        model = self.embedder.name
        plans = []
        texts: dict[str, int] = {}  # unique embedding input → position in the batch
        for row in rows:
            try:
                chunks = self.chunker.split(row["source"])
                inputs = [self.embed_text_of_chunk(row["title"], c) for c in chunks]
                ntext = self.node_text(row["title"], row["description"], chunks)
            except Exception as exc:  # a bug or pathological text must not stop the queue
                self._mark_error(row["id"], row, f"chunking failed: {exc}")
                report.errors += 1
                report.failures.append((row["id"], str(exc)))
                continue
            hashes = [_hash(t) for t in inputs]
            reusable = self._reusable_vectors(row["id"], hashes, model)
            for text, h in zip(inputs, hashes):
                if h not in reusable:
                    texts.setdefault(text, len(texts))
            if _hash(ntext) not in reusable:
                texts.setdefault(ntext, len(texts))
            plans.append((row, chunks, inputs, hashes, reusable, ntext))
        if not plans:
            return
        vectors = self.embedder.embed(list(texts)) if texts else np.zeros((0, self.embedder.dimensions), np.float32)
        report.embedded += len(texts)
        stamp = clock.now()
        with self.store.db.transaction() as conn:
            for row, chunks, inputs, hashes, reusable, ntext in plans:
                current = conn.execute(
                    "SELECT title, description, source, chunk_status FROM nodes WHERE id = ?", (row["id"],)
                ).fetchone()
                if current is None or current["chunk_status"] != "pending" or any(
                    current[k] != row[k] for k in ("title", "description", "source")
                ):
                    report.skipped += 1
                    continue
                conn.execute("DELETE FROM chunks WHERE node_id = ?", (row["id"],))
                for chunk, text, h in zip(chunks, inputs, hashes):
                    cur = conn.execute(
                        "INSERT INTO chunks(node_id, chunk_idx, text, start_char, end_char, heading_path,"
                        " content_hash, embedding_type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (row["id"], chunk.idx, chunk.text, chunk.start_char, chunk.end_char,
                         json.dumps(list(chunk.heading_path), ensure_ascii=False), h, model, stamp),
                    )
                    if h in reusable:
                        blob = reusable[h]
                        report.reused += 1
                    else:
                        blob = vectors[texts[text]].tobytes()
                    conn.execute("INSERT INTO vec_chunks(rowid, node_id, embedding) VALUES (?, ?, ?)",
                                 (cur.lastrowid, row["id"], blob))
                conn.execute("DELETE FROM vec_nodes WHERE rowid = ?", (row["id"],))
                node_blob = reusable.get(_hash(ntext))
                if node_blob is None:
                    node_blob = vectors[texts[ntext]].tobytes()
                conn.execute("INSERT INTO vec_nodes(rowid, embedding) VALUES (?, ?)", (row["id"], node_blob))
                conn.execute(
                    "UPDATE nodes SET chunk_status = 'indexed', content_hash = ?, index_error = NULL WHERE id = ?",
                    (content_hash(row["title"], row["description"], row["source"]), row["id"]),
                )
                report.indexed += 1
                report.chunks += len(chunks)
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation'")

    def _reusable_vectors(self, node_id: int, hashes: list[str], model: str) -> dict[str, bytes]:
        if not hashes:
            return {}
        rows = self.store.db.execute(
            "SELECT c.content_hash, v.embedding FROM chunks c JOIN vec_chunks v ON v.rowid = c.id"
            " WHERE c.node_id = ? AND c.embedding_type = ?",
            (node_id, model),
        ).fetchall()
        wanted = set(hashes)  # the node text, when it equals a chunk's input, is among these
        return {r["content_hash"]: r["embedding"] for r in rows if r["content_hash"] in wanted}

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
