"""Real `--query-gpu` logs of real runs (see snapshots/README.md), replayed and reported through
gputop: every expected figure is worked out here again from the file's own rows, read with the
csv module, so a reader or a report that misplaces a column, a sample or a second fails."""

from __future__ import annotations

import csv
import itertools
import json
import statistics
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gputop.cli.report import build_report
from gputop.insight.diagnosis import DEFAULT_THRESHOLDS
from gputop.insight.report import summary_to_json
from gputop.sources.csvlog import CsvRecording
from support.command import gputop

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
ASR_RUN = SNAPSHOTS / "gpu-log-lms100-qwen3asr.csv"
MIB = 2**20
STAMP = "%Y/%m/%d %H:%M:%S.%f"


def _rows(path: Path) -> list[dict[str, str]]:
    """The log's rows by field name, units left out of the names (kept in the cells)."""
    with path.open(newline="") as handle:
        reader = csv.reader(handle, skipinitialspace=True)
        header = [name.split(" [")[0] for name in next(reader)]
        return [dict(zip(header, row, strict=True)) for row in reader]


def _number(cell: str) -> float:
    return float(cell.split(" ")[0])


def _stamp(cell: str) -> datetime:
    return datetime.strptime(cell, STAMP)


def _report(path: Path) -> dict[str, Any]:
    builder, warnings = build_report(path)
    assert warnings == []
    return summary_to_json(builder.summary())


def test_a_real_100ms_load_test_log_replays_each_sample() -> None:
    """A vLLM speech-recognition server under 100 concurrent sessions, logged with
    `-lms 100`: no name, index or memory total in the log (n/a, not 0), power in every row."""
    rows = _rows(ASR_RUN)
    with CsvRecording.open(ASR_RUN) as recording:
        assert len(recording) == len(rows) == 652
        assert recording.warnings == []
        first, last = recording.snapshot(0), recording.snapshot(len(recording) - 1)
    assert first.timestamp == _stamp(rows[0]["timestamp"])
    assert last.timestamp == _stamp(rows[-1]["timestamp"])
    # The busiest sample of the run, asked for by its time.
    row = max(rows, key=lambda r: (_number(r["utilization.gpu"]), _number(r["power.draw"])))
    at = _stamp(row["timestamp"]).isoformat()
    result = gputop("--replay", ASR_RUN, "--json", "--at", at)
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["timestamp"] == _stamp(row["timestamp"]).isoformat(timespec="microseconds")
    (gpu,) = snapshot["gpus"]
    assert gpu["utilization_gpu"] == _number(row["utilization.gpu"]) == 100
    assert gpu["utilization_memory"] == _number(row["utilization.memory"])
    assert gpu["memory_used"] == _number(row["memory.used"]) * MIB
    assert gpu["power_draw"] == _number(row["power.draw"])
    for field, reason in [("name", "name"), ("memory_total", "memory.total")]:
        assert gpu[field] is None
        assert gpu["unavailable"][reason] == "not in this log"
    once = gputop("--replay", ASR_RUN, "--once")
    assert once.returncode == 0, once.stderr
    assert f"{_number(rows[0]['power.draw']):.0f}" in once.stdout


def test_the_load_test_log_reports_busy_and_waiting_time_from_its_rows() -> None:
    """Each sample stands for the time to the next; at or over 30 % it is busy, under it with
    19 GiB held it is waiting; nothing in the log is idle, and 100 ms steps leave no gap."""
    rows = _rows(ASR_RUN)
    times = [_stamp(row["timestamp"]) for row in rows]
    steps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    utilization = [_number(row["utilization.gpu"]) for row in rows]
    memory = [_number(row["memory.used"]) * MIB for row in rows]
    power = [_number(row["power.draw"]) for row in rows]
    low = DEFAULT_THRESHOLDS.low_utilization_pct
    assert min(memory) >= DEFAULT_THRESHOLDS.held_memory_bytes
    busy = sum(s for s, u in zip(steps, utilization, strict=False) if u >= low)
    waiting = sum(s for s, u in zip(steps, utilization, strict=False) if u < low)
    energy_wh = sum((a + b) / 2 * s for a, b, s in zip(power, power[1:], steps, strict=False))
    energy_wh /= 3600

    report = _report(ASR_RUN)
    assert report["snapshots"] == len(rows)
    assert report["duration_s"] == round((times[-1] - times[0]).total_seconds(), 3)
    (gpu,) = report["gpus"]
    assert gpu["samples"] == len(rows)
    assert gpu["utilization_mean_pct"] == pytest.approx(statistics.fmean(utilization), abs=0.01)
    assert gpu["utilization_p50_pct"] == statistics.median(utilization) == 0
    assert gpu["busy_s"] == pytest.approx(busy, abs=0.002)
    assert gpu["waiting_s"] == pytest.approx(waiting, abs=0.002)
    assert gpu["busy_s"] > 5 and gpu["waiting_s"] > 50
    assert gpu["idle_s"] == 0 and gpu["gap_s"] == 0
    # The log holds no clock-event reasons: throttled cannot be told, so it is not 0 s.
    assert gpu["throttled_s"] is None and "clock-event" in gpu["unavailable"]["throttled_s"]
    assert gpu["peak_memory_used_bytes"] == max(memory)
    assert gpu["peak_power_w"] == max(power)
    assert gpu["energy_wh"] == pytest.approx(energy_wh, abs=0.001)

    text = gputop("report", ASR_RUN)
    assert text.returncode == 0, text.stderr
    assert f"{len(rows)} snapshots" in text.stdout
    assert f"{max(power):.0f}W" in text.stdout


LLAMA_RUN = SNAPSHOTS / "gpu-log-noheader-4gpu-llamacpp.csv"
LLAMA_FIELDS = "timestamp,utilization.gpu,memory.used"
"""As the repository's `testoutput.sh` ran it: `nvidia-smi --query-gpu=timestamp,
utilization.gpu,memory.used --format=csv,noheader,nounits -l 1`."""


def _blocks_of(rows: list[list[str]]) -> list[list[list[str]]]:
    """The file's queries: nvidia-smi stamps each GPU's row as it reads it, so the rows of
    one query are milliseconds apart and the queries a second apart."""
    blocks: list[list[list[str]]] = [[rows[0]]]
    for before, row in itertools.pairwise(rows):
        gap = (_stamp(row[0]) - _stamp(before[0])).total_seconds()
        if gap > 0.5:
            blocks.append([])
        blocks[-1].append(row)
    return blocks


def test_a_real_4_gpu_log_without_index_groups_each_query_by_position() -> None:
    """A llama.cpp server on 4 GPUs, `noheader,nounits`, no index: each second's query is
    four rows stamped a millisecond or two apart. They are one snapshot of four GPUs, told
    apart by their place in it, not four snapshots (nor one GPU seen four times)."""
    with LLAMA_RUN.open(newline="") as handle:
        rows = list(csv.reader(handle, skipinitialspace=True))
    blocks = _blocks_of(rows)
    assert len(blocks) == 97 and {len(block) for block in blocks} == {4}
    with CsvRecording.open(LLAMA_RUN, query=LLAMA_FIELDS) as recording:
        assert len(recording) == len(blocks)
        assert recording.warnings == []
        for at in (0, len(blocks) // 2, len(blocks) - 1):
            snapshot = recording.snapshot(at)
            assert snapshot.timestamp == _stamp(blocks[at][0][0])
            assert [gpu.index for gpu in snapshot.gpus] == [0, 1, 2, 3]
            used = [gpu.memory.used for gpu in snapshot.gpus]
            assert used == [int(row[2]) * MIB for row in blocks[at]]
            assert [gpu.utilization.gpu for gpu in snapshot.gpus] == [
                float(row[1]) for row in blocks[at]
            ]

    report = gputop("report", LLAMA_RUN, "--query-gpu", LLAMA_FIELDS, "--json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert summary["snapshots"] == len(blocks)
    start, end = _stamp(blocks[0][0][0]), _stamp(blocks[-1][0][0])
    assert summary["duration_s"] == round((end - start).total_seconds(), 3)
    gpus = summary["gpus"]
    assert [gpu["index"] for gpu in gpus] == [0, 1, 2, 3]
    for position, gpu in enumerate(gpus):
        mine = [block[position] for block in blocks]
        assert gpu["samples"] == len(blocks)
        assert gpu["peak_memory_used_bytes"] == max(int(row[2]) for row in mine) * MIB
        assert gpu["utilization_mean_pct"] == statistics.fmean(float(row[1]) for row in mine)
        # Memory held at 0 %: the whole run is waiting, none of it idle, no gap.
        assert gpu["waiting_s"] == pytest.approx(summary["duration_s"], abs=0.01)
        assert gpu["busy_s"] == gpu["idle_s"] == gpu["gap_s"] == 0


def _stamped(start: datetime, steps_ms: list[int]) -> list[str]:
    moments = itertools.accumulate(steps_ms, initial=0)
    return [(start + timedelta(milliseconds=ms)).strftime(STAMP)[:-3] for ms in list(moments)[:-1]]


def test_one_gpu_sampled_faster_than_a_query_step_is_one_gpu_per_row(tmp_path: Path) -> None:
    """`-lms 5` of one GPU, no index: every row is 5 ms after the one before, with no pause
    between queries, so each row is a snapshot of its own (the first ones included), while
    two GPUs read a millisecond apart every 100 ms are one snapshot each time."""
    start = datetime(2025, 1, 1, 10, 0, 0)
    one = tmp_path / "one.csv"
    stamps = _stamped(start, [5] * 120)
    one.write_text(
        "timestamp, power.draw [W]\n"
        + "".join(f"{stamp}, {100 + n % 7}.00 W\n" for n, stamp in enumerate(stamps))
    )
    with CsvRecording.open(one) as recording:
        assert len(recording) == len(stamps)
        for at in (0, 1, 2, len(stamps) - 1):
            (gpu,) = recording.snapshot(at).gpus
            assert recording.snapshot(at).timestamp == _stamp(stamps[at])
            assert gpu.power.draw == 100 + at % 7
    two = tmp_path / "two.csv"
    stamps = _stamped(start, [1, 99] * 30)
    two.write_text(
        "timestamp, power.draw [W]\n"
        + "".join(f"{stamp}, {100 + n}.00 W\n" for n, stamp in enumerate(stamps))
    )
    with CsvRecording.open(two) as recording:
        assert len(recording) == len(stamps) // 2
        for at in (0, 1, len(recording) - 1):
            snapshot = recording.snapshot(at)
            assert snapshot.timestamp == _stamp(stamps[2 * at])
            assert [gpu.power.draw for gpu in snapshot.gpus] == [100 + 2 * at, 101 + 2 * at]
