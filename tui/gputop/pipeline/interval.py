"""How often a live source may be polled."""

from __future__ import annotations

MIN_INTERVAL = 0.25
"""Seconds; polling faster than this costs more than it shows."""

MAX_INTERVAL = 60.0
"""Seconds; slower than this a monitor stops looking live."""


def clamp_interval(seconds: float) -> float:
    """``seconds`` brought into [MIN_INTERVAL, MAX_INTERVAL]."""
    return min(max(seconds, MIN_INTERVAL), MAX_INTERVAL)
