"""The per-GPU metrics that history keeps, and how each is read from a sample."""

from __future__ import annotations

import enum
from collections.abc import Callable
from operator import attrgetter

from gputop.model import GpuSample


class Metric(enum.Enum):
    """A number tracked over time for each GPU; the value is its model field path."""

    GPU_UTIL = "utilization.gpu"
    MEM_UTIL = "utilization.memory"
    MEM_USED = "memory.used"
    POWER = "power.draw"
    TEMP = "temperature.gpu"
    FAN = "fan_speed"
    SM_CLOCK = "clocks.sm"
    ENCODER = "utilization.encoder"
    DECODER = "utilization.decoder"


def metric_value(gpu: GpuSample, metric: Metric) -> float | None:
    """The current value of ``metric`` on ``gpu``; None when not reported or the GPU is lost."""
    if gpu.lost:
        return None
    value: float | int | None = _READERS[metric](gpu)
    return None if value is None else float(value)


_READERS: dict[Metric, Callable[[GpuSample], float | int | None]] = {
    metric: attrgetter(metric.value) for metric in Metric
}
"""Each metric's reader: its field path, read in C (history appends every metric each tick)."""


def gpu_key(gpu: GpuSample) -> str:
    """The key history files a GPU under: its UUID, which survives re-indexing, else its index."""
    return gpu.uuid if gpu.uuid else f"index:{gpu.index}"
