"""The per-GPU metrics that history keeps, and how each is read from a sample."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from gputop.model import GpuSample
from gputop.model.fields import GPU_BY_PATH

Series = Sequence[float]
"""Oldest first; NaN marks a gap (GPU absent, lost, or value not reported).

Windows and views hand out private ``array('f')`` copies: copying is a C-level slice, so a
tick's view costs microseconds. Treat them as read-only."""

Reader = Callable[[GpuSample], float | int | bool | None]
"""How one metric is read from a sample; None when the GPU does not report it."""


class Metric(enum.Enum):
    """A number tracked over time for each GPU; the value is its path in the field table
    (``gputop.model.fields``), which gives its label, unit and exported names."""

    GPU_UTIL = "utilization.gpu"
    MEM_UTIL = "utilization.memory"
    MEM_USED = "memory.used"
    MEM_TOTAL = "memory.total"
    POWER = "power.draw"
    POWER_LIMIT = "power.limit"
    TEMP = "temperature.gpu"
    FAN = "fan_speed"
    SM_CLOCK = "clocks.sm"
    MEM_CLOCK = "clocks.memory"
    ENCODER = "utilization.encoder"
    DECODER = "utilization.decoder"
    SM_ACTIVE = "activity.sm"
    """GPM's SM activity (Hopper and later; NaN elsewhere), charted beside utilization."""
    TENSOR_ACTIVE = "activity.tensor"
    THROTTLED = "throttled"
    """1 while a reason that limits the clocks is active, else 0. Not a field: which reasons
    limit is the diagnosis's call, so whoever builds the store hands it this reader
    (``HistoryStore(readers=...)``); without one it is not kept."""


FIELD_READERS: dict[Metric, Reader] = {
    metric: GPU_BY_PATH[metric.value].read for metric in Metric if metric is not Metric.THROTTLED
}
"""Each field metric's reader, from the field table (an ``attrgetter`` of its path, read in C:
history appends every metric each tick)."""


def gpu_key(gpu: GpuSample) -> str:
    """The key history files a GPU under: its UUID, which survives re-indexing, else its index."""
    return gpu.uuid if gpu.uuid else f"index:{gpu.index}"
