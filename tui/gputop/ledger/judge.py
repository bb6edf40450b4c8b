"""One GPU's step judged: the one rule the ledger files every step by, whatever the source.

A step is one GPU's means over ``step`` seconds (Prometheus's ``avg_over_time``, or the
mean of a recording's snapshots in the step): activity in percent, memory in use in MiB,
processes, power in watts, and whether a pod holds the GPU. The states are the ones
``thresholds`` documents.
"""

from __future__ import annotations

from gputop.ledger.account import StepCounts
from gputop.ledger.thresholds import Thresholds


def file_step(
    counts: StepCounts,
    thresholds: Thresholds,
    group: str,
    at: float,
    *,
    pod: bool,
    activity: float | None,
    memory: float | None,
    processes: float | None,
    power: float | None,
) -> None:
    """Add one GPU's step ending at ``at`` to ``group``'s figures in ``counts``.

    Without activity the GPU was not seen in the step (its hours are unknown), but the
    power it drew still counts as energy.
    """
    if power is not None:
        counts.add("power", group, at, power)
    if activity is None:
        return
    t = thresholds
    idle = activity == 0 if t.idle_pct <= 0 else activity <= t.idle_pct
    if idle and t.power_floor_w is not None and power is not None:
        idle = power < t.power_floor_w
    by_resource = (memory is not None and memory >= t.held_memory_mib) or bool(processes)
    counts.add("present", group, at, 1)
    counts.add("activity", group, at, activity)
    if pod or by_resource or not idle:
        counts.add("held", group, at, 1)
        if idle:
            counts.add("idle_held", group, at, 1)
            if power is not None:
                counts.add("idle_held_power", group, at, power)
        if activity < t.busy_pct:
            counts.add("low_held", group, at, 1)
    elif memory is not None or processes is not None:
        counts.add("free", group, at, 1)
