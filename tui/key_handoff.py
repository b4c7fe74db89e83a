"""Keys typed after a key that moves the keyboard go where it moved (issue 17).

Textual hands a key to the focused widget's queue and runs an app binding only when the key has
bubbled back up, and `Widget.focus()` itself waits for a later turn of the loop. So in a burst (a
fast typist, a paste, a laggy SSH link) the keys after `/` were given to the widget focused before
it: in tmux at 80x24 `/find` opened the search but `i` reached the Focus panel (the Integrate
dialog); at 130 columns `d` cycled the node list's dimension filter.

The app holds the keys that arrive after such a key and gives them, in order, once the keyboard
has moved (another widget or screen has the focus), or once nothing is left to do and it did not
move (the key had nothing to move: `ctrl+l` with the chat already focused), or after HOLD_AT_MOST
seconds whatever happens (a busy app still gets every key). Keys that move the keyboard: the
bindings with the ids in MOVERS (whatever keys the user's keymap gives them), `enter` on the node
list (opens the node in Focus, which takes the keyboard), `escape` while a dialog is open, and a
printable key that the node list types into the search box (type-to-search, issue 26: the rest of
the word follows it there). A printable key typed into a text field is typed, not a move.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from textual import events
from textual.widgets import Input

if TYPE_CHECKING:
    from textual.app import App

MOVERS = frozenset({"search_nodes", "quick_capture", "journal_today", "focus_chat", "toggle_viewer", "cycle_pane",
                    "help", "node_history", "neighbourhood", "nodes_to_list"})
HOLD_AT_MOST = 1.5  # seconds
POLL = 0.01  # seconds between looks at the focus while holding
QUIET_POLLS = 3  # looks with nothing queued anywhere before a hold ends without a move


def queues_empty(screen, *, with_self: bool) -> bool:
    """Whether no widget of `screen` (and the screen itself, `with_self`) has a message waiting, keys
    among them. Textual has no public way to ask; this is the one place that reads its queues."""
    return all(node._message_queue.empty() for node in screen.walk_children(with_self=with_self))


def _is_text_area(widget) -> bool:
    """Whether the widget is a TextArea, without importing it: Textual's TextArea module (and the
    tree-sitter bindings it loads) cost ~10 ms of the app's startup, and no TextArea can hold the
    keyboard before something has imported the module to build one."""
    module = sys.modules.get("textual.widgets._text_area")
    return module is not None and isinstance(widget, module.TextArea)


class KeyHandoff:
    def __init__(self, app: "App"):
        self.app = app
        self.held: list[events.Key] = []
        self._holding = False
        self._since = 0.0
        self._from: tuple = ()
        self._quiet = 0
        self._timer = None

    # -- what the app calls --------------------------------------------------------------------------
    def intercept(self, event: events.Key) -> bool:
        """True if the key is held for later; otherwise the app handles it now (and, for a key that
        moves the keyboard, the keys after it are held)."""
        if self._holding:
            self.held.append(event)
            return True
        if self.moves_keyboard(event):
            self._start()
        return False

    def moves_keyboard(self, event: events.Key) -> bool:
        app = self.app
        focused = app.screen.focused
        if event.is_printable and (isinstance(focused, Input) or _is_text_area(focused)):
            return False  # typed into the field
        if event.is_printable:
            from tui.widgets.node_browser import NodeList

            if isinstance(focused, NodeList) and focused.types_into_search(event):
                return True
        if event.key == "escape":
            from textual.screen import ModalScreen

            return isinstance(app.screen, ModalScreen)
        if event.key == "enter":
            from tui.widgets.node_browser import NodeBrowser

            return focused is not None and not isinstance(focused, Input) and any(
                isinstance(a, NodeBrowser) for a in focused.ancestors)
        active = app.screen.active_bindings.get(event.key)
        return active is not None and active.binding.id in MOVERS

    # -- holding -------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._holding = True
        self._since = time.monotonic()
        self._from = (self.app.screen, self.app.screen.focused)
        self._quiet = 0
        if self._timer is None:
            self._timer = self.app.set_interval(POLL, self._look, name="key-handoff")
        else:
            self._timer.resume()

    def _moved(self) -> bool:
        screen = self.app.screen
        return (screen, screen.focused) != self._from and screen.focused is not None

    def _idle(self) -> bool:
        """Nothing queued in the app or any widget of the current screen (the move, if any, is done)."""
        if not self.app._message_queue.empty():
            return False
        return queues_empty(self.app.screen, with_self=True)

    async def _look(self) -> None:
        if not self._holding:
            return
        if not self.app._screen_stack:  # the app is closing (its screens are gone): nothing to hand on
            self._holding = False
            self.held.clear()
            return
        if self._moved() or time.monotonic() - self._since > HOLD_AT_MOST:
            await self._release()
            return
        self._quiet = self._quiet + 1 if self._idle() else 0
        if self._quiet >= QUIET_POLLS:
            await self._release()

    async def _release(self) -> None:
        """Hand the held keys on in order; a held key that moves the keyboard starts a new hold for
        the keys after it."""
        self._holding = False
        if self._timer is not None:
            self._timer.pause()
        while self.held and not self._holding:
            event = self.held.pop(0)
            if self.moves_keyboard(event):
                self._start()
            await self.app.handle_key_now(event)
