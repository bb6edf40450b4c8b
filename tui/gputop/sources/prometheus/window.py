"""A GPU's state over the fleet's window: busy, waiting, idle or throttled.

The states and thresholds are the ones every view uses (``model/gpu_state.py``), applied to
PromQL's ``avg_over_time`` of the GPU's load and memory instead of one sample: a job that
stalls for a minute is waiting, not idle for a moment. The load is the window's engine
activity where the exporter has it, else utilization (:func:`load_mean`). The clock-event
reasons and the power draw are the newest sample's.
"""

from __future__ import annotations

from gputop.model import GpuSample
from gputop.model.fleet import GpuState, GpuWindow
from gputop.model.gpu_state import DEFAULT_THRESHOLDS, cap_binds, judge

LOW_UTILIZATION_PCT = DEFAULT_THRESHOLDS.low_utilization_pct
"""At or above this mean utilization the GPU was busy."""
IDLE_UTILIZATION_PCT = DEFAULT_THRESHOLDS.idle_utilization_pct
"""At or above this mean utilization something ran, even with no memory held."""
HELD_MEMORY_BYTES = DEFAULT_THRESHOLDS.held_memory_bytes
"""Mean memory in use that counts as work loaded (a job holding the GPU)."""
MIN_SAMPLES = 2
"""Fewer utilization samples in the window than this say nothing about it."""


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
    memory = memory_used_mean if memory_used_mean is not None else gpu.memory.used
    loaded = bool(process_count) or (memory is not None and memory >= HELD_MEMORY_BYTES)
    held: bool | None
    if utilization_mean is None:
        # MIG, or an exporter without utilization: idle only when nothing is loaded at all.
        held = loaded or memory is None
    elif loaded or utilization_mean >= IDLE_UTILIZATION_PCT:
        held = True
    elif memory is None and process_count is None:
        # Low utilization, but nothing says whether work is loaded (an exporter without
        # DCGM_FI_DEV_FB_USED): idle and held-but-waiting look the same here.
        held = None
    else:
        held = False
    reasons = gpu.throttle_reasons
    state = judge(
        utilization_mean,
        held,
        reasons,
        binds=cap_binds(gpu.power.draw, gpu.power.limit) if reasons else True,
    ).state
    if utilization_mean is not None and samples < MIN_SAMPLES and state is not GpuState.THROTTLED:
        return GpuState.UNKNOWN
    return state


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
