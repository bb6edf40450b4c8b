"""One GPU's history over a span of time, as the store hands it out: immutable copies.

Recent samples come one point a tick; older ones (beyond the store's per-tick rings) one point
a bucket of ticks, with the minimum, mean and maximum of each metric over the bucket, so the
statistics of a long window stay exact (weighted by how many ticks each point stands for)
however coarse its points are.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field

from gputop.history.metrics import Metric, Series


@dataclass(frozen=True, slots=True)
class Stats:
    """Minimum, mean and maximum of the known values in a window."""

    minimum: float
    mean: float
    maximum: float


@dataclass(frozen=True, slots=True)
class HistoryWindow:
    """The points of one GPU over a span, oldest first; safe to share between threads.

    A point is one tick (``weights`` 1, ``low`` = ``mean`` = ``high``) or one bucket of older
    ticks (``weights`` its tick count; ``times`` its first tick's).
    """

    times: Series = field(default_factory=lambda: array("d"))
    """Seconds since the epoch."""
    weights: Series = field(default_factory=lambda: array("f"))
    """How many ticks each point stands for."""
    mean: Mapping[Metric, Series] = field(default_factory=dict)
    low: Mapping[Metric, Series] = field(default_factory=dict)
    high: Mapping[Metric, Series] = field(default_factory=dict)
    buckets: int = 0
    """How many of the points (the oldest) are buckets rather than single ticks."""

    def __len__(self) -> int:
        return len(self.times)

    @property
    def samples(self) -> int:
        """How many ticks the window covers."""
        return round(math.fsum(self.weights))

    @property
    def span(self) -> float:
        """Seconds from the first point's first tick to the newest tick."""
        return self.times[-1] - self.times[0] if self.times else 0.0

    def series(self, metric: Metric) -> Series:
        """The mean of ``metric`` at each point; empty when not kept."""
        return self.mean.get(metric, _EMPTY)

    def flags(self, metric: Metric) -> list[bool]:
        """Whether ``metric`` was above 0 at any tick of each point (throttling marks)."""
        return [value > 0 for value in self.high.get(metric, _EMPTY)]

    def stats(self, metric: Metric) -> Stats | None:
        """Min, tick-weighted mean and max of ``metric``; None when nothing is known.

        A bucket's mean counts for all its ticks, even ticks where the value was a gap.
        """
        means = self.mean.get(metric)
        if not means:
            return None
        cut = self.buckets
        ticks = [value for value in means[cut:] if value == value]
        total, count = math.fsum(ticks), float(len(ticks))
        low = min(ticks, default=math.inf)
        high = max(ticks, default=-math.inf)
        if cut:
            lows, highs = self.low[metric], self.high[metric]
            for i in range(cut):
                mean = means[i]
                if mean == mean:
                    weight = self.weights[i]
                    total += mean * weight
                    count += weight
                    low = min(low, lows[i])
                    high = max(high, highs[i])
        return Stats(low, total / count, high) if count else None


EMPTY_WINDOW = HistoryWindow()
_EMPTY: Series = array("f")
