"""The per-GPU metrics that history keeps, and how each is read from a sample."""

from __future__ import annotations

import enum

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
    value: float | int | None
    if metric is Metric.GPU_UTIL:
        value = gpu.utilization.gpu
    elif metric is Metric.MEM_UTIL:
        value = gpu.utilization.memory
    elif metric is Metric.MEM_USED:
        value = gpu.memory.used
    elif metric is Metric.POWER:
        value = gpu.power.draw
    elif metric is Metric.TEMP:
        value = gpu.temperature.gpu
    elif metric is Metric.FAN:
        value = gpu.fan_speed
    elif metric is Metric.SM_CLOCK:
        value = gpu.clocks.sm
    elif metric is Metric.ENCODER:
        value = gpu.utilization.encoder
    else:
        value = gpu.utilization.decoder
    return None if value is None else float(value)


def gpu_key(gpu: GpuSample) -> str:
    """The key history files a GPU under: its UUID, which survives re-indexing, else its index."""
    return gpu.uuid if gpu.uuid else f"index:{gpu.index}"
