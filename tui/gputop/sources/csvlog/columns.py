"""Which `nvidia-smi --query-gpu` field fills which value of the model: one table.

``QUERY_GPU_FIELDS`` maps a query field name (as the CSV header spells it, without its
``[unit]``) to the model's field path and how its text converts. A metric the central field
table (``model/fields.py``) names by its ``--query-gpu`` name takes name and path from there;
only what that table does not describe is spelled here. Several names may feed one path
(``power.draw`` / ``power.draw.instant`` / ``power.draw.average``, the short and long clock
names, ``clocks_event_reasons`` and their pre-535 name ``clocks_throttle_reasons``): the
first of them in the table that holds a value wins.
"""

from __future__ import annotations

from typing import Literal

from gputop.model.fields import GPU_BY_QUERY, Field, Value

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


def _kind(field: Field) -> Kind:
    """How the cell of a field-table metric converts, from what the field holds."""
    if field.path == "performance_state":
        return "pstate"  # "P2": text in the table, read into the P-state enum
    if field.value is Value.BYTES:
        return "mib"  # nvidia-smi prints MiB
    if field.value is Value.TEXT:
        return "text"
    if field.value is Value.FLAG:
        return "flag"
    if field.value is Value.NUMBER:
        # Counts, indices and clocks are whole numbers; %, W and °C may carry decimals.
        return "int" if field.unit in ("", "MHz") else "number"
    raise ValueError(f"no `--query-gpu` conversion for {field.path} ({field.value})")


_REASON_FIELDS = _reason_fields()

_FROM_FIELD_TABLE: dict[str, tuple[str, Kind]] = {
    name: (field.path, _kind(field))
    for name, field in GPU_BY_QUERY.items()
    # The reason columns below give throttle_reasons its path, with the newer name first.
    if name not in _REASON_FIELDS
}
"""Every metric the field table names by its `--query-gpu` name: its path from there."""

QUERY_GPU_FIELDS: dict[str, tuple[str, Kind]] = {
    # Snapshot-wide: the field table holds a GPU's metrics, not the snapshot's.
    "timestamp": ("timestamp", "timestamp"),
    "driver_version": ("driver_version", "text"),
    "count": ("attached_gpus", "int"),
    "hostname": ("host", "text"),
    **_FROM_FIELD_TABLE,
    # Other names nvidia-smi takes for a field-table metric, after the table's own name so
    # that the latter wins when a log holds both: `--query-compute-apps` spellings, the
    # instant/average power of newer drivers, the short clock names.
    "gpu_name": ("name", "text"),
    "gpu_uuid": ("uuid", "text"),
    "gpu_bus_id": ("pci_bus_id", "text"),
    "power.draw.instant": ("power.draw", "number"),
    "power.draw.average": ("power.draw", "number"),
    "power.limit": ("power.limit", "number"),
    "clocks.gr": ("clocks.graphics", "int"),
    "clocks.sm": ("clocks.sm", "int"),
    "clocks.mem": ("clocks.memory", "int"),
    "clocks.video": ("clocks.video", "int"),
    # Values the model holds that the field table has no row for (no `--json` key yet).
    "temperature.memory": ("temperature.memory", "number"),
    "power.default_limit": ("power.default_limit", "number"),
    "power.min_limit": ("power.min_limit", "number"),
    "power.max_limit": ("power.max_limit", "number"),
    "clocks.max.graphics": ("max_clocks.graphics", "int"),
    "clocks.max.gr": ("max_clocks.graphics", "int"),
    "clocks.max.sm": ("max_clocks.sm", "int"),
    "clocks.max.memory": ("max_clocks.memory", "int"),
    "clocks.max.mem": ("max_clocks.memory", "int"),
    "persistence_mode": ("persistence_mode", "flag"),
    "compute_mode": ("compute_mode", "text"),
    "retired_pages.sbe": ("retired_pages.single_bit", "int"),
    "retired_pages.dbe": ("retired_pages.double_bit", "int"),
    # The clock-event reasons: one bitmask column or one column per reason, each under its
    # 535+ name and its older `clocks_throttle_reasons` one; the table has one summary row.
    **_REASON_FIELDS,
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
