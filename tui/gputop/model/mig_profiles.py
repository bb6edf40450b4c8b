"""MIG profile names (``3g.40gb``) read from a MIG device's name, or worked out from an
instance's SM count and memory.

The driver names a MIG device after its profile (``NVIDIA A100-SXM4-40GB MIG 3g.20gb``), which
is how nvitop shows profiles to users who may not call NVML's profile functions.

nvidia-smi's XML names no profile. For GPUs whose MIG geometry NVIDIA publishes, the compute
slice count follows from the SM count and the memory slice count from the instance's share of
the GPU's memory, which together name the GPU-instance profile. Anything else gives None:
a wrong name is worse than none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MIB = 1024 * 1024

_NAMED_PROFILE = re.compile(r" MIG ((?:\d+c\.)?\d+g\.\d+gb(?:[+-][a-z]+)*)\s*$")
"""The profile at the end of a MIG device's name: ``1g.10gb``, ``1c.3g.40gb``, ``1g.10gb+me``."""

# SMs of each compute-slice count: Ampere (A100, A30) has 14 SMs a slice; Hopper SXM
# parts have uneven instances (3g has 60 SMs, 4g 64).
_AMPERE_SLICES = {14: 1, 28: 2, 42: 3, 56: 4, 98: 7}
_HOPPER_SLICES = {16: 1, 26: 1, 32: 2, 60: 3, 64: 4, 132: 7}

# (compute slices, memory slices) of each GPU-instance profile.
_EIGHT_SLICE_PROFILES = frozenset({(1, 1), (1, 2), (2, 2), (3, 4), (4, 4), (7, 8)})
_A30_PROFILES = frozenset({(1, 1), (2, 2), (4, 4)})


@dataclass(frozen=True, slots=True)
class _Family:
    name_part: str
    min_gib: float
    max_gib: float
    nominal_gb: float
    memory_slices: int
    slices_by_sm: dict[int, int]
    profiles: frozenset[tuple[int, int]]


_FAMILIES = (
    _Family("A100", 30, 50, 40, 8, _AMPERE_SLICES, _EIGHT_SLICE_PROFILES),
    _Family("A100", 70, 90, 80, 8, _AMPERE_SLICES, _EIGHT_SLICE_PROFILES),
    _Family("A30", 20, 30, 24, 4, _AMPERE_SLICES, _A30_PROFILES),
    _Family("H100 NVL", 85, 100, 94, 8, _HOPPER_SLICES, _EIGHT_SLICE_PROFILES),
    _Family("H100", 70, 85, 80, 8, _HOPPER_SLICES, _EIGHT_SLICE_PROFILES),
    _Family("H800", 70, 85, 80, 8, _HOPPER_SLICES, _EIGHT_SLICE_PROFILES),
    _Family("GH200", 90, 100, 96, 8, _HOPPER_SLICES, _EIGHT_SLICE_PROFILES),
    _Family("H200", 130, 150, 141, 8, _HOPPER_SLICES, _EIGHT_SLICE_PROFILES),
)


def _family(gpu_name: str, gpu_memory_total: int) -> _Family | None:
    gib = gpu_memory_total / (1024 * _MIB)
    upper = gpu_name.upper()
    for family in _FAMILIES:
        if family.name_part in upper and family.min_gib <= gib <= family.max_gib:
            return family
    return None


def derive_profile(
    gpu_name: str | None,
    gpu_memory_total: int | None,
    sm_count: int | None,
    instance_memory_total: int | None,
) -> str | None:
    """The GPU-instance profile name, e.g. ``1g.20gb``, or None where it cannot be known.

    Args:
        gpu_name: the parent GPU's product name.
        gpu_memory_total: the parent GPU's memory in bytes.
        sm_count: the MIG device's multiprocessor count.
        instance_memory_total: the MIG device's memory in bytes.
    """
    if gpu_name is None or sm_count is None or instance_memory_total is None:
        return None
    if gpu_memory_total is None or gpu_memory_total <= 0:
        return None
    family = _family(gpu_name, gpu_memory_total)
    if family is None:
        return None
    compute_slices = family.slices_by_sm.get(sm_count)
    slice_bytes = gpu_memory_total / family.memory_slices
    memory_slices = round(instance_memory_total / slice_bytes)
    if compute_slices is None or (compute_slices, memory_slices) not in family.profiles:
        return None
    # Half up, as NVIDIA names them: H200's 4 slices of 17.6 GB are "71gb".
    gigabytes = int(memory_slices * family.nominal_gb / family.memory_slices + 0.5)
    return f"{compute_slices}g.{gigabytes}gb"


def profile_from_name(device_name: str | None) -> str | None:
    """The profile a MIG device's name ends in (``… MIG 3g.20gb`` -> ``3g.20gb``), or None
    when the name ends in no profile (a placeholder, another naming)."""
    if not device_name:
        return None
    found = _NAMED_PROFILE.search(device_name)
    return None if found is None else found.group(1)
