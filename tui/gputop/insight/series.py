"""Thinning a time series for a chart: a chart never needs more points than it has dots.

Missing values are NaN (a value the GPU did not report is absent from the chart, not 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

NAN = float("nan")


def value_or_nan(value: float | None) -> float:
    """A model value as a float, NaN when unknown."""
    return NAN if value is None else float(value)


def downsample(
    xs: Sequence[float], ys: Sequence[float], max_points: int
) -> tuple[list[float], list[float]]:
    """At most ``max_points`` points: consecutive samples averaged into equal buckets.

    Each bucket's x is the mean x of its known samples; NaN samples are left out of the
    mean and a bucket with no known sample is dropped, so a gap stays a gap.
    """
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    count = min(len(xs), len(ys))
    size = max(1, math.ceil(count / max_points))
    out_x: list[float] = []
    out_y: list[float] = []
    for start in range(0, count, size):
        sum_x = sum_y = 0.0
        known = 0
        for position in range(start, min(start + size, count)):
            y = ys[position]
            if y == y:  # not NaN
                sum_x += xs[position]
                sum_y += y
                known += 1
        if known:
            out_x.append(sum_x / known)
            out_y.append(sum_y / known)
    return out_x, out_y


def downsample_flags(xs: Sequence[float], flags: Sequence[bool], max_points: int) -> list[float]:
    """The x of each bucket (same buckets as :func:`downsample`) in which any flag is set."""
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    count = min(len(xs), len(flags))
    size = max(1, math.ceil(count / max_points))
    marks: list[float] = []
    for start in range(0, count, size):
        stop = min(start + size, count)
        if any(flags[start:stop]):
            marks.append(sum(xs[start:stop]) / (stop - start))
    return marks


def known(values: Sequence[float]) -> list[float]:
    """The values that are not NaN."""
    return [v for v in values if v == v]


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear-interpolation percentile (numpy's default) of already sorted values.

    Raises:
        ValueError: no values.
    """
    if not sorted_values:
        raise ValueError("percentile of no values")
    position = (len(sorted_values) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    weight = position - low
    return sorted_values[low] * (1 - weight) + sorted_values[high] * weight


def time_ticks(
    first: float, last: float, label: Callable[[float], str], count: int = 4
) -> tuple[list[float], list[str]]:
    """Up to ``count`` evenly spaced x positions from ``first`` to ``last``, with labels.

    Positions whose label repeats the previous one's (a short span shown to the second) are
    dropped.
    """
    if last <= first or count < 2:
        positions = [first]
    else:
        step = (last - first) / (count - 1)
        # The ends exactly: a last tick a rounding error past the axis would be dropped.
        positions = [first + step * i for i in range(count - 1)] + [last]
    kept: list[float] = []
    labels: list[str] = []
    for position in positions:
        text = label(position)
        if text not in labels:
            kept.append(position)
            labels.append(text)
    return kept, labels
