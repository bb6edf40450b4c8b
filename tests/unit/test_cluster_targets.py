"""`gputop cluster --targets`: exporters scraped directly, shown as from Prometheus."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputop.model.fleet import GpuState
from gputop.sources.prometheus.direct import DirectFleet, parse_targets
from support.prometheus import DCGM, cluster, free_port, serving

MIB = 1024 * 1024


def test_targets_show_the_same_fleet_as_prometheus() -> None:
    names = ("a100-mig-ub20.prom", "mixed-a30-mig-pods.prom", "k8s-no-hostname.prom")
    with serving([(DCGM / n).read_text() for n in names]) as servers:
        result = cluster("--targets", ",".join(s.target for s in servers), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    nodes = {node["host"]: node for node in document["nodes"]}
    assert set(nodes) == {"ub20-a100-k8s", "dcgm-exporter-wwwjh", "127.0.0.1"}
    a100 = nodes["ub20-a100-k8s"]["gpus"][0]
    assert a100["memory_used"] == 4845 * MIB
    assert a100["power_draw"] == pytest.approx(409.692)
    assert a100["mig_devices"][0]["profile"] == "1g.5gb"
    mixed = {g["uuid"]: g for g in nodes["dcgm-exporter-wwwjh"]["gpus"]}
    holders = mixed["GPU-63bc0b91-2265-1b94-831c-15c41fe92675"]["holders"]
    assert [h["pod"] for h in holders] == ["triton-server-f7cb5d77-95xcf"]
    assert nodes["127.0.0.1"]["gpus"][0]["utilization_gpu"] == 44.0
    assert nodes["127.0.0.1"]["instance"] == servers[2].target


def test_a_target_that_stops_answering_turns_stale() -> None:
    texts = [(DCGM / "k8s-no-hostname.prom").read_text(), (DCGM / "titanv-k8s.prom").read_text()]
    with serving(texts) as servers:
        source = DirectFleet(parse_targets(",".join(s.target for s in servers)), timeout=2)
        try:
            first = source.fleet()
            second = source.fleet()
            servers[1].stop()
            third = source.fleet()
        finally:
            source.close()
    assert first.error is None
    assert [n.stale for n in first.nodes] == [False, False]
    # Two scrapes at 44%: busy over the window; one would say nothing yet.
    assert first.nodes[0].windows[0].state is GpuState.UNKNOWN
    assert second.nodes[0].windows[0].state is GpuState.BUSY
    nodes = {n.host: n for n in third.nodes}
    assert nodes["dcgm-exporter-lcxpl"].stale is True
    assert nodes["dcgm-exporter-lcxpl"].snapshot.gpus[4].clocks.sm == 1335  # kept, not zeroed
    assert nodes["127.0.0.1"].stale is False
    assert third.error == (
        f"1 of 2 targets: cannot reach the exporter at http://{servers[1].target}/metrics: "
        "connection refused"
    )


def test_a_target_that_is_not_an_exporter() -> None:
    with serving(["<html><body>hello</body></html>\n"]) as servers:
        result = cluster("--targets", servers[0].target, "--json")
    assert result.returncode == 1
    assert result.stderr == (
        f"gputop: http://{servers[0].target}/metrics is not a Prometheus exposition "
        "(its /metrics did not parse)\n"
    )


def test_a_plain_web_server_is_not_an_exporter(tmp_path: Path) -> None:
    # The real thing: Python's own file server, which has no /metrics (HTTP 404).
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "http.server did not start"
                time.sleep(0.1)
        result = cluster("--targets", f"127.0.0.1:{port}", "--once")
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert result.returncode == 1
    # An exporter was asked for, not a Prometheus server: no word of /api/v1.
    assert result.stderr == (
        f"gputop: http://127.0.0.1:{port}/metrics is not an exporter: HTTP 404 not found "
        "(no metrics in the Prometheus text format there)\n"
    )


def test_a_refused_target_alone_is_one_line() -> None:
    port = free_port()
    result = cluster("--targets", f"127.0.0.1:{port}", "--json")
    assert result.returncode == 1
    assert result.stderr == (
        f"gputop: cannot reach the exporter at http://127.0.0.1:{port}/metrics: "
        "connection refused\n"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("h1:9400", ["http://h1:9400/metrics"]),
        ("h1:9400, https://h2/x/metrics", ["http://h1:9400/metrics", "https://h2/x/metrics"]),
    ],
)
def test_parse_targets(text: str, expected: list[str]) -> None:
    assert parse_targets(text) == expected


@pytest.mark.parametrize("text", ["", ",", "h1:port", "ftp://h1/"])
def test_bad_targets_exit_2(text: str) -> None:
    result = cluster("--targets", text, "--json")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("gputop: --targets")
