"""The footer: the keys that fit, whole, and rebuilt only when the keys it shows change.

Textual's Footer recomposes all its keys on every bindings update, and a Focus tab switch sends
about ten of them (focus moves, tabs activate, the view reloads): ~10 rebuilds and ~120 ms of work
after each switch at 160×48 (timed with wrappers around Footer.recompose on the bench's database). This one coalesces the updates of a frame into one,
compares what it would show with what it shows, and rebuilds only when they differ.

Textual's Footer shows every key in a row that scrolls sideways, so at 80 columns the last ones
went under the palette key, cut in the middle of a word (`^n Captur▏^p palette`, issue 26). This one
shows only the keys that fit whole, chosen in this order: f1 Help and f3 Next pane (at 80 columns
one pane shows at a time, and help lists every key), then the keys of where the keyboard is, left to
right (those in LATER last), then the app's other keys in KEEP order; a key that does not fit is left
out and the next one is tried. They show in their usual order. Every key left out is in f1 help and
the palette (ctrl+p).
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer as TextualFooter
from textual.widgets._footer import FooterKey

# The app's keys by binding id, kept first to last when the footer is short of room.
ESSENTIAL = ("help", "cycle_pane")
KEEP = ("quit", "search_nodes", "quick_capture", "toggle_viewer", "focus_chat")
# A pane's keys that have another way in sight: left/right on the Focus tab strip switch tabs too.
LATER = ("prev_tab", "next_tab")


def key_width(key_display: str, description: str) -> int:
    """The cells a FooterKey takes (Textual's CSS: the key padded 1 each side, the description 1 after)."""
    return cell_len(key_display) + cell_len(description) + 3 if description else cell_len(key_display)


def palette_width(key_display: str, description: str) -> int:
    """The palette key's cells, measured: as many as a key's (its border and right padding are drawn
    in the room of its key's padding and the description's)."""
    return key_width(key_display, description)


def fitting(keys: list[tuple[str, bool, int]], room: int) -> set[int]:
    """Which keys show: `keys` as (binding id, the app's?, width) in footer order; the indexes of those
    that fit in `room` cells, the essential first, then the others' in turn (see the module's note)."""
    def rank(i: int) -> tuple:
        ident, of_app, _ = keys[i]
        if ident in ESSENTIAL:
            return (0, ESSENTIAL.index(ident))
        if not of_app:
            return (1, ident in LATER, i)
        return (2, KEEP.index(ident) if ident in KEEP else len(KEEP), i)

    shown: set[int] = set()
    for i in sorted(range(len(keys)), key=rank):
        if keys[i][2] <= room:
            shown.add(i)
            room -= keys[i][2]
    return shown


class Footer(TextualFooter):
    _shown: tuple | None = None
    _pending = False

    def _signature(self) -> tuple:
        return (self._room(), *(
            (key, binding.key, binding.action, binding.description, enabled, tooltip, binding.group, binding.show)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
        ))

    def _room(self) -> int:
        return self.size.width or self.app.size.width

    def compose(self) -> ComposeResult:
        """Textual's keys (binding groups, which Cairn does not use, are not combined), those that fit."""
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        palette = None
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        by_action: dict[str, tuple] = {}
        for node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in by_action:
                by_action[binding.action] = (node, binding, enabled, tooltip)
        keys = [(node, binding, enabled, tooltip, self.app.get_key_display(binding))
                for node, binding, enabled, tooltip in by_action.values()]
        room = self._room()
        if palette is not None:
            room -= palette_width(self.app.get_key_display(palette[1]), palette[1].description)
        shown = fitting([(b.id or b.action, node is self.app, key_width(display, b.description))
                         for node, b, _, _, display in keys], room)
        for i, (_node, binding, enabled, tooltip, display) in enumerate(keys):
            if i in shown:
                yield FooterKey(binding.key, display, binding.description, binding.action, disabled=not enabled,
                                tooltip=tooltip).data_bind(compact=TextualFooter.compact)
        if palette is not None:
            _node, binding, enabled, tooltip = palette
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                            classes="-command-palette", disabled=not enabled,
                            tooltip=binding.tooltip or binding.description)

    def on_resize(self) -> None:
        """Another width may fit other keys."""
        if self._bindings_ready and self.is_attached and not self._pending:
            self._pending = True
            self.call_after_refresh(self._rebuild_if_changed)

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
