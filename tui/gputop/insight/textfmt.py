"""Formatting of durations and times of day for findings and reports."""

from __future__ import annotations

from datetime import datetime


def fmt_duration(seconds: float | None) -> str:
    """A span as people say it: ``45s``, ``12m30s``, ``3h05m``; ``n/a`` when unknown."""
    if seconds is None:
        return "n/a"
    total = round(max(seconds, 0.0))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def fmt_clock(moment: datetime | None, reference: datetime | None = None) -> str:
    """Time of day (``14:02:03``); the date too when it differs from ``reference``'s."""
    if moment is None:
        return "n/a"
    if reference is not None and reference.date() != moment.date():
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.strftime("%H:%M:%S")


def seconds_between(earlier: datetime, later: datetime) -> float:
    """``later - earlier`` in seconds, even if one is naive (local time) and one is aware.

    nvidia-smi timestamps carry no zone (local time) while a caller's ``now`` may; mixing
    them would raise TypeError, so the aware one is turned into naive local time first.
    """
    if (earlier.tzinfo is None) != (later.tzinfo is None):
        if earlier.tzinfo is not None:
            earlier = earlier.astimezone().replace(tzinfo=None)
        else:
            later = later.astimezone().replace(tzinfo=None)
    return (later - earlier).total_seconds()
