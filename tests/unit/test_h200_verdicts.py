"""One real H200 run, every format it was recorded in: the same verdict from each (issue 25).

The load (``snapshots/h200-live``, recorded on a real H200 for gputop): process A does bf16
matrix products for 8 s (utilization ~97 %, the GPU at its 700 W power cap) then 4 s of
CPU-bound work with the GPU idle, over and over; process B holds 10 GiB and never computes.
So the GPU is busy 8 s and waiting 4 s, repeated, never idle, and never throttled: the power
cap at full load is how it does its work. Before issue 25 the XML stream read "busy 0 s,
throttled 58 s" and the logs without clock-event reasons "throttled 0 s" where they cannot
know.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import statistics
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from gputop.cli.main import main
from gputop.cli.report import report_main
from gputop.history.metrics import Metric
from gputop.insight.diagnosis import Severity, diagnose
from gputop.insight.report import GpuSummary
from gputop.model import Snapshot
from gputop.model.fields import GPU_BY_PATH
from gputop.model.gpu_state import GpuState, sample_state
from gputop.pipeline.core import throttled
from gputop.sinks.prometheus.tracker import ExportTracker
from gputop.sinks.smi_xml import SmiXmlWriter
from gputop.sources.recordings.formats import open_recording
from gputop.ui.render.gauges import Level, detail_parts, power_level
from gputop.ui.render.panel_lines import worst_finding
from support.shortcuts import summarize

LIVE = Path(__file__).resolve().parents[2] / "snapshots" / "h200-live"
STREAM = LIVE / "h200-train-stream.xml.gz"
WIDE = LIVE / "h200-train-wide-query.csv"
SEED = LIVE / "h200-train-seed-query.csv"
DMON = LIVE / "h200-train-dmon.txt"

BUSY_S = 8.0
WAITING_S = 4.0
"""The load's timeline: 8 s of matrix products, then 4 s of CPU-bound work."""
SLACK_SAMPLES = 2
"""How far formats (sampled at their own moments) and the timeline may disagree."""

WITH_REASONS = ("stream", "record", "log", "wide")
WITHOUT_REASONS = ("seed", "dmon")


def read(path: Path) -> list[Snapshot]:
    with open_recording(path) as recording:
        return list(recording)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Snapshot]]:
    """Each format of the run: the four files, a `--record` and a `--log` of the stream."""
    made = tmp_path_factory.mktemp("h200")
    stream = read(STREAM)
    # What `--record` writes, fed the replayed stream (a live --record writes the same
    # documents, one a tick).
    record = made / "record.xml"
    with SmiXmlWriter(record) as writer:
        for snapshot in stream:
            writer.write(snapshot)
    # The README's way to convert a recording, through the command itself.
    log = made / "log.csv"
    assert main(["--replay", str(STREAM), "--count", str(len(stream)), "--log", str(log),
                 "--json"]) == 0  # fmt: skip
    return {
        "stream": stream,
        "record": read(record),
        "log": read(log),
        "wide": read(WIDE),
        "seed": read(SEED),
        "dmon": read(DMON),
    }


def interval(snapshots: list[Snapshot]) -> float:
    times = [s.timestamp for s in snapshots if s.timestamp is not None]
    return statistics.median((b - a).total_seconds() for a, b in itertools.pairwise(times))


def state_runs(snapshots: list[Snapshot]) -> Iterator[tuple[GpuState, float]]:
    """(state, seconds) of each run of one state, from its first sample to the next run's."""
    start: datetime | None = None
    state: GpuState | None = None
    for snapshot in snapshots:
        now = sample_state(snapshot.gpu(0))
        assert snapshot.timestamp is not None
        if now is not state:
            if state is not None and start is not None:
                yield state, (snapshot.timestamp - start).total_seconds()
            state, start = now, snapshot.timestamp


@pytest.mark.parametrize("name", [*WITH_REASONS, *WITHOUT_REASONS])
def test_each_format_follows_the_loads_timeline(runs: dict[str, list[Snapshot]], name: str) -> None:
    snapshots = runs[name]
    slack = SLACK_SAMPLES * interval(snapshots)
    found = list(state_runs(snapshots))
    # The first run is cut by the start of the recording: the whole runs after it.
    inner = found[1:]
    assert len(inner) >= 10
    assert [state for state, _ in inner] == [
        GpuState.WAITING if n % 2 == (0 if inner[0][0] is GpuState.WAITING else 1)
        else GpuState.BUSY
        for n in range(len(inner))
    ]  # fmt: skip
    for state, seconds in inner:
        expected = BUSY_S if state is GpuState.BUSY else WAITING_S
        assert abs(seconds - expected) <= slack, (name, state, seconds)
    # Process B holds 10 GiB all along: never idle; and never throttled.
    states = {sample_state(s.gpu(0)) for s in snapshots}
    assert states == {GpuState.BUSY, GpuState.WAITING}


def summary_of(snapshots: list[Snapshot]) -> GpuSummary:
    (gpu,) = summarize(snapshots).gpus
    return gpu


def test_busy_waiting_and_idle_agree_across_formats_within_two_samples(
    runs: dict[str, list[Snapshot]],
) -> None:
    summaries = {name: summary_of(snapshots) for name, snapshots in runs.items()}
    slack = SLACK_SAMPLES * max(interval(s) for s in runs.values())
    for figure in ("busy_s", "waiting_s", "idle_s"):
        values = {name: getattr(gpu, figure) for name, gpu in summaries.items()}
        assert None not in values.values(), figure
        assert max(values.values()) - min(values.values()) <= slack, (figure, values)
    for name, gpu in summaries.items():
        assert gpu.idle_s == 0.0
        assert gpu.busy_s is not None and gpu.duration_s > 0
        # 8 s out of every 12: two thirds of the run, give or take the cut ends.
        assert abs(gpu.busy_s / gpu.duration_s - BUSY_S / (BUSY_S + WAITING_S)) < 0.05, name


@pytest.mark.parametrize("name", WITH_REASONS)
def test_the_power_cap_is_a_fact_beside_busy_not_throttling(
    runs: dict[str, list[Snapshot]], name: str
) -> None:
    gpu = summary_of(runs[name])
    assert gpu.throttled_s == 0.0
    share = gpu.busy_at_cap_share
    assert share is not None and share >= 0.9
    assert gpu.power_cap is not None and gpu.power_cap.limit_w == 700.0
    assert gpu.power_cap.sm_clock_mhz is not None
    low, high = gpu.power_cap.sm_clock_mhz
    assert 1200 <= low < high < 1980  # below the 1980 MHz top: the cap holds the clocks


@pytest.mark.parametrize("name", WITHOUT_REASONS)
def test_a_log_without_clock_event_reasons_says_throttled_is_not_known(
    runs: dict[str, list[Snapshot]], name: str
) -> None:
    gpu = summary_of(runs[name])
    assert gpu.throttled_s is None and gpu.busy_at_cap_s is None
    assert gpu.busy_s is not None and gpu.busy_s > 0


def table_row(report: str) -> dict[str, str]:
    """The first GPU's row of the report's table, by column."""
    lines = report.splitlines()
    return dict(zip(re.split(r"\s{2,}", lines[2].strip()), lines[3].split(), strict=True))


@pytest.mark.parametrize("path", [SEED, DMON], ids=lambda p: p.name)
def test_report_shows_throttled_na_with_its_reason_never_0s(path: Path) -> None:
    out = io.StringIO()
    assert report_main([str(path)], stdout=out) == 0
    row = table_row(out.getvalue())
    assert row["THROTTLED"] == "n/a"
    assert row["BUSY"] == "56s" and row["IDLE"] == "0s"
    assert "GPU 0: THROTTLED n/a: the recording holds no clock-event (throttle) reasons" in (
        out.getvalue()
    )
    out = io.StringIO()
    assert report_main([str(path), "--json"], stdout=out) == 0
    (gpu,) = json.loads(out.getvalue())["gpus"]
    assert gpu["throttled_s"] is None
    assert "clock-event" in gpu["unavailable"]["throttled_s"]


def test_report_of_the_stream_says_busy_at_the_cap() -> None:
    out = io.StringIO()
    assert report_main([str(STREAM)], stdout=out) == 0
    text = out.getvalue()
    row = table_row(text)
    verdict = (row["BUSY"], row["WAITING"], row["IDLE"], row["THROTTLED"])
    assert verdict == ("55s", "29s", "0s", "0s")
    assert "busy 55s, 100% of it at the 700W power cap (SM clock 1425-1920MHz)" in text


def test_the_panel_says_busy_at_the_cap_as_information_not_a_warning() -> None:
    """The panel showed "power capped since …" and a red power gauge at full load."""
    stream = read(STREAM)
    history = stream[:37]  # 06:43:18, in a burst, at 694 W of 700 W
    gpu = history[-1].gpu(0)
    assert gpu is not None and gpu.utilization.gpu == 97.0
    findings = diagnose(history, 0)
    shown = worst_finding(findings)
    assert shown is not None
    text, role = shown
    assert text.startswith("busy at the 700W power cap since 06:43:13 (drawing 694W")
    assert role == "value"
    assert all(f.severity is Severity.INFO for f in findings)
    assert power_level(gpu) is Level.OK
    assert all(level in (Level.OK, Level.NA) for _, level in detail_parts(gpu))
    # The history marks no throttling in a burst at the cap.
    assert throttled(gpu) is False


def test_the_exporters_gpu_state_is_busy_at_the_cap(runs: dict[str, list[Snapshot]]) -> None:
    """`gputop_gpu_state` takes the one definition: busy at the cap, waiting between."""
    tracker = ExportTracker()
    states = [
        tracker.update(snapshot, float(n))[0].state for n, snapshot in enumerate(runs["stream"])
    ]
    assert states == [sample_state(s.gpu(0)).value for s in runs["stream"]]
    assert set(states) == {"busy", "waiting"}


def test_dmons_pclk_is_the_sm_clock_the_panel_and_history_show(
    runs: dict[str, list[Snapshot]],
) -> None:
    """dmon's pclk (processor clock) is the SM clock: `--query-gpu`'s clocks.current.sm
    of the same run moves with it (1245-1515 MHz in a burst, 1980 between)."""
    gpu = runs["dmon"][0].gpu(0)
    assert gpu is not None and gpu.clocks.sm == 1440 and gpu.clocks.memory == 3201
    assert ("sm 1440 mem 3201 MHz", Level.OK) in detail_parts(gpu)
    assert GPU_BY_PATH[Metric.SM_CLOCK.value].read(gpu) == 1440
    clocks = [g.clocks.sm for s in runs["dmon"] for g in s.gpus]
    wide = [g.clocks.sm for s in runs["wide"] for g in s.gpus]
    assert len(clocks) == len(runs["dmon"]) and None not in clocks and None not in wide
    assert max(c or 0 for c in clocks) == max(c or 0 for c in wide) == 1980
