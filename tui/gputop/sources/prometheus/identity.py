"""Which series describe the same machine, and the same GPU: never the host name alone.

Two exporters can report the same ``Hostname`` (both default to the machine's name: ``vm``
in a lab, ``localhost`` in many containers). Filed by host name alone, their GPUs would merge
into one node with two GPU 0s, or one would replace the other. So series are first told
apart by where they were scraped from (Prometheus's ``instance`` and ``job``, or the
``--targets`` URL), and two scrape targets of one host name are one machine only when their
GPUs are the same (a GPU UUID in common: ``gputop export`` beside dcgm-exporter on one box).
A host name left with several machines names each by its instance: ``vm (10.0.0.5:9400)``.

A GPU is known by its UUID, else by its index under its scrape target: the window's means
are filed under that, never under (host, index).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gputop.sources.prometheus import families as fam
from gputop.sources.prometheus.build import gpu_key
from gputop.sources.prometheus.families import Reading, origin_of


def gpu_identity(labels: Mapping[str, str]) -> str | None:
    """What names one GPU in the whole fleet: its UUID, else its index under its origin."""
    uuid = fam.label(labels, fam.UUID_LABELS)
    if uuid is not None:
        return uuid
    key = gpu_key(labels)
    return None if key is None else f"{origin_of(labels)}#{key}"


@dataclass
class NodeGroup:
    """The readings of one machine."""

    host: str
    origins: set[str] = field(default_factory=set)
    instances: set[str] = field(default_factory=set)
    uuids: set[str] = field(default_factory=set)
    readings: list[Reading] = field(default_factory=list)
    label: str | None = None
    """Set when another machine reports the same host name (see ``NodeView.label``)."""

    @property
    def key(self) -> str:
        """The node's name among the fleet's."""
        return self.label or self.host


def _label(group: NodeGroup) -> str:
    where = ", ".join(sorted(i for i in group.instances if i)) or ", ".join(
        sorted(o.partition("|")[2] or o for o in group.origins)
    )
    return f"{group.host} ({where or '?'})"


def group_readings(readings: Iterable[Reading], clashed: set[str] | None = None) -> list[NodeGroup]:
    """The readings as one group per machine, in a stable order.

    ``clashed``: host names known (from earlier answers) to name several machines; their
    groups are labelled even when only one of them is in these readings, so a node keeps
    its name from one refresh to the next. Host names found to clash now are added to it.
    """
    by_origin: dict[tuple[str, str], NodeGroup] = {}
    for reading in readings:
        labels = reading.labels
        host = fam.host_of(labels)
        if host is None:
            continue
        origin = origin_of(labels)
        group = by_origin.get((host, origin))
        if group is None:
            group = by_origin[(host, origin)] = NodeGroup(host, {origin})
            instance = labels.get("instance")
            if instance:
                group.instances.add(instance)
        group.readings.append(reading)
        uuid = fam.label(labels, fam.UUID_LABELS)
        if uuid is not None:
            group.uuids.add(uuid)
    by_host: dict[str, list[NodeGroup]] = {}
    for (host, _), group in sorted(by_origin.items()):
        by_host.setdefault(host, []).append(group)
    out: list[NodeGroup] = []
    for host, groups in by_host.items():
        merged = _merge(groups)
        if len(merged) > 1 and clashed is not None:
            clashed.add(host)
        if len(merged) > 1 or (clashed is not None and host in clashed):
            for group in merged:
                group.label = _label(group)
        out.extend(merged)
    return out


def _merge(groups: list[NodeGroup]) -> list[NodeGroup]:
    """Groups of one host name sharing a GPU are one machine; a group with no GPU series
    (an exporter's own gauges) joins the first machine of its host."""
    machines: list[NodeGroup] = []
    loose: list[NodeGroup] = []
    for group in groups:
        if not group.uuids and not any(gpu_key(r.labels) for r in group.readings):
            loose.append(group)
            continue
        into = next((m for m in machines if m.uuids & group.uuids), None)
        if into is None:
            machines.append(group)
            continue
        into.origins |= group.origins
        into.instances |= group.instances
        into.uuids |= group.uuids
        into.readings.extend(group.readings)
    if not machines:
        machines = loose[:1]
        loose = loose[1:]
    for group in loose:
        machines[0].origins |= group.origins
        machines[0].instances |= group.instances
        machines[0].readings.extend(group.readings)
    return machines


def clash_notice(host: str, groups: Iterable[NodeGroup]) -> str:
    """The one warning said about a host name that several machines report."""
    where = sorted(", ".join(sorted(g.instances)) or "?" for g in groups)
    names = "; ".join(where)
    return (
        f"{len(where)} exporters report the host name {host!r} "
        f"({names}): shown as separate nodes by instance; give each machine its own "
        "Hostname (dcgm-exporter) or --hostname (gputop export)"
    )
