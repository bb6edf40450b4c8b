"""Toasts that replace each other: one on screen per kind of message.

``notify`` stacks a new toast for every call, so a key held down (``+``, ``k`` in a replay)
or a stream of notes piles toasts up the screen until they cover the header. Here a toast of
a kind takes the place of the previous toast of that kind.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from textual.app import App
from textual.notifications import Notification, Notify, SeverityLevel

from gputop.ui.compat import withdraw_notification

_SHOWN: WeakKeyDictionary[App[Any], dict[str, Notification]] = WeakKeyDictionary()


def toast(
    app: App[Any],
    kind: str,
    message: str,
    *,
    title: str = "",
    severity: SeverityLevel = "information",
    timeout: float | None = None,
    markup: bool = False,
) -> None:
    """Show ``message``, replacing the toast of the same ``kind`` if one is still up."""
    shown = _SHOWN.setdefault(app, {})
    before = shown.get(kind)
    if before is not None:
        withdraw_notification(app, before)
    notification = Notification(
        message,
        title,
        severity,
        app.NOTIFICATION_TIMEOUT if timeout is None else timeout,
        markup=markup,
    )
    shown[kind] = notification
    app.post_message(Notify(notification))
