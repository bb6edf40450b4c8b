"""The health of many machines, as read from Prometheus: XIDs and firing alerts per node.

Beside each node's snapshot (whose counters give :func:`gputop.model.gpu_health.gpu_problems`
as on one box), a fleet knows what only the server keeps: the XIDs each GPU had (gputop's
counters, or dcgm-exporter's last code) and the alerts the server's rules fire (its
``/api/v1/alerts``, the rules of `gputop alert-rules` or any others).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gputop.model.gpu_health import gpu_problems
from gputop.model.health import Severity, xid_info
from gputop.model.sample import Snapshot


@dataclass(frozen=True, slots=True)
class NodeXid:
    """An XID a GPU of the node had."""

    gpu: str | None
    """The GPU's index as the series label it (``gpu``)."""
    uuid: str | None
    code: int
    count: int | None
    """How many since gputop's exporter started; None from dcgm-exporter's gauge (the last
    code only)."""

    @property
    def critical(self) -> bool:
        """Whether the code is critical in the XID table."""
        return xid_info(self.code).severity is Severity.CRITICAL

    def text(self) -> str:
        """``GPU 1: XID 79 GPU has fallen off the bus (x2)``."""
        times = "" if self.count is None else f" (x{self.count})"
        where = f"GPU {self.gpu}" if self.gpu is not None else "GPU ?"
        return f"{where}: XID {self.code} {xid_info(self.code).description}{times}"


@dataclass(frozen=True, slots=True)
class FiringAlert:
    """An alert the Prometheus server fires for the node."""

    name: str
    severity: str | None
    gpu: str | None
    summary: str | None
    active_at: datetime | None

    def text(self) -> str:
        """``GpuXidBus (critical): Critical XID 79 ... since 09:14:02``."""
        head = self.name + (f" ({self.severity})" if self.severity else "")
        said = f": {self.summary}" if self.summary else ""
        since = "" if self.active_at is None else f" since {self.active_at:%H:%M:%S}"
        return f"{head}{said}{since}"


@dataclass(frozen=True, slots=True)
class NodeHealth:
    """One node's XIDs and firing alerts."""

    host: str
    """The node's key (``NodeView.key``): its host name, or ``vm (10.0.0.5:9400)`` when two
    machines report one host name."""
    xids: tuple[NodeXid, ...] = ()
    alerts: tuple[FiringAlert, ...] = ()

    @property
    def critical_xids(self) -> tuple[NodeXid, ...]:
        """The XIDs of a critical code."""
        return tuple(xid for xid in self.xids if xid.critical)


@dataclass(frozen=True, slots=True)
class FleetHealth:
    """Every node's health the server knows, and why some is missing."""

    nodes: tuple[NodeHealth, ...] = ()
    error: str | None = None
    """One line when a health query failed (the rest is still shown)."""

    def node(self, host: str) -> NodeHealth:
        """The node's health (none known: empty)."""
        for node in self.nodes:
            if node.host == host:
                return node
        return NodeHealth(host)


def health_lines(host: str, snapshot: Snapshot, health: NodeHealth) -> list[str]:
    """What is wrong on one node, a line each: its GPUs' problems, XIDs, firing alerts."""
    lines = []
    for gpu in snapshot.gpus:
        for problem in gpu_problems(gpu):
            lines.append(f"GPU {gpu.index}: {problem.severity.value}: {problem.text}")
    lines.extend(xid.text() for xid in health.xids)
    lines.extend(f"alert {alert.text()}" for alert in health.alerts)
    return lines


def fleet_health_counts(
    snapshots: dict[str, Snapshot], health: FleetHealth | None
) -> dict[str, int]:
    """How many nodes have critical XIDs, other problems, firing alerts."""
    critical = problems = alerting = 0
    for host, snapshot in snapshots.items():
        node = NodeHealth(host) if health is None else health.node(host)
        if node.critical_xids:
            critical += 1
        if any(gpu_problems(gpu) for gpu in snapshot.gpus):
            problems += 1
        if node.alerts:
            alerting += 1
    return {"critical_xids": critical, "problems": problems, "alerting": alerting}


def health_summary(counts: dict[str, int]) -> str | None:
    """``2 nodes with critical XIDs, 1 with problems, 3 with firing alerts``; None if well."""
    parts = []
    for key, words in (
        ("critical_xids", "with critical XIDs"),
        ("problems", "with health problems"),
        ("alerting", "with firing alerts"),
    ):
        count = counts.get(key, 0)
        if count:
            parts.append(f"{count} {'node' if count == 1 else 'nodes'} {words}")
    return ", ".join(parts) or None
