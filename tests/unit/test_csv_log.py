"""`--log FILE.csv`: header once, one row per GPU per tick, empty cells for unknowns."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop.errors import GputopError
from gputop.model import (
    Clocks,
    GpuSample,
    Memory,
    Power,
    ProcessSample,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.sinks.csv_log import COLUMNS, CsvLogError, CsvLogger, gpu_row

MIB = 1024**2
T0 = datetime(2024, 9, 18, 14, 0, 0)

FULL = GpuSample(
    index=0,
    name="NVIDIA GeForce RTX 3090",
    uuid="GPU-8ad6666a",
    utilization=Utilization(gpu=23.0, memory=8.0),
    memory=Memory(total=24576 * MIB, used=10976 * MIB + 123),
    power=Power(draw=140.68, limit=350.0),
    temperature=Temperature(gpu=31.0),
    fan_speed=30.0,
    clocks=Clocks(sm=1695, memory=9501),
    performance_state="P2",
    throttle_reasons=("sw_power_cap", "hw_slowdown"),
    processes=(ProcessSample(pid=1), ProcessSample(pid=2)),
)
BARE = GpuSample(index=1, name='Odd, "quoted" name')
"""Nothing reported: every value cell must be empty, never 0."""


def snapshot(seconds: float = 0.0, gpus: tuple[GpuSample, ...] = (FULL, BARE)) -> Snapshot:
    return Snapshot(timestamp=T0 + timedelta(seconds=seconds), gpus=gpus)


def read_rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_columns_are_the_documented_ones() -> None:
    assert COLUMNS == (
        "timestamp",
        "index",
        "uuid",
        "name",
        "utilization_gpu",
        "utilization_memory",
        "memory_used_mib",
        "memory_total_mib",
        "power_draw_w",
        "power_limit_w",
        "temperature_c",
        "fan_speed",
        "sm_clock_mhz",
        "mem_clock_mhz",
        "pstate",
        "throttle_reasons",
        "processes",
    )


def test_header_then_one_row_per_gpu(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    with CsvLogger(path) as log:
        log.write(snapshot(0))
        log.write(snapshot(1.5))
    rows = read_rows(path)
    assert rows[0] == list(COLUMNS)
    assert len(rows) == 1 + 2 * 2
    assert rows[1] == [
        "2024-09-18T14:00:00.000",
        "0",
        "GPU-8ad6666a",
        "NVIDIA GeForce RTX 3090",
        "23",
        "8",
        "10976",
        "24576",
        "140.68",
        "350",
        "31",
        "30",
        "1695",
        "9501",
        "P2",
        "sw_power_cap;hw_slowdown",
        "2",
    ]
    values = rows[2][4:-1]
    assert rows[2][:4] == ["2024-09-18T14:00:00.000", "1", "", 'Odd, "quoted" name']
    assert values == [""] * 12
    assert rows[2][-1] == "0"
    assert rows[3][0] == "2024-09-18T14:00:01.500"


def test_no_active_reason_is_spelled_none_and_unknown_is_empty() -> None:
    quiet = GpuSample(index=0, throttle_reasons=())
    assert gpu_row(snapshot(), quiet)[COLUMNS.index("throttle_reasons")] == "none"
    assert gpu_row(snapshot(), BARE)[COLUMNS.index("throttle_reasons")] == ""
    untimed = Snapshot(timestamp=None, gpus=(quiet,))
    assert gpu_row(untimed, quiet)[0] == ""


def test_appending_does_not_repeat_the_header(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    with CsvLogger(path) as log:
        log.write(snapshot(0))
    with CsvLogger(path) as log:
        log.write(snapshot(1))
    rows = read_rows(path)
    assert [row[0] for row in rows].count("timestamp") == 1
    assert len(rows) == 1 + 4
    with path.open(newline="") as handle:
        records = list(csv.DictReader(handle))
    assert [r["index"] for r in records] == ["0", "1", "0", "1"]


def test_each_tick_is_flushed(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    log = CsvLogger(path)
    try:
        log.write(snapshot(0))
        # Another reader (tail -f, pandas) sees the tick before the logger closes.
        assert len(read_rows(path)) == 3
    finally:
        log.close()
    log.close()  # idempotent


def test_a_partial_last_line_is_ended_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    with CsvLogger(path) as log:
        log.write(snapshot(0))
    with path.open("a") as handle:
        handle.write("2024-09-18T14:00:01.000,0,GPU-8ad")  # killed mid-row
    with CsvLogger(path) as log:
        log.write(snapshot(2))
    rows = read_rows(path)
    assert rows[3] == ["2024-09-18T14:00:01.000", "0", "GPU-8ad"]
    assert rows[4][0] == "2024-09-18T14:00:02.000"
    assert len(rows[4]) == len(COLUMNS)


def test_an_empty_existing_file_gets_the_header(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.touch()
    with CsvLogger(path) as log:
        log.write(snapshot(0, (FULL,)))
    assert read_rows(path)[0] == list(COLUMNS)


def test_a_file_with_other_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("timestamp, name, utilization.gpu [%]\n2024/09/18, T4, 3 %\n")
    with pytest.raises(CsvLogError, match="other columns"):
        CsvLogger(path)
    assert path.read_text().count("\n") == 2  # untouched


def test_unwritable_path_is_a_gputop_error(tmp_path: Path) -> None:
    with pytest.raises(GputopError, match="cannot open"):
        CsvLogger(tmp_path / "no-such-dir" / "log.csv")
