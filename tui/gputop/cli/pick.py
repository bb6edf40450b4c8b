"""`--pick N`: N free GPUs, as a list for CUDA_VISIBLE_DEVICES.

Which GPUs are free, and in what order, is ``gputop.insight.gpu_pick``'s judgement over the
samples looked at (live: ``--count`` samples, 2 by default, one ``--interval`` apart; replay:
the documents up to ``--at``). When fewer than N are free, nothing is printed and the exit
code is 1: a job script that goes on with a busy GPU would share it, or fail later out of
memory, where a refusal stops it at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gputop.errors import GputopError
from gputop.insight.gpu_pick import FREE_UTILIZATION, free_gpus, gpu_loads
from gputop.model import Snapshot

DEFAULT_SAMPLES = 2
"""Samples --pick looks at without --count: a second of history at the default interval."""


class NotEnoughGpus(GputopError):
    """Fewer free GPUs than ``--pick`` asked for."""

    exit_code = 1


def pick_gpus(samples: Sequence[Snapshot], count: int) -> list[int]:
    """NVML indices of ``count`` free GPUs of the latest of ``samples``, least used first.

    Raises:
        NotEnoughGpus: fewer than ``count`` GPUs are free; nothing is picked.
    """
    loads = gpu_loads(samples)
    free = free_gpus(loads)
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
