"""What the app's widgets use to reach core, from worker threads, without sharing a connection
unsafely: one store connection guarded by a lock (SQLite connections belong to one thread unless
their use is serialised), one searcher with the in-memory vector mirror, and the config."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from core import config as config_module
from core.graph.store import Store


class Services:
    def __init__(self, db_path: Path, config=None):
        self.db_path = Path(db_path)
        self.config = config or config_module.load()
        self._lock = threading.RLock()
        self._store = Store(self.db_path, shared=True)
        self._searcher = None

    @contextmanager
    def store(self) -> Iterator[Store]:
        """The store, for one short operation; call from worker threads (or briefly on the UI thread)."""
        with self._lock:
            yield self._store

    @contextmanager
    def store_if_free(self) -> Iterator[Store | None]:
        """The store if no worker holds it right now, else None: for a UI-thread read that must not
        wait (the caller falls back to a worker)."""
        if not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            yield self._store
        finally:
            self._lock.release()

    @contextmanager
    def searcher(self):
        """The searcher (vectors mirrored in memory once loaded); load it from a worker thread."""
        with self._lock:
            if self._searcher is None:
                from core.search.searcher import Searcher

                self._searcher = Searcher(self._store, mirror=True)
            yield self._searcher

    def close(self) -> None:
        with self._lock:
            self._store.close()
