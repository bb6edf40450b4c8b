"""`--pick N`: the N least used GPUs, as a list for CUDA_VISIBLE_DEVICES.

Like py3nvml's ``grab_gpus``: least memory used first, then least busy, then lowest index.
A GPU that is lost, or in MIG mode (CUDA cannot be given it whole), is never picked; one whose
memory use is unknown comes after every GPU whose use is known.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from gputop.errors import GputopError
from gputop.model import GpuSample, Snapshot


class NotEnoughGpus(GputopError):
    """Fewer usable GPUs than ``--pick`` asked for."""

    exit_code = 1


def _load(gpu: GpuSample) -> tuple[float, float, int]:
    used = gpu.memory.used
    busy = gpu.utilization.gpu
    return (
        math.inf if used is None else float(used),
        math.inf if busy is None else busy,
        gpu.index,
    )


def usable(gpu: GpuSample) -> bool:
    """Whether ``gpu`` can be handed to a CUDA program as a whole device."""
    return not gpu.lost and gpu.mig_mode is not True


def pick_gpus(snapshot: Snapshot, count: int) -> list[int]:
    """NVML indices of the ``count`` least used GPUs, least used first.

    Raises:
        NotEnoughGpus: fewer than ``count`` GPUs are usable; nothing is picked.
    """
    candidates = sorted((gpu for gpu in snapshot.gpus if usable(gpu)), key=_load)
    if len(candidates) < count:
        skipped = len(snapshot.gpus) - len(candidates)
        why = f" ({skipped} lost or in MIG mode)" if skipped else ""
        raise NotEnoughGpus(
            f"--pick {count}: only {len(candidates)} usable GPU(s) of {len(snapshot.gpus)}{why}"
        )
    return [gpu.index for gpu in candidates[:count]]


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
