"""How old a sample is, as people say it (the fleet's freshness and stale marks)."""

from __future__ import annotations

from datetime import datetime


def fmt_age(seconds: float) -> str:
    """``14 s``, ``3 min``, ``2 h``, ``3 d``: whole units, so a column stays narrow."""
    if seconds < 120:
        return f"{max(0, round(seconds))} s"
    if seconds < 7200:
        return f"{round(seconds / 60)} min"
    if seconds < 172800:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} d"


def age_seconds(newest: datetime | None, now: datetime) -> float | None:
    """Seconds from ``newest`` to ``now`` (None when unknown; a clock ahead reads 0)."""
    if newest is None:
        return None
    if (newest.tzinfo is None) != (now.tzinfo is None):
        # One of them carries a zone and the other does not: compare as wall times.
        newest, now = newest.replace(tzinfo=None), now.replace(tzinfo=None)
    return max(0.0, (now - newest).total_seconds())
