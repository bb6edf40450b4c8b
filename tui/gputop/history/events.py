"""The health events of a run, kept bounded beside the metric history.

Each snapshot carries the events that arrived since the one before (``Snapshot.events``);
:class:`EventHistory` keeps the newest :data:`EVENT_CAPACITY` of them, oldest first, and how
many came over the whole run (the alarms count them, so a burst is not lost when the oldest
events make room). Views get the kept events as one immutable tuple in each tick
(``Tick.events``), rebuilt only when an event arrives, so a screen that shows them can be
closed and opened again and still list them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable

from gputop.model.health import HealthEvent

EVENT_CAPACITY = 1000
"""Events kept: at 200 bytes each, 0.2 MB at most."""


class EventHistory:
    """The newest health events and how many came over the run; thread-safe."""

    def __init__(self, capacity: int = EVENT_CAPACITY) -> None:
        self._events: deque[HealthEvent] = deque(maxlen=capacity)
        self._kept: tuple[HealthEvent, ...] = ()
        self._total = 0
        self._lock = threading.Lock()

    def add(self, events: Iterable[HealthEvent]) -> None:
        """Keep ``events`` (oldest first), dropping the oldest past the capacity."""
        with self._lock:
            added = False
            for event in events:
                self._events.append(event)
                self._total += 1
                added = True
            if added:
                self._kept = tuple(self._events)

    def clear(self) -> None:
        """Forget everything (a replay seek rebuilds the history from its documents)."""
        with self._lock:
            self._events.clear()
            self._kept = ()
            self._total = 0

    @property
    def kept(self) -> tuple[HealthEvent, ...]:
        """The kept events, oldest first (the same tuple until one arrives)."""
        return self._kept

    @property
    def total(self) -> int:
        """Events seen over the run, those no longer kept included."""
        return self._total
