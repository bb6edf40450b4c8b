"""Waiting for a followed recording to grow: one loop for every reader (XML, CSV, text logs)."""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT_SLICE = 0.25
"""Seconds between two looks at a followed file that has not grown (a pipe wakes at once)."""


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
