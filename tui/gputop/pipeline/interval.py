"""How often a live source may be polled."""

from __future__ import annotations

MIN_INTERVAL = 0.25
"""Seconds; polling faster than this costs more than it shows."""

MAX_INTERVAL = 60.0
"""Seconds; slower than this a monitor stops looking live."""


def clamp_interval(seconds: float) -> float:
    """``seconds`` brought into [MIN_INTERVAL, MAX_INTERVAL]."""
    return min(max(seconds, MIN_INTERVAL), MAX_INTERVAL)


INTERVAL_STEPS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
"""What the live interval keys step through."""


def step_interval(current: float, steps: int) -> float:
    """The interval ``steps`` rungs of ``INTERVAL_STEPS`` from ``current`` (positive: slower).

    An interval between rungs (``--interval 0.7``) moves to the next rung in that direction;
    past either end it stays at the end.
    """
    value = current
    for _ in range(abs(steps)):
        if steps > 0:
            later = [s for s in INTERVAL_STEPS if s > value + 1e-9]
            value = later[0] if later else value
        else:
            earlier = [s for s in INTERVAL_STEPS if s < value - 1e-9]
            value = earlier[-1] if earlier else value
    return clamp_interval(value)
