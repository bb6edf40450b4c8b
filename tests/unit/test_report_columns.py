"""`gputop report` on a `--query-gpu` CSV log reads it column by column: the same figures
as parsing every row into the model, without building a GpuSample per row."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputop.cli.report import build_report
from gputop.insight.report import (
    ReportBuilder,
    gap_threshold,
    render_table,
    summary_to_json,
)
from gputop.insight.series import percentile
from gputop.insight.steps import count_stats
from gputop.model import Snapshot
from gputop.model.columns import SnapshotColumns
from gputop.sources.csvlog import CsvRecording, parse

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
REAL_LOGS = sorted(SNAPSHOTS.glob("csv-*.csv"))
START = datetime(2024, 1, 4, 15, 2, 11, 123000)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y/%m/%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def _log(
    path: Path,
    *,
    seconds: int = 1500,
    gpus: int = 4,
    header: str = (
        "timestamp, index, name, uuid, utilization.gpu [%], memory.total [MiB], "
        "memory.used [MiB], power.draw [W], clocks_event_reasons.active"
    ),
    odd: bool = True,
    seed: int = 7,
    newline: str = "\n",
) -> Path:
    """A log of ``gpus`` GPUs sampled about every second; ``odd`` adds what real logs have
    now and then: pauses, N/A cells, a GPU missing, the clock going back, a header
    repeated, a row cut short, power and thermal capping."""
    chance = random.Random(seed)
    lines = [header]
    moment = START
    for second in range(seconds):
        moment += timedelta(milliseconds=chance.choice((999, 1000, 1000, 1001)))
        if odd and second % 400 == 399:
            moment += timedelta(seconds=4)  # the pauses seen in real logs
        if odd and second == 700:
            moment -= timedelta(seconds=30)  # an NTP step back
        if odd and second == 900:
            lines.append(header)
        for index in range(gpus):
            if odd and second == 500 and index == 2:
                continue  # a GPU missing from one query
            busy = (second // 120 + index) % 3
            util = chance.randint(60, 100) if busy == 0 else chance.randint(0, 9)
            used = 60000 + index if busy < 2 else 3
            power = f"{chance.uniform(60, 400):.2f} W"
            util_cell = f"{util} %"
            if odd and second % 97 == 5 and index == 1:
                util_cell, power = "[N/A]", "[Unknown Error]"
            used_cell = f"{used} MiB"
            if odd and second == 333:
                used_cell = "[N/A]"
            reasons = chance.choice(("0x0000000000000000", "0x0000000000000001", "0x04", "0x20"))
            cells = [
                _stamp(moment),
                str(index),
                "NVIDIA A100-SXM4-80GB",
                f"GPU-{index:08d}-0000-0000-0000-000000000000",
                util_cell,
                "81920 MiB",
                used_cell,
                power,
                reasons,
            ]
            row = ", ".join(cells)
            if odd and second == 1200 and index == 0:
                row = row.rsplit(", ", 1)[0]  # cut short
            lines.append(row)
    path.write_text(newline.join(lines) + newline, newline="")
    return path


def _report(path: Path, **options: object) -> dict[str, object]:
    builder, warnings = build_report(path, **options)  # type: ignore[arg-type]
    summary = builder.summary(source=str(path), warnings=warnings)
    return {"json": summary_to_json(summary), "table": render_table(summary)}


def _both(path: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    rows = _report(path, columns=False)
    columns = [
        _report(path, jobs=1, charts=False),
        _report(path, jobs=2, charts=False),
        _report(path, jobs=1, charts=True),
    ]
    return rows, columns


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.name)
def test_a_real_log_reports_the_same_read_by_rows_or_by_columns(path: Path) -> None:
    rows, columns = _both(path)
    assert json.loads(json.dumps(rows["json"]))["gpus"]
    for report in columns:
        assert report == rows


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"gpus": 1, "seed": 3},
        {"gpus": 8, "odd": False, "seconds": 600},
        {"newline": "\r\n", "seed": 11},
        {
            "header": "timestamp, index, utilization.gpu [%], power.draw [W]",
            "seed": 5,
        },
    ],
)
def test_a_generated_log_reports_the_same_read_by_rows_or_by_columns(
    tmp_path: Path, options: dict[str, object]
) -> None:
    header = options.get("header")
    path = _log(tmp_path / "gpu-log.csv", **options)  # type: ignore[arg-type]
    if isinstance(header, str):
        # A narrower query: keep the columns it names, from the full rows.
        full = _log(tmp_path / "full.csv", **{**options, "header": _FULL})  # type: ignore[arg-type]
        path.write_text(_narrowed(full.read_text(), header))
    rows, columns = _both(path)
    for report in columns:
        assert report == rows


_FULL = (
    "timestamp, index, name, uuid, utilization.gpu [%], memory.total [MiB], "
    "memory.used [MiB], power.draw [W], clocks_event_reasons.active"
)


def _narrowed(text: str, header: str) -> str:
    names = _FULL.split(", ")
    keep = [names.index(name) for name in header.split(", ")]
    out = []
    for line in text.splitlines():
        cells = line.split(", ")
        out.append(", ".join(cells[k] for k in keep) if len(cells) == len(names) else line)
    return "\n".join(out) + "\n"


def test_a_plain_log_builds_no_gpu_sample_per_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The point of the column path: rows are not parsed one by one into the model."""
    path = _log(tmp_path / "gpu-log.csv", odd=False, seconds=3000, gpus=8)
    calls = Counter[str]()
    real = parse.parse_block

    def counted(*args: object, **kwargs: object) -> Snapshot:
        calls["parse_block"] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parse, "parse_block", counted)
    monkeypatch.setattr("gputop.sources.csvlog.recording.parse_block", counted)
    builder, _ = build_report(path, jobs=1, charts=False)
    summary = builder.summary()
    assert summary.snapshots == 3000
    assert [gpu.samples for gpu in summary.gpus] == [3000] * 8
    # Only the first snapshot, read when the log is opened to check it.
    assert calls["parse_block"] <= 1
    assert builder.traces() == ()  # nothing kept per sample without charts


def test_an_odd_snapshot_costs_only_the_rows_around_it(tmp_path: Path) -> None:
    path = _log(tmp_path / "gpu-log.csv", seconds=3000)
    with CsvRecording.open(path) as recording:
        parts = list(recording.runs())
    by_rows = sum(1 for part in parts if isinstance(part, Snapshot))
    by_columns = sum(len(part) for part in parts if isinstance(part, SnapshotColumns))
    assert by_rows + by_columns == 3000 - 0  # every snapshot once (the header splits none)
    assert by_columns > 2500


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-5, max_value=50, allow_nan=False), max_size=60))
def test_the_gap_threshold_from_counts_is_the_median_of_the_intervals(
    offsets: list[float],
) -> None:
    steps = [b - a for a, b in itertools.pairwise(offsets) if b > a]
    expected = max(2.0, 3 * statistics.median(steps)) if steps else 2.0
    assert gap_threshold([*offsets, math.nan], 2.0) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 100).map(float), st.floats(0, 100), st.just(math.nan)),
        max_size=80,
    )
)
def test_utilization_statistics_from_counts_are_those_of_the_sorted_values(
    values: list[float],
) -> None:
    known = sorted(v for v in values if v == v)
    expected = (
        (len(known), statistics.fmean(known), percentile(known, 0.5), percentile(known, 0.95))
        if known
        else (0, None, None, None)
    )
    assert count_stats(Counter(values)) == expected


def test_parts_of_one_report_join_into_the_report_of_the_whole(tmp_path: Path) -> None:
    path = _log(tmp_path / "gpu-log.csv", seconds=1200)
    with CsvRecording.open(path) as recording:
        count = len(recording)
        gap = gap_threshold(recording.seconds(), 2.0)
        whole = ReportBuilder(max_gap_s=gap, keep_samples=False)
        parts = [
            ReportBuilder(max_gap_s=gap, origin=recording.origin, keep_samples=False)
            for _ in range(3)
        ]
        cuts = [0, count // 3, 2 * count // 3, count]
        for part, start, stop in zip(parts, cuts, cuts[1:], strict=False):
            for item in recording.runs(start, stop):
                for builder in (part, whole):
                    if isinstance(item, Snapshot):
                        builder.add(item)
                    else:
                        builder.add_columns(item)
    joined = ReportBuilder.merged(parts)
    assert summary_to_json(joined.summary()) == summary_to_json(whole.summary())


def test_apps_rows_written_with_the_gpu_query_are_read_row_by_row(tmp_path: Path) -> None:
    """A `--query-compute-apps` query in the same log, as wide as the GPU rows: its rows
    join the snapshot before them (processes change the states), so those snapshots are
    not read as columns."""
    lines = []
    moment = START
    for second in range(300):
        moment += timedelta(seconds=1)
        lines.append("timestamp, uuid, utilization.gpu [%], memory.used [MiB]")
        for gpu in range(2):
            lines.append(f"{_stamp(moment)}, GPU-{gpu}, 2 %, 100 MiB")
        if 100 <= second < 200:
            lines.append("pid, process_name, used_memory [MiB], gpu_uuid")
            lines.append("4242, python, 90 MiB, GPU-1")
    path = tmp_path / "gpu-log.csv"
    path.write_text("\n".join(lines) + "\n")
    rows, columns = _both(path)
    for report in columns:
        assert report == rows
    gpus = json.loads(json.dumps(rows["json"]))["gpus"]
    assert gpus[1]["waiting_s"] >= 99.0 and gpus[0]["waiting_s"] == 0.0
