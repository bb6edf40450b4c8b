"""Real `--query-gpu` CSV logs published by others (see snapshots/README.md), replayed through
gputop's own reader and `gputop report`: every figure checked here is read again from the
file itself, so a reader that misplaces a column, a GPU or a sample fails."""

from __future__ import annotations

import itertools
import json
import re
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gputop.cli.report import build_report
from gputop.insight.report import summary_to_json
from gputop.model.sample import Reason
from gputop.sinks.smi_xml import snapshot_to_xml
from gputop.sources.csvlog import CsvRecording
from gputop.sources.smi.text import open_text
from gputop.sources.smi.xml import parse_document
from support.command import gputop

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
EIGHT_H100 = SNAPSHOTS / "query-gpu-8xh100-virtualclient.csv"
V100S_RUN = SNAPSHOTS / "gpu-log-v100s-miris.csv"
NOHEADER_RUN = SNAPSHOTS / "gpu-log-noheader-plato.csv"
# The plato log's fields, as its columns show them: used + free is the same 20148 MiB in every
# row (so the 4th and 5th are memory.used and memory.free), then a temperature and a power.
PLATO_FIELDS = (
    "timestamp,utilization.gpu,utilization.memory,memory.used,memory.free,temperature.gpu,"
    "power.draw"
)
MIB = 2**20
STAMP = "%Y/%m/%d %H:%M:%S.%f"


def _table(path: Path, fields: str | None = None) -> list[dict[str, str]]:
    """The file's rows by field name (units stripped from the header, kept in the cells)."""
    lines = path.read_text().splitlines()
    if fields is None:
        header, *lines = lines
        names = [cell.split(" [")[0] for cell in header.split(", ")]
    else:
        names = fields.split(",")
    return [dict(zip(names, line.split(", "), strict=True)) for line in lines]


def _number(cell: str) -> float:
    return float(cell.split(" ")[0])


def _stamp(cell: str) -> datetime:
    return datetime.strptime(cell, STAMP)


def _report(path: Path, query_gpu: str | None = None) -> dict[str, Any]:
    builder, warnings = build_report(path, query_gpu=query_gpu)
    assert warnings == []
    return summary_to_json(builder.summary())


def test_an_8x_h100_query_is_one_snapshot_of_eight_gpus_by_index() -> None:
    rows = _table(EIGHT_H100)
    assert len(rows) == 8
    with CsvRecording.open(EIGHT_H100) as recording:
        assert len(recording) == 1
        assert recording.warnings == []
        snapshot = recording.snapshot(0)
    # nvidia-smi stamps each GPU's row on its own (.791, .815, ...): still one snapshot.
    assert snapshot.timestamp == min(_stamp(row["timestamp"]) for row in rows)
    assert [gpu.index for gpu in snapshot.gpus] == [int(row["index"]) for row in rows]
    for gpu, row in zip(snapshot.gpus, rows, strict=True):
        assert gpu.name == row["name"] == "NVIDIA H100 80GB HBM3"
        assert gpu.pci_bus_id == row["pci.bus_id"]
        assert gpu.performance_state == row["pstate"]
        assert gpu.utilization.gpu == _number(row["utilization.gpu"])
        assert gpu.utilization.memory == _number(row["utilization.memory"])
        assert gpu.memory.total == int(row["memory.total"]) * MIB
        assert gpu.memory.used == int(row["memory.used"]) * MIB
        assert gpu.memory.free == int(row["memory.free"]) * MIB
        assert gpu.temperature.gpu == _number(row["temperature.gpu"])
        assert gpu.clocks.sm == int(row["clocks.current.sm"])
        assert gpu.clocks.memory == int(row["clocks.current.memory"])
        # The log has both readings; the instant one is what the live view shows.
        assert gpu.power.draw == _number(row["power.draw.instant"])
        assert gpu.uuid is None and gpu.reason("uuid") is Reason.NOT_IN_LOG


def test_the_8x_h100_query_replays_as_json_and_reports_each_gpu() -> None:
    rows = _table(EIGHT_H100)
    result = gputop("--replay", EIGHT_H100, "--json")
    assert result.returncode == 0, result.stderr
    gpus = json.loads(result.stdout)["gpus"]
    assert [gpu["pci_bus_id"] for gpu in gpus] == [row["pci.bus_id"] for row in rows]
    assert [gpu["power_draw"] for gpu in gpus] == [
        _number(row["power.draw.instant"]) for row in rows
    ]
    report = _report(EIGHT_H100)
    assert report["snapshots"] == 1 and report["untimed_snapshots"] == 0
    summaries = report["gpus"]
    assert [gpu["index"] for gpu in summaries] == list(range(8))
    assert all(gpu["samples"] == 1 for gpu in summaries)
    assert [gpu["peak_power_w"] for gpu in summaries] == [
        _number(row["power.draw.instant"]) for row in rows
    ]


def test_a_real_one_second_log_replays_each_sample_at_its_time() -> None:
    rows = _table(V100S_RUN)
    with CsvRecording.open(V100S_RUN) as recording:
        assert len(recording) == len(rows) == 107
        assert recording.warnings == []
        first, last = recording.snapshot(0), recording.snapshot(len(recording) - 1)
    assert first.timestamp == _stamp(rows[0]["timestamp"])
    assert last.timestamp == _stamp(rows[-1]["timestamp"])
    # The first sample where the job shows on the GPU, asked for by its time.
    (row,) = [row for row in rows if row["timestamp"] == "2025/06/13 00:28:08.203"]
    result = gputop("--replay", V100S_RUN, "--json", "--at", "2025-06-13T00:28:08.203")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["timestamp"] == "2025-06-13T00:28:08.203000"
    (gpu,) = snapshot["gpus"]
    assert gpu["name"] == row["name"] == "Tesla V100S-PCIE-32GB"
    assert gpu["utilization_gpu"] == _number(row["utilization.gpu"]) == 19
    assert gpu["utilization_memory"] == _number(row["utilization.memory"])
    assert gpu["memory_used"] == _number(row["memory.used"]) * MIB
    assert gpu["memory_total"] == _number(row["memory.total"]) * MIB
    assert gpu["temperature"] == _number(row["temperature.gpu"])
    # The log has no power column: n/a with its reason, never 0 W.
    assert gpu["power_draw"] is None
    assert gpu["unavailable"]["power.draw"] == "not in this log"


def test_the_one_second_log_reports_its_own_figures() -> None:
    rows = _table(V100S_RUN)
    utilization = [_number(row["utilization.gpu"]) for row in rows]
    report = _report(V100S_RUN)
    assert report["snapshots"] == len(rows)
    start, end = _stamp(rows[0]["timestamp"]), _stamp(rows[-1]["timestamp"])
    assert report["duration_s"] == round((end - start).total_seconds(), 3)
    (gpu,) = report["gpus"]
    assert gpu["samples"] == len(rows)
    assert gpu["utilization_mean_pct"] == pytest.approx(statistics.fmean(utilization), abs=0.01)
    assert gpu["peak_memory_used_bytes"] == max(_number(r["memory.used"]) for r in rows) * MIB
    assert gpu["memory_total_bytes"] == _number(rows[0]["memory.total"]) * MIB
    assert gpu["gap_s"] == 0
    # Every second of the run is busy, waiting or idle: a log without power cannot be throttled.
    assert gpu["busy_s"] + gpu["waiting_s"] + gpu["idle_s"] == pytest.approx(
        report["duration_s"], abs=1.5
    )
    assert gpu["energy_wh"] is None
    text = gputop("report", V100S_RUN)
    assert text.returncode == 0, text.stderr
    assert "107 snapshots" in text.stdout and "Tesla V100S-PCIE-32GB" in text.stdout


def test_a_real_noheader_log_is_refused_until_its_fields_are_named() -> None:
    refused = gputop("report", NOHEADER_RUN)
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert "without its header line" in line
    named = gputop("report", NOHEADER_RUN, "--query-gpu", PLATO_FIELDS)
    assert named.returncode == 0, named.stderr
    assert f"{len(_table(NOHEADER_RUN, PLATO_FIELDS))} snapshots" in named.stdout


def test_a_real_long_noheader_log_replays_and_reports_its_own_figures() -> None:
    rows = _table(NOHEADER_RUN, PLATO_FIELDS)
    assert len(rows) == 1923
    with CsvRecording.open(NOHEADER_RUN, query=PLATO_FIELDS) as recording:
        assert len(recording) == len(rows)
        assert recording.warnings == []
    # A sample in the middle of a training burst.
    at = "2026/04/25 16:51:54.306"
    (row,) = [row for row in rows if row["timestamp"] == at]
    result = gputop(
        "--replay", NOHEADER_RUN, "--query-gpu", PLATO_FIELDS, "--json", "--at", "16:51:54.306"
    )
    assert result.returncode == 0, result.stderr
    (gpu,) = json.loads(result.stdout)["gpus"]
    assert gpu["utilization_gpu"] == _number(row["utilization.gpu"]) == 43
    assert gpu["utilization_memory"] == _number(row["utilization.memory"])
    assert gpu["memory_used"] == _number(row["memory.used"]) * MIB
    assert gpu["memory_free"] == _number(row["memory.free"]) * MIB
    assert gpu["temperature"] == _number(row["temperature.gpu"])
    assert gpu["power_draw"] == _number(row["power.draw"])
    assert gpu["name"] is None and gpu["unavailable"]["name"] == "not in this log"

    report = _report(NOHEADER_RUN, PLATO_FIELDS)
    assert report["snapshots"] == len(rows)
    (summary,) = report["gpus"]
    power = [_number(row["power.draw"]) for row in rows]
    assert summary["peak_power_w"] == max(power)
    assert summary["peak_memory_used_bytes"] == max(_number(r["memory.used"]) for r in rows) * MIB
    utilization = [_number(row["utilization.gpu"]) for row in rows]
    assert summary["utilization_mean_pct"] == pytest.approx(statistics.fmean(utilization), abs=0.01)
    assert summary["gap_s"] == 0
    # Energy over 2h40m sampled every 5 s: between the left and right Riemann sums.
    times = [_stamp(row["timestamp"]) for row in rows]
    steps = [(b - a).total_seconds() / 3600 for a, b in itertools.pairwise(times)]
    left = sum(p * h for p, h in zip(power, steps, strict=False))
    right = sum(p * h for p, h in zip(power[1:], steps, strict=True))
    assert min(left, right) - 0.01 <= summary["energy_wh"] <= max(left, right) + 0.01


TEXT_8X = [
    SNAPSHOTS / "h100x8-535-q.txt",
    SNAPSHOTS / "h100x8-procs-535-q.txt",
    SNAPSHOTS / "rtx4090x8-procs-535-q.txt",
]


@pytest.mark.parametrize("path", TEXT_8X, ids=lambda path: path.name)
def test_an_8_gpu_q_text_replays_and_reports_every_gpu(path: Path) -> None:
    text = path.read_text()
    buses = re.findall(r"^GPU (\S+)$", text, re.MULTILINE)
    pids = [int(pid) for pid in re.findall(r"Process ID\s+: (\d+)", text)]
    used = [
        int(mib) for mib in re.findall(r"FB Memory Usage\n(?:.*\n)*?\s+Used\s+: (\d+) MiB", text)
    ]
    assert len(buses) == len(used) == 8
    result = gputop("--replay", path, "--json")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["attached_gpus"] == 8
    gpus = snapshot["gpus"]
    assert [gpu["pci_bus_id"] for gpu in gpus] == buses
    assert [gpu["memory_used"] for gpu in gpus] == [mib * MIB for mib in used]
    assert [p["pid"] for gpu in gpus for p in gpu["processes"]] == pids
    report = _report(path)
    assert report["snapshots"] == 1
    assert [gpu["peak_memory_used_bytes"] for gpu in report["gpus"]] == [mib * MIB for mib in used]
    assert gputop("report", path).returncode == 0


@pytest.mark.parametrize(
    ("path", "fields"),
    [(EIGHT_H100, None), (V100S_RUN, None), (NOHEADER_RUN, PLATO_FIELDS)],
    ids=lambda value: value.name if isinstance(value, Path) else "",
)
def test_a_real_log_reports_the_same_read_by_rows_or_by_columns(
    path: Path, fields: str | None
) -> None:
    by_rows, _ = build_report(path, columns=False, query_gpu=fields)
    expected = summary_to_json(by_rows.summary())
    for jobs in (1, 2):
        by_columns, _ = build_report(path, jobs=jobs, query_gpu=fields)
        assert summary_to_json(by_columns.summary()) == expected


PAGE_RETIREMENT = SNAPSHOTS / "azure-8gpu-retired-pages-q-d.txt"


def test_a_q_d_section_of_8_gpus_says_the_rest_is_not_in_this_log() -> None:
    """`nvidia-smi -q -d PAGE_RETIREMENT` (Azure's health checks): eight GPU blocks with one
    section each. What the log leaves out was not refused by the driver."""
    text = PAGE_RETIREMENT.read_text()
    buses = re.findall(r"^GPU (\S+)$", text, re.MULTILINE)
    assert len(buses) == 8
    with open_text(PAGE_RETIREMENT) as log:
        assert len(log) == 1
        snapshot = log.snapshot(0)
    assert snapshot.attached_gpus == 8 and snapshot.driver_version == "535.86.10"
    assert [gpu.pci_bus_id for gpu in snapshot.gpus] == buses
    for gpu in snapshot.gpus:
        assert gpu.name is None and gpu.memory.used is None and gpu.utilization.gpu is None
        reasons = dict(gpu.unavailable)
        assert reasons["name"] is reasons["memory.used"] is Reason.NOT_IN_LOG
        assert Reason.NOT_REPORTED not in reasons.values()
    # Spelled as `-q -x` and read back by the XML reader: the same snapshot, reasons included.
    assert parse_document(snapshot_to_xml(snapshot)) == snapshot
    result = gputop("--replay", PAGE_RETIREMENT, "--json")
    assert result.returncode == 0, result.stderr
    gpus = json.loads(result.stdout)["gpus"]
    assert [gpu["pci_bus_id"] for gpu in gpus] == buses
    assert all(gpu["unavailable"]["utilization.gpu"] == "not in this log" for gpu in gpus)
    report = gputop("report", PAGE_RETIREMENT)
    assert report.returncode == 0, report.stderr
    assert ": 1 snapshot, " in report.stdout


def test_a_full_q_still_says_what_its_driver_does_not_report() -> None:
    # The 535 driver's H100 block has T.Limit temperatures only: not reported, as before.
    with open_text(SNAPSHOTS / "h100x8-535-q.txt") as log:
        gpu = log.snapshot(0).gpus[0]
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.reason("temperature.slowdown") is Reason.NOT_REPORTED


def test_a_csv_log_without_throttle_columns_keeps_its_reason_through_xml() -> None:
    # `--record` of a replayed CSV log spells each clock-event reason `[Not In This Log]`.
    with CsvRecording.open(V100S_RUN) as recording:
        snapshot = recording.snapshot(0)
    (gpu,) = snapshot.gpus
    assert gpu.reason("throttle_reasons") is Reason.NOT_IN_LOG
    (back,) = parse_document(snapshot_to_xml(snapshot)).gpus
    assert back.throttle_reasons is None
    assert back.reason("throttle_reasons") is Reason.NOT_IN_LOG
