"""The header's line about meaning search (issues 26 and 27): how much of the graph it covers, and the
index run under way, the app's own or another process's (`cairn import` or `cairn index` in another
terminal), which the app follows instead of starting a run of its own beside it.

Everything here is called from the index run's threads (its worker, and its embedding thread through
the run's progress); the header is set on the UI thread, by a message that does not wait for it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from core.index.progress import IndexProgress, coverage_text, eta_text
from core.index.run_lock import Holder, holder

FOLLOW_SECONDS = 0.5  # how often another process's progress is read
SHOW_SECONDS = 0.25  # the header changes at most this often during the app's own run


# Textual's header keeps 8 columns for its icon and 10 on the right, and the title and " — " come first
# ("Cairn — "): what is left of the terminal's width for the line (54 at 80 columns).
HEADER_COLUMNS_TAKEN = 8 + 10 + len("Cairn — ")


def fit(variants: list[str], width: int | None) -> str:
    """The first variant the header shows whole at this terminal width, else the last (the shortest):
    at 80 columns a long line lost its ETA to the header's ellipsis (issue 26 walkthrough)."""
    if width is None:
        return variants[0]
    room = width - HEADER_COLUMNS_TAKEN
    return next((v for v in variants if len(v) <= room), variants[-1])


def other_text(other: Holder, width: int | None = None) -> str:
    """'indexing in another process (pid 4242): 40 of 118, ETA 31 s', shorter where the header is
    narrow ('indexing elsewhere (pid 4242): …', then without the pid)."""
    pid = f" (pid {other.pid})" if other.pid else ""
    counts = None
    if other.progress is not None:
        p = other.progress
        counts = ", ".join(x for x in (f"{p.notes_done:,} of {p.notes_total:,}", eta_text(p.eta)) if x)
    return fit([f"{who}: {counts}" if counts else who
                for who in (f"indexing in another process{pid}", f"indexing elsewhere{pid}", "indexing elsewhere")],
               width)


def own_text(p: IndexProgress, width: int | None = None) -> str:
    """'meaning search covers 118 of 118 · 40 of 118 indexed, ETA 31 s' (the app's own run); where the
    header is narrow the run's progress first, then the progress alone."""
    run = ", ".join(x for x in (f"{p.notes_done:,} of {p.notes_total:,} indexed", eta_text(p.eta)) if x)
    return fit([f"meaning search covers {p.covered:,} of {p.graph_notes:,} · {run}",
                f"{run} · {p.covered:,} of {p.graph_notes:,} searchable", run], width)


class IndexStatus:
    def __init__(self, show: Callable[[str], None], width: Callable[[], int | None] = lambda: None):
        """`show(text)` puts the line in the header (from a worker thread); `width()` is the terminal's."""
        self._show = show
        self._width = width
        self._shown_at = 0.0

    def coverage(self, covered: int, notes: int) -> None:
        """'meaning search covers 80 of 118 notes'; nothing for an empty graph."""
        self._show(coverage_text(covered, notes) if notes else "")

    def progress(self, p: IndexProgress) -> None:
        """The app's own run (throttled: the model's sub-batches come several times a second)."""
        now = time.monotonic()
        if now - self._shown_at >= SHOW_SECONDS:
            self._shown_at = now
            self._show(own_text(p, self._width()))

    def follow(self, db: Path, cancelled: Callable[[], bool]) -> bool:
        """While another process holds the database's index lock, show its progress; returns whether
        there was one (then its notes are done, or it stopped and the caller indexes the rest)."""
        followed = False
        while not cancelled():
            other = holder(db)
            if other is None:
                break
            followed = True
            self._show(other_text(other, self._width()))
            time.sleep(FOLLOW_SECONDS)
        return followed

    def other_now(self, db: Path) -> None:
        """While the app's run waits for the lock (at most every FOLLOW_SECONDS): who holds it and how far
        it is."""
        now = time.monotonic()
        if now - self._shown_at < FOLLOW_SECONDS:
            return
        self._shown_at = now
        other = holder(db)
        if other is not None:
            self._show(other_text(other, self._width()))
