"""Pure values describing GPUs: no Textual, no NVML, no I/O."""

from __future__ import annotations

from gputop.model.container import ContainerView
from gputop.model.owner import Owner
from gputop.model.sample import (
    Activity,
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    Power,
    ProcessSample,
    Reason,
    Snapshot,
    Temperature,
    Unavailable,
    Utilization,
    reason_for,
)
from gputop.model.throttle import ThrottleKind, ThrottleReason

__all__ = [
    "Activity",
    "Clocks",
    "ContainerView",
    "EccErrors",
    "GpuSample",
    "Memory",
    "MigDeviceSample",
    "Owner",
    "Power",
    "ProcessSample",
    "Reason",
    "Snapshot",
    "Temperature",
    "ThrottleKind",
    "ThrottleReason",
    "Unavailable",
    "Utilization",
    "reason_for",
]
