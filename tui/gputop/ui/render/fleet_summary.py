"""The fleet's top line: how many GPUs are idle or waiting right now, where, and how fresh
the data is: "12 of 64 GPUs idle: node-b (8) · 3 waiting: node-a (2), node-c (1)" on the
left, "data 14 s old, scrape 30 s" (the interval between samples) on the right."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.model.age import age_seconds, fmt_age
from gputop.model.fleet import FleetSnapshot, GpuState, NodeView, fresh_counts
from gputop.model.fleet_health import fleet_health_counts, health_summary
from gputop.model.safe_text import terminal_safe

Segment = tuple[str, str]
"""(text, role), as ``gputop.ui.widgets.status_line.Bar`` draws them."""

PLACES = 3
"""Nodes named after a count; the rest are "+N more"."""


def _where(nodes: Sequence[NodeView], state: GpuState) -> list[tuple[str, int]]:
    """(host, how many of its GPUs are in ``state``), most first, fresh nodes only."""
    found = [
        (terminal_safe(node.key), sum(window.state is state for window in node.windows))
        for node in nodes
        if not node.stale
    ]
    return sorted(((h, n) for h, n in found if n), key=lambda item: (-item[1], item[0]))


def _places(where: list[tuple[str, int]]) -> str:
    named = ", ".join(f"{host} ({count})" for host, count in where[:PLACES])
    more = len(where) - PLACES
    return f"{named}, +{more} more" if more > 0 else named


def freshness(fleet: FleetSnapshot) -> str | None:
    """``data 14 s old, scrape 30 s``: the oldest newest sample among the nodes that
    are not stale, and the scrape interval seen in the data."""
    ages = [
        age
        for node in fleet.nodes
        if not node.stale
        for age in [age_seconds(node.newest_sample or node.snapshot.timestamp, fleet.taken_at)]
        if age is not None
    ]
    parts = []
    if ages:
        parts.append(f"data {fmt_age(max(ages))} old")
    if fleet.scrape_interval is not None:
        parts.append(f"scrape {fmt_age(fleet.scrape_interval)}")
    return ", ".join(parts) or None


def summary(fleet: FleetSnapshot | None) -> tuple[Segment, ...]:
    """The top line's segments (roles: ``text``, ``dim``, ``accent``, ``warn``, ``error``)."""
    if fleet is None:
        return (("asking for the fleet…", "dim"),)
    nodes = fleet.nodes
    if not nodes:
        said: list[Segment] = [("no GPU nodes in the answer", "warn")]
    else:
        total = sum(len(node.snapshot.gpus) or len(node.windows) for node in nodes)
        idle = _where(nodes, GpuState.IDLE)
        waiting = _where(nodes, GpuState.WAITING)
        idle_count = sum(n for _, n in idle)
        waiting_count = sum(n for _, n in waiting)
        said = [
            (str(idle_count), "accent"),
            (f" of {total} GPUs idle", "text"),
        ]
        if idle:
            said += [(": ", "dim"), (_places(idle), "text")]
        said += [(" · ", "dim"), (str(waiting_count), "warn" if waiting_count else "accent")]
        said.append((" waiting", "text"))
        if waiting:
            said += [(": ", "dim"), (_places(waiting), "text")]
        unknown = fresh_counts(nodes)[GpuState.UNKNOWN]
        if unknown:
            said += [(" · ", "dim"), (f"{unknown} unknown", "dim")]
        stale = sum(node.stale for node in nodes)
        if stale:
            word = "node" if stale == 1 else "nodes"
            said += [(" · ", "dim"), (f"{stale} {word} stale", "warn")]
        said += health_segments(fleet)
    return ((" ", "text"), *said)


def health_segments(fleet: FleetSnapshot) -> list[Segment]:
    """`` · 2 nodes with critical XIDs, 1 node with firing alerts`` when any has them."""
    counts = fleet_health_counts({n.key: n.snapshot for n in fleet.nodes}, fleet.health)
    said = health_summary(counts)
    return [] if said is None else [(" · ", "dim"), (said, "error")]
