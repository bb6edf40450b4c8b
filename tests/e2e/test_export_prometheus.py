"""A real Prometheus (Debian's /usr/bin/prometheus) scraping real `gputop export` processes:
one live on the fake NVML, one replaying a MIG capture, one over TLS with basic auth."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fakes.nvml_h200 import loaded_windows
from support.command import ROOT
from support.exporter import FOUR, running_exporter
from support.metrics import document, web_config
from support.prometheus import query, running_prometheus, scrape_config, wait_for_query

MIB = 1024 * 1024
MIG_TEXT = ROOT / "snapshots" / "h100-mig-590-q.txt"


def by_label(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {item["metric"][label]: float(item["value"][1]) for item in result}


def test_prometheus_scrapes_two_exporters() -> None:
    live = document(FOUR)
    mig = document(MIG_TEXT)
    with (
        running_exporter("--hostname", "node-a") as node_a,
        running_exporter("--replay", str(MIG_TEXT), "--hostname", "node-b") as node_b,
        running_prometheus([f"127.0.0.1:{node_a.port}", f"127.0.0.1:{node_b.port}"], 1.0) as url,
    ):
        util = wait_for_query(
            url, 'DCGM_FI_DEV_GPU_UTIL{Hostname="node-a"}', lambda r: len(r) == len(live.gpus)
        )
        assert by_label(util, "UUID") == {gpu.uuid: gpu.utilization.gpu for gpu in live.gpus}
        used = wait_for_query(
            url,
            'DCGM_FI_DEV_FB_USED{Hostname="node-b", GPU_I_ID!=""}',
            lambda r: len(r) == len(mig.gpus[0].mig_devices),
        )
        assert by_label(used, "GPU_I_ID") == {
            str(d.gpu_instance_id): (d.memory.used or 0) // MIB for d in mig.gpus[0].mig_devices
        }
        assert all(item["metric"]["GPU_I_PROFILE"] for item in used)
        up = query(url, "up")
        assert sorted(float(item["value"][1]) for item in up) == [1.0, 1.0]
        # The diagnosis state, summed the way a fleet view asks for it.
        states = query(url, 'sum by (Hostname) (gputop_gpu_state{state=~".+"})')
        assert by_label(states, "Hostname") == {"node-a": 4.0, "node-b": 1.0}


def test_prometheus_scrapes_over_tls_with_basic_auth(tmp_path: Path) -> None:
    config = web_config(tmp_path)
    with running_exporter("--web-config-file", str(config), tls=tmp_path / "server.crt") as node:
        extra = (
            "    scheme: https\n"
            "    tls_config:\n"
            f"      ca_file: {tmp_path / 'server.crt'}\n"
            "    basic_auth:\n"
            "      username: alice\n"
            "      password: s3cret\n"
        )
        targets = [f"127.0.0.1:{node.port}"]
        prometheus_yml = scrape_config(targets, 1.0, extra=extra)
        with running_prometheus(targets, 1.0, config=prometheus_yml) as url:
            result = wait_for_query(url, "DCGM_FI_DEV_GPU_UTIL", lambda r: len(r) == 4)
            assert {item["metric"]["device"] for item in result} == {f"nvidia{i}" for i in range(4)}
            time.sleep(1.5)
            assert by_label(query(url, "up"), "instance") == {targets[0]: 1.0}


def test_prometheus_stores_the_gpm_profiling_metrics_of_a_live_h200() -> None:
    windows = loaded_windows()
    with (
        running_exporter("--hostname", "h200", fake="h200-train") as node,
        running_prometheus([f"127.0.0.1:{node.port}"], 1.0) as url,
    ):
        sm = wait_for_query(url, 'DCGM_FI_PROF_SM_ACTIVE{Hostname="h200"}', lambda r: len(r) == 1)
        ratios = [(w.activity.sm or 0.0) / 100 for w in windows]
        value = float(sm[0]["value"][1])
        assert any(abs(value - ratio) < 1e-9 for ratio in ratios), value
        assert sm[0]["metric"]["modelName"] == "NVIDIA H200"
        # A dashboard built for dcgm-exporter's profiling metrics asks these, by these names.
        for name in (
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "DCGM_FI_PROF_SM_OCCUPANCY",
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "DCGM_FI_PROF_DRAM_ACTIVE",
            "DCGM_FI_PROF_PCIE_TX_BYTES",
            "DCGM_FI_PROF_PCIE_RX_BYTES",
            "DCGM_FI_PROF_NVLINK_TX_BYTES",
            "DCGM_FI_PROF_NVLINK_RX_BYTES",
        ):
            (one,) = query(url, f'{name}{{Hostname="h200"}}')
            assert float(one["value"][1]) >= 0.0, name
        (tensor,) = query(url, 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{Hostname="h200"}')
        assert 0.0 <= float(tensor["value"][1]) <= 1.0
