"""A GPU's state over the fleet's window: busy, waiting, idle or throttled.

Its input is the window's engine activity where the exporter has it, else utilization
(:func:`load_mean`).

The thresholds are the diagnosis's (``insight/diagnosis.py`` ``DiagnosisThresholds``; a test
keeps the two equal; a source may not import ``insight``), applied to PromQL's
``avg_over_time`` of utilization and memory instead of one sample: a job that stalls for a
minute is waiting, not idle for a moment.
"""

from __future__ import annotations

from gputop.model import GpuSample, ThrottleReason
from gputop.model.fleet import GpuState, GpuWindow

LOW_UTILIZATION_PCT = 30.0
"""At or above this mean utilization the GPU was busy."""
IDLE_UTILIZATION_PCT = 5.0
"""At or above this mean utilization something ran, even with no memory held."""
HELD_MEMORY_BYTES = 1024**3
"""Mean memory in use that counts as work loaded (a job holding the GPU)."""
MIN_SAMPLES = 2
"""Fewer utilization samples in the window than this say nothing about it."""


def _limiting(gpu: GpuSample) -> bool:
    for name in gpu.throttle_reasons or ():
        reason = ThrottleReason.parse(name)
        if reason is not None and reason.limiting:
            return True
    return False


def classify(
    gpu: GpuSample,
    *,
    utilization_mean: float | None,
    samples: int,
    memory_used_mean: int | None,
    process_count: int | None = None,
    exporter_state: str | None = None,
) -> GpuState:
    """The GPU's state over the window (the exporter's own diagnosis wins when it has one)."""
    if exporter_state is not None:
        try:
            return GpuState(exporter_state)
        except ValueError:
            pass
    if gpu.lost:
        return GpuState.UNKNOWN
    if _limiting(gpu):
        return GpuState.THROTTLED
    memory = memory_used_mean if memory_used_mean is not None else gpu.memory.used
    held_memory = memory is not None and memory >= HELD_MEMORY_BYTES
    processes = bool(process_count)
    if utilization_mean is None:
        # MIG, or an exporter without utilization: idle only when nothing is loaded at all.
        if not processes and memory is not None and not held_memory:
            return GpuState.IDLE
        return GpuState.UNKNOWN
    if samples < MIN_SAMPLES:
        return GpuState.UNKNOWN
    if utilization_mean >= LOW_UTILIZATION_PCT:
        return GpuState.BUSY
    if processes or held_memory or utilization_mean >= IDLE_UTILIZATION_PCT:
        return GpuState.WAITING
    return GpuState.IDLE


def gpu_window(
    gpu: GpuSample,
    *,
    utilization_mean: float | None,
    samples: int,
    memory_used_mean: int | None,
    process_count: int | None = None,
    exporter_state: str | None = None,
    seconds_waiting: float | None = None,
) -> GpuWindow:
    """The :class:`GpuWindow` of ``gpu`` from the window's aggregates."""
    state = classify(
        gpu,
        utilization_mean=utilization_mean,
        samples=samples,
        memory_used_mean=memory_used_mean,
        process_count=process_count,
        exporter_state=exporter_state,
    )
    return GpuWindow(
        index=gpu.index,
        state=state,
        utilization_mean=utilization_mean,
        memory_used_mean=memory_used_mean,
        seconds_waiting=seconds_waiting,
    )


def load_mean(
    activity: tuple[float | None, int], utilization: tuple[float | None, int]
) -> tuple[float | None, int]:
    """The window's input, (mean percent, samples): engine activity if the source has it,
    else utilization.

    ``activity`` is ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``'s mean (a ratio, 0-1) and sample count
    over the window, ``utilization`` ``DCGM_FI_DEV_GPU_UTIL``'s (percent): GPM's engine
    activity is what fleet tools call a GPU idle by, and measures over the whole window where
    utilization is the driver's sampling (``gputop.model.activity``).
    """
    mean, samples = activity
    if mean is not None and samples > 0:
        return max(0.0, min(100.0, mean * 100.0)), samples
    return utilization
