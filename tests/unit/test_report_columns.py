"""`gputop report` on a `--query-gpu` CSV log reads it column by column: the same figures
as parsing every row into the model, without building a GpuSample per row."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputop.cli import report as report_cli
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
from gputop.model.columns import GpuColumns, SnapshotColumns
from gputop.sources.csvlog import CsvRecording, parse
from gputop.sources.csvlog import runs as runs_module
from gputop.sources.csvlog import scan as scan_module

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
    every: float = 1.0,
    untimed: bool = False,
    gone: int | None = None,
    headers_every: int = 0,
) -> Path:
    """A log of ``gpus`` GPUs sampled about every ``every`` seconds; ``odd`` adds what real
    logs have now and then: pauses, N/A cells, a GPU missing, the clock going back, a header
    repeated, a row cut short, power and thermal capping. ``untimed``: a query whose first
    row's stamp is no time; ``gone``: the last GPU gone from that second on;
    ``headers_every``: the header again before every so many queries."""
    chance = random.Random(seed)
    lines = [header]
    moment = START
    for second in range(seconds):
        jitter = timedelta(milliseconds=chance.choice((-1, 0, 0, 1)))
        moment += timedelta(seconds=every) + jitter
        if headers_every and second and second % headers_every == 0:
            lines.append(header)
        if odd and second % 400 == 399:
            moment += timedelta(seconds=4)  # the pauses seen in real logs
        if odd and second == 700:
            moment -= timedelta(seconds=30)  # an NTP step back
        if odd and second == 900:
            lines.append(header)
        for index in range(gpus):
            if odd and second == 500 and index == 2:
                continue  # a GPU missing from one query
            if gone is not None and second >= gone and index == gpus - 1:
                continue
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
                "[Unknown Error]" if untimed and second == 1100 and index == 0 else _stamp(moment),
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
    monkeypatch.setattr("gputop.sources.csvlog.snapshot.parse_block", counted)
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


@settings(deadline=None)
@given(st.lists(st.floats(min_value=-5, max_value=50, allow_nan=False), max_size=60))
def test_the_gap_threshold_from_counts_is_the_median_of_the_intervals(
    offsets: list[float],
) -> None:
    steps = [b - a for a, b in itertools.pairwise(offsets) if b > a]
    expected = max(2.0, 3 * statistics.median(steps)) if steps else 2.0
    assert gap_threshold([*offsets, math.nan], 2.0) == expected


@settings(deadline=None)
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


# -- one pass over a plain file (`CsvRecording.stream`) ---------------------------------

QUERIES = {
    "gpu-log-noheader-plato.csv": (
        "timestamp,utilization.gpu,utilization.memory,memory.used,memory.free,"
        "temperature.gpu,power.draw"
    ),
    "gpu-log-noheader-4gpu-llamacpp.csv": "timestamp,utilization.gpu,memory.used",
}
"""The fields of the real `noheader` logs (snapshots/README.md)."""

EVERY_REAL_LOG = sorted(
    {*REAL_LOGS, *SNAPSHOTS.glob("gpu-log-*.csv"), *SNAPSHOTS.glob("query-gpu-*.csv")}
)


_DEFAULT_RUN_BYTES = runs_module._RUN_BYTES
_DEFAULT_CHUNK = scan_module._CHUNK

RowReports = dict[tuple[Path, "str | None"], dict[str, object]]


@pytest.fixture(scope="module")
def row_reports() -> RowReports:
    """The row-by-row report of each log, made once for the module: each log is read with
    three stretch sizes, and the row-by-row read (the reference, 0.3-0.7 s a log) is the
    same for all three."""
    return {}


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> Callable[[dict[str, object]], Path]:
    """``hostile_log(options)``: the log ``_log`` writes for them, written once for the
    module (a report names its file: the three stretch sizes share the file as they share
    its row-by-row report)."""
    folder = tmp_path_factory.mktemp("logs")
    written: dict[str, Path] = {}

    def log(options: dict[str, object]) -> Path:
        key = json.dumps(options, sort_keys=True)
        if key not in written:
            path = folder / f"gpu-log-{len(written)}.csv"
            written[key] = _log(path, **options)  # type: ignore[arg-type]
        return written[key]

    return log


@pytest.fixture
def stretch_bytes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """The stream taken in stretches of this many bytes, and the scan in chunks of 8 KiB
    (the default 1 MiB holds most test logs whole): stretches cut anywhere, some shorter
    than a snapshot (those are left to the scan). Each test takes the three sizes one after
    another (``_STRETCHES``, the innermost parameter), so that a worker reads a log row by
    row once (the 1MiB id: the default sizes, a 256 KiB stretch and a 1 MiB scan chunk)."""
    if request.param is not None:
        monkeypatch.setattr(runs_module, "_RUN_BYTES", request.param)
        monkeypatch.setattr(scan_module, "_CHUNK", 8192)
    return int(request.param or runs_module._RUN_BYTES)


_STRETCHES = pytest.mark.parametrize(
    "stretch_bytes", [None, 8192, 1500], ids=["1MiB", "8KiB", "1500B"], indirect=True
)


def _row_report(path: Path, row_reports: RowReports, query: str | None) -> dict[str, object]:
    """The report row by row, read at the default sizes whatever the test's stretches."""
    if (path, query) not in row_reports:
        with pytest.MonkeyPatch.context() as defaults:
            defaults.setattr(runs_module, "_RUN_BYTES", _DEFAULT_RUN_BYTES)
            defaults.setattr(scan_module, "_CHUNK", _DEFAULT_CHUNK)
            row_reports[path, query] = _report(path, columns=False, query_gpu=query)
    return row_reports[path, query]


def _streamed_and_indexed(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    row_reports: RowReports,
    query: str | None = None,
) -> tuple[dict[str, object], list[dict[str, object]]]:
    """The report row by row; and read in one pass (with and without charts), and indexed
    first (one process, and two)."""
    rows = _row_report(path, row_reports, query)
    streams = Counter[str]()
    real = CsvRecording.stream

    def counted(self: CsvRecording, run_bytes: int | None = None) -> object:
        streams["stream"] += 1
        return real(self, run_bytes)

    monkeypatch.setattr(CsvRecording, "stream", counted)
    reports = [
        _report(path, jobs=1, charts=False, query_gpu=query),
        _report(path, jobs=1, charts=True, query_gpu=query),
    ]
    assert streams["stream"] == 2
    monkeypatch.setattr(report_cli, "STREAM_BYTES", 0)
    reports.append(_report(path, jobs=2, charts=False, query_gpu=query))
    monkeypatch.setattr(report_cli, "_cpus", lambda: 2)
    reports.append(_report(path, charts=False, query_gpu=query))
    assert streams["stream"] == 2  # several processes: indexed first
    return rows, reports


@_STRETCHES
@pytest.mark.parametrize("path", EVERY_REAL_LOG, ids=lambda p: p.name)
def test_a_real_log_reports_the_same_read_in_one_pass(
    path: Path, stretch_bytes: int, monkeypatch: pytest.MonkeyPatch, row_reports: RowReports
) -> None:
    rows, reports = _streamed_and_indexed(path, monkeypatch, row_reports, QUERIES.get(path.name))
    # (Some hold no time: no figures over time, but as many snapshots read either way.)
    assert json.loads(json.dumps(rows["json"]))["snapshots"]
    for report in reports:
        assert report == rows


@_STRETCHES
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"gpus": 8, "odd": False, "seconds": 600},
        {"gpus": 1, "seed": 3},
        {"newline": "\r\n", "seed": 11},
        {"untimed": True, "gone": 1300, "seed": 5},
        {"headers_every": 1, "seconds": 400, "seed": 9},
        {"headers_every": 250, "gone": 900, "odd": False, "gpus": 3},
        # Sampled every 2.5 s: past the floor of the gap threshold, every interval waits
        # for it (3 x the median: they are counted, the 6.5 s pauses are gaps).
        {"every": 2.5, "seed": 13},
        {"every": 0.5, "seconds": 2000, "gpus": 2},
    ],
)
def test_a_hostile_log_reports_the_same_read_in_one_pass(
    options: dict[str, object],
    stretch_bytes: int,
    monkeypatch: pytest.MonkeyPatch,
    row_reports: RowReports,
    hostile_log: Callable[[dict[str, object]], Path],
) -> None:
    """Pauses, N/A, a GPU missing once and one gone for good, the clock going back, headers
    repeated (once, and before every query), a row cut short, CR LF, a query without a
    time: the same figures as row by row, however the file is cut into stretches."""
    rows, reports = _streamed_and_indexed(hostile_log(options), monkeypatch, row_reports)
    for report in reports:
        assert report == rows


def test_a_report_of_a_plain_file_builds_no_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan (the index replay seeks with) reads only what `open` reads to check the
    log, the first chunk: every snapshot after it is found in the cells the report splits
    anyway."""
    path = _log(tmp_path / "gpu-log.csv", odd=False, seconds=3000, gpus=8)
    assert path.stat().st_size > 3 * scan_module._CHUNK
    steps = Counter[str]()
    real = scan_module.Scanner.step

    def counted(self: scan_module.Scanner) -> bool:
        steps["scan"] += 1
        return real(self)

    monkeypatch.setattr(scan_module.Scanner, "step", counted)
    builder, _ = build_report(path, jobs=1, charts=False)
    assert builder.summary().snapshots == 3000
    assert steps["scan"] == 1


def test_an_odd_stretch_is_indexed_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the chunks around odd snapshots (a GPU missing, a header, a cut row) go
    through the index: about ten snapshots each in chunks of 16 KiB."""
    monkeypatch.setattr(scan_module, "_CHUNK", 16384)
    path = _log(tmp_path / "gpu-log.csv", seconds=3000, gpus=8)
    with CsvRecording.open(path) as recording:
        parts = list(recording.stream(run_bytes=16384))
        indexed = len(recording._index.starts)
    assert sum(len(p) if isinstance(p, SnapshotColumns) else 1 for p in parts) == 3000
    assert indexed < 100


def test_too_many_intervals_held_back_read_the_log_again_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log whose intervals all wait for the gap threshold (sampled every 3 s): past
    ``MAX_PENDING`` of them the one pass gives up and the log is indexed first (bounded
    memory), with the same figures."""
    path = _log(tmp_path / "gpu-log.csv", every=3.0, seconds=900)
    rows = _report(path, columns=False)
    reopened = Counter[str]()
    real = CsvRecording.reopened

    def counted(self: CsvRecording) -> CsvRecording:
        reopened["reopened"] += 1
        return real(self)

    monkeypatch.setattr(CsvRecording, "reopened", counted)
    assert _report(path, jobs=1, charts=False) == rows
    assert reopened["reopened"] == 0
    monkeypatch.setattr(report_cli, "MAX_PENDING", 10)
    assert _report(path, jobs=1, charts=False) == rows
    assert reopened["reopened"] == 1


_STEPS = st.lists(
    st.one_of(
        st.sampled_from([0.999, 1.0, 1.001, 2.0, 2.5, 3.0, 4.0, 7.5, -30.0]),
        st.floats(0.001, 20.0),
    ),
    min_size=1,
    max_size=120,
)


@settings(deadline=None)
@given(
    steps=_STEPS,
    power=st.lists(st.one_of(st.floats(0, 700), st.just(math.nan)), min_size=121, max_size=121),
    utilization=st.lists(st.sampled_from([0.0, 3.0, 50.0, 99.0, math.nan]), min_size=121),
    cuts=st.lists(st.integers(1, 120), max_size=6),
)
def test_a_threshold_settled_at_the_end_gives_the_figures_of_one_known_first(
    steps: list[float], power: list[float], utilization: list[float], cuts: list[int]
) -> None:
    """Intervals past the floor wait (with the state they start in and their energy) until
    the summary knows the threshold: the very figures (exact sums) of a report given it
    first, however the samples come in runs."""
    offsets = list(itertools.accumulate(steps, initial=0.0))
    count = len(offsets)
    utilization = (utilization * count)[:count]
    threshold = gap_threshold(offsets, 2.0)
    known = ReportBuilder(max_gap_s=threshold, keep_samples=False)
    settled = ReportBuilder(min_auto_gap_s=2.0, keep_samples=False)
    edges = sorted({0, count, *(cut for cut in cuts if cut < count)})
    # Parts of the log each in a builder of its own, joined (as worker processes' are).
    parts = [ReportBuilder(min_auto_gap_s=2.0, keep_samples=False, origin=START) for _ in edges]
    for part, start, stop in zip(parts, edges, edges[1:], strict=False):
        run = _run(offsets[start:stop], power[start:stop], utilization[start:stop])
        known.add_columns(run)
        settled.add_columns(run)
        part.add_columns(run)
    assert settled.max_gap_s == threshold
    assert settled.summary() == known.summary()
    assert ReportBuilder.merged(parts).summary() == known.summary()


def _run(offsets: list[float], power: list[float], utilization: list[float]) -> SnapshotColumns:
    gpu = GpuColumns(
        index=0,
        name="GPU",
        uuid="GPU-0",
        utilization=utilization,
        power=power,
        memory_used=[(2 << 30) if u == 50.0 else 0 for u in utilization],
        memory_total=80 << 30,
        throttle_reasons=None,
    )
    first = START + timedelta(seconds=offsets[0])
    last = START + timedelta(seconds=offsets[-1])
    return SnapshotColumns(
        origin=START, offsets=offsets, first=first, last=last, host=None, gpus=(gpu,)
    )
