"""`--pick N`: N free GPUs, as a list for CUDA_VISIBLE_DEVICES.

A GPU is busy when a compute process runs on it or its utilization rose above
``FREE_UTILIZATION`` in any of the samples looked at (live: ``--count`` samples, 2 by default,
one ``--interval`` apart; replay: the documents up to ``--at``); memory held alone (a display,
a cached allocator of a finished job) does not make it busy. Only free GPUs are picked, ranked
by (compute processes, recent utilization, memory used), then index. When fewer than N are
free, nothing is printed and the exit code is 1: a job script that goes on with a busy GPU
would share it, or fail later out of memory, where a refusal stops it at once.

A GPU that is lost, or in MIG mode (CUDA cannot be given it whole), is never picked; a value
that is not known ranks after every known one, and does not make a GPU busy by itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputop.errors import GputopError
from gputop.model import GpuSample, Snapshot

FREE_UTILIZATION = 5.0
"""Percent; above this in any sample looked at, a GPU is busy (an idle one reads 0-2%)."""

DEFAULT_SAMPLES = 2
"""Samples --pick looks at without --count: a second of history at the default interval."""


class NotEnoughGpus(GputopError):
    """Fewer free GPUs than ``--pick`` asked for."""

    exit_code = 1


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


def pick_gpus(samples: Sequence[Snapshot], count: int) -> list[int]:
    """NVML indices of ``count`` free GPUs of the latest of ``samples``, least used first.

    Raises:
        NotEnoughGpus: fewer than ``count`` GPUs are free; nothing is picked.
    """
    loads = gpu_loads(samples)
    free = sorted((load for load in loads if not load.busy), key=GpuLoad.rank)
    if len(free) < count:
        total = len(samples[-1].gpus)
        busy = [load.describe() for load in loads if load.busy]
        skipped = total - len(loads)
        looked = f"{len(samples)} sample{'s' if len(samples) > 1 else ''}"
        raise NotEnoughGpus(
            f"--pick {count}: only {len(free)} of {total} GPU(s) free (no compute process, "
            f"at most {FREE_UTILIZATION:g}% utilization over {looked})"
            + (f"; busy: {', '.join(busy)}" if busy else "")
            + (f"; {skipped} lost or in MIG mode" if skipped else "")
        )
    return [load.gpu.index for load in free[:count]]


def format_pick(indices: list[int]) -> str:
    """``1,3``: ready for ``CUDA_VISIBLE_DEVICES=$(gputop --pick 2)``."""
    return ",".join(str(index) for index in indices)


def order_note(environ: Mapping[str, str]) -> str | None:
    """A warning for stderr when CUDA would number the picked GPUs differently from NVML."""
    if environ.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID":
        return None
    return (
        "these are NVML indices (PCI bus order); export CUDA_DEVICE_ORDER=PCI_BUS_ID so that "
        "CUDA numbers GPUs the same way"
    )
