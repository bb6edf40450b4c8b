"""`report` of a `dmon -o DT` log read column by column (``sources/dmon_columns``): the very
figures the row reader gives, on real logs and on every shape of log hypothesis makes; what
is not plain is left to the row reader."""

from __future__ import annotations

import gzip
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputop.cli.report import build_report
from gputop.insight.report import summary_to_json
from gputop.sources.recordings.dmon_columns import NotPlain, plain_runs

READERS = (
    "sources/recordings/dmon.py",
    "sources/recordings/dmon_columns.py",
    "sources/recordings/linelog.py",
)
SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
REAL = SNAPSHOTS / "h200-train-dmon.txt"
HEADER = (
    "#Date       Time        gpu    pwr  gtemp     sm    mem   mclk     fb\n"
    "#YYYYMMDD   HH:MM:SS    Idx      W      C      %      %    MHz     MB\n"
)
START = datetime(2024, 1, 4, 23, 59, 30)


def figures(path: Path, *, columns: bool, charts: bool = False) -> dict[str, Any]:
    builder, warnings = build_report(path, jobs=1, charts=charts, columns=columns)
    return summary_to_json(builder.summary(source="log", warnings=warnings))


def read_plainly(path: Path) -> int:
    """Samples read column by column (fails when the log is not plain)."""
    runs = plain_runs(path)
    assert runs is not None
    return sum(len(run) for run in runs)


def row(moment: datetime, gpu: int | str, *cells: object) -> str:
    return f" {moment:%Y%m%d}    {moment:%H:%M:%S} {gpu:>6} " + " ".join(
        f"{cell:>6}" for cell in cells
    )


def write(path: Path, lines: list[str], *, end: str = "\n") -> Path:
    path.write_text(HEADER + "\n".join(lines) + end)
    return path


def test_the_real_h200_log_reads_column_by_column_to_the_same_figures() -> None:
    assert read_plainly(REAL) == 81
    by_columns = figures(REAL, columns=True)
    assert by_columns == figures(REAL, columns=False)
    assert by_columns["gpus"][0]["samples"] == 81


def test_a_plain_log_of_several_gpus_across_midnight(tmp_path: Path) -> None:
    # Three GPUs listed out of index order, a value not reported, one below zero, a gap, a
    # second day, the header again every few rows, and no line end after the last row.
    lines: list[str] = []
    for second in [*range(40), *range(55, 90)]:
        moment = START + timedelta(seconds=second)
        for gpu in (2, 0, 1):
            if second % 7 == 0 and lines:
                lines.append(HEADER.rstrip("\n"))
            power = "-" if (second + gpu) % 11 == 0 else -5 if second == 13 else 300 + gpu
            lines.append(row(moment, gpu, power, 60, (second * 3 + gpu) % 101, 20, 1593, 812))
    path = write(tmp_path / "dmon.txt", lines, end="")
    assert read_plainly(path) == 75
    assert figures(path, columns=True) == figures(path, columns=False)
    assert figures(path, columns=True, charts=True) == figures(path, columns=False)


def test_a_long_plain_log_takes_no_python_step_per_row(tmp_path: Path) -> None:
    # Row by row, every line was a scanner call and every sample a parse: 20 s for 10^6 rows
    # where the same rows as CSV took 2 (bench_dmon_report.py has the figures).
    lines: list[str] = [
        row(
            START + timedelta(seconds=second), gpu, 300 + second % 40, 60, second % 101, 20, 1593, 8
        )
        for second in range(6000)
        for gpu in (0, 1, 2, 3)
    ]
    path = write(tmp_path / "dmon.txt", lines)
    calls = Counter[str]()

    def count(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_filename.endswith(READERS):
            calls[frame.f_code.co_name] += 1

    sys.setprofile(count)
    try:
        builder, _ = build_report(path, jobs=1, charts=False)
    finally:
        sys.setprofile(None)
    assert builder.summary().gpus[0].samples == 6000
    # Calls a stretch of 1 MiB, and one a distinct cell or time: not one a row or sample.
    assert sum(calls.values()) < len(lines) / 4, calls.most_common(5)


def test_crlf_bom_and_gzip(tmp_path: Path) -> None:
    text = REAL.read_bytes().replace(b"\n", b"\r\n")
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"\xef\xbb\xbf" + text)
    packed = tmp_path / "dmon.txt.gz"
    packed.write_bytes(gzip.compress(REAL.read_bytes()))
    expected = figures(REAL, columns=False)
    for path in (crlf, packed):
        assert read_plainly(path) == 81
        assert figures(path, columns=True) == expected


@pytest.mark.parametrize(
    "change",
    [
        "a GPU goes",
        "a stray line",
        "a blank line",
        "another header",
        "a cut last sample",
        "a bad time",
        "two times in a sample",
    ],
)
def test_what_is_not_plain_is_read_row_by_row(tmp_path: Path, change: str) -> None:
    lines: list[str] = [
        row(START + timedelta(seconds=second), gpu, 300, 60, 50, 20, 1593, 812)
        for second in range(30)
        for gpu in (0, 1)
    ]
    if change == "a GPU goes":
        del lines[31]
    elif change == "a stray line":
        lines.insert(20, "nvidia-smi: GPU is lost")
    elif change == "a blank line":
        lines.insert(20, "")
    elif change == "another header":
        lines.insert(20, "#Date Time gpu pwr sm")
    elif change == "a cut last sample":
        del lines[-1]
    elif change == "a bad time":
        lines[20] = lines[20].replace(":", "h", 1)
        lines[21] = lines[21].replace(":", "h", 1)
    else:
        lines[21] = row(START + timedelta(seconds=99), 1, 300, 60, 50, 20, 1593, 812)
    path = write(tmp_path / "dmon.txt", lines)
    runs = plain_runs(path)
    assert runs is not None
    with pytest.raises(NotPlain):
        list(runs)
    assert figures(path, columns=True) == figures(path, columns=False)


def test_other_logs_are_not_taken(tmp_path: Path) -> None:
    for name in ("h100-590-dmon.txt", "h100-590-pmon.txt", "csv-h100-590.csv"):
        assert plain_runs(SNAPSHOTS / name) is None  # no times, pmon, not dmon
    (tmp_path / "pipe").mkdir()
    assert plain_runs(tmp_path / "pipe") is None


_CELLS = st.sampled_from(["0", "7", "42", "100", "101", "-", "-3", "N/A", "3.5", "1e3", "inf"])
_TIMES = st.sampled_from(["00:00:00", "23:59:59", "12:00:01", "9:05:03", "24:00:00", "12:60:00"])


@st.composite
def dmon_logs(draw: st.DrawFn) -> str:
    """dmon -o DT logs: mostly plain, with now and then what makes a log not so."""
    gpus = draw(st.lists(st.sampled_from(["0", "1", "2", "00", "13"]), min_size=1, max_size=3))
    gpus = list(dict.fromkeys(gpus))
    moment = datetime(2024, 2, 28, 23, 59, 50)
    lines = [HEADER.rstrip("\n")]
    for _ in range(draw(st.integers(1, 25))):
        moment += timedelta(seconds=draw(st.sampled_from([1, 1, 1, 2, 5, 0, -3])))
        clock = (
            draw(st.one_of(st.just(f"{moment:%H:%M:%S}"), _TIMES))
            if draw(st.integers(0, 9)) == 0
            else f"{moment:%H:%M:%S}"
        )
        for gpu in gpus:
            cells = draw(st.lists(_CELLS, min_size=6, max_size=6))
            lines.append(f" {moment:%Y%m%d}  {clock} {gpu:>4} " + "  ".join(cells))
        odd = draw(st.integers(0, 30))
        if odd == 0:
            lines.append("")
        elif odd == 1:
            lines.append(HEADER.split("\n")[1])
        elif odd == 2:
            lines.append("#Date Time gpu pwr sm mem")
        elif odd == 3:
            lines.append(lines[-1].rsplit(" ", 1)[0])  # a row cut short
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dmon_logs())
def test_every_log_gives_the_row_readers_figures(tmp_path: Path, log: str) -> None:
    path = tmp_path / "dmon.txt"
    path.write_text(log)
    try:
        expected: dict[str, Any] | str = figures(path, columns=False)
    except Exception as error:  # the row reader refuses it: so must the report
        expected = type(error).__name__
    try:
        got: dict[str, Any] | str = figures(path, columns=True)
    except Exception as error:
        got = type(error).__name__
    assert got == expected
