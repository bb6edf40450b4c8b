"""The field table: every GPU, MIG and process metric once, with each name it goes by.

A :class:`Field` says where a value sits in the model (``path``, read by ``read``), what people
call it (``label``, ``unit``) and what each output names it: the ``--json`` key, the ``--log``
CSV column, the ``nvidia-smi --query-gpu`` name, and the Prometheus metric (dcgm-exporter's
``DCGM_FI_…`` where it has one, in its unit, else a ``gputop_`` name). The sinks, the history
and the report read these tables instead of spelling the fields again; a new metric is a new
row here (see ARCHITECTURE.md, "Where to add a metric").

The tuples are in ``--json`` order; ``CSV_LOG`` is in the CSV's column order.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, cast

from gputop.model.sample import GpuSample, ProcessSample


class Value(enum.Enum):
    """What kind of value a field holds, which decides how each output writes it."""

    NUMBER = "number"
    """int or float in ``unit``."""
    BYTES = "bytes"
    """int bytes; the CSV log writes MiB, as nvidia-smi does (and DCGM's ``FB_*``, see
    ``Field.export_scale``)."""
    TEXT = "text"
    FLAG = "flag"
    """bool."""
    NAMES = "names"
    """A tuple of names (the throttle reasons): a list in JSON, ``;``-joined in the CSV."""
    COUNT = "count"
    """How many of something (processes): derived, never None."""


@dataclass(frozen=True, slots=True)
class Field:
    """One metric and every name it goes by."""

    path: str
    """Dotted attribute path in the model object (``"utilization.gpu"``); also the key under
    which ``unavailable`` says why the value is None."""
    label: str
    """The short name people read (the TUI's detail line, the history screen)."""
    unit: str = ""
    value: Value = Value.NUMBER
    json: str | None = None
    """The key in ``--json``; None when the JSON does not carry it."""
    csv: str | None = None
    """The ``--log`` CSV column; None when the log does not carry it."""
    query: str | None = None
    """The ``nvidia-smi --query-gpu`` name, where nvidia-smi has one."""
    prometheus: str | None = None
    """The exported metric name; None for what is a label (name, UUID) rather than a metric."""
    export_scale: float = 1.0
    """What the model value is multiplied by for the Prometheus metric: ``1 / MIB`` for
    DCGM's framebuffer metrics, which are MiB where the model holds bytes."""
    host: bool = False
    """A process fact the host's process table gives, not the driver (user, command, …)."""
    read: Callable[[Any], Any] = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    """The value from a model object: ``attrgetter(path)`` unless the field is derived."""

    def __post_init__(self) -> None:
        if self.read is None:
            object.__setattr__(self, "read", attrgetter(self.path))


MIB = 1024 * 1024


def _process_count(gpu: GpuSample) -> int | None:
    # None when the source has no process data (a `--query-gpu` log alone), not "none ran".
    return None if gpu.reason("processes") is not None else len(gpu.processes)


INDEX = Field("index", "GPU", json="index", csv="index", query="index", prometheus=None)
NAME = Field("name", "name", value=Value.TEXT, json="name", csv="name", query="name")
UUID = Field("uuid", "UUID", value=Value.TEXT, json="uuid", csv="uuid", query="uuid")
PCI_BUS_ID = Field("pci_bus_id", "bus", value=Value.TEXT, json="pci_bus_id", query="pci.bus_id")
SERIAL = Field("serial", "serial", value=Value.TEXT, json="serial", query="serial")
LOST = Field("lost", "lost", value=Value.FLAG, json="lost", prometheus="gputop_gpu_lost")
GPU_UTIL = Field(
    "utilization.gpu",
    "util",
    "%",
    json="utilization_gpu",
    csv="utilization_gpu",
    query="utilization.gpu",
    prometheus="DCGM_FI_DEV_GPU_UTIL",
)
MEM_UTIL = Field(
    "utilization.memory",
    "mem util",
    "%",
    json="utilization_memory",
    csv="utilization_memory",
    query="utilization.memory",
    prometheus="DCGM_FI_DEV_MEM_COPY_UTIL",
)
ENC_UTIL = Field(
    "utilization.encoder",
    "enc",
    "%",
    json="utilization_encoder",
    query="utilization.encoder",
    prometheus="DCGM_FI_DEV_ENC_UTIL",
)
DEC_UTIL = Field(
    "utilization.decoder",
    "dec",
    "%",
    json="utilization_decoder",
    query="utilization.decoder",
    prometheus="DCGM_FI_DEV_DEC_UTIL",
)
# GPM (Hopper and later): percent in the model, DCGM's ratios (0-1) when exported.
ACTIVITY_GRAPHICS = Field(
    "activity.graphics",
    "engine active",
    "%",
    json="activity_graphics",
    csv="activity_graphics",
    prometheus="DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    export_scale=1 / 100,
)
ACTIVITY_SM = Field(
    "activity.sm",
    "SM active",
    "%",
    json="activity_sm",
    csv="activity_sm",
    prometheus="DCGM_FI_PROF_SM_ACTIVE",
    export_scale=1 / 100,
)
ACTIVITY_SM_OCCUPANCY = Field(
    "activity.sm_occupancy",
    "SM occupancy",
    "%",
    json="activity_sm_occupancy",
    csv="activity_sm_occupancy",
    prometheus="DCGM_FI_PROF_SM_OCCUPANCY",
    export_scale=1 / 100,
)
ACTIVITY_TENSOR = Field(
    "activity.tensor",
    "tensor active",
    "%",
    json="activity_tensor",
    csv="activity_tensor",
    prometheus="DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    export_scale=1 / 100,
)
ACTIVITY_DRAM = Field(
    "activity.dram",
    "DRAM active",
    "%",
    json="activity_dram",
    csv="activity_dram",
    prometheus="DCGM_FI_PROF_DRAM_ACTIVE",
    export_scale=1 / 100,
)
PCIE_TX = Field(
    "activity.pcie_tx",
    "PCIe tx",
    "B/s",
    json="pcie_tx_bytes_per_second",
    csv="pcie_tx_bytes_per_s",
    prometheus="DCGM_FI_PROF_PCIE_TX_BYTES",
)
PCIE_RX = Field(
    "activity.pcie_rx",
    "PCIe rx",
    "B/s",
    json="pcie_rx_bytes_per_second",
    csv="pcie_rx_bytes_per_s",
    prometheus="DCGM_FI_PROF_PCIE_RX_BYTES",
)
NVLINK_TX = Field(
    "activity.nvlink_tx",
    "NVLink tx",
    "B/s",
    json="nvlink_tx_bytes_per_second",
    csv="nvlink_tx_bytes_per_s",
    prometheus="DCGM_FI_PROF_NVLINK_TX_BYTES",
)
NVLINK_RX = Field(
    "activity.nvlink_rx",
    "NVLink rx",
    "B/s",
    json="nvlink_rx_bytes_per_second",
    csv="nvlink_rx_bytes_per_s",
    prometheus="DCGM_FI_PROF_NVLINK_RX_BYTES",
)
ACTIVITY_FIELDS: tuple[Field, ...] = (
    ACTIVITY_GRAPHICS,
    ACTIVITY_SM,
    ACTIVITY_SM_OCCUPANCY,
    ACTIVITY_TENSOR,
    ACTIVITY_DRAM,
    PCIE_TX,
    PCIE_RX,
    NVLINK_TX,
    NVLINK_RX,
)
"""What GPM measures for a GPU (``model.sample.Activity``), in ``--json`` and ``--log`` order."""
MEM_TOTAL = Field(
    "memory.total",
    "memory total",
    "B",
    Value.BYTES,
    json="memory_total",
    csv="memory_total_mib",
    query="memory.total",
    prometheus="DCGM_FI_DEV_FB_TOTAL",
    export_scale=1 / MIB,
)
MEM_USED = Field(
    "memory.used",
    "memory",
    "B",
    Value.BYTES,
    json="memory_used",
    csv="memory_used_mib",
    query="memory.used",
    prometheus="DCGM_FI_DEV_FB_USED",
    export_scale=1 / MIB,
)
MEM_FREE = Field(
    "memory.free",
    "memory free",
    "B",
    Value.BYTES,
    json="memory_free",
    query="memory.free",
    prometheus="DCGM_FI_DEV_FB_FREE",
    export_scale=1 / MIB,
)
MEM_RESERVED = Field(
    "memory.reserved",
    "memory reserved",
    "B",
    Value.BYTES,
    json="memory_reserved",
    query="memory.reserved",
    prometheus="DCGM_FI_DEV_FB_RESERVED",
    export_scale=1 / MIB,
)
POWER_DRAW = Field(
    "power.draw",
    "power",
    "W",
    json="power_draw",
    csv="power_draw_w",
    query="power.draw",
    prometheus="DCGM_FI_DEV_POWER_USAGE",
)
POWER_LIMIT = Field(
    "power.limit",
    "power limit",
    "W",
    json="power_limit",
    csv="power_limit_w",
    query="enforced.power.limit",
    prometheus="DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
)
"""The enforced limit (what the GPU is held to), which DCGM and nvidia-smi name so; their
``power.limit`` / ``POWER_MGMT_LIMIT`` is the one set by management, often the same."""
ENERGY = Field(
    "power.energy",
    "energy",
    "J",
    prometheus="DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    export_scale=1000,
)
"""A counter since the driver was loaded; DCGM's is in mJ."""
TEMP = Field(
    "temperature.gpu",
    "temp",
    "°C",
    json="temperature",
    csv="temperature_c",
    query="temperature.gpu",
    prometheus="DCGM_FI_DEV_GPU_TEMP",
)
TEMP_MEMORY = Field(
    "temperature.memory",
    "memory temp",
    "°C",
    prometheus="DCGM_FI_DEV_MEMORY_TEMP",
)
"""HBM parts report it; others say not supported."""
TEMP_SLOWDOWN = Field(
    "temperature.slowdown",
    "slowdown temp",
    "°C",
    json="temperature_slowdown",
    prometheus="DCGM_FI_DEV_SLOWDOWN_TEMP",
)
TEMP_SHUTDOWN = Field(
    "temperature.shutdown",
    "shutdown temp",
    "°C",
    json="temperature_shutdown",
    prometheus="DCGM_FI_DEV_SHUTDOWN_TEMP",
)
FAN = Field(
    "fan_speed",
    "fan",
    "%",
    json="fan_speed",
    csv="fan_speed",
    query="fan.speed",
    prometheus="DCGM_FI_DEV_FAN_SPEED",
)
PSTATE = Field(
    "performance_state",
    "P-state",
    value=Value.TEXT,
    json="performance_state",
    csv="pstate",
    query="pstate",
    prometheus="DCGM_FI_DEV_PSTATE",
)
"""Exported as the number after the P (``P2`` -> 2), as DCGM does."""
GRAPHICS_CLOCK = Field(
    "clocks.graphics",
    "graphics clock",
    "MHz",
    json="clocks_graphics",
    query="clocks.current.graphics",
    prometheus="gputop_graphics_clock_mhz",
)
SM_CLOCK = Field(
    "clocks.sm",
    "sm clock",
    "MHz",
    json="clocks_sm",
    csv="sm_clock_mhz",
    query="clocks.current.sm",
    prometheus="DCGM_FI_DEV_SM_CLOCK",
)
MEM_CLOCK = Field(
    "clocks.memory",
    "mem clock",
    "MHz",
    json="clocks_memory",
    csv="mem_clock_mhz",
    query="clocks.current.memory",
    prometheus="DCGM_FI_DEV_MEM_CLOCK",
)
VIDEO_CLOCK = Field(
    "clocks.video",
    "video clock",
    "MHz",
    json="clocks_video",
    query="clocks.current.video",
    prometheus="DCGM_FI_DEV_VIDEO_CLOCK",
)
ECC_MODE = Field(
    "ecc_mode",
    "ECC",
    value=Value.FLAG,
    json="ecc_mode",
    query="ecc.mode.current",
    prometheus="gputop_ecc_mode",
)
ECC_VOLATILE_CORRECTED = Field(
    "ecc_errors.volatile_corrected",
    "ECC corrected",
    json="ecc_errors_volatile_corrected",
    query="ecc.errors.corrected.volatile.total",
    prometheus="DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
)
ECC_VOLATILE_UNCORRECTED = Field(
    "ecc_errors.volatile_uncorrected",
    "ECC uncorrected",
    json="ecc_errors_volatile_uncorrected",
    query="ecc.errors.uncorrected.volatile.total",
    prometheus="DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
)
ECC_AGGREGATE_CORRECTED = Field(
    "ecc_errors.aggregate_corrected",
    "ECC corrected (lifetime)",
    json="ecc_errors_aggregate_corrected",
    query="ecc.errors.corrected.aggregate.total",
    prometheus="DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
)
ECC_AGGREGATE_UNCORRECTED = Field(
    "ecc_errors.aggregate_uncorrected",
    "ECC uncorrected (lifetime)",
    json="ecc_errors_aggregate_uncorrected",
    query="ecc.errors.uncorrected.aggregate.total",
    prometheus="DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
)
RETIRED_SBE = Field(
    "retired_pages.single_bit",
    "pages retired (single-bit)",
    json="retired_pages_single_bit",
    query="retired_pages.single_bit_ecc.count",
    prometheus="DCGM_FI_DEV_RETIRED_SBE",
)
RETIRED_DBE = Field(
    "retired_pages.double_bit",
    "pages retired (double-bit)",
    json="retired_pages_double_bit",
    query="retired_pages.double_bit.count",
    prometheus="DCGM_FI_DEV_RETIRED_DBE",
)
RETIRED_PENDING = Field(
    "retired_pages.pending",
    "page retirement pending",
    value=Value.FLAG,
    json="retired_pages_pending",
    query="retired_pages.pending",
    prometheus="DCGM_FI_DEV_RETIRED_PENDING",
)
REMAPPED_CORRECTABLE = Field(
    "remapped_rows.correctable",
    "rows remapped (correctable)",
    json="remapped_rows_correctable",
    query="remapped_rows.correctable",
    prometheus="DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
)
REMAPPED_UNCORRECTABLE = Field(
    "remapped_rows.uncorrectable",
    "rows remapped (uncorrectable)",
    json="remapped_rows_uncorrectable",
    query="remapped_rows.uncorrectable",
    prometheus="DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
)
REMAP_PENDING = Field(
    "remapped_rows.pending",
    "row remap pending",
    value=Value.FLAG,
    json="remapped_rows_pending",
    query="remapped_rows.pending",
    prometheus="DCGM_FI_DEV_ROW_REMAP_PENDING",
)
REMAP_FAILURE = Field(
    "remapped_rows.failure",
    "row remap failed",
    value=Value.FLAG,
    json="remapped_rows_failure",
    query="remapped_rows.failure",
    prometheus="DCGM_FI_DEV_ROW_REMAP_FAILURE",
)
HEALTH_FIELDS: tuple[Field, ...] = (
    ECC_AGGREGATE_CORRECTED,
    ECC_AGGREGATE_UNCORRECTED,
    RETIRED_SBE,
    RETIRED_DBE,
    RETIRED_PENDING,
    REMAPPED_CORRECTABLE,
    REMAPPED_UNCORRECTABLE,
    REMAP_PENDING,
    REMAP_FAILURE,
)
"""The memory-health counters (issue 28) beside the volatile ECC counts: lifetime ECC,
retired pages (Volta and earlier) and remapped rows (Ampere and later), under
dcgm-exporter's names (``DCGM_FI_DEV_RETIRED_*``, ``…_REMAPPED_ROWS``, ``ROW_REMAP_*``)."""
THROTTLE = Field(
    "throttle_reasons",
    "throttle",
    value=Value.NAMES,
    json="throttle_reasons",
    csv="throttle_reasons",
    query="clocks_throttle_reasons.active",
    prometheus="gputop_throttle_reason",
)
"""Exported one series per active reason (label ``reason``), as the names of
:class:`gputop.model.throttle.ThrottleReason`."""
MIG_MODE = Field(
    "mig_mode",
    "MIG",
    value=Value.FLAG,
    json="mig_mode",
    query="mig.mode.current",
    prometheus="gputop_mig_mode",
)
PROCESSES = Field(
    "processes",
    "processes",
    value=Value.COUNT,
    csv="processes",
    prometheus="gputop_processes",
    read=_process_count,
)

GPU_FIELDS: tuple[Field, ...] = (
    INDEX,
    NAME,
    UUID,
    PCI_BUS_ID,
    SERIAL,
    LOST,
    GPU_UTIL,
    MEM_UTIL,
    ENC_UTIL,
    DEC_UTIL,
    *ACTIVITY_FIELDS,
    MEM_TOTAL,
    MEM_USED,
    MEM_FREE,
    MEM_RESERVED,
    POWER_DRAW,
    POWER_LIMIT,
    ENERGY,
    TEMP,
    TEMP_MEMORY,
    TEMP_SLOWDOWN,
    TEMP_SHUTDOWN,
    FAN,
    PSTATE,
    GRAPHICS_CLOCK,
    SM_CLOCK,
    MEM_CLOCK,
    VIDEO_CLOCK,
    ECC_MODE,
    ECC_VOLATILE_CORRECTED,
    ECC_VOLATILE_UNCORRECTED,
    THROTTLE,
    MIG_MODE,
    PROCESSES,
    *HEALTH_FIELDS,
)
"""A GPU's fields, in ``--json`` order."""

CSV_LOG: tuple[Field, ...] = (
    INDEX,
    UUID,
    NAME,
    GPU_UTIL,
    MEM_UTIL,
    MEM_USED,
    MEM_TOTAL,
    POWER_DRAW,
    POWER_LIMIT,
    TEMP,
    FAN,
    SM_CLOCK,
    MEM_CLOCK,
    PSTATE,
    THROTTLE,
    PROCESSES,
    *ACTIVITY_FIELDS,
)
"""The ``--log`` columns after the timestamp, in their order (the documented header). The
GPM columns come last, so that a log an earlier gputop wrote (:data:`CSV_LOG_BEFORE_GPM`,
the same columns without them) is continued with its own columns."""

CSV_LOG_BEFORE_GPM: tuple[Field, ...] = CSV_LOG[: -len(ACTIVITY_FIELDS)]
"""The ``--log`` columns of gputop before it read GPM."""

GPU_BY_PATH: dict[str, Field] = {f.path: f for f in GPU_FIELDS}
GPU_BY_QUERY: dict[str, Field] = {f.query: f for f in GPU_FIELDS if f.query is not None}
"""The field an ``nvidia-smi --query-gpu`` column holds."""

IDENTITY: tuple[Field, ...] = (INDEX, NAME, UUID)
"""What names a GPU in a summary of many samples (the report)."""

MIG_FIELDS: tuple[Field, ...] = (
    Field("index", "MIG device", json="index"),
    Field("gpu_instance_id", "GPU instance", json="gpu_instance_id"),
    Field("compute_instance_id", "compute instance", json="compute_instance_id"),
    Field("profile", "profile", value=Value.TEXT, json="profile"),
    Field("profile_derived", "profile derived", value=Value.FLAG, json="profile_derived"),
    Field("profile_from_name", "profile from name", value=Value.FLAG, json="profile_from_name"),
    Field("uuid", "UUID", value=Value.TEXT, json="uuid"),
    # Not ``…_sm_count``: Prometheus keeps ``_count`` for histograms and summaries.
    Field("sm_count", "SMs", json="sm_count", prometheus="gputop_mig_streaming_multiprocessors"),
    Field(
        "memory.total",
        "memory total",
        "B",
        Value.BYTES,
        json="memory_total",
        prometheus="DCGM_FI_DEV_FB_TOTAL",
        export_scale=1 / MIB,
    ),
    Field(
        "memory.used",
        "memory",
        "B",
        Value.BYTES,
        json="memory_used",
        prometheus="DCGM_FI_DEV_FB_USED",
        export_scale=1 / MIB,
    ),
    Field(
        "utilization.gpu",
        "graphics activity",
        "%",
        prometheus="DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        export_scale=1 / 100,
    ),
)
"""A MIG device's fields, in ``--json`` order; DCGM exports MIG devices under the GPU's
names with ``GPU_I_ID`` labels, so do we. A MIG instance's graphics activity (GPM, Hopper
and later: None elsewhere) is DCGM's ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``, a ratio of 0 to 1."""

OWNER_PARTS: tuple[tuple[str, str], ...] = (
    ("container_id", "Container id"),
    ("pod", "Pod"),
    ("namespace", "Namespace"),
    ("container", "Container"),
    ("slurm_job", "Slurm job"),
)
"""The parts of a process's ``owner`` that ``--json`` (and labels) carry, as flat keys: a
dashboard filters on ``pod``, not on a nested object. Runtime and pod UID stay in the model."""


def _owner_field(name: str, label: str) -> Field:
    def read(process: ProcessSample) -> str | None:
        owner = process.owner
        return None if owner is None else cast("str | None", getattr(owner, name))

    return Field(f"owner.{name}", label, value=Value.TEXT, json=name, read=read)


PROCESS_FIELDS: tuple[Field, ...] = (
    Field("pid", "PID (driver)", json="pid"),
    Field("type", "Type", value=Value.TEXT, json="type"),
    Field("name", "Process name", value=Value.TEXT, json="name"),
    Field(
        "memory_used",
        "GPU memory",
        "B",
        Value.BYTES,
        json="memory_used",
        prometheus="gputop_process_memory_used_bytes",
    ),
    Field("gpu_instance_id", "GPU instance", json="gpu_instance_id"),
    Field("compute_instance_id", "Compute instance", json="compute_instance_id"),
    Field(
        "sm_utilization",
        "SM utilization",
        "%",
        json="sm_utilization",
        prometheus="gputop_process_sm_utilization",
    ),
    Field("user", "User", value=Value.TEXT, json="user", host=True),
    Field("command", "Command", value=Value.TEXT, json="command", host=True),
    Field("cpu_percent", "CPU", "%", prometheus="gputop_process_cpu_percent", host=True),
    Field(
        "host_memory",
        "Host memory",
        "B",
        Value.BYTES,
        prometheus="gputop_process_host_memory_bytes",
        host=True,
    ),
    Field("start_time", "Started", "s", host=True),
    Field("foreign", "PID namespace", value=Value.FLAG, json="foreign", host=True),
    Field("local_pid", "PID here", host=True),
    Field("owner", "Container, pod or job", value=Value.TEXT, host=True),
    *(_owner_field(name, label) for name, label in OWNER_PARTS),
)
"""A process's fields, in ``ProcessSample`` order (``--json`` writes those with a key); the
``owner.*`` rows after them flatten the one ``owner`` value into its parts for the outputs."""

PROCESS_BY_PATH: dict[str, Field] = {f.path: f for f in PROCESS_FIELDS}

HOST_FIELDS: tuple[str, ...] = tuple(f.path for f in PROCESS_FIELDS if f.host)
"""The process facts the host gives (``ProcessSample`` attributes), set together on a row."""


def host_facts(process: ProcessSample) -> dict[str, Any]:
    """The host facts of ``process`` by name: what a driver row takes from the host's
    answer for its PID (the name aside: the driver's name wins, so each row decides)."""
    return {name: getattr(process, name) for name in HOST_FIELDS}
