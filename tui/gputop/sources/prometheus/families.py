"""Which Prometheus metric families a fleet reads, and what each one fills in the model.

The names come from the field table (``model/fields.py``: each field's ``prometheus`` name and
``export_scale``), so dcgm-exporter's ``DCGM_FI_…`` series and gputop's own exporter map back
into the same ``GpuSample`` fields with no list kept here; only what the table does not carry
(dcgm-exporter spellings gputop does not export, MIG activity, the labels) is named below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from gputop.model.fields import (
    GPU_FIELDS,
    MIB,
    MIG_FIELDS,
    POWER_LIMIT,
    PROCESS_FIELDS,
    PROCESSES,
    THROTTLE,
    Field,
    Value,
)
from gputop.model.owner import Owner


class Reading(NamedTuple):
    """One series' newest value, from Prometheus or a scraped exposition (a tuple: a large
    fleet makes tens of thousands each refresh)."""

    metric: str
    labels: Mapping[str, str]
    value: float


GPU_METRICS: dict[str, Field] = {
    f.prometheus: f
    for f in GPU_FIELDS
    if f.prometheus is not None and f not in (THROTTLE, PROCESSES)
}
"""Metric name -> the GPU field its value fills (divided by ``export_scale``)."""

MIG_METRICS: dict[str, Field] = {
    f.prometheus: f for f in MIG_FIELDS if f.prometheus is not None and f.path != "sm_count"
}
"""Metrics that, on a series with ``GPU_I_ID``, are the MIG instance's own (its memory)."""

MIG_FREE = Field(
    "memory.free", "memory free", "B", Value.BYTES, prometheus="DCGM_FI_DEV_FB_FREE",
    export_scale=1 / MIB,
)  # fmt: skip
"""dcgm-exporter reports free framebuffer per MIG instance too; gputop's MIG rows lack it."""

POWER_MGMT_LIMIT = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
"""dcgm-exporter's set power limit, read as the limit when the enforced one is not exported."""

GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
"""A ratio (0-1) of time the graphics engine was busy: the only activity DCGM gives per MIG
instance, read as that instance's utilization in percent."""

INSTANCE_PROFILING: frozenset[str] = frozenset(
    name for name, f in GPU_METRICS.items() if f.path.startswith("activity.")
)
"""GPM's profiling metrics, which DCGM reports per MIG instance too: on a series with
``GPU_I_ID`` they are the instance's, never the GPU's."""

THROTTLE_MASKS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
"""dcgm-exporter's clock-event bit mask (NVML's bits), under its newer and older names."""

THROTTLE_METRIC: str = THROTTLE.prometheus or "gputop_throttle_reason"
PROCESSES_METRIC: str = PROCESSES.prometheus or "gputop_processes"

STATE_METRIC = "gputop_gpu_state"
"""gputop's exporter: the diagnosis state per GPU, one series per ``state`` label, 1 for the
current one."""
WAITING_METRIC = "gputop_gpu_waiting_seconds"
"""gputop's exporter: seconds the GPU has been waiting (memory held, compute idle)."""

PROCESS_METRICS: dict[str, Field] = {
    f.prometheus: f for f in PROCESS_FIELDS if f.prometheus is not None
}
"""gputop's per-process series (label ``pid``), which become the GPU's processes."""

VALUE_METRICS: tuple[str, ...] = tuple(
    sorted(
        {
            *GPU_METRICS,
            *MIG_METRICS,
            POWER_MGMT_LIMIT,
            GR_ENGINE_ACTIVE,
            *THROTTLE_MASKS,
            THROTTLE_METRIC,
            PROCESSES_METRIC,
            STATE_METRIC,
            WAITING_METRIC,
            *PROCESS_METRICS,
        }
    )
)
"""Every family a refresh asks for (those the server has: see ``present``)."""

UTIL_METRIC: str = next(name for name, f in GPU_METRICS.items() if f.path == "utilization.gpu")
MEMORY_USED_METRIC: str = next(name for name, f in GPU_METRICS.items() if f.path == "memory.used")
MEMORY_USED_SCALE: float = GPU_METRICS[MEMORY_USED_METRIC].export_scale
POWER_LIMIT_METRIC: str | None = POWER_LIMIT.prometheus

HOST_LABELS = ("Hostname", "hostname")
"""dcgm-exporter's host label (``Hostname``), and its lower-case spelling some versions and
relabelling rules use; without either, the host part of Prometheus's ``instance``."""

UUID_LABELS = ("UUID", "uuid")
POD_LABELS = ("pod", "pod_name")
NAMESPACE_LABELS = ("namespace", "pod_namespace")
CONTAINER_LABELS = ("container", "container_name")
"""dcgm-exporter's Kubernetes labels, new spelling first, then the old (``--use-old-namespace``)."""

NULL = "<<<NULL>>>"
"""What DCGM writes for a label value it could not read (a MIG profile, seen in the wild)."""


def present(names: object) -> tuple[str, ...]:
    """The families in ``VALUE_METRICS`` among the metric ``names`` a server has."""
    have = set(names) if isinstance(names, (list, tuple, set, frozenset)) else set()
    return tuple(name for name in VALUE_METRICS if name in have)


def label(labels: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The first of ``names`` set to something (not empty, not DCGM's NULL) in ``labels``."""
    for name in names:
        value = labels.get(name)
        if value and value != NULL:
            return value
    return None


def host_of(labels: Mapping[str, str]) -> str | None:
    """The machine a series describes: its host label, else the host of ``instance``."""
    host = labels.get("Hostname") or labels.get("hostname")
    if host and host != NULL:
        return host
    instance = labels.get("instance")
    if not instance:
        return None
    if instance.startswith("["):  # [::1]:9400
        return instance[1:].split("]", 1)[0]
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


def origin_of(labels: Mapping[str, str]) -> str:
    """The scrape target a series came from: ``instance`` with its ``job``."""
    instance = labels.get("instance", "")
    job = labels.get("job", "")
    return f"{instance}|{job}" if job else instance


def owner_of(labels: Mapping[str, str]) -> Owner | None:
    """The pod a series is attributed to, when dcgm-exporter's Kubernetes labels say one."""
    pod = label(labels, POD_LABELS)
    namespace = label(labels, NAMESPACE_LABELS)
    container = label(labels, CONTAINER_LABELS)
    if pod is None and container is None:
        return None
    return Owner(runtime=None, container=container, pod=pod, namespace=namespace)
