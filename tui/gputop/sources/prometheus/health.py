"""The fleet's health from Prometheus: XIDs of gputop's and dcgm-exporter's series, and the
alerts the server fires (``/api/v1/alerts``).

:class:`HealthFleet` wraps any :class:`~gputop.sources.fleet.FleetSource` that reads a
Prometheus server: after each refresh it asks three more things (gputop's XID counters,
dcgm-exporter's last-XID gauge where not zero, the firing alerts) and hands the fleet on
with its ``health``. A failed health query leaves the fleet as it was, with the reason in
``health.error``: the health is an addition, never a reason to show less.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from gputop.model import Snapshot
from gputop.model.fleet import FleetSnapshot, NodeView
from gputop.model.fleet_health import FiringAlert, FleetHealth, NodeHealth, NodeXid
from gputop.sources.fleet import FleetSource
from gputop.sources.prometheus.client import PrometheusClient, PrometheusError
from gputop.sources.prometheus.families import host_of

XID_COUNTER = "gputop_xid_errors_total"
XID_GAUGE = "DCGM_FI_DEV_XID_ERRORS"


def _node_key(
    labels: Mapping[str, str], by_instance: Mapping[str, str], by_host: Mapping[str, str]
) -> str | None:
    """The node a series or alert is about (its ``NodeView.key``): the node scraped at its
    ``instance`` first (two machines may report one host name; an exporter-down alert names
    only the target), else the node of its host label when one node has that name."""
    instance = labels.get("instance")
    if instance and instance in by_instance:
        return by_instance[instance]
    host = host_of(labels)
    if host is None:
        return None
    return by_host.get(host, host)


def _code(text: str | None) -> int | None:
    try:
        return None if text is None else int(float(text))
    except ValueError:
        return None


def _when(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def read_health(client: PrometheusClient, nodes: Sequence[NodeView]) -> FleetHealth:
    """XIDs and firing alerts per node of ``nodes``, each node's under its key."""
    by_instance = {node.instance: node.key for node in nodes if node.instance}
    named: dict[str, list[str]] = {}
    for node in nodes:
        named.setdefault(node.host, []).append(node.key)
    by_host = {host: keys[0] for host, keys in named.items() if len(keys) == 1}
    xids: dict[str, list[NodeXid]] = {}
    alerts: dict[str, list[FiringAlert]] = {}
    errors: list[str] = []
    counted: set[tuple[str, str | None]] = set()
    try:
        for sample in client.query(XID_COUNTER):
            host = _node_key(sample.labels, by_instance, by_host)
            code = _code(sample.labels.get("xid"))
            if host is None or code is None:
                continue
            gpu = sample.labels.get("gpu")
            counted.add((host, gpu))
            xids.setdefault(host, []).append(
                NodeXid(gpu, sample.labels.get("UUID"), code, round(sample.value))
            )
        for sample in client.query(f"{XID_GAUGE} != 0"):
            host = _node_key(sample.labels, by_instance, by_host)
            code = _code(sample.labels.get("err_code")) or round(sample.value)
            gpu = sample.labels.get("gpu")
            if host is None or (host, gpu) in counted:
                continue  # gputop's own gauge: its counter said more
            xids.setdefault(host, []).append(NodeXid(gpu, sample.labels.get("UUID"), code, None))
    except PrometheusError as error:
        errors.append(str(error))
    try:
        for alert in client.alerts():
            if alert.get("state") != "firing":
                continue
            labels = alert.get("labels") or {}
            annotations = alert.get("annotations") or {}
            host = _node_key(labels, by_instance, by_host)
            if host is None:
                continue
            alerts.setdefault(host, []).append(
                FiringAlert(
                    name=str(labels.get("alertname", "?")),
                    severity=labels.get("severity"),
                    gpu=labels.get("gpu"),
                    summary=annotations.get("summary"),
                    active_at=_when(alert.get("activeAt")),
                )
            )
    except PrometheusError as error:
        errors.append(str(error))
    hosts = sorted(set(xids) | set(alerts))
    return FleetHealth(
        nodes=tuple(
            NodeHealth(
                host,
                tuple(sorted(xids.get(host, []), key=lambda x: (x.gpu or "", x.code))),
                tuple(alerts.get(host, [])),
            )
            for host in hosts
        ),
        error=errors[0] if errors else None,
    )


class HealthFleet:
    """A fleet source whose answers carry the fleet's health (see the module)."""

    def __init__(self, inner: FleetSource, client: PrometheusClient) -> None:
        self._inner = inner
        self._client = client

    def fleet(self) -> FleetSnapshot:
        """The inner source's fleet, with its health."""
        fleet = self._inner.fleet()
        if fleet.error is not None and not fleet.nodes:
            return fleet
        return replace(fleet, health=read_health(self._client, fleet.nodes))

    def node_history(self, host: str, seconds: float) -> Sequence[Snapshot]:
        """As the inner source's."""
        return self._inner.node_history(host, seconds)

    def close(self) -> None:
        """Close the inner source."""
        self._inner.close()
