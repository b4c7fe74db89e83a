"""Toasts that never cover an open dialog (issue 26, finding 4).

Every toast goes through CairnApp.notify (tui/app.py), which mixes this in. A toast raised while a
modal screen is on top is held, not shown, unless that dialog raised it itself (a dialog's own
feedback, such as "Nothing accepted yet", must show while it is open); toasts already on screen when
a dialog opens are held too. When the screen under them comes back (the dialog closes), the held toasts
are shown with their full timeout. Errors are held like the rest: at 80×24 a toast rack of two or
three errors reaches the middle of the screen, over a dialog's buttons.

The toast's origin is the widget or screen whose notify called the app's (Widget.notify), or the
object whose method called app.notify directly; a worker's call_from_thread(app.notify) or an app
handler has no screen, and is held while any dialog is open.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from time import time
from uuid import uuid4

from textual.notifications import Notification, Notify
from textual.screen import ModalScreen, Screen


@dataclass
class Notice(Notification):
    """A Notification that remembers the screen it was raised on (None: the app, a worker)."""

    screen_id: int | None = None


def _origin_screen(caller) -> Screen | None:
    """The screen a notify call came from: the caller itself, or the screen its widget is on."""
    if isinstance(caller, Screen):
        return caller
    try:
        from textual.widget import Widget

        if isinstance(caller, Widget) and caller.is_attached:
            return caller.screen
    except Exception:  # a widget being removed: no screen to speak of
        return None
    return None


class HeldNotices:
    """Mixed into the App (before App): notify, _on_notify and _refresh_notifications hold toasts
    while a dialog someone else raised them over is open."""

    NOTIFICATION_TIMEOUT: float

    def _notice(self, message: str, title: str, severity, timeout: float | None, markup: bool, caller) -> None:
        screen = _origin_screen(caller)
        notice = Notice(message, title, severity, self.NOTIFICATION_TIMEOUT if timeout is None else timeout,
                        markup=markup, screen_id=id(screen) if screen is not None else None)
        self.post_message(Notify(notice))

    @staticmethod
    def _caller(depth: int = 2):
        """The `self` of the function that called notify (depth frames up), if it had one."""
        try:
            return sys._getframe(depth).f_locals.get("self")
        except ValueError:
            return None

    def _held_notices(self) -> list[Notification]:
        held = self.__dict__.get("_held")
        if held is None:
            held = self.__dict__["_held"] = []
        return held

    def _dialog(self) -> Screen | None:
        """The modal screen on top, if one is."""
        try:
            screen = self.screen
        except Exception:  # no screen yet, or closing
            return None
        return screen if isinstance(screen, ModalScreen) else None

    @staticmethod
    def _shown_on(notification: Notification, dialog: Screen | None) -> bool:
        return dialog is None or getattr(notification, "screen_id", None) == id(dialog)

    def _on_notify(self, event: Notify) -> None:
        if self._shown_on(event.notification, self._dialog()):
            super()._on_notify(event)
        else:
            self._held_notices().append(event.notification)

    def _refresh_notifications(self) -> None:
        dialog = self._dialog()
        held = self._held_notices()
        for notification in list(self._notifications):
            if not self._shown_on(notification, dialog):  # on screen when a dialog opened over it
                del self._notifications[notification]
                held.append(notification)
        for notification in list(held):
            if self._shown_on(notification, dialog):
                held.remove(notification)
                # Its full time from now, and a new identity: the screen under the dialog may still hold the
                # old toast, which would stand in for it and then expire.
                self._notifications.add(replace(notification, raised_at=time(), identity=str(uuid4())))
        super()._refresh_notifications()
