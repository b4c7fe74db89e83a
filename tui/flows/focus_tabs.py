"""The Focus tabs kept between runs (core/graph/focus_tabs.py holds them in the database).

`TabKeeper(app)`: `restore()` after the first frame reads the kept tabs in a worker and reopens them in
the same order with the same tab active, behind whatever holds the keyboard (the node list at start);
only the active tab reads its node at once, the others when first shown (NodeView `load_now`). When a
tab was opened before they arrive (the Getting started guide), the session has begun: none reopen.
`changed(focus)` keeps the tabs a moment after they change (one write for a burst of tab switches),
and `at_exit()` keeps the last state as the app closes. Nothing is kept before the restore has landed,
so a quit in the first moment never replaces the kept tabs with the few opened so far.
"""

from __future__ import annotations

from core.chat.focus import Focus

KEEP_DELAY = 1.0  # seconds after the last change; a crash loses at most this much


class TabKeeper:
    def __init__(self, app):
        self.app = app
        self.restored = False
        self._kept: Focus | None = None  # what the database holds (None: not known yet)
        self._latest: Focus | None = None
        self._timer = None
        self._closed = False  # the exit's write is done: nothing more is written

    def restore(self) -> None:
        self.app.run_worker(self._read, thread=True, group="focus-tabs", exit_on_error=False,
                            name="reopen the Focus tabs")

    def _read(self) -> None:
        from core.graph import focus_tabs

        with self.app.services.store() as store:
            tabs = focus_tabs.restore(store)
        self.app.call_from_thread(self._reopen, tabs)

    def _reopen(self, tabs) -> None:
        from tui.widgets.focus_panel import FocusPanel

        panels = self.app.query(FocusPanel)
        if not panels:
            return  # the app is closing
        panel = panels.first()
        self._kept = Focus(tuple(i for i, _ in tabs.open), tabs.primary)
        self.restored = True
        if panel.open_ids:
            return  # tabs opened before the kept ones arrived (the guide, a test): the session has begun
        for node_id, title in tabs.open:
            panel.open_node(node_id, title, take_keyboard=False, load_now=node_id == tabs.primary)
        if tabs.primary is not None:
            panel.open_node(tabs.primary, take_keyboard=False)

    def changed(self, focus: Focus) -> None:
        self._latest = focus
        if not self.restored or focus == self._kept:
            return
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_timer(KEEP_DELAY, self._keep_now)

    def _keep_now(self) -> None:
        self._timer = None
        focus = self._latest
        if focus is None or focus == self._kept:
            return
        self.app.run_worker(lambda: self._write(focus), thread=True, group="focus-tabs-keep", exclusive=True,
                            exit_on_error=False, name="keep the Focus tabs")

    def _write(self, focus: Focus, *, last: bool = False) -> None:
        from core.graph import focus_tabs

        with self.app.services.store() as store:
            if self._closed:
                return  # a worker late for the exit, whose own write has kept the newer state
            self._closed = last
            if focus != self._kept:
                focus_tabs.save(store, focus.open, focus.primary)
                self._kept = focus

    def at_exit(self) -> None:
        """On the app's unmount, before its store closes: keep the tabs as they are now."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.restored and self._latest is not None:
            self._write(self._latest, last=True)
