"""The header's line about meaning search (issues 26 and 27): how much of the graph it covers, and the
index run under way, the app's own or another process's (`cairn import` or `cairn index` in another
terminal), which the app follows instead of starting a run of its own beside it.

Everything here is called from the index worker's thread; the header is set on the UI thread.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from core.index.progress import IndexProgress, coverage_text, eta_text
from core.index.run_lock import Holder, holder

FOLLOW_SECONDS = 0.5  # how often another process's progress is read
SHOW_SECONDS = 0.25  # the header changes at most this often during the app's own run


def other_text(other: Holder) -> str:
    """'indexing in another process (pid 4242): 40 of 118, ETA 31 s' (fits the header at 80 columns)."""
    who = f"indexing in another process (pid {other.pid})" if other.pid else "indexing in another process"
    if other.progress is None:
        return who
    p = other.progress
    return f"{who}: " + ", ".join(x for x in (f"{p.notes_done:,} of {p.notes_total:,}", eta_text(p.eta)) if x)


def own_text(p: IndexProgress) -> str:
    """'meaning search covers 118 of 118 · 40 of 118 indexed, ETA 31 s' (the app's own run)."""
    return (f"meaning search covers {p.covered:,} of {p.graph_notes:,} · "
            + ", ".join(x for x in (f"{p.notes_done:,} of {p.notes_total:,} indexed", eta_text(p.eta)) if x))


class IndexStatus:
    def __init__(self, show: Callable[[str], None]):
        """`show(text)` puts the line in the header (from a worker thread)."""
        self._show = show
        self._shown_at = 0.0

    def coverage(self, covered: int, notes: int) -> None:
        self._show(coverage_text(covered, notes))

    def progress(self, p: IndexProgress) -> None:
        """The app's own run (throttled: the model's sub-batches come several times a second)."""
        now = time.monotonic()
        if now - self._shown_at >= SHOW_SECONDS:
            self._shown_at = now
            self._show(own_text(p))

    def follow(self, db: Path, cancelled: Callable[[], bool]) -> bool:
        """While another process holds the database's index lock, show its progress; returns whether
        there was one (then its notes are done, or it stopped and the caller indexes the rest)."""
        followed = False
        while not cancelled():
            other = holder(db)
            if other is None:
                break
            followed = True
            self._show(other_text(other))
            time.sleep(FOLLOW_SECONDS)
        return followed

    def other_now(self, db: Path) -> None:
        """Once, while the app's run waits for the lock: who holds it and how far it is."""
        now = time.monotonic()
        if now - self._shown_at < FOLLOW_SECONDS:
            return
        self._shown_at = now
        other = holder(db)
        if other is not None:
            self._show(other_text(other))
