"""Finding a moment among a text recording's timestamps, kept as seconds (NaN: no time)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import datetime

EPOCH = datetime(1970, 1, 1)
"""Where ``epoch_seconds`` count from."""


def epoch_seconds(moment: datetime) -> float:
    """``moment`` as seconds on one scale, whether it has a time zone or not: stamps are
    naive local times (nvidia-smi writes no zone), kept as seconds from 1970 rather than
    through the zone of the machine reading them; only their differences are used."""
    return (moment.replace(tzinfo=None) - EPOCH).total_seconds()


def last_at_or_before(stamps: Sequence[float], target: float, *, ordered: bool) -> int:
    """The position of the last stamp at or before ``target`` (0, if all are later).

    ``ordered``: every stamp is a time and none is earlier than the one before, so a
    bisection finds it. Otherwise (a log whose clock went back, or with untimed rows) the
    latest stamp not after ``target`` wins, the first of several alike; a NaN never does.
    """
    if ordered:
        return max(bisect.bisect_right(stamps, target) - 1, 0)
    best: tuple[float, int] | None = None
    for position, stamp in enumerate(stamps):
        if stamp <= target and (best is None or stamp > best[0]):
            best = (stamp, position)
    return 0 if best is None else best[1]
