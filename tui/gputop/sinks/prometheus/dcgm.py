"""What dcgm-exporter says of the names gputop exports under its vocabulary.

Types and help texts are dcgm-exporter's, from ``etc/default-counters.csv`` and
``etc/dcp-metrics-included.csv`` (NVIDIA/dcgm-exporter); fields that dcgm-exporter exports
only when a counters file names them (DCGM fields of ``dcgmlib/dcgm_fields.h``, in DCGM's
units) get a help text in the same style. The clock-event names and the window label are
those of ``internal/pkg/collector/clock_events_collector.go`` and ``collector/const.go``.
"""

from __future__ import annotations

from typing import NamedTuple

from gputop.model.throttle import ThrottleReason


class Family(NamedTuple):
    """A metric's Prometheus type and help text."""

    type: str
    help: str


DCGM_FAMILIES: dict[str, Family] = {
    # etc/default-counters.csv
    "DCGM_FI_DEV_SM_CLOCK": Family("gauge", "SM clock frequency (in MHz)."),
    "DCGM_FI_DEV_MEM_CLOCK": Family("gauge", "Memory clock frequency (in MHz)."),
    "DCGM_FI_DEV_MEMORY_TEMP": Family("gauge", "Memory temperature (in C)."),
    "DCGM_FI_DEV_GPU_TEMP": Family("gauge", "GPU temperature (in C)."),
    "DCGM_FI_DEV_POWER_USAGE": Family("gauge", "Power draw (in W)."),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": Family(
        "counter", "Total energy consumption since boot (in mJ)."
    ),
    "DCGM_FI_DEV_GPU_UTIL": Family("gauge", "GPU utilization (in %)."),
    "DCGM_FI_DEV_MEM_COPY_UTIL": Family("gauge", "Memory utilization (in %)."),
    "DCGM_FI_DEV_ENC_UTIL": Family("gauge", "Encoder utilization (in %)."),
    "DCGM_FI_DEV_DEC_UTIL": Family("gauge", "Decoder utilization (in %)."),
    "DCGM_FI_DEV_XID_ERRORS": Family("gauge", "Value of the last XID error encountered."),
    "DCGM_FI_DEV_FB_FREE": Family("gauge", "Framebuffer memory free (in MiB)."),
    "DCGM_FI_DEV_FB_USED": Family("gauge", "Framebuffer memory used (in MiB)."),
    "DCGM_FI_DEV_FB_RESERVED": Family("gauge", "Framebuffer memory reserved (in MiB)."),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": Family(
        "counter", "Total number of single-bit volatile ECC errors."
    ),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": Family(
        "counter", "Total number of double-bit volatile ECC errors."
    ),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": Family(
        "gauge", "Ratio of time the graphics engine is active."
    ),
    # etc/dcp-metrics-included.csv (SM activity and occupancy are listed there, commented out)
    "DCGM_FI_PROF_SM_ACTIVE": Family(
        "gauge", "The ratio of cycles an SM has at least 1 warp assigned."
    ),
    "DCGM_FI_PROF_SM_OCCUPANCY": Family("gauge", "The ratio of number of warps resident on an SM."),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": Family(
        "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."
    ),
    "DCGM_FI_PROF_DRAM_ACTIVE": Family(
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    "DCGM_FI_PROF_PCIE_TX_BYTES": Family(
        "gauge",
        "The rate of data transmitted over the PCIe bus - including both protocol headers "
        "and data payloads - in bytes per second.",
    ),
    "DCGM_FI_PROF_PCIE_RX_BYTES": Family(
        "gauge",
        "The rate of data received over the PCIe bus - including both protocol headers and "
        "data payloads - in bytes per second.",
    ),
    "DCGM_EXP_CLOCK_EVENTS_COUNT": Family("counter", "reported clock events"),
    # DCGM fields dcgm-exporter exports when a counters file lists them (dcgm_fields.h).
    "DCGM_FI_DEV_FB_TOTAL": Family("gauge", "Framebuffer memory total (in MiB)."),
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": Family(
        "gauge", "Effective power limit that the driver enforces (in W)."
    ),
    "DCGM_FI_DEV_SLOWDOWN_TEMP": Family("gauge", "Slowdown temperature (in C)."),
    "DCGM_FI_DEV_SHUTDOWN_TEMP": Family("gauge", "Shutdown temperature (in C)."),
    "DCGM_FI_DEV_FAN_SPEED": Family("gauge", "Fan speed (in %)."),
    "DCGM_FI_DEV_PSTATE": Family("gauge", "Performance state (P-State) 0-15. 0=highest."),
    "DCGM_FI_DEV_VIDEO_CLOCK": Family("gauge", "Video encoder/decoder clock (in MHz)."),
    # ECC, retired pages and remapped rows (etc/default-counters.csv; the ECC and retired
    # pages lines ship commented out, the remapped rows ones in).
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": Family(
        "counter", "Total number of single-bit persistent ECC errors."
    ),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": Family(
        "counter", "Total number of double-bit persistent ECC errors."
    ),
    "DCGM_FI_DEV_RETIRED_SBE": Family(
        "counter", "Total number of retired pages due to single-bit errors."
    ),
    "DCGM_FI_DEV_RETIRED_DBE": Family(
        "counter", "Total number of retired pages due to double-bit errors."
    ),
    "DCGM_FI_DEV_RETIRED_PENDING": Family("counter", "Total number of pages pending retirement."),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": Family(
        "counter", "Number of remapped rows for uncorrectable errors"
    ),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": Family(
        "counter", "Number of remapped rows for correctable errors"
    ),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": Family("gauge", "Whether remapping of rows has failed"),
    "DCGM_FI_DEV_ROW_REMAP_PENDING": Family("gauge", "Whether remapping of rows is pending"),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": Family(
        "gauge",
        "The rate of data transmitted over NVLink - including both protocol headers and data "
        "payloads - in bytes per second.",
    ),
    "DCGM_FI_PROF_NVLINK_RX_BYTES": Family(
        "gauge",
        "The rate of data received over NVLink - including both protocol headers and data "
        "payloads - in bytes per second.",
    ),
}

CLOCK_EVENTS = "DCGM_EXP_CLOCK_EVENTS_COUNT"
CLOCK_EVENT_LABEL = "clock_event"
WINDOW_LABEL = "window_size_in_ms"
DEFAULT_CLOCK_EVENTS_WINDOW_MS = 5 * 60 * 1000
"""dcgm-exporter's ``--clock-events-count-window-size`` default (``pkg/cmd/app.go``)."""

CLOCK_EVENT_NAMES: dict[ThrottleReason, str] = {
    ThrottleReason.GPU_IDLE: "gpu_idle",
    ThrottleReason.APPLICATIONS_CLOCKS_SETTING: "clocks_setting",
    ThrottleReason.SW_POWER_CAP: "power_cap",
    ThrottleReason.HW_SLOWDOWN: "hw_slowdown",
    ThrottleReason.SYNC_BOOST: "sync_boost",
    ThrottleReason.SW_THERMAL_SLOWDOWN: "sw_thermal",
    ThrottleReason.HW_THERMAL_SLOWDOWN: "hw_thermal",
    ThrottleReason.HW_POWER_BRAKE_SLOWDOWN: "hw_power_brake",
    ThrottleReason.DISPLAY_CLOCKS_SETTING: "display_clocks",
}
"""Each reason as dcgm-exporter's ``clock_event`` label names it (DCGM's ``dcgmi`` names);
``unknown`` has no DCGM bit and is not counted."""

# The label names of dcgm-exporter's GPU template (``rendermetrics/render_metrics.go``), in
# its order. ``Hostname`` is the name of every release to 4.8.2; dcgm-exporter's main branch
# renamed it ``hostname`` in May 2026 (#655), after them.
GPU = "gpu"
UUID = "UUID"
PCI_BUS_ID = "pci_bus_id"
DEVICE = "device"
MODEL_NAME = "modelName"
GPU_I_PROFILE = "GPU_I_PROFILE"
GPU_I_ID = "GPU_I_ID"
HOSTNAME = "Hostname"
DRIVER_VERSION = "DCGM_FI_DRIVER_VERSION"
# Kubernetes attributes (``transformation/const.go``), rendered after the labels in the
# template's sorted order.
CONTAINER = "container"
NAMESPACE = "namespace"
POD = "pod"
