"""The newest sample, handed from the sampling thread to the scrapes.

The sampler calls :meth:`LatestSample.take` with each snapshot that arrives; a scrape calls
:meth:`LatestSample.render`, which reads the newest one (one reference, swapped under a lock)
and never waits for the sampler: a driver call that hangs leaves the last sample served, its
age growing, and ``gputop_stale`` 1 once it is late.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gputop.model import Snapshot
from gputop.sinks.prometheus.health import GpuHealth, XidTally
from gputop.sinks.prometheus.labels import ProcessDetail
from gputop.sinks.prometheus.render import (
    CONTENT_TYPE,
    Exported,
    exposition,
    snapshot_families,
)
from gputop.sinks.prometheus.tracker import ExportTracker, GpuExtras


@dataclass(frozen=True, slots=True)
class _Taken:
    snapshot: Snapshot
    extras: Mapping[int, GpuExtras]
    arrived: float
    health: Mapping[int, GpuHealth]


class LatestSample:
    """The newest snapshot and its extras, rendered on demand."""

    def __init__(
        self,
        tracker: ExportTracker,
        *,
        host: str | None = None,
        fallback_host: str | None = None,
        detail: ProcessDetail = ProcessDetail.BASIC,
        stale_after: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Render with ``host`` as ``Hostname`` (None: each snapshot's own, else
        ``fallback_host``: dcgm-exporter always has the label) and ``detail`` per process;
        ``stale_after``: seconds without a new sample before it is stale
        (None: never, a recording holding its position)."""
        self._tracker = tracker
        self._host = host
        self._fallback_host = fallback_host
        self._detail = detail
        self._stale_after = stale_after
        self._clock = clock
        self._lock = threading.Lock()
        self._taken: _Taken | None = None
        self._xids = XidTally()

    def take(self, snapshot: Snapshot) -> None:
        """A new snapshot arrived (the sampler's thread only)."""
        taken = self._taken
        if taken is not None and taken.snapshot is snapshot:
            return  # the same one again (a failed poll, a replay at its end)
        arrived = self._clock()
        extras = self._tracker.update(snapshot, arrived)
        health = self._xids.update(snapshot)
        with self._lock:
            self._taken = _Taken(snapshot, extras, arrived, health)

    def exported(self) -> Exported | None:
        """What a scrape now shows; None before the first sample."""
        with self._lock:
            taken = self._taken
        if taken is None:
            return None
        age = max(0.0, self._clock() - taken.arrived)
        stale = self._stale_after is not None and age > self._stale_after
        return Exported(
            snapshot=taken.snapshot,
            extras=taken.extras,
            age_seconds=age,
            stale=stale,
            host=self._host or taken.snapshot.host or self._fallback_host,
            detail=self._detail,
            window_ms=self._tracker.window_ms,
            health=taken.health,
        )

    def render(self) -> tuple[bytes, str]:
        """The exposition of the newest sample and its content type."""
        exported = self.exported()
        if exported is None:
            return b"", CONTENT_TYPE
        return exposition(snapshot_families(exported)), CONTENT_TYPE
