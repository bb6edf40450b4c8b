"""`gputop cluster --json` and `--once`: the fleet as a JSON document or a short table.

Each GPU carries the ``--json`` field names (``sinks/json.py``, from the field table) and,
beside them, what only a fleet knows: its state over the window, the window's means, and
the pods that hold it.
"""

from __future__ import annotations

from typing import Any

from gputop.model import Owner
from gputop.model.fleet import (
    FleetSnapshot,
    GpuState,
    GpuWindow,
    NodeView,
    fresh_counts,
    held_memory,
)
from gputop.model.fleet_health import (
    NodeHealth,
    fleet_health_counts,
    health_lines,
    health_summary,
)
from gputop.model.health import xid_info
from gputop.model.safe_text import terminal_safe
from gputop.model.units import fmt_bytes
from gputop.sinks.json import snapshot_dict


def _age(node: NodeView, fleet: FleetSnapshot) -> float | None:
    newest = node.newest_sample
    if newest is None:
        return None
    taken = fleet.taken_at
    if (newest.tzinfo is None) != (taken.tzinfo is None):
        newest, taken = newest.replace(tzinfo=None), taken.replace(tzinfo=None)
    return round(max(0.0, (taken - newest).total_seconds()), 3)


def _plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"


def _owner(owner: Owner) -> dict[str, str | None]:
    return {"pod": owner.pod, "namespace": owner.namespace, "container": owner.container}


def _window(window: GpuWindow | None) -> dict[str, Any]:
    if window is None:
        return {"state": GpuState.UNKNOWN.value}
    return {
        "state": window.state.value,
        "utilization_mean": window.utilization_mean,
        "memory_used_mean": window.memory_used_mean,
        "seconds_waiting": window.seconds_waiting,
    }


def node_dict(node: NodeView, fleet: FleetSnapshot) -> dict[str, Any]:
    """One node: where it was read from, how fresh, and its GPUs."""
    document = snapshot_dict(node.snapshot)
    windows = {w.index: w for w in node.windows}
    gpus = []
    for gpu, out in zip(node.snapshot.gpus, document["gpus"], strict=True):
        out.update(_window(windows.get(gpu.index)))
        out["holders"] = [_owner(o) for o in gpu.holders]
        for device, mig in zip(gpu.mig_devices, out["mig_devices"], strict=True):
            mig["utilization_gpu"] = device.utilization.gpu
            mig["holders"] = [_owner(o) for o in device.holders]
        gpus.append(out)
    return {
        "host": node.host,
        "key": node.key,
        "instance": node.instance,
        "exporter": node.exporter,
        "newest_sample": node.newest_sample.isoformat() if node.newest_sample else None,
        "age_seconds": _age(node, fleet),
        "stale": node.stale,
        "driver_version": document["driver_version"],
        "gpus": gpus,
        "health": node_health_dict(node, fleet),
    }


def node_health_dict(node: NodeView, fleet: FleetSnapshot) -> dict[str, Any]:
    """The node's XIDs and firing alerts, as the server knows them."""
    health = NodeHealth(node.key) if fleet.health is None else fleet.health.node(node.key)
    return {
        "xids": [
            {
                "gpu": xid.gpu,
                "uuid": xid.uuid,
                "xid": xid.code,
                "count": xid.count,
                "critical": xid.critical,
                "description": xid_info(xid.code).description,
            }
            for xid in health.xids
        ],
        "alerts": [
            {
                "alertname": alert.name,
                "severity": alert.severity,
                "gpu": alert.gpu,
                "summary": alert.summary,
                "active_at": None if alert.active_at is None else alert.active_at.isoformat(),
            }
            for alert in health.alerts
        ],
    }


def _health_counts(fleet: FleetSnapshot) -> dict[str, int]:
    return fleet_health_counts({n.key: n.snapshot for n in fleet.nodes}, fleet.health)


def fleet_dict(fleet: FleetSnapshot) -> dict[str, Any]:
    """The whole fleet as the JSON document `gputop cluster --json` prints."""
    return {
        "taken_at": fleet.taken_at.isoformat(),
        "window_seconds": fleet.window_seconds,
        "scrape_interval": fleet.scrape_interval,
        "error": fleet.error,
        "one_shot": fleet.one_shot,
        "notices": list(fleet.notices),
        "health": {
            "nodes_with_critical_xids": _health_counts(fleet)["critical_xids"],
            "nodes_with_problems": _health_counts(fleet)["problems"],
            "nodes_with_firing_alerts": _health_counts(fleet)["alerting"],
            "error": None if fleet.health is None else fleet.health.error,
        },
        "nodes": [node_dict(node, fleet) for node in fleet.nodes],
    }


def fleet_text(fleet: FleetSnapshot) -> str:
    """A table, one line per node, under a line answering "how many are idle or waiting"."""
    # The fleet screen's rules: a stale node's GPUs are in no state (counted apart, as
    # stale), and memory is held on idle and waiting GPUs alike.
    counts = fresh_counts(fleet.nodes)
    stale = sum(node.stale for node in fleet.nodes)
    gpus = sum(len(node.snapshot.gpus) for node in fleet.nodes)
    interval = f", scraped every {fleet.scrape_interval:g} s" if fleet.scrape_interval else ""
    stale_text = f", {stale} {_plural(stale, 'node')} stale" if stale else ""
    lines = [
        f"{len(fleet.nodes)} {_plural(len(fleet.nodes), 'node')}, {gpus} {_plural(gpus, 'GPU')}: "
        f"{counts[GpuState.BUSY]} busy, "
        f"{counts[GpuState.WAITING]} waiting, {counts[GpuState.IDLE]} idle, "
        f"{counts[GpuState.THROTTLED]} throttled, {counts[GpuState.UNKNOWN]} unknown"
        f"{stale_text} (over {fleet.window_seconds:g} s{interval})",
        f"{'host':<28} {'GPUs':>4} {'busy':>4} {'wait':>4} {'idle':>4} {'thrl':>4} "
        f"{'held idle':>10} {'power':>8} {'age':>7}",
    ]
    for node in fleet.nodes:
        states = [w.state for w in node.windows]
        held = held_memory(node)
        draws = [g.power.draw for g in node.snapshot.gpus if g.power.draw is not None]
        power = f"{sum(draws):.0f} W" if draws else "n/a"
        age = _age(node, fleet)
        age_text = "n/a" if age is None else f"{age:.0f} s"
        if node.stale:
            age_text += " stale"
        lines.append(
            f"{terminal_safe(node.key):<28.28} {len(node.snapshot.gpus):>4} "
            f"{states.count(GpuState.BUSY):>4} {states.count(GpuState.WAITING):>4} "
            f"{states.count(GpuState.IDLE):>4} {states.count(GpuState.THROTTLED):>4} "
            f"{fmt_bytes(held):>10} {power:>8} {age_text:>7}"
        )
    lines.extend(_health_text(fleet))
    if fleet.one_shot:
        lines.append(ONE_SHOT_NOTE)
    # Host names and labels are the exporters' words: written terminal-safe, line by line.
    return "\n".join(map(terminal_safe, lines)) + "\n"


ONE_SHOT_NOTE = (
    "one scrape: values and pods are as of now; a state over the window needs scrapes "
    "across it, so only GPUs whose exporter judges its own (gputop export) have one here "
    "(the fleet screen, or --prometheus, judges the rest)"
)
"""What a `--targets --once` answer can and cannot tell, said under its table."""


def _health_text(fleet: FleetSnapshot) -> list[str]:
    """``Health: 2 nodes with critical XIDs``, then each such node's lines."""
    said = health_summary(_health_counts(fleet))
    error = None if fleet.health is None else fleet.health.error
    if said is None and error is None:
        return []
    lines = [f"Health: {said or 'no problem known'}"]
    if error is not None:
        lines.append(f"  (health incomplete: {error})")
    for node in fleet.nodes:
        health = NodeHealth(node.key) if fleet.health is None else fleet.health.node(node.key)
        for line in health_lines(node.key, node.snapshot, health):
            lines.append(f"  {node.key}: {line}")
    return lines
