"""Rows of the fleet table as plain values: one per node, with its filter text and sort keys.

A GPU's state (busy, waiting, idle) is the fleet source's answer over its window (PromQL
``avg_over_time``), not one sample. A stale node keeps its last values, marked stale: it is
neither dropped nor zeroed, and it is not counted among the GPUs idle "right now".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from gputop.model.age import age_seconds, fmt_age
from gputop.model.fleet import GpuState, GpuWindow, NodeView
from gputop.model.fleet import held_memory as held_memory  # shared with `cluster --once`
from gputop.model.safe_text import terminal_safe
from gputop.model.units import NA, fmt_bytes, fmt_percent, fmt_watts
from gputop.ui.render.process_rows import Column

SortValue = float | str
"""What a column sorts by: a number, or text for the host."""

COLUMNS: tuple[Column, ...] = (
    Column("host", "HOST", right=False, descending=False),
    Column("gpus", "GPUS", right=True, descending=True),
    Column("busy", "BUSY", right=True, descending=True),
    Column("waiting", "WAIT", right=True, descending=True),
    Column("idle", "IDLE", right=True, descending=True),
    Column("throttled", "THROTTLED", right=True, descending=True),
    Column("unknown", "UNKNOWN", right=True, descending=True),
    Column("util", "UTIL", right=True, descending=True),
    Column("held", "HELD IDLE", right=True, descending=True),
    Column("power", "POWER", right=True, descending=True),
    Column("age", "AGE", right=True, descending=True),
    Column("exporter", "EXPORTER", right=False, descending=False),
)
"""THROTTLED: GPUs held back by heat, a hardware slowdown, the power brake, or the power cap
at low utilization (a GPU busy at its power cap counts as busy); UNKNOWN: GPUs with too few
samples in the window, or no utilization series, to say; HELD
IDLE: GPU memory held on GPUs that are idle or waiting (memory a job keeps and does
not use); UTIL: mean utilization over the window of the node's GPUs."""

COLUMN_INDEX = {column.key: index for index, column in enumerate(COLUMNS)}


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One node as the table shows it."""

    host: str
    """The node's name (``NodeView.key``): its host, with its instance when another node
    reports the same host name."""
    cells: tuple[str, ...]
    """Text of each column of ``COLUMNS``."""
    sort_values: tuple[SortValue | None, ...]
    """What each column sorts by; None (unknown) sorts last either way."""
    stale: bool
    search: tuple[str, ...]
    """Case-folded words the filter looks in: host, instance, exporter, GPU names, pods."""

    def cell(self, key: str) -> str:
        """The text of column ``key``."""
        return self.cells[COLUMN_INDEX[key]]


def count(windows: Iterable[GpuWindow], states: Iterable[GpuState]) -> int:
    """How many of ``windows`` are in one of ``states``."""
    wanted = frozenset(states)
    return sum(window.state in wanted for window in windows)


def mean_utilization(node: NodeView) -> float | None:
    """The mean over the node's GPUs of their window's utilization (else the newest sample)."""
    values = [w.utilization_mean for w in node.windows if w.utilization_mean is not None]
    if not values:
        values = [
            gpu.utilization.gpu for gpu in node.snapshot.gpus if gpu.utilization.gpu is not None
        ]
    return sum(values) / len(values) if values else None


def node_power(node: NodeView) -> float | None:
    """Watts drawn by the node's GPUs together (None when none reports power)."""
    draws = [gpu.power.draw for gpu in node.snapshot.gpus if gpu.power.draw is not None]
    return sum(draws) if draws else None


def _search(node: NodeView) -> tuple[str, ...]:
    words = [node.host, node.instance or "", node.exporter or ""]
    for gpu in node.snapshot.gpus:
        words.append(gpu.name or "")
        for owner in gpu.holders:
            words += [owner.pod or "", owner.namespace or "", owner.container or ""]
        for mig in gpu.mig_devices:
            for owner in mig.holders:
                words += [owner.pod or "", owner.namespace or "", owner.container or ""]
    if node.stale:
        words.append("stale")
    return tuple(word.casefold() for word in words if word)


def build_row(node: NodeView, now: datetime) -> FleetRow:
    """The row of ``node``, its age counted to ``now`` (the answer's time)."""
    windows = node.windows
    gpus = len(node.snapshot.gpus) or len(windows)
    busy = count(windows, (GpuState.BUSY,))
    waiting = count(windows, (GpuState.WAITING,))
    idle = count(windows, (GpuState.IDLE,))
    throttled = count(windows, (GpuState.THROTTLED,))
    # A GPU without a window (no series of it in the window) is as unknown as one whose
    # window says so.
    unknown = gpus - busy - waiting - idle - throttled
    known = bool(windows)
    util = mean_utilization(node)
    held = held_memory(node)
    power = node_power(node)
    age = age_seconds(node.newest_sample or node.snapshot.timestamp, now)
    age_text = NA if age is None else fmt_age(age)
    if node.stale:
        age_text = f"stale {age_text}" if age is not None else "stale"

    def number(value: int) -> str:
        return str(value) if known else NA

    cells = (
        terminal_safe(node.key),  # the key is the node's identity, kept true: safe where drawn
        str(gpus),
        number(busy),
        number(waiting),
        number(idle),
        number(throttled),
        str(unknown),
        fmt_percent(util),
        fmt_bytes(held),
        fmt_watts(power),
        age_text,
        node.exporter or NA,
    )
    values: tuple[SortValue | None, ...] = (
        node.key.casefold(),
        float(gpus),
        float(busy) if known else None,
        float(waiting) if known else None,
        float(idle) if known else None,
        float(throttled) if known else None,
        float(unknown),
        util,
        None if held is None else float(held),
        power,
        # Stale nodes are the oldest data of all, whatever their clock said.
        None if age is None else age + (1e12 if node.stale else 0.0),
        node.exporter,
    )
    return FleetRow(node.key, cells, values, node.stale, _search(node))


def build_rows(nodes: Iterable[NodeView], now: datetime) -> list[FleetRow]:
    """A row per node."""
    return [build_row(node, now) for node in nodes]


def matches(row: FleetRow, text: str) -> bool:
    """Whether every word of ``text`` occurs (case-insensitively) in the row's host,
    instance, exporter, GPU names, pods or namespaces (``stale`` finds stale nodes)."""
    terms = text.casefold().split()
    return all(any(term in word for word in row.search) for term in terms)


def visible_rows(rows: Iterable[FleetRow], text: str) -> list[FleetRow]:
    """The rows the filter lets through, in their order."""
    return [row for row in rows if matches(row, text)]


def sort_rows(rows: Sequence[FleetRow], column: int, reverse: bool) -> list[FleetRow]:
    """Rows ordered by ``COLUMNS[column]``; ties by host; unknown values last either way."""
    by_host = sorted(rows, key=lambda row: row.host)
    known = [row for row in by_host if row.sort_values[column] is not None]
    unknown = [row for row in by_host if row.sort_values[column] is None]

    def value(row: FleetRow) -> SortValue:
        found = row.sort_values[column]
        assert found is not None
        return found

    return sorted(known, key=value, reverse=reverse) + unknown
