"""NVML's numeric codes turned into the words the smi XML uses, so both sources agree.

Pure tables and functions: no NVML calls, no pynvml import. The values are NVML's ABI
(``nvml.h``), which never renumbers.
"""

from __future__ import annotations

from gputop.model.throttle import throttle_names

__all__ = [
    "ARCHITECTURES",
    "COMPUTE_MODES",
    "NOT_A_MIG_ID",
    "PSTATE_UNKNOWN",
    "cuda_version",
    "instance_id",
    "performance_state",
    "text",
    "throttle_names",
]

ARCHITECTURES: dict[int, str] = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}
"""``nvmlDeviceArchitecture_t`` to the name nvidia-smi prints as ``product_architecture``."""

COMPUTE_MODES: dict[int, str] = {
    0: "Default",
    1: "Exclusive_Thread",
    2: "Prohibited",
    3: "Exclusive_Process",
}
"""``nvmlComputeMode_t`` to the smi XML word."""

PSTATE_UNKNOWN = 32
NOT_A_MIG_ID = 0xFFFFFFFF
"""A process's GPU/compute instance id outside MIG."""


def performance_state(value: int) -> str | None:
    """``P0``..``P15``, or None for NVML_PSTATE_UNKNOWN and anything out of range."""
    return f"P{value}" if 0 <= value <= 15 else None


def cuda_version(value: int) -> str | None:
    """12020 -> ``12.2``, as nvidia-smi prints it; None for 0 (no CUDA driver)."""
    if value <= 0:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def instance_id(value: int | None) -> int | None:
    """A GPU/compute instance id, or None outside MIG."""
    if value is None or value == NOT_A_MIG_ID:
        return None
    return value


def text(value: object) -> str | None:
    """A string pynvml returned (str, or bytes from older releases), or None when empty."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return str(value).strip() or None
