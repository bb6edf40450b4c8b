"""History of every GPU's metrics: two tiers of bounded rings keyed by (GPU, metric).

The fine tier keeps every tick (an hour and a minute at 1 s). The coarse tier keeps one point
a minute (``bucket_seconds``) with the minimum, mean and maximum of each metric over that
minute, for a day (``coarse_capacity``), so a window reaches back 24 h in bounded memory. A
bucket is summed up from the fine rings when the first tick of the next minute arrives, so the
coarse tier costs nothing on the other ticks.

Memory grows with the run up to a bound fixed by the capacities, whatever the run's length:
per GPU and metric 4 bytes a tick and 12 a bucket, plus 8 bytes a tick's time and 12 a bucket's
start and weight, for at most ``max_keys`` GPUs. :func:`memory_bound` works it out: 3.9 MB for
8 GPUs and the 15 metrics, 31 MB at the limit of 64 GPUs.

Only the poller thread appends or rebuilds. The UI reads the :class:`HistoryView` carried by
each tick (copies, so it never sees a ring being written), or a :class:`HistoryWindow` through
the :class:`HistoryReader` the tick carries, which copies under the store's lock.
"""

from __future__ import annotations

import bisect
import math
import threading
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop.history.events import EventHistory
from gputop.history.metrics import FIELD_READERS, Metric, Reader, Series, gpu_key
from gputop.history.ring import Ring
from gputop.model import Snapshot
from gputop.model.health import HealthEvent

if TYPE_CHECKING:
    from gputop.history.window import HistoryWindow

DEFAULT_CAPACITY = 3660
"""Ticks kept whole per series: an hour and a minute at the default 1 s interval, so that the
1 h window is whole ticks (a window's start never falls inside a bucket still in the rings)."""

BUCKET_SECONDS = 60.0
"""Width of a coarse point: ticks within one minute (of the epoch) are summed up together."""

COARSE_CAPACITY = 1440
"""Coarse points kept per series: a day of minutes."""

DEFAULT_VIEW_WIDTH = 256
"""Samples each tick's view carries per series: wider than any sparkline we draw."""

MAX_SERIES_KEYS = 64
"""GPUs remembered at most; keys not seen for longest are dropped first past this."""


def memory_bound(
    capacity: int = DEFAULT_CAPACITY,
    coarse_capacity: int = COARSE_CAPACITY,
    metrics: int = len(Metric),
    keys: int = MAX_SERIES_KEYS,
) -> int:
    """Bytes the rings of a store hold at most (buffers only, not Python's object headers)."""
    per_key = metrics * (4 * capacity + 3 * 4 * coarse_capacity)
    return keys * per_key + 8 * capacity + (8 + 4) * coarse_capacity


@dataclass(frozen=True, slots=True)
class HistoryView:
    """The newest samples of every series at one tick; immutable and safe to share."""

    series_by_key: Mapping[tuple[str, Metric], Series] = field(default_factory=dict)
    length: int = 0
    """How many ticks the store holds (capped at its capacity)."""
    end: int = 0
    """How many ticks were filed since the store was (re)built, less those stepped back:
    the number of the next tick, which views group ticks by (a sparkline cell per five
    ticks starts its cells at the same ticks however many samples it was handed)."""
    times: Series = field(default_factory=lambda: _EMPTY_TIMES)
    """When each of the newest ticks was taken (epoch seconds, NaN when a snapshot had no
    time), aligned with the ends of the series: what a chart's time axis is labelled by."""

    def series(self, key: str, metric: Metric) -> Series:
        """The recent samples of ``metric`` for the GPU filed under ``key``; empty when none."""
        return self.series_by_key.get((key, metric), _EMPTY)


_EMPTY: Series = array("f")
_EMPTY_TIMES: Series = array("d")
EMPTY_VIEW = HistoryView()


class _Rings:
    """One GPU's rings: per metric, every tick, and each bucket's low, mean and high."""

    __slots__ = ("fine", "high", "low", "mean", "readers")

    def __init__(
        self, readers: Mapping[Metric, Reader], capacity: int, coarse: int, *, gaps: int, old: int
    ) -> None:
        metrics = tuple(readers)
        self.fine = {metric: Ring(capacity, gaps=gaps) for metric in metrics}
        self.readers = [(readers[metric], self.fine[metric]) for metric in metrics]
        """(reader, ring) of each metric: what a tick appends, without a lookup by metric."""
        self.low = {metric: Ring(coarse, gaps=old) for metric in metrics}
        self.mean = {metric: Ring(coarse, gaps=old) for metric in metrics}
        self.high = {metric: Ring(coarse, gaps=old) for metric in metrics}

    def coarse(self) -> Iterable[Ring]:
        for tier in (self.low, self.mean, self.high):
            yield from tier.values()


class HistoryStore:
    """Bounded per-GPU, per-metric rings, appended once per tick and rebuilt on seeks."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        metrics: Sequence[Metric] | None = None,
        view_width: int = DEFAULT_VIEW_WIDTH,
        max_keys: int = MAX_SERIES_KEYS,
        *,
        readers: Mapping[Metric, Reader] | None = None,
        bucket_seconds: float = BUCKET_SECONDS,
        coarse_capacity: int = COARSE_CAPACITY,
    ) -> None:
        """Create an empty store.

        Args:
            capacity: ticks kept whole per series.
            metrics: which metrics to track (default: every one it has a reader for).
            view_width: samples per series copied into each view.
            max_keys: GPUs remembered at most.
            readers: readers of metrics that are not a model field (``Metric.THROTTLED``).
            bucket_seconds: width of a coarse point.
            coarse_capacity: coarse points kept per series.
        """
        self._readers: dict[Metric, Reader] = {**FIELD_READERS, **(readers or {})}
        wanted = tuple(self._readers) if metrics is None else tuple(metrics)
        missing = [metric.name for metric in wanted if metric not in self._readers]
        if missing:
            raise ValueError(f"no reader for {', '.join(missing)}")
        self._capacity = capacity
        self._metrics = wanted
        self._view_width = view_width
        self._max_keys = max_keys
        self._bucket = bucket_seconds
        self._coarse_capacity = coarse_capacity
        self._rings: dict[str, _Rings] = {}
        self._last_seen: dict[str, int] = {}
        self._times = Ring(capacity, "d")
        self._starts = Ring(coarse_capacity, "d")
        """When each bucket's first tick was taken."""
        self._weights = Ring(coarse_capacity)
        """How many ticks each bucket sums up."""
        self._open = 0
        """Ticks of the newest bucket, not summed up yet (they are the newest fine samples)."""
        self._open_id: int | None = None
        self._ticks = 0
        self._end = 0
        self._lock = threading.Lock()
        self._reader = HistoryReader(self)
        self.events = EventHistory()
        """The run's health events (``history.events``), filed with the snapshots."""

    @property
    def capacity(self) -> int:
        """Ticks kept whole per series."""
        return self._capacity

    @property
    def metrics(self) -> tuple[Metric, ...]:
        """The metrics tracked."""
        return self._metrics

    @property
    def reader(self) -> HistoryReader:
        """Read access for other threads (what the pipeline hands views)."""
        return self._reader

    def __len__(self) -> int:
        return len(self._times)

    def nbytes(self) -> int:
        """Bytes held by the rings' buffers now (at most :func:`memory_bound`)."""
        with self._lock:
            shared = (self._times, self._starts, self._weights)
            rings = [ring for key in self._rings.values() for ring in key.fine.values()]
            rings += [ring for key in self._rings.values() for ring in key.coarse()]
            return sum(ring.nbytes for ring in (*shared, *rings))

    def append(self, snapshot: Snapshot) -> None:
        """Record one tick: a sample per GPU and metric; GPUs not in ``snapshot`` get a gap."""
        with self._lock:
            self._append(snapshot)

    def _append(self, snapshot: Snapshot) -> None:
        if snapshot.events:
            self.events.add(snapshot.events)
        stamp = snapshot.timestamp
        moment = None if stamp is None else stamp.timestamp()
        if moment is not None:
            bucket = math.floor(moment / self._bucket)
            if self._open and self._open_id is not None and bucket != self._open_id:
                self._close_bucket()
            self._open_id = bucket
        # A tick without a time cannot be placed: it joins the bucket being filled.
        self._open += 1
        self._ticks += 1
        self._end += 1
        seen: set[str] = set()
        for gpu in snapshot.gpus:
            key = gpu_key(gpu)
            rings = self._rings.get(key)
            if rings is None:
                rings = self._new_key(key)
            self._last_seen[key] = self._ticks
            seen.add(key)
            if gpu.lost:  # what a lost GPU still carries is from before: not a value now
                for ring in rings.fine.values():
                    ring.append(None)
                continue
            for read, ring in rings.readers:
                value = read(gpu)
                ring.append(None if value is None else float(value))
        for key, rings in self._rings.items():
            if key not in seen:
                for ring in rings.fine.values():
                    ring.append(None)
        self._times.append(moment)

    def _close_bucket(self) -> None:
        """Sum up the open bucket (the newest fine samples) into one coarse point each."""
        count = min(self._open, len(self._times))
        known = [t for t in self._times.latest(count) if t == t]
        self._starts.append(min(known) if known else None)
        self._weights.append(count)
        for rings in self._rings.values():
            for metric, ring in rings.fine.items():
                values = [v for v in ring.latest(count) if v == v]
                if values:
                    rings.low[metric].append(min(values))
                    rings.mean[metric].append(math.fsum(values) / len(values))
                    rings.high[metric].append(max(values))
                else:
                    rings.low[metric].append(None)
                    rings.mean[metric].append(None)
                    rings.high[metric].append(None)
        self._open = 0

    def _new_key(self, key: str) -> _Rings:
        if len(self._rings) >= self._max_keys:
            stalest = min(self._last_seen, key=self._last_seen.__getitem__)
            del self._rings[stalest]
            del self._last_seen[stalest]
        # A GPU that appears mid-history gets gaps for the ticks before it, so every
        # series of the store lines up on the same time axis.
        rings = _Rings(
            {metric: self._readers[metric] for metric in self._metrics},
            self._capacity,
            self._coarse_capacity,
            gaps=len(self._times),
            old=len(self._starts),
        )
        self._rings[key] = rings
        return rings

    def drop_last(self) -> None:
        """Forget the newest tick of every series: a replay stepped back by one."""
        with self._lock:
            if not len(self._times):
                return
            if not self._open and len(self._starts):
                # The newest tick was summed up into the newest bucket: open that again.
                self._open = round(self._weights.last() or 0)
                start = self._starts.last()
                self._open_id = None if start is None else math.floor(start / self._bucket)
                for ring in (self._starts, self._weights):
                    ring.drop_last()
                for rings in self._rings.values():
                    for ring in rings.coarse():
                        ring.drop_last()
            self._open = max(0, self._open - 1)
            self._end = max(0, self._end - 1)
            self._times.drop_last()
            for rings in self._rings.values():
                for ring in rings.fine.values():
                    ring.drop_last()

    def rebuild(self, snapshots: Iterable[Snapshot]) -> None:
        """Forget everything and replay ``snapshots`` (oldest first): used after a seek."""
        with self._lock:
            self._rings.clear()
            self._last_seen.clear()
            for ring in (self._times, self._starts, self._weights):
                ring.clear()
            self._open = 0
            self._open_id = None
            self._ticks = 0
            self._end = 0
            self.events.clear()
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
                (key, metric): rings.fine[metric].latest(n)
                for key, rings in self._rings.items()
                for metric in wanted
                if metric in rings.fine
            }
            return HistoryView(data, len(self._times), self._end, self._times.latest(n))

    def window(self, key: str, seconds: float | None) -> HistoryWindow:
        """GPU ``key`` over the last ``seconds`` before the newest tick (None: all); thread-safe.

        Every tick while the fine rings reach back that far; beyond them, the buckets that
        begin inside the span, then the ticks after the last of them.
        """
        # Deferred: only the history screen reads windows (test_live_imports; issue 17).
        from gputop.history.window import EMPTY_WINDOW

        with self._lock:
            rings = self._rings.get(key)
            if rings is None or not len(self._times):
                return EMPTY_WINDOW
            times = self._times.latest()
            start = -math.inf if seconds is None else times[-1] - seconds
            first = bisect.bisect_left(times, start)
            buckets = range(0)
            oldest = times[0]
            if first == 0 and start < oldest and len(self._starts):
                starts = self._starts.latest()
                if starts[0] < oldest:  # ticks older than the fine rings were summed up
                    # Buckets up to the one holding the oldest fine tick, as far back as asked.
                    boundary = (math.floor(oldest / self._bucket) + 1) * self._bucket
                    end = bisect.bisect_left(starts, boundary)
                    buckets = range(bisect.bisect_left(starts, start), end)
                    if buckets and starts[end - 1] >= boundary - self._bucket:
                        first = bisect.bisect_left(times, boundary)
            return self._copy(rings, times, first, buckets)

    def _copy(
        self, rings: _Rings, times: array[float], first: int, buckets: range
    ) -> HistoryWindow:
        # Deferred: only the history screen reads windows (test_live_imports; issue 17).
        from gputop.history.window import HistoryWindow

        fine = len(times) - first
        mean = {metric: ring.latest(fine) for metric, ring in rings.fine.items()}
        if not buckets:
            return _timed(HistoryWindow(times[first:], array("f", [1.0]) * fine, mean, mean, mean))
        old = len(self._starts) - buckets.start
        cut = len(buckets)

        def joined(tier: dict[Metric, Ring]) -> dict[Metric, Series]:
            return {metric: tier[metric].latest(old)[:cut] + mean[metric] for metric in mean}

        window = HistoryWindow(
            array("d", self._starts.latest(old)[:cut]) + times[first:],
            self._weights.latest(old)[:cut] + array("f", [1.0]) * fine,
            joined(rings.mean),
            joined(rings.low),
            joined(rings.high),
            buckets=cut,
        )
        return _timed(window)


def _timed(window: HistoryWindow) -> HistoryWindow:
    """``window`` without the points that have no time (a chart cannot place them)."""
    times = window.times
    if all(t == t for t in times):
        return window
    keep = [i for i, t in enumerate(times) if t == t]

    def pick(series: Series) -> array[float]:
        return array("d" if series is times else "f", (series[i] for i in keep))

    def picks(tier: Mapping[Metric, Series]) -> dict[Metric, Series]:
        return {metric: pick(values) for metric, values in tier.items()}

    buckets = sum(1 for i in keep if i < window.buckets)
    # Deferred: only the history screen reads windows (test_live_imports; issue 17).
    from gputop.history.window import HistoryWindow

    return HistoryWindow(
        pick(times),
        pick(window.weights),
        picks(window.mean),
        picks(window.low),
        picks(window.high),
        buckets=buckets,
    )


class HistoryReader:
    """What views may do with a store, from any thread: read a window, under its lock."""

    __slots__ = ("_store",)

    def __init__(self, store: HistoryStore) -> None:
        """Read ``store``."""
        self._store = store

    def window(self, key: str, seconds: float | None) -> HistoryWindow:
        """See :meth:`HistoryStore.window`."""
        return self._store.window(key, seconds)

    def events(self) -> tuple[HealthEvent, ...]:
        """The health events the history keeps, oldest first (``history.events``)."""
        return self._store.events.kept


EMPTY_READER = HistoryStore(capacity=1, metrics=(), coarse_capacity=1).reader
"""A reader of nothing (a tick made before any store)."""
