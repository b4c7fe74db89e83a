"""How far an index run is, and how long it has left, from the work left rather than the notes left.

Notes differ a hundredfold in size (the Obsidian Tasks vault: 0 to 164 chunks a note), so a rate in
notes per second swung from 7.3 to 0.6 during one import and the ETA jumped 15 -> 42 -> 51 -> 41 s
(issue 26). The embedder's time follows the word pieces it reads, so the work is counted in word
pieces of embedding input (`input_work`: a long input's pieces weigh a little more): known once a
note is chunked (the chunker counts them: its chunks with their title prefix, and its node text),
estimated from the stored lengths before that. The rate is
the work done over the latter half of the time measured so far (measured from the second batch on:
the first is small and pays for the model's first runs). The first seconds of a run are slow — on the
Tasks vault about 60 % of the later rate, while the planner chunks every note for its first chunk
beside the model — and a rate since the start carried that into the ETA (+37 % at a tenth of the run,
bench/index_pipeline.py); the latter half forgets it as the run goes on and stays as smooth as the
run is long. The ETA is the work left at that rate, plus the writing of what the model has done and
is not written yet.

Also here: the sentences the command line and the app both print about a run (rates in units that
never read "0.0 nodes/s", and how much of the graph meaning search covers).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Callable

# No ETA before this share of the work is done, nor before this many seconds of it: the first
# sub-batches say little about the rest (their texts are the shortest of their batch).
ETA_AFTER_SHARE = 0.02
ETA_AFTER_SECONDS = 1.0
# The rate is measured over this share of the time measured so far, the latest part (at least
# ETA_AFTER_SECONDS): replayed once (a one-off script, not in bench/) on the progress events of three
# Tasks vault imports by bench/index_pipeline.py, the ETA's worst deviation
# between 10 % and 90 % of the run was 0.42-0.66 since the start, 0.17-0.26 over the latter half,
# 0.21-0.26 over the last third, 0.20-0.32 over the last two thirds.
RATE_WINDOW_SHARE = 0.5
# An input of L word pieces costs the model about L + L²/ATTENTION_TOKENS (attention grows with the
# square of the length): CPU per word piece measured at 11 pieces 111-152 µs, 67: 119, 131: 139,
# 193: 157-182 (512 texts of each length, 2 cores), so a long chunk costs ~1.3x a short one per piece.
ATTENTION_TOKENS = 400


def input_work(tokens: int) -> int:
    """The work of one embedding input of `tokens` word pieces ([CLS] and [SEP] included)."""
    return tokens + tokens * tokens // ATTENTION_TOKENS


@dataclass(frozen=True)
class IndexProgress:
    """One moment of an index run; plain values, so another process can read it (run_lock.publish)."""

    notes_done: int  # notes fully indexed by this run
    notes_total: int  # notes this run has taken on (pending when it began, and since)
    covered: int  # notes of the graph meaning search reaches now (at least one vector)
    graph_notes: int  # notes in the graph
    chunks_done: int  # embedding inputs this run embedded and wrote (each distinct text once; reused vectors not counted)
    work_done: int  # word pieces of embedding input embedded so far
    work_total: int  # word pieces of embedding input of the whole run (estimated where not chunked yet)
    seconds: float  # since the run began
    eta: float | None  # seconds left, once there is enough to say

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "IndexProgress":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


class WorkRate:
    """Rate and ETA of work measured in units (word pieces); `clock` is injectable for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.began: float | None = None  # when the measured work started
        self.base = 0  # the work done before it (not measured)
        self.done = 0
        self.total = 0
        self._seen: deque[tuple[float, int]] = deque()  # (time, work done) since the rate's window began

    def start(self, done_before: int = 0) -> None:
        """The measured work begins now, `done_before` units being done already."""
        if self.began is None:
            self.began, self.base = self.clock(), done_before
            self._seen.append((self.began, done_before))

    def update(self, done: int, total: int) -> None:
        if self.began is not None and done != self.done:
            self._seen.append((self.clock(), done))
        self.done, self.total = done, max(total, done)

    def elapsed(self) -> float:
        return 0.0 if self.began is None else self.clock() - self.began

    def per_second(self) -> float | None:
        """Units per second over the latter RATE_WINDOW_SHARE of the time measured so far; None until
        there is enough to say."""
        elapsed = self.elapsed()
        measured = self.done - self.base
        if (measured <= 0 or elapsed < ETA_AFTER_SECONDS or not self.total
                or measured < ETA_AFTER_SHARE * self.total):
            return None
        now = self.clock()
        window_start = now - max(ETA_AFTER_SECONDS, elapsed * RATE_WINDOW_SHARE)  # only moves on
        while len(self._seen) > 1 and self._seen[1][0] <= window_start:
            self._seen.popleft()  # the window starts at the last moment seen at or before its start
        since, done_then = self._seen[0]
        if now <= since or self.done <= done_then:
            return measured / elapsed
        return (self.done - done_then) / (now - since)

    def eta(self) -> float | None:
        rate = self.per_second()
        return None if rate is None else max(0.0, (self.total - self.done) / rate)


class RunTally:
    """The counts of one run, kept by its planning, embedding and writing threads, and the
    `IndexProgress` they make, handed to `on_progress` in order (under the tally's lock)."""

    def __init__(self, on_progress: Callable[[IndexProgress], None] | None, clock: Callable[[], float] = time.monotonic):
        self._lock = threading.Lock()
        self.on_progress = on_progress
        self.clock = clock
        self.began = clock()
        self.rate = WorkRate(clock)
        self.notes_total = self.notes_done = self.chunks_done = 0
        self.covered = self.graph_notes = 0
        self.planned = 0  # word pieces of the batches planned so far
        self.embedded = 0  # word pieces embedded so far
        self.written_work = 0  # of those, written
        self.write_seconds = 0.0  # the writes' time: the last batch's write comes after the model is done
        self._batches = 0  # sent to the model
        self._left: dict[int, int] = {}  # word pieces each note not yet planned whole will still embed
        self._left_sum = 0

    def took_on(self, estimates: dict[int, int], covered: int, graph_notes: int) -> None:
        """Notes joined the run, with their estimated work; the graph's coverage as read now."""
        with self._lock:
            for node_id, work in estimates.items():
                self._set_left(node_id, work)
            self.notes_total += len(estimates)
            self.covered, self.graph_notes = covered, graph_notes
            self._emit()

    def planned_batch(self, work: int, left: dict[int, int]) -> None:
        """A batch of `work` word pieces was planned; `left` is what each of its notes will still embed
        after it (0 once whole; a note's later chunks after its first)."""
        with self._lock:
            self.planned += work
            for node_id, rest in left.items():
                self._set_left(node_id, rest)

    def dropped(self, node_id: int) -> None:
        """A note left the run unplanned (it failed to chunk)."""
        with self._lock:
            self._set_left(node_id, 0)

    def embedding(self, done: int) -> None:
        """`done` more word pieces went through the model."""
        with self._lock:
            self.embedded += done
            self._emit()

    def started_embedding(self) -> None:
        """A batch goes to the model; the rate is measured from the second on."""
        with self._lock:
            self._batches += 1
            if self._batches == 2:
                self.rate.start(self.embedded)

    def written(self, notes: int, vectors: int, newly_covered: int, work: int = 0, seconds: float = 0.0) -> None:
        """A batch of `work` was written in `seconds`."""
        with self._lock:
            self.written_work += work
            self.write_seconds += seconds
            self.notes_done += notes
            self.chunks_done += vectors
            self.covered += newly_covered
            self._emit()

    def _set_left(self, node_id: int, work: int) -> None:
        self._left_sum += work - self._left.get(node_id, 0)
        if work:
            self._left[node_id] = work
        else:
            self._left.pop(node_id, None)

    def _progress(self) -> IndexProgress:
        total = self.planned + self._left_sum
        self.rate.update(self.embedded, total)
        return IndexProgress(notes_done=self.notes_done, notes_total=self.notes_total, covered=self.covered,
                             graph_notes=self.graph_notes, chunks_done=self.chunks_done, work_done=self.embedded,
                             work_total=max(total, self.embedded), seconds=round(self.clock() - self.began, 3),
                             eta=self._eta())

    def _eta(self) -> float | None:
        """The model's time left, and the writing of what it embedded and is not written yet (at the
        writes' pace so far): most of it overlaps the model, the last batch's does not."""
        eta = self.rate.eta()
        if eta is None or not self.written_work:
            return eta
        return eta + (self.embedded - self.written_work) * self.write_seconds / self.written_work

    def _emit(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self._progress())


def rate_text(count: int, seconds: float, unit: str) -> str | None:
    """'38 chunks/s', '2.5 chunks/s', '1 chunk every 4 s'; None when there is nothing sensible to say
    (nothing done, or under a second: 1 note in 0.02 s is no rate)."""
    if count <= 0 or seconds < 1.0:
        return None
    per_second = count / seconds
    if per_second >= 10:
        return f"{per_second:,.0f} {unit}s/s"
    if per_second >= 1:
        return f"{per_second:.1f} {unit}s/s"
    return f"1 {unit} every {_duration(seconds / count)}"


def eta_text(seconds: float | None) -> str | None:
    """'ETA 31 s'; None before there is one, and once nothing is left."""
    return None if seconds is None or seconds <= 0 else f"ETA {_duration(seconds)}"


def _duration(seconds: float) -> str:
    """'4 s', '2 min 05 s', '14 min', '1 h 02 min' (rounded up: an ETA of '0 s' while work remains
    reads wrong; past ten minutes the seconds are noise)."""
    s = max(1, math.ceil(seconds))
    if s < 60:
        return f"{s} s"
    if s < 600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 3600:
        return f"{math.ceil(s / 60)} min"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def coverage_text(covered: int, notes: int, noun: str = "note") -> str:
    """How much of the graph meaning search reaches: 'meaning search covers 80 of 118 notes'."""
    return f"meaning search covers {covered:,} of {notes:,} {noun}" + ("" if notes == 1 else "s")
