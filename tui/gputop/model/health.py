"""GPU health: the XID catalogue, health events and the memory-repair counters.

A *health event* is something the driver announced at one moment (an XID error, a
double-bit ECC error, a page-retirement failure, a GPU gone from the bus), as opposed to the
values a snapshot samples. Events reach the pipeline on the snapshot polled after them
(``Snapshot.events``: what arrived since the previous poll; see ARCHITECTURE.md, "Health
events"), and the history keeps the recent ones.

The XID table is NVIDIA's Xid catalogue (Ampere and later; "Analyzing Xid Errors with the Xid
Catalog", https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, and its
older "Xid Errors" list, https://docs.nvidia.com/deploy/xid-errors/index.html): each code's
description and its *resolution bucket (immediate action)*, with a severity of our own
that says whether a person must act (``CRITICAL``: the GPU or the node needs a reset, a
reboot or support; ``WARNING``: an application died of it, or a trend to watch; ``INFO``:
nothing to do).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime


class Severity(enum.Enum):
    """How much a health event or state asks of a person, worst first in :data:`SEVERITIES`."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


SEVERITIES = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)


class Action(enum.Enum):
    """The catalogue's resolution buckets (immediate action), in words a person acts on."""

    NONE = "none"
    """IGNORE: informational."""
    RESTART_APP = "restart the application"
    CHECK_APP = "check the application (CUDA, memory access)"
    RESET_GPU = "drain the GPU and reset it"
    RESTART_BM = "drain the node and reboot it (cold reboot if the GPU stays missing)"
    CONTACT_SUPPORT = "drain the GPU and contact support (RMA)"
    CHECK_MECHANICALS = "check cooling, power and seating; then reset the GPU"
    AFTER_DBE = "act on the XID that follows (63/64, 94/95); if none, drain the GPU and reset it"
    """WORKFLOW_XID_48: a double-bit error's outcome is the XID the driver reports next."""
    AFTER_CLEANUP = "alone: restart the fabric manager; after another XID: nothing (its cleanup)"
    """WORKFLOW_XID_45."""
    WORKFLOW_NVLINK = "check the NVLink links and fabric (NVIDIA's NVLink workflow), then reset"
    """WORKFLOW_NVLINK_ERR, WORKFLOW_NVLINK5_ERR."""
    FOLLOW_RECOVERY = "do what the GPU's recovery action says (reset, drain, reboot)"
    """XID_154: it names the recovery action another XID needs."""


class Kind(enum.Enum):
    """What announced a health event: an NVML event type, or gputop's own observation."""

    XID = "xid"
    DOUBLE_BIT_ECC = "double-bit ECC error"
    SINGLE_BIT_ECC_STORM = "single-bit ECC storm"
    PAGE_RETIREMENT = "page retirement"
    PAGE_RETIREMENT_FAILURE = "page retirement failure"
    POISON = "non-fatal poison error"
    FATAL_POISON = "fatal poison error"
    GPU_UNAVAILABLE = "GPU unavailable"
    RECOVERY_ACTION = "GPU recovery action"
    GPU_LOST = "GPU lost"
    """gputop saw the GPU stop answering (NVML's GPU_IS_LOST), with or without an XID 79."""


@dataclass(frozen=True, slots=True)
class Xid:
    """One documented XID code."""

    code: int
    description: str
    severity: Severity
    action: Action
    group: str
    """The class of fault, for alert rules (``application``, ``memory``, ``nvlink``, ``bus``,
    ``firmware``, ``hardware``, ``thermal``, ``driver``)."""


def _x(code: int, description: str, severity: Severity, action: Action, group: str) -> Xid:
    return Xid(code, description, severity, action, group)


_C, _W, _I = Severity.CRITICAL, Severity.WARNING, Severity.INFO
_A = Action

XIDS: dict[int, Xid] = {
    x.code: x
    for x in (
        _x(8, "GPU stopped processing (channel idle timeout)", _W, _A.RESTART_APP, "driver"),
        _x(11, "invalid or corrupted push buffer stream", _W, _A.RESTART_APP, "application"),
        _x(13, "graphics engine exception", _W, _A.RESTART_APP, "application"),
        _x(31, "GPU memory page fault (MMU error)", _W, _A.RESTART_APP, "application"),
        _x(32, "invalid or corrupted push buffer stream (PBDMA)", _W, _A.RESTART_APP, "driver"),
        _x(38, "driver firmware error (watchdog timeout)", _I, _A.NONE, "firmware"),
        _x(43, "GPU stopped processing (reset channel)", _W, _A.NONE, "application"),
        _x(45, "preemptive cleanup after an earlier error", _I, _A.AFTER_CLEANUP, "application"),
        _x(48, "double-bit ECC error", _C, _A.AFTER_DBE, "memory"),
        _x(54, "auxiliary power is not connected", _C, _A.CHECK_MECHANICALS, "hardware"),
        _x(56, "display engine error (unused since Ampere)", _W, _A.CONTACT_SUPPORT, "driver"),
        _x(
            57,
            "error programming video memory interface (unused since Ampere)",
            _C,
            _A.CONTACT_SUPPORT,
            "memory",
        ),
        _x(
            58,
            "unstable video memory interface (unused since Ampere)",
            _C,
            _A.CONTACT_SUPPORT,
            "memory",
        ),
        _x(
            61,
            "internal micro-controller breakpoint/warning (unused since Ampere)",
            _C,
            _A.CONTACT_SUPPORT,
            "firmware",
        ),
        _x(62, "internal micro-controller halt", _C, _A.RESET_GPU, "firmware"),
        _x(
            63,
            "GPU memory remapping event (a row remap or page retirement recorded)",
            _W,
            _A.NONE,
            "memory",
        ),
        _x(64, "row remapping or page retirement failed", _C, _A.RESET_GPU, "memory"),
        _x(68, "video processor exception", _W, _A.RESTART_APP, "application"),
        _x(69, "graphics engine class error", _W, _A.RESTART_APP, "application"),
        _x(74, "NVLink error", _C, _A.WORKFLOW_NVLINK, "nvlink"),
        _x(79, "GPU has fallen off the bus", _C, _A.RESTART_BM, "bus"),
        _x(92, "high single-bit ECC error rate", _W, _A.NONE, "memory"),
        _x(94, "contained uncorrectable ECC error", _C, _A.RESTART_APP, "memory"),
        _x(95, "uncontained uncorrectable ECC error", _C, _A.RESET_GPU, "memory"),
        _x(109, "context switch timeout", _C, _A.RESET_GPU, "driver"),
        _x(119, "GSP RPC timeout", _C, _A.RESET_GPU, "firmware"),
        _x(120, "GSP error", _C, _A.RESET_GPU, "firmware"),
        _x(121, "C2C link error", _I, _A.NONE, "nvlink"),
        _x(
            122,
            "SPI PMU RPC read failure (unused since Ampere)",
            _C,
            _A.CONTACT_SUPPORT,
            "firmware",
        ),
        _x(
            123,
            "SPI PMU RPC write failure (unused since Ampere)",
            _C,
            _A.CONTACT_SUPPORT,
            "firmware",
        ),
        _x(136, "NVLink link training failed", _C, _A.RESET_GPU, "nvlink"),
        _x(137, "NVLink privilege error", _I, _A.NONE, "nvlink"),
        _x(140, "unrecovered ECC error", _C, _A.RESET_GPU, "memory"),
        _x(143, "GPU initialization failure", _C, _A.RESET_GPU, "hardware"),
        _x(144, "NVLink SAW error", _C, _A.WORKFLOW_NVLINK, "nvlink"),
        _x(145, "NVLink RLW error", _C, _A.WORKFLOW_NVLINK, "nvlink"),
        _x(149, "NVLink NETIR error", _C, _A.WORKFLOW_NVLINK, "nvlink"),
        _x(154, "GPU recovery action changed", _C, _A.FOLLOW_RECOVERY, "driver"),
        _x(155, "NVLink SW-defined error", _C, _A.RESET_GPU, "nvlink"),
    )
}
"""Every XID the catalogue documents that gputop names (checked against it, 2026-11-28: its
Ampere-and-later spreadsheet as vendored by NVIDIA/NVSentinel and leptonai/gpud); codes the
catalogue lists as unused since Ampere keep their older meaning with its CONTACT_SUPPORT
bucket. Any other code is :func:`xid_info`'s undocumented warning."""


def xid_info(code: int) -> Xid:
    """The catalogue entry for ``code``; an undocumented code is a warning to look up."""
    known = XIDS.get(code)
    if known is not None:
        return known
    return Xid(code, "not in gputop's XID table", Severity.WARNING, Action.CONTACT_SUPPORT, "other")


CRITICAL_XIDS: tuple[int, ...] = tuple(
    sorted(code for code, xid in XIDS.items() if xid.severity is Severity.CRITICAL)
)
"""The codes a critical-XID alert fires on."""


@dataclass(frozen=True, slots=True)
class HealthEvent:
    """One thing the driver (or gputop) announced about a GPU at one moment."""

    time: datetime
    """When gputop received it, local time like ``Snapshot.timestamp``."""
    gpu: int
    """The GPU's NVML index."""
    kind: Kind
    severity: Severity
    action: Action
    description: str
    uuid: str | None = None
    xid: int | None = None
    """The XID code for ``Kind.XID`` events."""
    gpu_instance_id: int | None = None
    """The MIG GPU instance the event names, when it names one."""
    compute_instance_id: int | None = None

    @property
    def critical(self) -> bool:
        """Whether a person must act on it."""
        return self.severity is Severity.CRITICAL

    def title(self) -> str:
        """``XID 79: GPU has fallen off the bus``, ``double-bit ECC error``."""
        if self.xid is not None:
            return f"XID {self.xid}: {self.description}"
        return self.description

    def advice(self) -> str:
        """``: drain the GPU and reset it``, what to do said after the title; empty where
        there is nothing to do (the catalogue's IGNORE)."""
        return "" if self.action is Action.NONE else f": {self.action.value}"


def xid_event(
    time: datetime,
    gpu: int,
    code: int,
    *,
    uuid: str | None = None,
    gpu_instance_id: int | None = None,
    compute_instance_id: int | None = None,
) -> HealthEvent:
    """An XID event, described, rated and given its action from :data:`XIDS`."""
    info = xid_info(code)
    return HealthEvent(
        time=time,
        gpu=gpu,
        kind=Kind.XID,
        severity=info.severity,
        action=info.action,
        description=info.description,
        uuid=uuid,
        xid=code,
        gpu_instance_id=gpu_instance_id,
        compute_instance_id=compute_instance_id,
    )


_KIND_RATING: dict[Kind, tuple[Severity, Action, str]] = {
    Kind.DOUBLE_BIT_ECC: (_C, _A.RESET_GPU, "double-bit (uncorrectable) ECC error"),
    Kind.SINGLE_BIT_ECC_STORM: (_W, _A.NONE, "storm of single-bit ECC errors"),
    Kind.PAGE_RETIREMENT: (_W, _A.RESET_GPU, "a memory page was retired: reset to apply"),
    Kind.PAGE_RETIREMENT_FAILURE: (_C, _A.CONTACT_SUPPORT, "memory page retirement failed"),
    Kind.POISON: (_W, _A.RESTART_APP, "non-fatal poison error (contained)"),
    Kind.FATAL_POISON: (_C, _A.RESET_GPU, "fatal poison error"),
    Kind.GPU_UNAVAILABLE: (_C, _A.RESET_GPU, "GPU unavailable"),
    Kind.RECOVERY_ACTION: (_C, _A.RESET_GPU, "the driver asks for a recovery action"),
    Kind.GPU_LOST: (_C, _A.RESTART_BM, "GPU stopped answering (lost)"),
}


def kind_event(
    time: datetime,
    gpu: int,
    kind: Kind,
    *,
    uuid: str | None = None,
    gpu_instance_id: int | None = None,
    compute_instance_id: int | None = None,
) -> HealthEvent:
    """An event of a kind other than XID, rated from gputop's table of event types."""
    if kind is Kind.XID:
        raise ValueError("an XID event needs its code: use xid_event")
    severity, action, description = _KIND_RATING[kind]
    return HealthEvent(
        time=time,
        gpu=gpu,
        kind=kind,
        severity=severity,
        action=action,
        description=description,
        uuid=uuid,
        gpu_instance_id=gpu_instance_id,
        compute_instance_id=compute_instance_id,
    )


@dataclass(frozen=True, slots=True)
class RemappedRows:
    """Row remapping (Ampere and later): rows of HBM/GDDR replaced after errors."""

    correctable: int | None = None
    """Rows remapped after correctable errors."""
    uncorrectable: int | None = None
    """Rows remapped after uncorrectable errors."""
    pending: bool | None = None
    """A remapping waits for the next GPU reset."""
    failure: bool | None = None
    """A remapping failed: the GPU has no spare row left where it needed one."""


@dataclass(frozen=True, slots=True)
class RetiredPages:
    """Dynamic page retirement (Volta and earlier; Ampere+ report it unsupported)."""

    single_bit: int | None = None
    """Pages retired after multiple single-bit errors."""
    double_bit: int | None = None
    """Pages retired after a double-bit error."""
    pending: bool | None = None
    """A retirement waits for the next driver reload."""
