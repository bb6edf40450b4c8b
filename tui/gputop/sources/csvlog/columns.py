"""Which `nvidia-smi --query-gpu` field fills which value of the model: one table.

``QUERY_GPU_FIELDS`` maps a query field name (as the CSV header spells it, without its
``[unit]``) to the model's field path and how its text converts. Several names may feed one
path (``power.draw`` / ``power.draw.instant`` / ``power.draw.average``, the short and long
clock names, ``clocks_event_reasons`` and their pre-535 name ``clocks_throttle_reasons``):
the first of them in the table that holds a value wins.

Kept to this one table so that it can move into the central field table
(``model/fields.py``'s ``--query-gpu`` column) unchanged.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal[
    "timestamp", "int", "number", "mib", "text", "pstate", "flag", "reasons_mask", "active"
]
"""How a cell converts: ``number`` a float with its unit stripped (``33.09 W``), ``mib``
MiB to bytes, ``flag`` Enabled/Disabled, ``reasons_mask`` the hex bitmask of active
clock-event reasons, ``active`` one reason's Active/Not Active."""

_REASONS = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
    "sync_boost",
)


def _reason_fields() -> dict[str, tuple[str, Kind]]:
    fields: dict[str, tuple[str, Kind]] = {}
    for prefix in ("clocks_event_reasons", "clocks_throttle_reasons"):
        fields[f"{prefix}.active"] = ("throttle_reasons", "reasons_mask")
        for reason in _REASONS:
            fields[f"{prefix}.{reason}"] = (f"throttle_reasons.{reason}", "active")
        fields[f"{prefix}.display_clock_setting"] = (
            "throttle_reasons.display_clocks_setting",
            "active",
        )
    return fields


QUERY_GPU_FIELDS: dict[str, tuple[str, Kind]] = {
    # Snapshot-wide.
    "timestamp": ("timestamp", "timestamp"),
    "driver_version": ("driver_version", "text"),
    "count": ("attached_gpus", "int"),
    "hostname": ("host", "text"),
    # Identity.
    "index": ("index", "int"),
    "name": ("name", "text"),
    "gpu_name": ("name", "text"),
    "uuid": ("uuid", "text"),
    "gpu_uuid": ("uuid", "text"),
    "serial": ("serial", "text"),
    "pci.bus_id": ("pci_bus_id", "text"),
    "gpu_bus_id": ("pci_bus_id", "text"),
    # Values.
    "pstate": ("performance_state", "pstate"),
    "fan.speed": ("fan_speed", "number"),
    "temperature.gpu": ("temperature.gpu", "number"),
    "temperature.memory": ("temperature.memory", "number"),
    "utilization.gpu": ("utilization.gpu", "number"),
    "utilization.memory": ("utilization.memory", "number"),
    "utilization.encoder": ("utilization.encoder", "number"),
    "utilization.decoder": ("utilization.decoder", "number"),
    "memory.total": ("memory.total", "mib"),
    "memory.used": ("memory.used", "mib"),
    "memory.free": ("memory.free", "mib"),
    "memory.reserved": ("memory.reserved", "mib"),
    "power.draw": ("power.draw", "number"),
    "power.draw.instant": ("power.draw", "number"),
    "power.draw.average": ("power.draw", "number"),
    "enforced.power.limit": ("power.limit", "number"),
    "power.limit": ("power.limit", "number"),
    "power.default_limit": ("power.default_limit", "number"),
    "power.min_limit": ("power.min_limit", "number"),
    "power.max_limit": ("power.max_limit", "number"),
    "clocks.current.graphics": ("clocks.graphics", "int"),
    "clocks.gr": ("clocks.graphics", "int"),
    "clocks.current.sm": ("clocks.sm", "int"),
    "clocks.sm": ("clocks.sm", "int"),
    "clocks.current.memory": ("clocks.memory", "int"),
    "clocks.mem": ("clocks.memory", "int"),
    "clocks.current.video": ("clocks.video", "int"),
    "clocks.video": ("clocks.video", "int"),
    "clocks.max.graphics": ("max_clocks.graphics", "int"),
    "clocks.max.gr": ("max_clocks.graphics", "int"),
    "clocks.max.sm": ("max_clocks.sm", "int"),
    "clocks.max.memory": ("max_clocks.memory", "int"),
    "clocks.max.mem": ("max_clocks.memory", "int"),
    "persistence_mode": ("persistence_mode", "flag"),
    "compute_mode": ("compute_mode", "text"),
    "mig.mode.current": ("mig_mode", "flag"),
    "ecc.mode.current": ("ecc_mode", "flag"),
    "ecc.errors.corrected.volatile.total": ("ecc_errors.volatile_corrected", "int"),
    "ecc.errors.uncorrected.volatile.total": ("ecc_errors.volatile_uncorrected", "int"),
    "ecc.errors.corrected.aggregate.total": ("ecc_errors.aggregate_corrected", "int"),
    "ecc.errors.uncorrected.aggregate.total": ("ecc_errors.aggregate_uncorrected", "int"),
    **_reason_fields(),
}

REASON_BITS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
)
"""NVML's clock-event reason bits, as ``clocks_event_reasons.active`` prints them."""

SNAPSHOT_PATHS = frozenset({"timestamp", "driver_version", "attached_gpus", "host"})
IDENTITY_PATHS = frozenset({"index", "uuid", "pci_bus_id"})
"""What tells the GPUs of one snapshot apart (and so where a snapshot ends)."""

GPU_VALUE_PATHS: tuple[str, ...] = tuple(
    dict.fromkeys(
        "throttle_reasons" if path.startswith("throttle_reasons") else path
        for path, _ in QUERY_GPU_FIELDS.values()
        if path not in SNAPSHOT_PATHS and path != "index"
    )
)
"""Every GPU value a log may hold; those its header lacks are None "not in this log"."""

QUERY_APPS_FIELDS: dict[str, tuple[str, Kind]] = {
    "pid": ("pid", "int"),
    "process_name": ("name", "text"),
    "name": ("name", "text"),
    "used_gpu_memory": ("memory_used", "mib"),
    "used_memory": ("memory_used", "mib"),
    "gpu_uuid": ("gpu_uuid", "text"),
    "gpu_bus_id": ("gpu_bus_id", "text"),
}
"""`nvidia-smi --query-compute-apps=...` fields: a process and the GPU it runs on."""
