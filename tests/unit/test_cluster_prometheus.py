"""`gputop cluster --prometheus URL` against a real Prometheus scraping real dcgm-exporter output.

Each bundled exposition (``snapshots/dcgm/``, real dcgm-exporter answers published in
issues and NVIDIA's docs) is served by its own small HTTP server; a real Prometheus scrapes
them every second; the real command must show every node and GPU with the values the
exposition holds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gputop.model.fleet import GpuState
from gputop.model.sample import Reason
from gputop.sources.prometheus.client import PrometheusClient
from gputop.sources.prometheus.source import PrometheusFleet
from support.prometheus import (
    DCGM,
    ExpositionServer,
    RunningPrometheus,
    cluster,
    running_prometheus,
    serving,
)

CAPTURES = sorted(DCGM.glob("*.prom"))
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def fleet_server() -> Iterator[tuple[RunningPrometheus, list[ExpositionServer]]]:
    """A Prometheus scraping every bundled exposition, each from its own target."""
    with (
        serving([path.read_text() for path in CAPTURES]) as servers,
        running_prometheus([s.target for s in servers]) as prometheus,
    ):
        prometheus.wait_for("up == 1", len(servers))
        # Two scrapes of every target, so the window has more than one sample.
        prometheus.wait_for("count_over_time(up[1m]) > 2", len(servers))
        yield prometheus, servers


@pytest.fixture(scope="module")
def fleet_json(
    fleet_server: tuple[RunningPrometheus, list[ExpositionServer]],
) -> dict[str, Any]:
    prometheus, _ = fleet_server
    result = cluster("--prometheus", prometheus.url, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert isinstance(document, dict)
    return document


def _node(document: dict[str, Any], host: str) -> dict[str, Any]:
    nodes: dict[str, dict[str, Any]] = {node["host"]: node for node in document["nodes"]}
    assert host in nodes, sorted(nodes)
    return nodes[host]


def _gpu(node: dict[str, Any], uuid: str) -> dict[str, Any]:
    gpus: dict[str, dict[str, Any]] = {gpu["uuid"]: gpu for gpu in node["gpus"]}
    assert uuid in gpus, sorted(gpus)
    return gpus[uuid]


def test_every_node_of_every_exposition_is_shown(fleet_json: dict[str, Any]) -> None:
    hosts = {node["host"] for node in fleet_json["nodes"]}
    assert hosts == {
        "ub20-a100-k8s",  # Hostname
        "dcgm-exporter-wwwjh",  # lower-case hostname
        "gsrh100-074",
        "r6i3n0",
        "nvidia-dcgm-exporter-ml2wh",
        "dcgm-exporter-lcxpl",
        "127.0.0.1",  # no host label at all: the host of Prometheus's instance label
        "ip-100-64-171-120.ec2.internal",  # NVIDIA's aicr evidence: no FB_USED
        "gpu-node-1",
    }
    assert len(hosts) == len(CAPTURES)
    assert fleet_json["error"] is None
    assert fleet_json["scrape_interval"] == 1.0
    for node in fleet_json["nodes"]:
        assert node["stale"] is False
        assert node["exporter"] == "dcgm-exporter"
        assert node["age_seconds"] is not None and node["age_seconds"] < 10


def test_every_gpu_of_a_multi_gpu_box_is_shown(fleet_json: dict[str, Any]) -> None:
    titan = _node(fleet_json, "dcgm-exporter-lcxpl")
    assert [gpu["index"] for gpu in titan["gpus"]] == [0, 1, 2, 3, 4]
    assert [gpu["clocks_sm"] for gpu in titan["gpus"]] == [135, 135, 135, 135, 1335]
    assert {gpu["name"] for gpu in titan["gpus"]} == {"NVIDIA TITAN V"}
    # dcgm-exporter's empty pod labels are no pod.
    assert all(gpu["holders"] == [] for gpu in titan["gpus"])


def test_values_come_back_in_the_models_units(fleet_json: dict[str, Any]) -> None:
    a100 = _gpu(_node(fleet_json, "ub20-a100-k8s"), "GPU-34319582-d595-d1c7-d1d2-179bcfa61660")
    assert a100["power_draw"] == pytest.approx(409.692)
    assert a100["temperature"] == 61.0
    assert a100["clocks_sm"] == 1215
    assert a100["clocks_memory"] == 1215
    assert a100["memory_used"] == 4845 * MIB  # DCGM's MiB back to bytes
    assert a100["memory_free"] == 35690 * MIB
    assert a100["memory_total"] == (4845 + 35690) * MIB
    one = _gpu(_node(fleet_json, "127.0.0.1"), "GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116")
    assert one["utilization_gpu"] == 44.0
    assert one["power_draw"] == pytest.approx(302.206)
    # What the exporter does not publish is null with a reason, never 0.
    assert one["memory_used"] is None
    assert one["unavailable"]["memory.used"] == Reason.NOT_EXPORTED.value
    v100 = _node(fleet_json, "r6i3n0")
    limits = {gpu["uuid"]: gpu["power_limit"] for gpu in v100["gpus"]}
    assert limits["GPU-a9079f15-493e-6c1c-c78c-73ec2b840cba"] == 300.0  # POWER_MGMT_LIMIT
    assert limits["GPU-a6158b59-2c1e-1e63-0068-9178c4298abd"] is None


def test_mig_instances_become_mig_devices(fleet_json: dict[str, Any]) -> None:
    a100 = _gpu(_node(fleet_json, "ub20-a100-k8s"), "GPU-34319582-d595-d1c7-d1d2-179bcfa61660")
    assert a100["mig_mode"] is True
    [mig] = a100["mig_devices"]
    assert (mig["gpu_instance_id"], mig["profile"]) == (13, "1g.5gb")
    assert mig["utilization_gpu"] == pytest.approx(99.5687)  # GR_ENGINE_ACTIVE as percent
    # Utilization is not published under MIG: said so, not 0.
    assert a100["utilization_gpu"] is None
    assert a100["unavailable"]["utilization.gpu"] == Reason.UNDER_MIG.value


def test_pods_and_label_sets_that_differ_in_one_family(fleet_json: dict[str, Any]) -> None:
    h100 = _gpu(_node(fleet_json, "gsrh100-074"), "GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77")
    migs = {m["gpu_instance_id"]: m for m in h100["mig_devices"]}
    assert sorted(migs) == [7, 8, 9]
    assert [h["pod"] for h in migs[7]["holders"]] == [
        "text-embedding-predictor-00008-deployment-57946f6c67-vdtjl"
    ]
    assert migs[8]["holders"] == []  # the series without pod labels
    assert migs[9]["holders"][0]["namespace"] == "model-playground-stg"
    assert h100["pci_bus_id"] == "00000000:1A:00.0"
    assert _node(fleet_json, "gsrh100-074")["driver_version"] == "535.129.03"
    mixed = _node(fleet_json, "dcgm-exporter-wwwjh")
    a30 = _gpu(mixed, "GPU-63bc0b91-2265-1b94-831c-15c41fe92675")
    assert [h["pod"] for h in a30["holders"]] == ["triton-server-f7cb5d77-95xcf"]
    assert a30["holders"][0]["container"] == "triton-server"
    assert a30["temperature"] == 45.0  # a device value read from its MIG instance's series
    ada = _gpu(mixed, "GPU-fc60126e-514d-3522-2828-c5daa8e99d85")
    assert (ada["utilization_encoder"], ada["utilization_decoder"]) == (9.0, 46.0)
    assert ada["memory_free"] == 11275 * MIB
    t4_node = _node(fleet_json, "nvidia-dcgm-exporter-ml2wh")
    t4 = _gpu(t4_node, "GPU-e1200d64-e918-4277-cad9-75da90b9f618")
    assert t4["holders"] == [
        {"pod": "dcgmproftester", "namespace": "default", "container": "dcgmproftester11"}
    ]


def test_states_over_the_window(fleet_json: dict[str, Any]) -> None:
    one = _gpu(_node(fleet_json, "127.0.0.1"), "GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116")
    assert (one["state"], one["utilization_mean"]) == (GpuState.BUSY.value, 44.0)
    v100 = _gpu(_node(fleet_json, "r6i3n0"), "GPU-a6158b59-2c1e-1e63-0068-9178c4298abd")
    # 0 %, but this exporter sends no FB_USED: idle or held by a job, nothing says which.
    assert (v100["state"], v100["utilization_mean"]) == (GpuState.UNKNOWN.value, 0.0)
    titan = _node(fleet_json, "dcgm-exporter-lcxpl")["gpus"][0]
    assert titan["state"] == GpuState.UNKNOWN.value  # no utilization nor memory: unknown
    # MIG on, so no utilization; DCGM's engine activity for the whole GPU is the window's input.
    a100 = _gpu(_node(fleet_json, "ub20-a100-k8s"), "GPU-34319582-d595-d1c7-d1d2-179bcfa61660")
    assert a100["utilization_gpu"] is None
    assert a100["activity_graphics"] == pytest.approx(99.563)
    assert (a100["state"], a100["utilization_mean"]) == (GpuState.BUSY.value, 99.563)


def test_the_table_says_how_many_are_idle(
    fleet_server: tuple[RunningPrometheus, list[ExpositionServer]],
) -> None:
    prometheus, _ = fleet_server
    result = cluster("--prometheus", prometheus.url, "--once")
    assert result.returncode == 0, result.stderr
    head, _, *rows = result.stdout.splitlines()
    # Busy: the V100 at 44 %, and the MIG A100 whose engine activity DCGM measured at 99.6 %.
    assert head.startswith(f"{len(CAPTURES)} nodes, 31 GPUs: 2 busy, 0 waiting, 0 idle")
    assert "scraped every 1 s" in head
    assert sorted(row.split()[0] for row in rows) == sorted(
        ["ub20-a100-k8s", "dcgm-exporter-wwwjh", "gsrh100-074", "r6i3n0",
         "nvidia-dcgm-exporter-ml2wh", "dcgm-exporter-lcxpl", "127.0.0.1",
         "ip-100-64-171-120.ec2.intern", "gpu-node-1"]
    )  # fmt: skip


def test_one_round_trip_per_metric_not_per_node(
    fleet_server: tuple[RunningPrometheus, list[ExpositionServer]],
) -> None:
    prometheus, servers = fleet_server
    source = PrometheusFleet(PrometheusClient(prometheus.url))
    try:
        source.fleet()  # discovery: which families exist, the scrape interval
        # Every target scraped again since (the next refresh asks for all of them).
        prometheus.wait_for(f"timestamp(up) > {time.time():.3f}", len(servers))
        before = source.client.round_trips
        fleet = source.fleet()
        per_refresh = source.client.round_trips - before
        seen = dict(source._seen)
        before = source.client.round_trips
        again = source.fleet()  # at once: only what was scraped since is asked again
        unchanged = source.client.round_trips - before
        # A scrape may land between the two refreshes (often, on a loaded machine): the
        # targets it touched are asked again and carry a newer time, the others must not.
        rescraped = {i for i, at in source._seen.items() if seen.get(i) != at}
    finally:
        source.close()
    families = len(source._families or ())
    assert len(fleet.nodes) == len(servers)
    # One query per family, three for the window (two more for the engine activity some
    # exporters have), one for freshness; never per node.
    window = 3 + (2 if "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in (source._families or ()) else 0)
    assert window == 5
    assert per_refresh == families + window + 1
    assert unchanged == (families + window + 1 if rescraped else 1)
    assert [n.host for n in again.nodes] == [n.host for n in fleet.nodes]
    for old, new in zip(fleet.nodes, again.nodes, strict=True):
        # The exporters serve fixed captures: the values never change, only their time.
        assert replace(new.snapshot, timestamp=old.snapshot.timestamp) == old.snapshot
        if old.instance not in rescraped:
            assert new.snapshot.timestamp == old.snapshot.timestamp


def test_node_history_from_query_range(
    fleet_server: tuple[RunningPrometheus, list[ExpositionServer]],
) -> None:
    prometheus, _ = fleet_server
    source = PrometheusFleet(PrometheusClient(prometheus.url))
    try:
        source.fleet()
        history = source.node_history("ub20-a100-k8s", 60)
    finally:
        source.close()
    assert len(history) >= 2
    stamps = [s.timestamp for s in history]
    assert None not in stamps
    assert stamps == sorted(s for s in stamps if s is not None)
    newest = history[-1]
    assert newest.host == "ub20-a100-k8s"
    assert newest.gpus[0].power.draw == pytest.approx(409.692)
    assert newest.gpus[0].mig_devices[0].profile == "1g.5gb"


def test_a_killed_exporter_turns_its_node_stale_not_dropped() -> None:
    texts = [(DCGM / name).read_text() for name in ("a100-mig-ub20.prom", "v100x4-r6i3n0.prom")]
    with (
        serving(texts) as servers,
        running_prometheus([s.target for s in servers]) as prometheus,
    ):
        prometheus.wait_for("up == 1", 2)
        source = PrometheusFleet(PrometheusClient(prometheus.url))
        try:
            fresh = {n.host: n for n in source.fleet().nodes}
            assert fresh["ub20-a100-k8s"].stale is False
            servers[0].stop()
            prometheus.wait_for("up == 0", 1)
            deadline = time.monotonic() + 30
            while True:
                fleet = source.fleet()
                nodes = {n.host: n for n in fleet.nodes}
                if nodes["ub20-a100-k8s"].stale or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
        finally:
            source.close()
    dead = nodes["ub20-a100-k8s"]
    assert dead.stale is True
    assert nodes["r6i3n0"].stale is False
    # Its last values are kept, never zeroed.
    assert dead.snapshot.gpus[0].power.draw == pytest.approx(409.692)
    assert dead.newest_sample is not None
    assert (fleet.taken_at - dead.newest_sample).total_seconds() > 3


def test_prometheus_down_then_back(tmp_path: Path) -> None:
    texts = [(DCGM / "v100x4-r6i3n0.prom").read_text()]
    with (
        serving(texts) as servers,
        running_prometheus([s.target for s in servers]) as prometheus,
    ):
        prometheus.wait_for("up == 1", 1)
        source = PrometheusFleet(PrometheusClient(prometheus.url, timeout=2))
        try:
            assert source.fleet().error is None
            prometheus.stop()
            down = source.fleet()
            result = cluster("--prometheus", prometheus.url, "--json")
            prometheus.start()
            prometheus.wait_for("up == 1", 1)
            back = source.fleet()
        finally:
            source.close()
    assert down.error == f"cannot reach Prometheus at {prometheus.url}: connection refused"
    assert [n.host for n in down.nodes] == ["r6i3n0"]  # the last answer, kept
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"gputop: {down.error}\n"
    assert back.error is None
    assert [n.host for n in back.nodes] == ["r6i3n0"]


def test_a_refresh_asks_only_for_targets_scraped_since_the_last() -> None:
    texts = [(DCGM / n).read_text() for n in ("k8s-no-hostname.prom", "v100x4-r6i3n0.prom",
                                              "titanv-k8s.prom", "tesla-t4-pod.prom")]  # fmt: skip
    with (
        serving(texts) as servers,
        running_prometheus([s.target for s in servers], 3.0) as prometheus,  # steps of 1.5 s
    ):
        prometheus.wait_for("up == 1", len(servers))
        source = PrometheusFleet(PrometheusClient(prometheus.url))
        try:
            first = source.fleet()
            servers[0].text = servers[0].text.replace("} 44", "} 71")  # utilization 44% -> 71%
            trips, seen = [], []
            # Until the change is seen and a refresh came between two scrapes, for at least
            # two scrape intervals (a fixed 12 s before).
            least, deadline = time.monotonic() + 6, time.monotonic() + 30
            while time.monotonic() < deadline:
                before = source.client.round_trips
                fleet = source.fleet()
                assert fleet.error is None
                trips.append(source.client.round_trips - before)
                seen.append({n.host: n for n in fleet.nodes})
                node = seen[-1].get("127.0.0.1")
                changed = node is not None and node.snapshot.gpus[0].utilization.gpu == 71.0
                if changed and 1 in trips and time.monotonic() > least:
                    break
                time.sleep(0.4)
        finally:
            source.close()
    assert len(first.nodes) == 4
    # Between scrapes nothing is asked but freshness; the other nodes never change.
    assert 1 in trips
    for nodes in seen:
        assert set(nodes) == {n.host for n in first.nodes}
        assert nodes["r6i3n0"].snapshot.gpus[0].utilization.gpu == 0.0
        assert nodes["dcgm-exporter-lcxpl"].snapshot.gpus[4].clocks.sm == 1335
        assert not any(n.stale for n in nodes.values())
    assert seen[-1]["127.0.0.1"].snapshot.gpus[0].utilization.gpu == 71.0
    assert source._interval == 3.0  # learnt from the data
