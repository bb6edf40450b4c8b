"""GPM's activity end to end: the real `gputop` on the fake NVML of a real H200's recording
(scenario ``h200-train``): `--json`, `--log`, `export`; and n/a with its reason elsewhere."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from fakes.nvml_h200 import loaded_windows
from gputop.cli.live import TUI_GPM_BUDGET, gpm_cadence
from gputop.cli.options import Options
from gputop.model.fields import ACTIVITY_FIELDS
from gputop.sources.nvml.gpm import METRICS_PRICE_S
from support.command import ROOT, gputop_command
from support.exporter import FOUR, running_exporter
from support.metrics import find

MIB = 1024 * 1024
JSON_KEYS = tuple(f.json for f in ACTIVITY_FIELDS)


def gputop(*args: str, fake: str = "h200-train") -> subprocess.CompletedProcess[str]:
    command, environ = gputop_command(fake)
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=environ, cwd=ROOT, timeout=60
    )


def test_json_has_no_activity_on_the_first_tick_then_the_h200s() -> None:
    windows = loaded_windows()
    result = gputop("--json", "--count", "3", "--interval", "0.25")
    assert result.returncode == 0, result.stderr
    first, second, third = (json.loads(line)["gpus"][0] for line in result.stdout.splitlines())
    assert all(first[key] is None for key in JSON_KEYS)
    assert first["unavailable"]["activity.sm"] == "not available"
    for gpu, window in ((second, windows[1]), (third, windows[2])):
        assert gpu["activity_graphics"] == pytest.approx(window.activity.graphics)
        assert gpu["activity_sm"] == pytest.approx(window.activity.sm)
        assert gpu["activity_sm_occupancy"] == pytest.approx(window.activity.sm_occupancy)
        assert gpu["activity_tensor"] == pytest.approx(window.activity.tensor)
        assert gpu["activity_dram"] == pytest.approx(window.activity.dram)
        assert gpu["pcie_rx_bytes_per_second"] == pytest.approx(window.activity.pcie_rx)
        assert gpu["nvlink_tx_bytes_per_second"] == 0.0
        assert not [path for path in gpu["unavailable"] if path.startswith("activity.")]
    # Utilization says 98 % where the SMs were 94 % active and 14 % occupied.
    assert second["utilization_gpu"] == 98.0 and second["activity_sm_occupancy"] < 15


def test_log_writes_the_gpm_columns(tmp_path: Path) -> None:
    windows = loaded_windows()
    log = tmp_path / "h200.csv"
    result = gputop("--log", str(log), "--count", "3", "--interval", "0.25")
    assert result.returncode == 0, result.stderr
    with log.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3
    assert rows[0]["activity_sm"] == "" and rows[0]["pcie_tx_bytes_per_s"] == ""
    assert float(rows[1]["activity_sm"]) == pytest.approx(windows[1].activity.sm)
    assert float(rows[2]["activity_tensor"]) == pytest.approx(windows[2].activity.tensor)
    assert float(rows[2]["pcie_tx_bytes_per_s"]) == pytest.approx(
        windows[2].activity.pcie_tx or 0, abs=0.01
    )


def test_a_gpu_without_gpm_is_null_with_its_reason() -> None:
    result = gputop("--json", fake=str(FOUR))
    assert result.returncode == 0, result.stderr
    for gpu in json.loads(result.stdout)["gpus"]:
        assert all(gpu[key] is None for key in JSON_KEYS)
        assert {gpu["unavailable"][f.path] for f in ACTIVITY_FIELDS} == {"not supported"}


def test_export_serves_dcgm_profiling_metrics_of_the_live_gpu() -> None:
    windows = loaded_windows()
    with running_exporter("--hostname", "h200", fake="h200-train") as exporter:
        values = exporter.scrape_until("DCGM_FI_PROF_SM_ACTIVE", 20, Hostname="h200")
    sm = find(values, "DCGM_FI_PROF_SM_ACTIVE", Hostname="h200")
    assert sm, "no DCGM_FI_PROF_SM_ACTIVE after 20 s"
    # Which window the sampler had reached is a matter of timing; its values are one of them.
    ratios = {round(w.activity.sm / 100, 6) for w in windows if w.activity.sm is not None}
    assert round(sm[0], 6) in ratios
    (tensor,) = find(values, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Hostname="h200")
    assert 0.0 <= tensor <= 1.0
    (rx,) = find(values, "DCGM_FI_PROF_PCIE_RX_BYTES", Hostname="h200")
    assert any(rx == pytest.approx(w.activity.pcie_rx) for w in windows)
    assert find(values, "DCGM_FI_PROF_NVLINK_TX_BYTES", Hostname="h200") == [0.0]


@pytest.mark.parametrize(
    ("options", "every", "budget"),
    [
        (Options(json=True), 0.0, None),
        (Options(log=Path("x.csv")), 0.0, None),
        (Options(), 0.0, TUI_GPM_BUDGET),
        (Options(count=3), 10.0, None),
        (Options(record=Path("x.xml"), count=3), 10.0, None),
    ],
    ids=["json", "log", "tui", "summary", "record"],
)
def test_each_run_works_gpm_out_as_often_as_it_reads_it(
    options: Options, every: float, budget: float | None
) -> None:
    cadence = gpm_cadence(options)
    assert (cadence.every, cadence.budget) == (every, budget)


def test_the_tui_budget_is_every_tick_on_two_gpus_and_spaced_on_eight() -> None:
    cadence = gpm_cadence(Options())
    cadence.opened(2)
    assert cadence.seconds() <= 1.0
    cadence.opened(6)
    assert cadence.seconds() == pytest.approx(8 * METRICS_PRICE_S / TUI_GPM_BUDGET)
    assert 3.0 < cadence.seconds() < 5.0
