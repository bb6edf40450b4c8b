"""Real multi-GPU `--query-gpu` CSV output (a0s/nvidia-smi-exporter's fixtures): GPUs told
apart by UUID, units in every value, no timestamp; each value checked against its cell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gputop.cli.report import build_report
from gputop.insight.report import summary_to_json
from gputop.sources.csvlog import CsvRecording

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
LOGS = [SNAPSHOTS / "query-gpu-2x-a0s.csv", SNAPSHOTS / "query-gpu-3x-a0s.csv"]
MIB = 2**20


def _rows(path: Path) -> list[dict[str, str]]:
    header, *rows = path.read_text().splitlines()
    names = [cell.split(" [")[0] for cell in header.split(", ")]
    return [dict(zip(names, row.split(", "), strict=True)) for row in rows]


def _value(cell: str) -> float:
    return float(cell.split(" ")[0])


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_real_multi_gpu_log_is_one_snapshot_of_its_gpus(path: Path) -> None:
    rows = _rows(path)
    with CsvRecording.open(path) as recording:
        assert len(recording) == 1
        assert recording.warnings == []
        snapshot = recording.snapshot(0)
    assert snapshot.timestamp is None
    assert len(snapshot.gpus) == len(rows) >= 2
    for position, (gpu, row) in enumerate(zip(snapshot.gpus, rows, strict=True)):
        assert gpu.index == position
        assert gpu.uuid == row["uuid"]
        assert gpu.utilization.gpu == _value(row["utilization.gpu"])
        assert gpu.memory.used == int(_value(row["memory.used"])) * MIB
        assert gpu.temperature.gpu == _value(row["temperature.gpu"])
        assert gpu.power.draw == _value(row["power.draw"])
        assert gpu.clocks.sm == int(_value(row["clocks.current.sm"]))
        if "memory.total" in row:
            assert gpu.memory.total == int(_value(row["memory.total"])) * MIB
            assert gpu.power.limit == _value(row["power.limit"])
            assert gpu.fan_speed == _value(row["fan.speed"])
            assert gpu.clocks.graphics == int(_value(row["clocks.current.graphics"]))
            assert gpu.max_clocks.graphics == int(_value(row["clocks.max.graphics"]))
        else:
            assert gpu.memory.total is None
            assert gpu.reason("memory.total") is not None


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_real_multi_gpu_log_replays_and_reports(path: Path) -> None:
    rows = _rows(path)
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "--replay", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    gpus = json.loads(result.stdout)["gpus"]
    assert [gpu["uuid"] for gpu in gpus] == [row["uuid"] for row in rows]
    # Without a timestamp the snapshot cannot be placed in time: the report says so.
    builder, _ = build_report(path)
    report = summary_to_json(builder.summary())
    assert report["snapshots"] == 1 and report["untimed_snapshots"] == 1
    assert report["gpus"] == []
