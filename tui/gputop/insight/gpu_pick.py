"""Which GPUs are free for a new job, and in what order (``gputop --pick N``).

A GPU is busy when a compute process runs on it or its utilization rose above
``FREE_UTILIZATION`` in any of the samples looked at; memory held alone (a display, a cached
allocator of a finished job) does not make it busy. Free GPUs are ranked by (compute
processes, recent utilization, memory used), then index. A GPU that is lost, or in MIG mode
(CUDA cannot be given it whole), is never free; a value that is not known ranks after every
known one, and does not make a GPU busy by itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gputop.model import GpuSample, Snapshot

FREE_UTILIZATION = 5.0
"""Percent; above this in any sample looked at, a GPU is busy (an idle one reads 0-2%)."""


@dataclass(frozen=True, slots=True)
class GpuLoad:
    """What --pick knows of one GPU over the samples it looked at."""

    gpu: GpuSample
    """The latest sample."""
    compute: int | None
    """Compute processes in the latest sample; None when the GPU did not list them."""
    utilization: float | None
    """The highest utilization over the samples; None when none was reported."""

    @property
    def busy(self) -> bool:
        """A compute process, or utilization above ``FREE_UTILIZATION``."""
        return bool(self.compute) or (
            self.utilization is not None and self.utilization > FREE_UTILIZATION
        )

    def rank(self) -> tuple[float, float, float, int]:
        """(processes, recent utilization, memory used, index); unknown sorts last."""
        used = self.gpu.memory.used
        return (
            math.inf if self.compute is None else self.compute,
            math.inf if self.utilization is None else self.utilization,
            math.inf if used is None else float(used),
            self.gpu.index,
        )

    def describe(self) -> str:
        """``0 (2 processes, 99%)``: why it is busy."""
        parts = []
        if self.compute:
            parts.append(f"{self.compute} process{'es' if self.compute > 1 else ''}")
        if self.utilization is not None:
            parts.append(f"{self.utilization:.0f}%")
        return f"{self.gpu.index} ({', '.join(parts)})"


def usable(gpu: GpuSample) -> bool:
    """Whether ``gpu`` can be handed to a CUDA program as a whole device."""
    return not gpu.lost and gpu.mig_mode is not True


def _compute(gpu: GpuSample) -> int | None:
    if not gpu.processes and gpu.reason("processes") is not None:
        return None
    # A process of unknown type may be a compute one; "G" alone (a display) is not.
    return sum(1 for p in gpu.processes if p.type is None or "C" in p.type)


def _same_gpu(snapshot: Snapshot, gpu: GpuSample) -> GpuSample | None:
    if gpu.uuid is not None:
        return next((g for g in snapshot.gpus if g.uuid == gpu.uuid), None)
    return snapshot.gpu(gpu.index)


def gpu_loads(samples: Sequence[Snapshot]) -> list[GpuLoad]:
    """Each usable GPU of the latest sample with its load over ``samples`` (oldest first)."""
    latest = samples[-1]
    loads = []
    for gpu in latest.gpus:
        if not usable(gpu):
            continue
        seen = [_same_gpu(sample, gpu) for sample in samples]
        readings = [g.utilization.gpu for g in seen if g is not None]
        known = [value for value in readings if value is not None]
        loads.append(GpuLoad(gpu, _compute(gpu), max(known) if known else None))
    return loads


def free_gpus(loads: Sequence[GpuLoad]) -> list[GpuLoad]:
    """The free ones among ``loads``, least used first."""
    return sorted((load for load in loads if not load.busy), key=GpuLoad.rank)
