"""The order an index run takes pending notes in: coverage first, then completion (issue 27).

Meaning search finds a note by any one of its vectors, so a new import is embedded in two passes:
first the first chunk of every note that has no vector yet (the most recently changed first), which
makes each reachable by meaning search; then the rest of every pending note, in the same order. A
note whose first chunk is its only one is complete after the first pass. A note edited since it was
indexed keeps its old vectors until the second pass replaces them, so it is reachable already and
waits for the second pass.

"Recently changed" is the note file's modification time for a note that came from a vault folder
(an import stamps every note with the moment of the import, which says nothing), else the time
Cairn last saw the note change. A vault note edited in Cairn afterwards keeps its file's time until
the file is written again (a bound folder); with few pending notes the order matters little anyway.

The pending notes are read once, in order, when the run begins (one scan of the partial index on
chunk_status, not one per batch), and again when both passes have run dry, for notes that became
pending meanwhile. A note is taken at most once per pass within a run, so a note edited in a tight
loop by another process cannot keep the run from ending (it stays pending for the next run).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Sequence

from core.index.progress import input_work

# Estimated characters per chunk before a note is chunked (its title goes in front of each chunk).
CHARS_PER_CHUNK_ESTIMATE = 700
# Characters per word piece, for the work of a note not chunked yet: 3.6 in the Obsidian Tasks vault
# (markdown, code), 5.2 in plain English sentences; the chunker's counts replace it once chunked.
CHARS_PER_TOKEN = 4

RECENCY = ("COALESCE(strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(n.metadata, '$.vault.mtime'), 'unixepoch'),"
           " n.updated_at)")


@dataclass(frozen=True)
class PendingNote:
    id: int
    chunks_estimate: int  # embedding inputs, estimated from the text's length
    work_estimate: int  # its work (word pieces of embedding input, core/index/progress.py), estimated
    one_chunk: bool  # estimated to be one chunk: the first pass indexes it whole
    covered: bool  # already has a vector (older text's chunks, or a node vector): reachable now


def estimate(title_len: int, description_len: int, source_len: int) -> tuple[int, int]:
    """(inputs, word pieces) a note will send through the model, before it is chunked."""
    chunks = -(-source_len // CHARS_PER_CHUNK_ESTIMATE)  # ceiling
    chars = source_len + title_len * chunks
    inputs = chunks
    if description_len or not chunks:  # a node text of its own: title, description, start of the text
        chars += title_len + description_len + min(source_len, CHARS_PER_CHUNK_ESTIMATE)
        inputs += 1
    tokens = chars // CHARS_PER_TOKEN // max(inputs, 1) + 2  # an input's, on average
    return inputs, inputs * input_work(tokens)


class WorkOrder:
    """Hands out the notes of one run: `first_pass` (notes without a vector), then `second_pass`."""

    def __init__(self, db, limit: int | None = None):
        self.db = db
        self.limit = limit
        self._first: deque[PendingNote] = deque()
        self._rest: deque[PendingNote] = deque()
        self._deferred: list[PendingNote] = []  # in the second pass while their first chunk was in flight
        self.seen: set[int] = set()  # every note this run has taken on
        self.done: set[int] = set()  # planned whole, skipped or failed: not taken again this run
        self.reached: set[int] = set()  # first chunk planned by this run
        self.inputs_left: dict[int, int] = {}  # a reached note's later inputs, known from its chunking
        self.work_left: dict[int, int] = {}  # and their work (word pieces, core/index/progress.py)
        self.uncovered: set[int] = set()  # notes without any vector when taken on, until one is written
        self.batch_inputs = 0  # the inputs of the batch planned last (0: none yet; see indexer.RAMP)

    def refill(self) -> list[PendingNote]:
        """Read the pending notes this run has not seen yet, newest first; returns them."""
        room = None if self.limit is None else self.limit - len(self.seen)
        if room is not None and room <= 0:
            return []
        rows = self.db.execute(
            "SELECT n.id, length(n.title), length(n.description), length(n.source),"
            " EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = n.id)"
            " OR EXISTS (SELECT 1 FROM vec_nodes v WHERE v.rowid = n.id) AS covered"
            " FROM nodes n WHERE n.chunk_status != 'indexed' AND n.chunk_status = 'pending'"
            " AND n.id NOT IN (SELECT value FROM json_each(?))"
            f" ORDER BY {RECENCY} DESC, n.id DESC LIMIT ?",
            (json.dumps(sorted(self.seen)), -1 if room is None else room),
        ).fetchall()
        fresh = []
        for node_id, title_len, description_len, source_len, covered in rows:
            inputs, work = estimate(title_len or 0, description_len or 0, source_len or 0)
            note = PendingNote(node_id, inputs, work, (source_len or 0) <= CHARS_PER_CHUNK_ESTIMATE, bool(covered))
            fresh.append(note)
            self.seen.add(node_id)
            if not note.covered:
                self._first.append(note)
                self.uncovered.add(node_id)
            self._rest.append(note)
        return fresh

    def has_more(self, besides: Sequence[PendingNote] = (), first_pass: bool = False) -> bool:
        """Whether notes are queued still besides those being taken for a batch (in the first pass a
        note estimated to be one chunk is done by it; the first pass's finished notes are dropped)."""
        for queue in (self._first, self._rest):
            while queue and queue[0].id in self.done:
                queue.popleft()
        if self._first or self._deferred:
            return True
        taken = {n.id for n in besides if not first_pass or n.one_chunk}
        return any(n.id not in self.done and n.id not in taken for n in self._rest)

    def inputs_of(self, note: PendingNote, first_pass: bool) -> int:
        """The embedding inputs a batch takes for this note: its first chunk in the first pass, else
        what is left of it (known once its first chunk was planned), else the estimate."""
        return 1 if first_pass else max(1, self.inputs_left.get(note.id, note.chunks_estimate))

    def give_back(self, notes: list[PendingNote], first_pass: bool) -> None:
        """Put notes taken for a batch back at the head of their pass, in order (for a later batch)."""
        (self._first if first_pass else self._rest).extendleft(reversed(notes))

    def first_pass(self, max_notes: int, max_work: int) -> list[PendingNote]:
        """Up to `max_notes` notes without a vector, for their first chunk (one input each), up to about
        `max_work` (a first chunk's work estimated as the note's average input's)."""
        out = []
        work = 0
        while self._first and len(out) < max_notes:
            note = self._first.popleft()
            if note.id in self.done:
                continue
            needs = note.work_estimate // max(1, note.chunks_estimate)
            if out and work + needs > max_work:
                self._first.appendleft(note)
                break
            out.append(note)
            work += needs
        return out

    def second_pass(self, max_inputs: int, max_notes: int, in_flight: frozenset[int] | set[int],
                    max_work: int) -> list[PendingNote]:
        """Notes to index whole, up to about `max_inputs` embedding inputs and `max_work`; a note whose
        first chunk is still being embedded waits (its vector is reused once written, not embedded twice)."""
        out: list[PendingNote] = []
        inputs = work = 0
        self._rest.extendleft(reversed(self._deferred))  # they were ahead of the rest in the order
        self._deferred = []
        while self._rest and len(out) < max_notes:
            note = self._rest.popleft()
            if note.id in self.done:
                continue
            if note.id in in_flight:
                self._deferred.append(note)
                continue
            needs = self.inputs_of(note, first_pass=False)
            needs_work = self.work_left.get(note.id, note.work_estimate)
            if out and (inputs + needs > max_inputs or work + needs_work > max_work):
                self._rest.appendleft(note)
                break
            out.append(note)
            inputs += needs
            work += needs_work
        return out
