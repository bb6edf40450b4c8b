"""The scan of a `--query-gpu` CSV log takes stretches of whole snapshots at once (issue 14,
speed): no Python step per snapshot where the log is regular, and the very index (and so
the very report) of reading every snapshot row by row, whatever the log holds."""

from __future__ import annotations

import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType

import pytest

from gputop.cli.report import build_report
from gputop.insight.report import render_table, summary_to_json
from gputop.sources.csvlog import CsvRecording
from gputop.sources.csvlog.scan import Scanner

START = datetime(2024, 1, 4, 15, 2, 11, 123000)
HEADER = "timestamp, index, name, utilization.gpu [%], memory.used [MiB], power.draw [W]"

CSVLOG = str(Path(CsvRecording.__module__.replace(".", "/")).parent) + "/"
"""The reader's modules (the scan among them), by the folder their file names hold."""


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y/%m/%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def _report(path: Path, **options: object) -> dict[str, object]:
    builder, warnings = build_report(path, **options)  # type: ignore[arg-type]
    summary = builder.summary(source=str(path), warnings=warnings)
    return {"json": summary_to_json(summary), "table": render_table(summary)}


def _row(moment: datetime, index: int, second: int, stamp: str | None = None) -> str:
    util = "[N/A]" if (second + index) % 333 == 0 else f"{(second * 7 + index) % 101} %"
    return (
        f"{stamp or _stamp(moment)}, {index}, NVIDIA H100 80GB HBM3, {util}, "
        f"{(second + index) % 3 * 40000} MiB, {100 + second % 50}.{index}5 W"
    )


def _plain_log(path: Path, seconds: int, gpus: int, newline: str = "\n", back_at: int = -1) -> Path:
    """Every GPU every second; at ``back_at`` the clock goes back a minute."""
    lines = [HEADER]
    moment = START
    for second in range(seconds):
        moment += timedelta(seconds=-60 if second == back_at else 1)
        lines.extend(_row(moment, index, second) for index in range(gpus))
    path.write_text(newline.join(lines) + newline, newline="")
    return path


def _index(path: Path) -> tuple[object, ...]:
    with CsvRecording.open(path) as recording:
        count = len(recording)
        return (
            count,
            list(recording._index.starts),
            list(recording._index.ends),
            [round(s, 6) if s == s else "untimed" for s in recording._index.stamps],
            recording._index.ordered,
            recording._index.schema_firsts,
            recording._index.base,
            list(recording.warnings),
        )


def _row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """No snapshot finder: every row is read one by one (the scan before it learns)."""
    monkeypatch.setattr(Scanner, "_learn", lambda self, rows: None)


def test_a_regular_log_is_scanned_without_a_python_step_per_snapshot(tmp_path: Path) -> None:
    path = _plain_log(tmp_path / "gpu-log.csv", seconds=3000, gpus=8)
    calls = Counter[str]()

    def count(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and CSVLOG in frame.f_code.co_filename:
            calls[frame.f_code.co_name] += 1

    with CsvRecording.open(path) as recording:
        sys.setprofile(count)
        try:
            snapshots = len(recording)
        finally:
            sys.setprofile(None)
    assert snapshots == 3000
    # A few calls a chunk (and the first snapshot, read row by row); not one a snapshot.
    assert sum(calls.values()) < snapshots / 20, calls.most_common(5)


def _odd_log(path: Path) -> Path:
    """Stretches of regular snapshots broken by what the fast path must hand back: a time
    that is no time, time going back, a GPU gone for good, a fifth GPU for a while, a blank
    line, a repeated header, a stray line in lower case, and N/A cells."""
    lines = [HEADER]
    moment = START
    for second in range(4000):
        moment += timedelta(seconds=4 if second % 500 == 499 else 1)
        if second == 1500:
            moment -= timedelta(seconds=20)
        gpus = range(3) if second > 3000 else range(5) if 2000 <= second < 2100 else range(4)
        stamp = "2024/13/45 99:99:99.999" if second == 1200 else None
        lines.extend(_row(moment, index, second, stamp) for index in gpus)
        if second == 800:
            lines.append("")
        if second == 2500:
            lines.append(HEADER)
        if second == 2800:
            lines.append("nvidia-smi restarted")  # in lower case, yet no header
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("chunk", [1 << 20, 4096])
def test_the_scan_gives_the_index_of_reading_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr("gputop.sources.csvlog.scan._CHUNK", chunk)
    logs = [
        _odd_log(tmp_path / "odd.csv"),
        _plain_log(tmp_path / "plain.csv", seconds=2500, gpus=8),
        _plain_log(tmp_path / "crlf.csv", seconds=1200, gpus=2, newline="\r\n"),
        _plain_log(tmp_path / "back.csv", seconds=3000, gpus=4, back_at=2000),
    ]
    fast = [_index(path) for path in logs]
    with monkeypatch.context() as patched:
        _row_by_row(patched)
        slow = [_index(path) for path in logs]
    assert fast == slow
    count, _, _, stamps, ordered, *_ = fast[0]
    assert count == 4000 and isinstance(stamps, list) and "untimed" in stamps
    assert ordered is False
    assert [index[4] for index in fast[1:]] == [True, True, False]  # ordered


def test_a_report_counts_no_lines_a_regular_snapshot_but_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs check their snapshots by the line counts the scan kept; without them (every row
    read one by one) by counting: the same report, the same as row by row."""
    path = _odd_log(tmp_path / "odd.csv")
    with_counts = _report(path, jobs=1, charts=False)
    with monkeypatch.context() as patched:
        _row_by_row(patched)
        without = _report(path, jobs=1, charts=False)
    by_rows = _report(path, columns=False)
    assert with_counts == without == by_rows
    gpus = with_counts["json"]["gpus"]  # type: ignore[index]
    assert [gpu["index"] for gpu in gpus] == [0, 1, 2, 3, 4]
    assert gpus[3]["samples"] == 3001 - 1 and gpus[4]["samples"] == 100
    assert all(gpu["gap_s"] > 0 for gpu in gpus[:4])
    with CsvRecording.open(path) as recording:
        len(recording)
        assert set(recording._index.line_counts) >= {0, 4}


def test_runs_of_a_regular_log_count_no_snapshot_lines_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index counted each snapshot's lines (but the one a chunk read row by row, which a
    run counts itself): runs do not count their snapshots one by one, and the report is the
    same as row by row."""
    from gputop.sources.csvlog import bulk

    path = _plain_log(tmp_path / "gpu-log.csv", seconds=6000, gpus=8)
    calls = Counter[str]()
    real = bulk._snapshots_of

    def counted(data: bytes, starts: list[int], per: int) -> bool:
        calls["snapshots_of"] += 1
        return real(data, starts, per)

    monkeypatch.setattr(bulk, "_snapshots_of", counted)
    with CsvRecording.open(path) as recording:
        len(recording)
        assert recording._index.line_counts.count(0) >= 2  # chunk ends, read row by row
    assert _report(path, jobs=1, charts=False) == _report(path, columns=False)
    # Only the runs of the first chunk: it was read row by row before the finder learned
    # the rows (the rest of the log, read in one pass, is never indexed).
    from gputop.sources.csvlog import runs, scan

    assert 1 <= calls["snapshots_of"] <= scan._CHUNK // runs._RUN_BYTES
