"""Waiting for a followed recording to grow: one loop for every reader (XML, CSV, text logs),
and one way of saying that its first snapshot is awaited."""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT_SLICE = 0.25
"""Seconds between two looks at a followed file that has not grown (a pipe wakes at once)."""
_SAY_AFTER_S = 1.0
"""How long a recording's first bytes may take before the user is told they are awaited."""


class FirstWait:
    """Tells the user, once, when a followed recording's first snapshot (or first bytes)
    has not come within a second: ``waiting`` says what is being waited for."""

    def __init__(self, waiting: Callable[[], None] | None) -> None:
        self._waiting = waiting
        self._started = time.monotonic()

    def tick(self) -> None:
        """One more look found nothing: call ``waiting`` if a second has passed since this
        wait began and it has not been called yet."""
        if self._waiting is not None and time.monotonic() - self._started >= _SAY_AFTER_S:
            waiting, self._waiting = self._waiting, None
            waiting()


def wait_until(
    reached: Callable[[], bool],
    *,
    following: Callable[[], bool],
    pause: Callable[[float], None],
    timeout: float | None,
) -> bool:
    """Whether ``reached()`` comes true, looking again after each ``pause`` of at most
    ``WAIT_SLICE`` seconds while the file is ``following()``; False when it stops being
    followed or ``timeout`` seconds (None: no limit) pass first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not reached():
        if not following():
            return False
        seconds = WAIT_SLICE
        if deadline is not None:
            seconds = min(seconds, deadline - time.monotonic())
            if seconds <= 0:
                return False
        pause(seconds)
    return True
