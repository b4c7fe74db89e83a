"""A stop that does not wait on the server.

The SDKs read a streamed reply with blocking calls: opening the request waits for the response
headers, and each step of the stream waits for the next chunk. Checking the stop flag between
events therefore waits as long as the server is silent — up to the client's timeout (the
`chat.timeout` setting, 120 s by default) when it stalls. Here the blocking work runs in a reader
thread and the caller waits on a queue, looking at the stop flag every POLL_S seconds:

- `call(open_stream, cancel)` runs `open_stream()` (the request) and returns its result, or raises
  `Interrupted` when the stop comes first; a stream that opens after that is closed by the thread.
- `read(stream, cancel)` yields the stream's items, or raises `Interrupted` when the stop comes while
  it waits; the reader thread closes the stream when its next read returns (a stalled server: at
  its next chunk or the client's timeout), never from another thread while it reads.

Without a stop flag (`cancel` None) both are the plain blocking calls. A failure to close an
abandoned stream is logged (the reply was already stopped and kept).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Iterable, Iterator, TypeVar

POLL_S = 0.05  # how often a waiting caller looks at the stop flag

T = TypeVar("T")
log = logging.getLogger("cairn.providers")


class Interrupted(Exception):
    """The user stopped the request while it waited on the server."""


def _close(stream: object) -> None:
    close = getattr(stream, "close", None)
    if close is None:
        return
    try:
        close()
    except Exception as exc:  # the reply is already stopped and kept; only the connection is left
        log.warning("closing a stopped reply's stream failed: %s: %s", type(exc).__name__, exc)


def _wait(box: queue.Queue, cancel: threading.Event):
    while True:
        try:
            return box.get(timeout=POLL_S)
        except queue.Empty:
            if cancel.is_set():
                raise Interrupted from None


def call(open_stream: Callable[[], T], cancel: threading.Event | None) -> T:
    """`open_stream()`, interruptible by `cancel` (see the module docstring)."""
    if cancel is None:
        return open_stream()
    box: queue.Queue = queue.Queue()
    abandoned = threading.Event()

    def run() -> None:
        try:
            result = open_stream()
        except BaseException as exc:  # handed to the caller, which reports it
            box.put((False, exc))
            return
        box.put((True, result))
        if abandoned.is_set():
            _close(result)

    threading.Thread(target=run, daemon=True, name="cairn-provider-open").start()
    try:
        ok, value = _wait(box, cancel)
    except Interrupted:
        abandoned.set()
        try:  # it may have opened between the last look and now
            ok, value = box.get_nowait()
            if ok:
                _close(value)
        except queue.Empty:
            pass  # still opening: `run` closes it when it does
        raise
    if ok:
        return value
    raise value


def read(stream: Iterable[T], cancel: threading.Event | None) -> Iterator[T]:
    """The items of `stream`, interruptible by `cancel` (see the module docstring)."""
    if cancel is None:
        yield from stream
        return
    box: queue.Queue = queue.Queue()
    done = threading.Event()  # the caller stopped reading (a stop, an error, or it returned early)
    item, end, failed = object(), object(), object()

    def run() -> None:
        try:
            for value in stream:
                if done.is_set():
                    break
                box.put((item, value))
            else:
                box.put((end, None))
        except BaseException as exc:  # handed to the caller, which reports it
            box.put((failed, exc))
        finally:
            if done.is_set():
                _close(stream)

    threading.Thread(target=run, daemon=True, name="cairn-provider-read").start()
    try:
        while True:
            kind, value = _wait(box, cancel)
            if kind is item:
                yield value
            elif kind is end:
                return
            else:
                raise value
    finally:
        done.set()
