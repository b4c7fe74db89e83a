"""One batch embedded on a thread of its own, while the index run writes the batch before it.

onnxruntime releases the GIL while the model runs (and tokenizers while it encodes), so the run's
SQLite writes, its next batch's chunking and the model overlap instead of taking turns (issue 27:
the run waited on SQLite between batches at 0.73 of the embedder's own speed). At most one batch is
embedded at a time: the run starts the next one only after taking this one's vectors.

`stop` is asked after each model sub-batch; when it says so the embedding ends there with `Stopped`,
and what it had embedded is dropped (nothing of the batch was written). Whatever the embedding raised
is raised again by `result()` in the run's thread, never lost.

The run's thread waits for the embedding on an Event, not with Thread.join: a join that Ctrl-C
interrupts leaves Python 3.11 taking the thread for stopped (threading's _wait_for_tstate_lock then
releases the lock the running thread holds), so the join in `abandon()` returned at once and the
process exited under a running model: onnxruntime aborted it ("terminate called without an active
exception", exit status 134) instead of `cairn import` saying it was interrupted.
"""

from __future__ import annotations

import threading
from typing import Callable


class Stopped(Exception):
    """The batch was abandoned by a stop; nothing of it was written."""


class BackgroundEmbedding:
    def __init__(self, embed: Callable[[Callable[[float], None]], object], on_fraction: Callable[[float], None],
                 stop: Callable[[], bool] | None = None):
        """Run `embed(progress)` on a new thread; `on_fraction(f)` after each model sub-batch with
        the share of the batch embedded so far."""
        self._embed = embed
        self._on_fraction = on_fraction
        self._stop = stop
        self._abandoned = threading.Event()
        self._ended = threading.Event()
        self._vectors = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="cairn-index-embedding", daemon=True)
        self._thread.start()

    def _progress(self, fraction: float) -> None:
        self._on_fraction(fraction)
        if self._abandoned.is_set() or (self._stop is not None and self._stop()):
            raise Stopped()

    def _work(self) -> None:
        try:
            self._vectors = self._embed(self._progress)
        except BaseException as exc:  # handed to the run's thread by result() or abandon()
            self._error = exc
        finally:
            self._ended.set()

    def _wait(self) -> None:
        """Until the embedding has ended (see the module's docstring for why not Thread.join)."""
        self._ended.wait()
        self._thread.join()  # the thread's last steps after the Event: a moment

    def result(self):
        """The vectors, once embedded; raises what the embedding raised (Stopped after a stop)."""
        self._wait()
        if self._error is not None:
            raise self._error
        return self._vectors

    def abandon(self) -> BaseException | None:
        """Stop at the next model sub-batch and wait for the thread; returns what it raised, unless
        that is the stop itself."""
        self._abandoned.set()
        self._wait()
        return None if isinstance(self._error, Stopped) else self._error
