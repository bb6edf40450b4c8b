"""`gputop cluster` reading a real Prometheus that scrapes real `gputop export` processes (each
replaying a different bundled capture under its own host name) beside a real dcgm-exporter
exposition: every node and GPU with the values of its capture."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from gputop.model.fleet import GpuState
from gputop.sources.prometheus.client import PrometheusClient
from gputop.sources.prometheus.source import PrometheusFleet
from support.command import ROOT
from support.exporter import FOUR, running_exporter
from support.metrics import document
from support.prometheus import DCGM, cluster, running_prometheus, serving

MIG_TEXT = ROOT / "snapshots" / "h100-mig-590-q.txt"


def _by_uuid(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {gpu["uuid"]: gpu for gpu in node["gpus"]}


def test_gputop_exporters_and_dcgm_exporter_in_one_fleet() -> None:
    four = document(FOUR)
    mig = document(MIG_TEXT)
    with (
        running_exporter("--replay", str(FOUR), "--hostname", "node-a") as node_a,
        running_exporter("--replay", str(MIG_TEXT), "--hostname", "node-b") as node_b,
        serving([(DCGM / "mixed-a30-mig-pods.prom").read_text()]) as static,
        running_prometheus(
            [f"127.0.0.1:{node_a.port}", f"127.0.0.1:{node_b.port}", static[0].target]
        ) as prometheus,
    ):
        prometheus.wait_for("up == 1", 3)
        prometheus.wait_for("count_over_time(up[1m]) > 2", 3)
        result = cluster("--prometheus", prometheus.url, "--json")
        assert result.returncode == 0, result.stderr
        fleet = json.loads(result.stdout)
        source = PrometheusFleet(PrometheusClient(prometheus.url))
        try:
            source.fleet()
            node_a.process.terminate()
            node_a.process.wait(10)
            prometheus.wait_for(f'up{{instance="127.0.0.1:{node_a.port}"}} == 0')
            deadline = time.monotonic() + 30
            while True:
                later = {n.host: n for n in source.fleet().nodes}
                if later["node-a"].stale or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
        finally:
            source.close()
    nodes = {node["host"]: node for node in fleet["nodes"]}
    assert set(nodes) == {"node-a", "node-b", "dcgm-exporter-wwwjh"}
    assert nodes["node-a"]["exporter"] == nodes["node-b"]["exporter"] == "gputop"
    assert nodes["dcgm-exporter-wwwjh"]["exporter"] == "dcgm-exporter"
    gpus_a = _by_uuid(nodes["node-a"])
    assert set(gpus_a) == {gpu.uuid for gpu in four.gpus}
    for gpu in four.gpus:
        assert gpu.uuid is not None
        got = gpus_a[gpu.uuid]
        assert got["index"] == gpu.index
        assert got["name"] == gpu.name
        assert got["utilization_gpu"] == gpu.utilization.gpu
        # The exporter writes MiB, as DCGM does: bytes come back to the MiB.
        assert got["memory_used"] == (gpu.memory.used or 0) // 2**20 * 2**20
        assert got["power_draw"] == pytest.approx(gpu.power.draw)
        assert got["temperature"] == gpu.temperature.gpu
        assert got["clocks_sm"] == gpu.clocks.sm
        assert got["state"] in {s.value for s in GpuState}
        assert {p["pid"] for p in got["processes"]} == {p.pid for p in gpu.processes}
    [h100] = mig.gpus
    assert h100.uuid is not None
    got_mig = _by_uuid(nodes["node-b"])[h100.uuid]
    assert {m["gpu_instance_id"] for m in got_mig["mig_devices"]} == {
        d.gpu_instance_id for d in h100.mig_devices
    }
    assert {m["profile"] for m in got_mig["mig_devices"]} == {d.profile for d in h100.mig_devices}
    # A killed exporter: its node is stale, its values kept.
    assert later["node-a"].stale is True
    assert later["node-b"].stale is False
    assert {g.uuid for g in later["node-a"].snapshot.gpus} == {g.uuid for g in four.gpus}
