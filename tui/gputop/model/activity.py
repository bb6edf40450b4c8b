"""How busy a GPU is, as the verdicts read it: GPM's engine activity where a source measured
it, else utilization.

``utilization.gpu`` is the share of time any kernel ran, sampled by the driver; GPM's graphics
engine activity (``DCGM_FI_PROF_GR_ENGINE_ACTIVE``) measures the same thing from the GPU's own
counters, over the whole window, and is what fleet tools (DCGM, dcgm-exporter dashboards)
call a GPU idle by. The two agree on a steady load (97 % and 97.2 % on a loaded H200) and
differ where utilization's sampling misleads (dcgm-exporter issue 341: "only 0% or 100%").
"""

from __future__ import annotations

from gputop.model.sample import GpuSample

ENGINE_ACTIVITY = "engine activity"
UTILIZATION = "utilization"


def load_percent(gpu: GpuSample) -> float | None:
    """The GPU's engine activity in percent where measured, else its utilization; None when
    neither is reported (never 0 for unknown)."""
    graphics = gpu.activity.graphics
    return graphics if graphics is not None else gpu.utilization.gpu


def load_name(gpu: GpuSample) -> str:
    """What :func:`load_percent` read for ``gpu``, as a finding says it."""
    return ENGINE_ACTIVITY if gpu.activity.graphics is not None else UTILIZATION
