"""History of every GPU's metrics: bounded rings keyed by (GPU, metric), plus immutable views.

Only the poller thread appends or rebuilds; the UI reads the :class:`HistoryView` carried by
each tick (copies, so the UI never sees a ring being written). ``copy_series`` is the one
method safe to call from another thread: it takes the store's lock.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from gputop.history.metrics import Metric, gpu_key, metric_value
from gputop.history.ring import Ring
from gputop.model import Snapshot

DEFAULT_CAPACITY = 3600
"""Samples kept per series: one hour at the default 1 s interval."""

DEFAULT_VIEW_WIDTH = 256
"""Samples each tick's view carries per series: wider than any sparkline we draw."""

MAX_SERIES_KEYS = 64
"""GPUs remembered at most; keys not seen for longest are dropped first past this."""

Series = Sequence[float]
"""Oldest first; NaN marks a gap (GPU absent, lost, or value not reported).

Views hand out private ``array('f')`` copies: copying is a C-level slice, so a tick's view
costs microseconds. Treat them as read-only."""


@dataclass(frozen=True, slots=True)
class HistoryView:
    """The newest samples of every series at one tick; immutable and safe to share."""

    series_by_key: Mapping[tuple[str, Metric], Series] = field(default_factory=dict)
    length: int = 0
    """How many ticks the store holds (capped at its capacity)."""

    def series(self, key: str, metric: Metric) -> Series:
        """The recent samples of ``metric`` for the GPU filed under ``key``; empty when none."""
        return self.series_by_key.get((key, metric), _EMPTY)


EMPTY_VIEW = HistoryView()
_EMPTY: Series = array("f")


class HistoryStore:
    """Bounded per-GPU, per-metric rings, appended once per tick and rebuilt on seeks."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        metrics: Sequence[Metric] = tuple(Metric),
        view_width: int = DEFAULT_VIEW_WIDTH,
        max_keys: int = MAX_SERIES_KEYS,
    ) -> None:
        """Create an empty store.

        Args:
            capacity: samples kept per series.
            metrics: which metrics to track.
            view_width: samples per series copied into each view.
            max_keys: GPUs remembered at most.
        """
        self._capacity = capacity
        self._metrics = tuple(metrics)
        self._view_width = view_width
        self._max_keys = max_keys
        self._rings: dict[str, dict[Metric, Ring]] = {}
        self._last_seen: dict[str, int] = {}
        self._times = Ring(capacity, "d")
        self._ticks = 0
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """Samples kept per series."""
        return self._capacity

    def __len__(self) -> int:
        return len(self._times)

    def gpu_keys(self) -> list[str]:
        """GPU keys with history, in first-seen order."""
        return list(self._rings)

    def append(self, snapshot: Snapshot) -> None:
        """Record one tick: a sample per GPU and metric; GPUs not in ``snapshot`` get a gap."""
        with self._lock:
            self._append(snapshot)

    def _append(self, snapshot: Snapshot) -> None:
        self._ticks += 1
        seen: set[str] = set()
        for gpu in snapshot.gpus:
            key = gpu_key(gpu)
            rings = self._rings.get(key)
            if rings is None:
                rings = self._new_key(key)
            self._last_seen[key] = self._ticks
            seen.add(key)
            for metric, ring in rings.items():
                ring.append(metric_value(gpu, metric))
        for key, rings in self._rings.items():
            if key not in seen:
                for ring in rings.values():
                    ring.append(None)
        stamp = snapshot.timestamp
        self._times.append(None if stamp is None else stamp.timestamp())

    def _new_key(self, key: str) -> dict[Metric, Ring]:
        if len(self._rings) >= self._max_keys:
            stalest = min(self._last_seen, key=self._last_seen.__getitem__)
            del self._rings[stalest]
            del self._last_seen[stalest]
        # A GPU that appears mid-history gets gaps for the ticks before it, so every
        # series of the store lines up on the same time axis.
        gaps = len(self._times)
        rings = {metric: Ring(self._capacity, gaps=gaps) for metric in self._metrics}
        self._rings[key] = rings
        return rings

    def drop_last(self) -> None:
        """Forget the newest tick of every series: a replay stepped back by one."""
        with self._lock:
            if not len(self._times):
                return
            self._times.drop_last()
            for rings in self._rings.values():
                for ring in rings.values():
                    ring.drop_last()

    def rebuild(self, snapshots: Iterable[Snapshot]) -> None:
        """Forget everything and replay ``snapshots`` (oldest first): used after a seek."""
        with self._lock:
            self._rings.clear()
            self._last_seen.clear()
            self._times.clear()
            self._ticks = 0
            for snapshot in snapshots:
                self._append(snapshot)

    def view(
        self, width: int | None = None, metrics: Iterable[Metric] | None = None
    ) -> HistoryView:
        """A copy of the newest ``width`` samples (default: the view width) of ``metrics``."""
        n = self._view_width if width is None else width
        wanted = self._metrics if metrics is None else tuple(metrics)
        with self._lock:
            data = {
                (key, metric): rings[metric].latest(n)
                for key, rings in self._rings.items()
                for metric in wanted
                if metric in rings
            }
            return HistoryView(data, len(self._times))

    def copy_series(self, key: str, metric: Metric, limit: int | None = None) -> Series:
        """Up to ``limit`` newest samples (all when None) of one series; thread-safe."""
        with self._lock:
            rings = self._rings.get(key)
            if rings is None or metric not in rings:
                return ()
            return rings[metric].latest(limit)

    def timestamps(self, limit: int | None = None) -> tuple[datetime | None, ...]:
        """When each stored tick was taken (local time), oldest first; thread-safe."""
        with self._lock:
            values = self._times.latest(limit)
        return tuple(None if math.isnan(v) else datetime.fromtimestamp(v) for v in values)
