"""Many machines at one moment, as read from Prometheus (or scraped from exporters directly).

A :class:`NodeView` wraps the same :class:`~gputop.model.sample.Snapshot` a local source makes,
so the node screen draws a remote box with the single-box widgets; what only a fleet has (how
old the newest sample is, each GPU's state over a window) sits beside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from gputop.model.fleet_health import FleetHealth
from gputop.model.gpu_state import GpuState as GpuState
from gputop.model.sample import Snapshot


@dataclass(frozen=True, slots=True)
class GpuWindow:
    """One GPU's summary over the window."""

    index: int
    state: GpuState
    """What the GPU did over the fleet's window (PromQL ``avg_over_time``), not in one
    sample; UNKNOWN also when the window holds too few samples or no utilization series."""
    utilization_mean: float | None = None
    memory_used_mean: int | None = None
    """Bytes."""
    seconds_waiting: float | None = None


@dataclass(frozen=True, slots=True)
class NodeView:
    """One machine: its newest values as a snapshot, their age, and its GPUs over the window."""

    host: str
    snapshot: Snapshot
    newest_sample: datetime | None
    """When the newest sample of this node was scraped (the server's clock)."""
    stale: bool
    """The newest sample is older than a few scrape intervals: the exporter stopped answering.
    The node is kept and shown as stale, never dropped and never zeroed."""
    windows: tuple[GpuWindow, ...] = ()
    exporter: str | None = None
    """``"gputop"`` or ``"dcgm-exporter"``: which metric family the node's series came from."""
    instance: str | None = None
    """Prometheus's ``instance`` label (``host:port`` of the scraped exporter)."""
    label: str | None = None
    """The node's name among the others when ``host`` alone does not tell it apart: two
    exporters that report the same host name (``localhost``, a lab's ``vm``) are two nodes,
    ``vm (10.0.0.5:9400)`` and ``vm (10.0.0.6:9400)``; None when the host is unique."""

    @property
    def key(self) -> str:
        """What names this node among the fleet's (rows, its screen, its history)."""
        return self.label or self.host


@dataclass(frozen=True, slots=True)
class FleetSnapshot:
    """Every node at one moment, and how fresh the data is."""

    taken_at: datetime
    nodes: tuple[NodeView, ...] = ()
    window_seconds: float = 300.0
    scrape_interval: float | None = None
    """Seconds between samples seen in the data (dcgm-exporter's default is 30 s)."""
    error: str | None = None
    """One line when the last query failed (server down, 401, not Prometheus); the nodes are
    then the last good answer, kept so the view does not go blank."""
    notices: tuple[str, ...] = ()
    """Warnings said once per run, in the first answer they concern (two exporters reporting
    the same host name)."""
    one_shot: bool = False
    """The answer of a single scrape (``--targets`` with ``--once``/``--json``): no window,
    so a GPU without its exporter's own state is unknown."""
    health: FleetHealth | None = None
    """XIDs and firing alerts per node (``gputop.sources.prometheus.health``); None when the
    source reads no Prometheus server."""


HELD_STATES = frozenset({GpuState.IDLE, GpuState.WAITING})
"""States whose memory counts as held: a job keeps it and does not use it (or none runs)."""


def held_memory(node: NodeView) -> int | None:
    """Bytes held on the node's idle and waiting GPUs (the window's mean, else the newest
    sample's); None when no such GPU reports its memory, 0 when there is no such GPU."""
    gpus = {gpu.index: gpu for gpu in node.snapshot.gpus}
    total = 0
    known = False
    for window in node.windows:
        if window.state not in HELD_STATES:
            continue
        used = window.memory_used_mean
        if used is None:
            gpu = gpus.get(window.index)
            used = None if gpu is None else gpu.memory.used
        if used is not None:
            total += used
            known = True
    if not known and any(w.state in HELD_STATES for w in node.windows):
        return None
    return total


def fresh_counts(nodes: Iterable[NodeView]) -> dict[GpuState, int]:
    """How many GPUs of the nodes that are not stale are in each state "right now". A stale
    node's states are as old as its data, so its GPUs count in no state (the caller counts
    stale nodes apart); a GPU with no window counts as unknown."""
    counts = dict.fromkeys(GpuState, 0)
    for node in nodes:
        if node.stale:
            continue
        for window in node.windows:
            counts[window.state] += 1
        counts[GpuState.UNKNOWN] += max(0, len(node.snapshot.gpus) - len(node.windows))
    return counts
