"""A node is known by where its series come from and by its GPUs, never by its host name alone.

Two real dcgm-exporter expositions of 8x H100 (NVIDIA's aicr conformance evidence, two EKS
nodes) are made to report the same ``Hostname="vm"``, as two exporters do when both default
to a lab machine's name; the second one's utilization is set to 97 % so that a window mixed
from both GPU 0s shows (48.5 %). These expositions carry no ``DCGM_FI_DEV_FB_USED``: a GPU at
0 % whose memory nobody reports may be idle or held by a job, so it is ``unknown``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from gputop.model.fleet import GpuState
from gputop.sources.prometheus.build import NodeBuilder
from gputop.sources.prometheus.client import PrometheusClient
from gputop.sources.prometheus.direct import DirectFleet, parse_exposition, parse_targets
from gputop.sources.prometheus.source import PrometheusFleet
from gputop.ui.render.panel_lines import PanelState, mig_lines
from support.command import ROOT
from support.exporter import running_exporter
from support.metrics import series
from support.prometheus import DCGM, ExpositionServer, cluster, running_prometheus, serving

EKS = (DCGM / "aicr-h100x8-eks.prom").read_text()
NODE1 = (DCGM / "aicr-h100x8-gpu-node-1.prom").read_text()


def _as_vm(text: str, *, util: float | None = None, uuids: bool = True) -> str:
    text = re.sub(r'Hostname="[^"]*"', 'Hostname="vm"', text)
    if util is not None:
        text = re.sub(r"^(DCGM_FI_DEV_GPU_UTIL\{.*\}) \S+$", rf"\1 {util:g}", text, flags=re.M)
    if not uuids:
        text = re.sub(r'UUID="[^"]*",', "", text)
    return text


def _scraped_twice(texts: list[str]) -> tuple[list[ExpositionServer], list]:  # type: ignore[type-arg]
    with serving(texts) as servers:
        source = DirectFleet(parse_targets(",".join(s.target for s in servers)), timeout=5)
        try:
            first = source.fleet()
            second = source.fleet()
        finally:
            source.close()
    return servers, [first, second]


@pytest.mark.parametrize("uuids", [True, False], ids=["by-uuid", "no-uuid"])
def test_same_named_targets_are_two_nodes_with_their_own_windows(uuids: bool) -> None:
    texts = [_as_vm(EKS, uuids=uuids), _as_vm(NODE1, util=97, uuids=uuids)]
    servers, (first, second) = _scraped_twice(texts)
    assert [n.host for n in second.nodes] == ["vm", "vm"]
    keys = {n.instance: n.key for n in second.nodes}
    assert keys == {s.target: f"vm ({s.target})" for s in servers}
    by_instance = {n.instance: n for n in second.nodes}
    zero, busy = by_instance[servers[0].target], by_instance[servers[1].target]
    assert len(zero.snapshot.gpus) == len(busy.snapshot.gpus) == 8
    # Each GPU's window is its own: 0 % and 97 %, never their mean.
    assert {w.utilization_mean for w in zero.windows} == {0.0}
    assert {w.utilization_mean for w in busy.windows} == {97.0}
    assert {w.state for w in busy.windows} == {GpuState.BUSY}
    # The clash is said once, in the first answer.
    assert len(first.notices) == 1
    assert "2 exporters report the host name 'vm'" in first.notices[0]
    assert second.notices == ()


def test_the_order_of_targets_changes_nothing() -> None:
    texts = [_as_vm(EKS), _as_vm(NODE1, util=97)]
    with serving(texts) as servers:
        targets = [s.target for s in servers]
        results = [
            cluster("--targets", ",".join(order), "--json") for order in (targets, targets[::-1])
        ]
    documents = []
    for result in results:
        assert result.returncode == 0, result.stderr
        # One warning line, and nothing else on stderr.
        assert result.stderr.count("\n") == 1
        assert result.stderr.startswith("gputop: warning: 2 exporters report the host name 'vm'")
        document = json.loads(result.stdout)
        documents.append(
            sorted((n["key"], sorted(g["uuid"] for g in n["gpus"])) for n in document["nodes"])
        )
    assert documents[0] == documents[1]
    assert len(documents[0]) == 2
    assert all(len(uuids) == 8 for _, uuids in documents[0])


def test_without_memory_data_a_gpu_at_zero_is_unknown_not_idle() -> None:
    # NVIDIA's aicr files: utilization 0, power up to 115 W, a pod on GPU 6, no FB_USED.
    _, (_, second) = _scraped_twice([EKS, NODE1])
    states = [w.state for n in second.nodes for w in n.windows]
    assert len(states) == 16
    assert set(states) == {GpuState.UNKNOWN}


def test_one_shot_says_what_it_cannot_tell() -> None:
    with serving([EKS]) as servers:
        as_json = cluster("--targets", servers[0].target, "--json")
        as_text = cluster("--targets", servers[0].target, "--once")
    assert as_json.returncode == 0 and as_text.returncode == 0, as_json.stderr + as_text.stderr
    document = json.loads(as_json.stdout)
    assert document["one_shot"] is True
    assert {g["state"] for g in document["nodes"][0]["gpus"]} == {"unknown"}
    assert "one scrape: values and pods are as of now" in as_text.stdout
    assert "a state over the window needs scrapes across it" in as_text.stdout


@pytest.fixture(scope="module")
def clashing_prometheus() -> Iterator[tuple[str, list[ExpositionServer]]]:
    texts = [_as_vm(EKS), _as_vm(NODE1, util=97)]
    with (
        serving(texts) as servers,
        running_prometheus([s.target for s in servers]) as prometheus,
    ):
        prometheus.wait_for("count_over_time(up[1m]) > 2", len(servers))
        yield prometheus.url, servers


def test_through_prometheus_same_named_exporters_are_two_nodes(
    clashing_prometheus: tuple[str, list[ExpositionServer]],
) -> None:
    url, servers = clashing_prometheus
    source = PrometheusFleet(PrometheusClient(url))
    try:
        first = source.fleet()
        second = source.fleet()
        nodes = {n.key: n for n in first.nodes}
        histories = {key: source.node_history(key, 60) for key in nodes}
    finally:
        source.close()
    assert first.error is None, first.error
    assert sorted(nodes) == sorted(f"vm ({s.target})" for s in servers)
    zero = nodes[f"vm ({servers[0].target})"]
    busy = nodes[f"vm ({servers[1].target})"]
    assert len(zero.snapshot.gpus) == len(busy.snapshot.gpus) == 8
    assert {w.utilization_mean for w in zero.windows} == {0.0}
    assert {w.utilization_mean for w in busy.windows} == {97.0}
    assert {w.state for w in zero.windows} == {GpuState.UNKNOWN}  # no FB_USED
    assert {w.state for w in busy.windows} == {GpuState.BUSY}
    # Each node's history is its own 8 GPUs, not 16 merged.
    for key, history in histories.items():
        assert history, key
        uuids = {g.uuid for g in nodes[key].snapshot.gpus}
        assert {g.uuid for g in history[-1].gpus} == uuids
    assert len(first.notices) == 1 and "'vm'" in first.notices[0]
    assert second.notices == ()
    assert len(second.nodes) == 2


@pytest.mark.parametrize(
    ("capture", "has_processes"),
    [("query-gpu-2x-a0s.csv", False), ("gtx1070ti-procs-v11.xml", True)],
    ids=["query-gpu-log", "xml-with-processes"],
)
def test_export_replay_leaves_out_a_process_count_the_log_does_not_have(
    capture: str, has_processes: bool
) -> None:
    with running_exporter("--replay", str(ROOT / "snapshots" / capture), "--at", "0") as exporter:
        values = series(exporter.metrics())
    counts = [value for (name, _), value in values.items() if name == "gputop_processes"]
    assert any(name == "DCGM_FI_DEV_FB_USED" for name, _ in values)
    if has_processes:
        assert counts and max(counts) >= 1
    else:
        # A `--query-gpu` log has no process data: no count, rather than a false 0.
        assert counts == []


def test_a_mig_row_without_memory_says_na_once() -> None:
    # dcgm-exporter's MIG series with no framebuffer family (NVIDIA/dcgm-exporter#512).
    text = (DCGM / "h100-mig-pods.prom").read_text()
    readings = parse_exposition(text, "127.0.0.1:9400")
    builder = NodeBuilder("gsrh100-074")
    builder.add_all(readings)
    gpu = builder.snapshot(None).gpus[0]
    assert gpu.mig_devices and gpu.mig_devices[0].memory.used is None
    lines = mig_lines(PanelState(gpu, {}), 120)
    assert lines
    for line in lines:
        text = "".join(part for part, _ in line)
        assert "MEM n/a" in text
        assert "n/a/n/a" not in text
