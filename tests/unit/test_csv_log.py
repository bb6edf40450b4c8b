"""`--log FILE.csv`: header once, one row per GPU per tick, empty cells for unknowns."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop.errors import GputopError
from gputop.model import (
    Activity,
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
GPM_CELLS = 9

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
        "activity_graphics",
        "activity_sm",
        "activity_sm_occupancy",
        "activity_tensor",
        "activity_dram",
        "pcie_tx_bytes_per_s",
        "pcie_rx_bytes_per_s",
        "nvlink_tx_bytes_per_s",
        "nvlink_rx_bytes_per_s",
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
        *[""] * GPM_CELLS,  # an RTX 3090 has no GPM
    ]
    values = rows[2][4:]
    assert rows[2][:4] == ["2024-09-18T14:00:00.000", "1", "", 'Odd, "quoted" name']
    processes = COLUMNS.index("processes") - 4
    assert values[processes] == "0"
    assert values[:processes] + values[processes + 1 :] == [""] * (12 + GPM_CELLS)
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


HOPPER = GpuSample(
    index=0,
    name="NVIDIA H200",
    activity=Activity(
        graphics=97.22,
        sm=93.63,
        sm_occupancy=13.84,
        tensor=90.9,
        dram=15.8,
        pcie_tx=0.61 * MIB,
        pcie_rx=2.25 * MIB,
        nvlink_tx=0.0,
        nvlink_rx=None,
    ),
)


def test_gpm_columns_hold_percent_and_bytes_per_second() -> None:
    row = dict(zip(COLUMNS, gpu_row(snapshot(), HOPPER), strict=True))
    assert row["activity_graphics"] == "97.22"
    assert row["activity_sm"] == "93.63"
    assert row["activity_sm_occupancy"] == "13.84"
    assert row["activity_tensor"] == "90.9"
    assert row["activity_dram"] == "15.8"
    assert row["pcie_tx_bytes_per_s"] == "639631.36"
    assert row["pcie_rx_bytes_per_s"] == "2359296"
    assert row["nvlink_tx_bytes_per_s"] == "0"
    assert row["nvlink_rx_bytes_per_s"] == ""  # not reported: empty, never 0


def test_a_log_written_before_gpm_is_continued_with_its_own_columns(tmp_path: Path) -> None:
    earlier = COLUMNS[:-GPM_CELLS]
    path = tmp_path / "old.csv"
    path.write_text(",".join(earlier) + "\n" + ",".join(["x"] * len(earlier)) + "\n")
    with CsvLogger(path) as log:
        log.write(snapshot(0, (HOPPER,)))
    rows = read_rows(path)
    assert rows[0] == list(earlier)
    assert [len(row) for row in rows] == [len(earlier)] * 3
    assert rows[2][:4] == ["2024-09-18T14:00:00.000", "0", "", "NVIDIA H200"]
