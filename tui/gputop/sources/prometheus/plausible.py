"""Values no GPU can report, from a scrape or a Prometheus answer, made unknown.

An exporter (or whatever answers in its place) can say anything: -250 W, 1e12 %, 900 C. The
XML reader refuses such readings (``Reason.INVALID``); so does a fleet's reading here, to NaN,
which the node's builder files as no value (n/a), never as a number shown as true. The ranges
are the XML reader's: nothing a GPU reports is negative; a utilization is at most 100 %
(rounded), a temperature 200 C, a draw or limit 100 kW, a clock 100 GHz, a memory 1 PiB.
"""

from __future__ import annotations

import math

from gputop.sources.prometheus import families as fam

_PERCENT = 100.5
"""A percentage rounded up from 100."""
_HIGH_BY_UNIT = {"%": _PERCENT, "°C": 200.0, "W": 100_000.0, "MHz": 100_000.0, "B": 2.0**50}
_UNBOUNDED_PERCENT = frozenset(("fan_speed", "cpu_percent"))
"""Percentages that may pass 100: a fan above its rated speed, a process on several CPUs."""


def _highs() -> dict[str, float]:
    """Metric name -> the largest exported value its field can take."""
    highs: dict[str, float] = {}
    for table in (fam.GPU_METRICS, fam.MIG_METRICS, fam.PROCESS_METRICS):
        for name, spec in table.items():
            high = _HIGH_BY_UNIT.get(spec.unit)
            if high is None or spec.path in _UNBOUNDED_PERCENT:
                continue
            highs[name] = high * spec.export_scale
    return highs


_HIGH = _highs()


def plausible(metric: str, value: float) -> float:
    """``value`` of ``metric`` when a GPU could report it, else NaN (unknown).

    Every family read is a gauge or a counter of something that is never negative; those
    with a unit in the field table have an upper bound too. DCGM's blanks (huge on purpose)
    and NaN are no value either way, so the builder files a NaN as it files them.
    """
    if value < 0.0:
        return math.nan
    high = _HIGH.get(metric)
    if high is not None and value > high:
        return math.nan
    return value
