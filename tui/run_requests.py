"""Requests for a background run that must not run twice at once, coalesced (the app's indexing).

A request while no run is going starts one. A request while one is going does not restart it: it asks
that run for one more pass once its current pass ends. The app's indexing used to cancel the run and
start a new one for every NodesChanged, and the database watcher's echo of the app's own write (or of
the run's own commits) arrives while the run embeds: the new run announced the same work again and the
cancelled one never said it had finished (issue 26, finding 4: "Indexing 14 notes…" twice for the guide).

Requests come from the UI thread, passes run in the worker's thread: the state is kept under a lock,
and a request that lands just as the last pass ends either gets its pass or starts a new run.
"""

from __future__ import annotations

import threading
from typing import Callable


class RunRequests:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = False
        self._again = False  # a request came while a pass was going

    def start(self) -> bool:
        """A request. True: no run is going and the caller starts one (which calls `serve`); False: the
        run going makes one more pass for it."""
        with self._lock:
            if self._running:
                self._again = True
                return False
            self._running = True
            return True

    def serve(self, one_pass: Callable[[], bool]) -> None:
        """In the run's thread: passes until none was asked for during the last one. `one_pass` returns
        False when it was stopped (the app closing); a stop or an error ends the run, and the next
        request starts a new one."""
        ended = False
        try:
            while one_pass():
                with self._lock:
                    if not self._again:
                        self._running, ended = False, True
                        return
                    self._again = False
        finally:
            if not ended:
                with self._lock:
                    self._running = self._again = False
