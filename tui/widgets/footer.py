"""The footer, rebuilt only when the keys it shows change.

Textual's Footer recomposes all its keys on every bindings update, and a Focus tab switch sends
about ten of them (focus moves, tabs activate, the view reloads): ~10 rebuilds and ~120 ms of work
after each switch at 160×48 (timed with wrappers around Footer.recompose on the bench's database). This one coalesces the updates of a frame into one,
compares what it would show with what it shows, and rebuilds only when they differ.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    _shown: tuple | None = None
    _pending = False

    def _signature(self) -> tuple:
        return tuple(
            (key, binding.key, binding.action, binding.description, enabled, tooltip, binding.group, binding.show)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
        )

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen or self._pending:
            return
        self._pending = True
        self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        signature = self._signature()
        if signature != self._shown:
            self._shown = signature
            await self.recompose()
