"""`nvidia-smi dmon` and `pmon` logs: values checked against the bundled files, and the
layouts that drivers and options give (`-s` column sets, `-o DT`, `-`, blank lines,
repeated headers, several GPUs)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from gputop.errors import BadCapture
from gputop.model import Reason
from gputop.sources.recordings.dmon import looks_like, open_monitor_log
from gputop.sources.recordings.formats import detect
from support.shortcuts import looks_like_dmon, looks_like_pmon

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
DMON = sorted(SNAPSHOTS.glob("*-dmon.txt"))
PMON = sorted(SNAPSHOTS.glob("*-pmon.txt"))
MIB = 2**20


def rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """The header's column names and the data rows, split on white space."""
    lines = path.read_text().splitlines()
    header = lines[0].lstrip("#").split()
    return header, [line.split() for line in lines if line.strip() and not line.startswith("#")]


def value(cell: str) -> float | None:
    return None if cell == "-" else float(cell)


def test_five_of_each() -> None:
    assert len(DMON) >= 5 and len(PMON) >= 5


@pytest.mark.parametrize("path", DMON, ids=lambda path: path.name)
def test_dmon_values_match_the_file(path: Path) -> None:
    header, data = rows(path)
    with open_monitor_log(path) as log:
        assert len(log) == len(data)  # one GPU: a snapshot per row
        for index, row in enumerate(data):
            cells = dict(zip(header, row, strict=True))
            (gpu,) = log.snapshot(index).gpus
            assert gpu.index == int(cells["gpu"])
            assert gpu.power.draw == value(cells["pwr"])
            assert gpu.temperature.gpu == value(cells["gtemp"])
            assert gpu.temperature.memory == value(cells["mtemp"])
            assert gpu.utilization.gpu == value(cells["sm"])
            assert gpu.utilization.memory == value(cells["mem"])
            assert gpu.clocks.memory == value(cells["mclk"])
            # pclk is the processor (SM) clock: the panel's "sm" and the SM clock chart.
            assert gpu.clocks.sm == value(cells["pclk"])
            assert gpu.clocks.graphics is None
            assert gpu.reason("clocks.graphics") is Reason.NOT_IN_LOG
            if cells["mtemp"] == "-":
                assert gpu.reason("temperature.memory") is Reason.NOT_AVAILABLE
            # What dmon has no column for is unknown, not zero.
            assert gpu.name is None and gpu.reason("name") is Reason.NOT_IN_LOG
            assert gpu.memory.total is None and gpu.reason("memory.total") is Reason.NOT_IN_LOG
            if "Date" in cells:  # -o DT (the real H200's log)
                when = datetime.strptime(cells["Date"] + cells["Time"], "%Y%m%d%H:%M:%S")
                assert log.timestamp(index) == when
            else:
                assert log.timestamp(index) is None  # no -o DT: no time


@pytest.mark.parametrize("path", PMON, ids=lambda path: path.name)
def test_pmon_values_match_the_file(path: Path) -> None:
    header, data = rows(path)
    samples: list[list[list[str]]] = []
    seen: set[str] = set()
    for row in data:
        if row[1] in seen or not samples:
            samples.append([])
            seen = set()
        seen.add(row[1])
        samples[-1].append(row)
    with open_monitor_log(path) as log:
        assert len(log) == len(samples)
        for index, sample in enumerate(samples):
            (gpu,) = log.snapshot(index).gpus
            expected = [
                (int(row[1]), row[2], value(row[3]), " ".join(row[len(header) - 1 :]))
                for row in sample
                if row[1] != "-"
            ]
            got = [(p.pid, p.type, p.sm_utilization, p.name) for p in gpu.processes]
            assert got == expected
            assert gpu.utilization.gpu is None
            assert gpu.reason("utilization.gpu") is Reason.NOT_IN_LOG


def test_pmon_keeps_a_command_with_a_space() -> None:
    with open_monitor_log(SNAPSHOTS / "rtx2080s-win-610-pmon.txt") as log:
        names = {p.name for p in log.snapshot(0).gpus[0].processes}
    assert "NVIDIA Overlay." in names  # cut to 15 characters by nvidia-smi, space and all


DATED = """\
#    Date      Time  gpu    fb  bar1  ccpm    sm   mem   enc   dec rxpci txpci  mclk  pclk
#YYYYMMDD  HH:MM:SS  Idx    MB    MB    MB     %     %     %     %  MB/s  MB/s   MHz   MHz
 20240104  13:54:35    0   239     3     0     6     1     0     0     5    10  6250  1695
 20240104  13:54:35    1   100     3     0     -     1     0     0     5    10  6250  1695

 20240104  13:54:36    0    74    10     0     0     0     0     0   217   677  6250  1695
 20240104  13:54:36    1    75    10     0    50     0     0     0   217   677  6250  1695
#    Date      Time  gpu    fb  bar1  ccpm    sm   mem   enc   dec rxpci txpci  mclk  pclk
#YYYYMMDD  HH:MM:SS  Idx    MB    MB    MB     %     %     %     %  MB/s  MB/s   MHz   MHz
 20240104  13:54:37    0     7     2     0     3     0     0     0     0     3  6250  1695
 20240104  13:54:37    1     7     2     0     3     0     0     0     0     3  6250  1695
"""


def test_dated_multi_gpu_dmon_with_blank_lines_and_repeated_headers(tmp_path: Path) -> None:
    path = tmp_path / "dmon.log"
    path.write_text(DATED)

    with open_monitor_log(path) as log:
        assert len(log) == 3
        assert log.timestamp(1) == datetime(2024, 1, 4, 13, 54, 36)
        assert log.index_at(datetime(2024, 1, 4, 13, 54, 36, 500000)) == 1
        first = log.snapshot(0)
        assert log.warnings == []
    assert [gpu.index for gpu in first.gpus] == [0, 1]
    assert first.gpus[0].memory.used == 239 * MIB
    assert first.gpus[1].utilization.gpu is None
    assert first.gpus[1].reason("utilization.gpu") is Reason.NOT_AVAILABLE
    assert first.gpus[0].power.draw is None  # -s mutc: no power column
    assert first.gpus[0].reason("power.draw") is Reason.NOT_IN_LOG


OLD_PMON_TIMED = """\
#Time        gpu        pid  type    sm   mem   enc   dec   command
#HH:MM:SS    Idx          #   C/G     %     %     %     %   name
 23:59:59      0       1234     C    45    12     -     -   python
 23:59:59      0       1300     G     -     -     -     -   Xorg
 00:00:00      0       1234     C    40    10     -     -   python
 00:00:00      1          -     -     -     -     -     -   -
"""


def test_old_pmon_with_time_only_crosses_midnight(tmp_path: Path) -> None:
    path = tmp_path / "pmon.log"
    path.write_text(OLD_PMON_TIMED)

    with open_monitor_log(path) as log:
        assert len(log) == 2
        first, second = log.snapshot(0), log.snapshot(1)
        assert any("-o T" in warning for warning in log.warnings)
    assert first.timestamp is not None and second.timestamp is not None
    assert (second.timestamp - first.timestamp).total_seconds() == 1
    assert [(p.pid, p.type, p.sm_utilization) for p in first.gpus[0].processes] == [
        (1234, "C", 45.0),
        (1300, "G", None),
    ]
    assert [gpu.index for gpu in second.gpus] == [0, 1]
    assert second.gpus[1].processes == ()


def test_sniffing() -> None:
    for path in DMON:
        head = path.read_bytes()[:4096]
        assert looks_like(head) and looks_like_dmon(head) and not looks_like_pmon(head)
        found = detect(head)
        assert found is not None and found.name == "dmon"
    for path in PMON:
        head = path.read_bytes()[:4096]
        assert looks_like(head) and looks_like_pmon(head) and not looks_like_dmon(head)
    assert not looks_like(b"# a comment\n0 1 2\n")
    assert not looks_like(b"timestamp, name\n")


@pytest.mark.parametrize(
    "data",
    [b"# gpu pwr gtemp\n", b"# gpu pwr gtemp\n\x00\x00\x00\n", b"# gpu pwr\nx y z w\n"],
)
def test_bad_logs_are_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.log"
    path.write_bytes(data)
    with pytest.raises(BadCapture, match=str(path)):
        open_monitor_log(path)
