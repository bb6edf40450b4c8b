"""Consecutive snapshots of a recording held column by column: what `report` reads of them.

A reader that can hand over a run of snapshots as columns (one list per value, one entry per
snapshot) spares the report building a ``GpuSample`` per GPU and snapshot, which is nearly
all the cost of reporting a long log. It does so only where the run is plain: every GPU in
every snapshot, in the same order, every snapshot with a time. Anything else is handed
over as snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

NAN = float("nan")
"""The one object readers put where a number is not reported (so a dict of values finds
every such entry under one key)."""


@dataclass(frozen=True, slots=True)
class GpuColumns:
    """One GPU's values in each snapshot of the run; the GPU has no processes listed."""

    index: int
    name: str | None
    uuid: str | None
    utilization: Sequence[float]
    """utilization.gpu in %, NaN where not reported."""
    power: Sequence[float]
    """power.draw in W, NaN where not reported."""
    memory_used: Sequence[int | None] | None
    """Bytes, None where not reported; None for all when the log has no memory.used
    column (the reason is then "not in this log")."""
    memory_total: int | None
    """The last memory.total reported in the run."""
    throttle_reasons: Sequence[tuple[str, ...] | None] | None
    """The active clock-event reasons of each snapshot; None when the log has none."""
    power_limit: Sequence[float] | None = None
    """power.limit in W, NaN where not reported; None when the log has no such column (or
    no reasons, for which alone it is read: whether a power cap binds)."""
    clocks_sm: Sequence[float] | None = None
    """The SM clock in MHz, NaN where not reported; None as ``power_limit``."""


@dataclass(frozen=True, slots=True)
class SnapshotColumns:
    """A run of consecutive snapshots of one machine, each with a time."""

    origin: datetime
    """The time of the recording's first timed snapshot, which ``offsets`` count from."""
    offsets: Sequence[float]
    """When each snapshot was taken: ``(its time - origin).total_seconds()``."""
    first: datetime
    """The time of the run's first snapshot."""
    last: datetime
    """The time of the run's last snapshot."""
    host: str | None
    gpus: tuple[GpuColumns, ...]
    """In the order of the snapshot's GPUs."""

    def __len__(self) -> int:
        return len(self.offsets)
