"""`gputop report`: figures checked against hand-computed values on a small recording."""

from __future__ import annotations

import dataclasses
import io
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop import patches
from gputop.cli.main import main
from gputop.cli.report import build_report, job_count, report_main
from gputop.insight.charts import render_gpu_charts
from gputop.insight.report import ReportBuilder, fmt_energy, render_table, summary_to_json
from gputop.insight.series import (
    NAN,
    downsample,
    downsample_flags,
    percentile,
    time_ticks,
)
from gputop.model import (
    GpuSample,
    Memory,
    Power,
    ProcessSample,
    Snapshot,
    Utilization,
)
from gputop.model.units import fmt_count
from gputop.plotext_compat import new_figure
from gputop.sinks.smi_xml import snapshot_to_xml
from support.shortcuts import summarize

GIB = 1024**3
T0 = datetime(2024, 9, 18, 14, 0, 0)
OFFSETS = (0, 1, 2, 3, 10)
"""Seconds: four samples one second apart, then a 7 s hole."""

TRAINER = ProcessSample(pid=4242, type="C", name="python", memory_used=GIB)


def _trainer(step: int) -> GpuSample:
    utils = (10.0, 20.0, 30.0, 40.0, None)
    powers = (100.0, 200.0, 200.0, 100.0, 100.0)
    used = (1, 2, 3, 2, 1)
    return GpuSample(
        index=0,
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-aaaa",
        utilization=Utilization(gpu=utils[step]),
        memory=Memory(total=80 * GIB, used=used[step] * GIB),
        power=Power(draw=powers[step], limit=400.0),
        throttle_reasons=("sw_thermal_slowdown",) if step == 2 else (),
        processes=(TRAINER,),
    )


def _idler(step: int) -> GpuSample:
    return GpuSample(
        index=1,
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-bbbb",
        utilization=Utilization(gpu=0.0),
        memory=Memory(total=80 * GIB, used=0),
        power=Power(draw=50.0, limit=400.0),
        throttle_reasons=("gpu_idle",),
    )


def small_recording() -> list[Snapshot]:
    return [
        Snapshot(timestamp=T0 + timedelta(seconds=offset), gpus=(_trainer(i), _idler(i)))
        for i, offset in enumerate(OFFSETS)
    ]


def write_stream(path: Path, snapshots: list[Snapshot], tail: bytes = b"") -> Path:
    """What `nvidia-smi -q -x -l 1 > path` leaves: whole documents one after another."""
    path.write_bytes(b"".join(snapshot_to_xml(s) for s in snapshots) + tail)
    return path


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- figures --------------------------------------------------------------------------------
# Hand computation with --max-gap 5 (GPU 0):
#   states: 10% waiting, 20% waiting, throttled, 40% busy, util unknown (held) -> unknown
#   intervals 0-1 waiting, 1-2 waiting, 2-3 throttled; 3-10 is a 7 s gap
#   utilization over [10, 20, 30, 40]: mean 25, p50 25, p95 30 + 0.85 * 10 = 38.5
#   energy (100+200)/2 + (200+200)/2 + (200+100)/2 = 500 J = 0.13889 Wh
# GPU 1 idles at 50 W: idle 3 s, energy 150 J = 0.041667 Wh.


def test_summary_matches_hand_computed_figures() -> None:
    summary = summarize(small_recording(), max_gap_s=5.0)
    trainer, idler = summary.gpus
    assert summary.snapshots == 5
    assert summary.duration_s == 10.0
    assert trainer.samples == 5
    assert trainer.duration_s == 10.0
    assert trainer.utilization_samples == 4
    assert trainer.utilization_mean_pct == pytest.approx(25.0)
    assert trainer.utilization_p50_pct == pytest.approx(25.0)
    assert trainer.utilization_p95_pct == pytest.approx(38.5)
    assert (trainer.busy_s, trainer.waiting_s, trainer.idle_s) == (0.0, 2.0, 0.0)
    assert (trainer.throttled_s, trainer.unknown_s, trainer.gap_s) == (1.0, 0.0, 7.0)
    assert trainer.peak_memory_used_bytes == 3 * GIB
    assert trainer.peak_power_w == 200.0
    assert trainer.energy_wh == pytest.approx(500 / 3600)
    assert idler.idle_s == 3.0
    assert idler.waiting_s == idler.busy_s == idler.throttled_s == 0.0
    assert idler.energy_wh == pytest.approx(150 / 3600)
    assert idler.utilization_p95_pct == 0.0


def test_automatic_gap_threshold_keeps_a_7s_hole_in_a_1s_recording() -> None:
    # Median interval 1 s: the threshold is the 10 s floor, so 3 -> 10 is integrated.
    builder = ReportBuilder().add_all(small_recording())
    assert builder.max_gap_s == 10.0
    trainer = builder.summary().gpus[0]
    assert trainer.gap_s == 0.0
    assert trainer.busy_s == 7.0
    assert trainer.energy_wh == pytest.approx((500 + 100 * 7) / 3600)


def test_gpu_without_power_has_no_energy_and_untimed_snapshots_are_left_out() -> None:
    gpu = GpuSample(index=0, utilization=Utilization(gpu=50.0))
    summary = summarize(
        [
            Snapshot(T0, (gpu,)),
            Snapshot(None, (gpu,)),
            Snapshot(T0 + timedelta(seconds=1), (gpu,)),
        ]
    )
    assert summary.snapshots == 3
    assert summary.untimed_snapshots == 1
    (only,) = summary.gpus
    assert only.samples == 2
    assert only.energy_wh is None
    assert only.peak_power_w is None
    assert "\n1 snapshot without a timestamp left out\n" in render_table(summary)
    assert "; 2 samples; busy 1s; " in render_table(summary)


def test_report_json_of_a_recording_file(tmp_path: Path) -> None:
    path = write_stream(tmp_path / "run.xml", small_recording())
    out = io.StringIO()
    assert report_main([str(path), "--json", "--max-gap", "5"], stdout=out) == 0
    data = json.loads(out.getvalue())
    assert data["snapshots"] == 5
    assert data["complete"] is True
    assert data["start"] == "2024-09-18T14:00:00"
    assert data["end"] == "2024-09-18T14:00:10"
    assert data["max_gap_s"] == 5.0
    assert data["backward_steps"] == 0
    trainer, idler = data["gpus"]
    assert trainer == {
        "index": 0,
        "name": "NVIDIA A100-SXM4-80GB",
        "uuid": "GPU-aaaa",
        "samples": 5,
        "start": "2024-09-18T14:00:00",
        "end": "2024-09-18T14:00:10",
        "duration_s": 10.0,
        "utilization_samples": 4,
        "utilization_mean_pct": 25.0,
        "utilization_p50_pct": 25.0,
        "utilization_p95_pct": 38.5,
        "busy_s": 0.0,
        "busy_at_power_cap_s": 0.0,
        "power_cap_w": None,
        "power_cap_sm_clock_mhz": None,
        "waiting_s": 2.0,
        "idle_s": 0.0,
        "throttled_s": 1.0,
        "unknown_s": 0.0,
        "gap_s": 7.0,
        "peak_memory_used_bytes": 3 * GIB,
        "memory_total_bytes": 80 * GIB,
        "peak_power_w": 200.0,
        "energy_wh": 0.1389,
        "unavailable": {},
    }
    assert idler["idle_s"] == 3.0
    assert idler["energy_wh"] == 0.0417


def test_report_table_without_charts_when_not_a_terminal(tmp_path: Path) -> None:
    path = write_stream(tmp_path / "run.xml", small_recording())
    out = io.StringIO()
    assert report_main([str(path), "--max-gap", "5"], stdout=out) == 0
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == (f"{path}: 5 snapshots, 2024-09-18 14:00:00 to 2024-09-18 14:00:10 (10s)")
    header = lines[2].split()
    assert header[:5] == ["GPU", "TIME", "UTIL", "P50", "P95"]
    assert header[5:9] == ["BUSY", "WAITING", "IDLE", "THROTTLED"]
    assert lines[3].split() == [
        "0", "10s", "25%", "25%", "38%", "0s", "2s", "0s", "1s", "3072MiB", "200W", "0.14Wh",
    ]  # fmt: skip
    assert lines[4].split() == [
        "1", "10s", "0%", "0%", "0%", "0s", "0s", "3s", "0s", "0MiB", "50W", "0.04Wh",
    ]  # fmt: skip
    assert "GPU 0: NVIDIA A100-SXM4-80GB (GPU-aaaa)" in text
    assert "utilization %" not in text


def test_report_charts_on_request_and_on_a_terminal(tmp_path: Path) -> None:
    path = write_stream(tmp_path / "run.xml", small_recording())
    piped = io.StringIO()
    assert report_main([str(path), "--charts"], stdout=piped) == 0
    assert "GPU 0 utilization %" in piped.getvalue()
    assert "GPU 1 power W" in piped.getvalue()
    assert "\x1b[" not in piped.getvalue()  # no colour codes into a pipe
    tty = Tty()
    assert report_main([str(path)], stdout=tty) == 0
    assert "GPU 1 utilization %" in tty.getvalue()
    quiet = Tty()
    assert report_main([str(path), "--no-charts"], stdout=quiet) == 0
    assert "utilization %" not in quiet.getvalue()


def test_on_another_plotext_release_the_charts_are_left_out_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The figure each chart is drawn on is plotext's private class (``plotext_compat``):
    on a release it was not written for, a report without charts, not a traceback."""
    path = write_stream(tmp_path / "run.xml", small_recording())
    monkeypatch.setattr(patches, "_said", set())
    monkeypatch.setattr(patches, "installed_version", lambda package: "5.4.0")
    out = io.StringIO()
    assert report_main([str(path), "--charts"], stdout=out) == 0
    assert "GPU 0: NVIDIA A100-SXM4-80GB" in out.getvalue()
    assert "utilization %" not in out.getvalue()
    assert capsys.readouterr().err.splitlines() == [
        "gputop: plotext 5.4.0 is not 5.3, which gputop's own_figure patch was written for: "
        "charts left out"
    ]


def test_each_chart_is_drawn_on_a_figure_of_its_own_at_the_size_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """plotext's public functions draw on one figure, whose two-panel layout outlives
    ``clear_figure()``: a one-panel chart after a GPU's two panels was drawn twice. And a
    figure is capped at the terminal plotext finds (80 columns into a pipe) unless told."""
    monkeypatch.setenv("COLUMNS", "60")
    two = new_figure()
    one = new_figure()
    assert one is not None and two is not None and one is not two
    two.subplots(1, 2)
    one.theme("clear")
    one.plotsize(150, 10)
    one.bar(["a"], [1.0])
    one.title("one panel")
    text = one.build()
    assert text.count("one panel") == 1
    assert max(len(line) for line in text.splitlines()) > 150


def test_truncated_recording_reports_what_is_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshots = small_recording()
    cut = snapshot_to_xml(snapshots[-1])[:700]
    path = write_stream(tmp_path / "cut.xml", snapshots[:4], tail=cut)
    out = io.StringIO()
    assert report_main([str(path), "--json"], stdout=out) == 0
    data = json.loads(out.getvalue())
    assert data["snapshots"] == 4
    assert data["complete"] is False
    assert data["gpus"][0]["duration_s"] == 3.0
    err = capsys.readouterr().err
    assert "cut off" in err
    assert "the report covers the 4 snapshots that could be read" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file or directory"),
        (b"", "empty file"),
        (b"<html><body>404</body></html>", "HTML"),
    ],
)
def test_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, message: str
) -> None:
    path = tmp_path / "capture.xml"
    if content is not None:
        path.write_bytes(content)
    out = io.StringIO()
    assert report_main([str(path)], stdout=out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("gputop: ")
    assert message in err
    assert out.getvalue() == ""


def test_cli_dispatches_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_stream(tmp_path / "run.xml", small_recording())
    assert main(["report", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"][1]["uuid"] == "GPU-bbbb"
    assert main(["report", str(tmp_path / "missing.xml")]) == 2


def test_bad_max_gap_is_an_argument_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_main([str(tmp_path / "x.xml"), "--max-gap", "0"]) == 2
    assert capsys.readouterr().err.startswith("gputop: argument --max-gap: '0' is out of range")


def test_summary_json_of_an_empty_builder() -> None:
    data = summary_to_json(ReportBuilder().summary(source="nothing"))
    assert data["gpus"] == []
    assert data["start"] is None
    assert data["complete"] is True


def test_energy_format() -> None:
    assert fmt_energy(None) == "n/a"
    assert fmt_energy(0.1389) == "0.14Wh"
    assert fmt_energy(312.44) == "312.4Wh"
    assert fmt_energy(1250.0) == "1.25kWh"


def test_charts_mark_throttling_and_survive_missing_power() -> None:
    builder = ReportBuilder(max_gap_s=5.0).add_all(small_recording())
    trainer = builder.traces()[0]
    assert list(trainer.throttled) == [False, False, True, False, False]
    text = render_gpu_charts(trainer, T0, width=100, color=False)
    assert text is not None
    assert "GPU 0 utilization %" in text
    assert "GPU 0 power W (x: throttled)" in text
    plot_rows = [line for line in text.splitlines() if "┤" in line]
    assert "x" in plot_rows[0]  # the mark sits on the top row
    assert "14:00:00" in text and "14:00:10" in text
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    no_power = ReportBuilder().add_all(
        Snapshot(T0 + timedelta(seconds=i), (GpuSample(index=3),)) for i in range(3)
    )
    assert "not reported" in (render_gpu_charts(no_power.traces()[0], T0, 80, color=False) or "")


# -- chart data: thinning, percentiles, bounded history -------------------------------------


def test_downsample_averages_buckets_and_skips_unknown() -> None:
    xs = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    ys = [10.0, 20.0, NAN, NAN, 50.0, 70.0]
    assert downsample(xs, ys, 3) == ([0.5, 4.5], [15.0, 60.0])
    assert downsample(xs, ys, 10) == ([0.0, 1.0, 4.0, 5.0], [10.0, 20.0, 50.0, 70.0])
    with pytest.raises(ValueError):
        downsample(xs, ys, 0)


def test_downsample_never_exceeds_the_budget() -> None:
    xs = [float(i) for i in range(3600)]
    out_x, out_y = downsample(xs, xs, 160)
    assert 150 <= len(out_x) <= 160
    assert out_y[0] == pytest.approx(sum(range(23)) / 23)


def test_downsample_flags_marks_buckets_with_any_flag() -> None:
    xs = [0.0, 1.0, 2.0, 3.0]
    assert downsample_flags(xs, [False, True, False, False], 2) == [0.5]
    assert downsample_flags(xs, [False] * 4, 2) == []


def test_percentile_is_linear() -> None:
    assert percentile([10.0, 20.0, 30.0, 40.0], 0.95) == pytest.approx(38.5)
    assert percentile([7.0], 0.5) == 7.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_time_ticks_drop_repeated_labels() -> None:
    positions, labels = time_ticks(0.0, 1.0, lambda t: f"{int(t)}", count=4)
    assert labels == ["0", "1"]
    assert positions == [0.0, 1.0]


# -- parallel parsing -----------------------------------------------------------------------


def test_job_count() -> None:
    assert job_count(500, None, cpus=16) == 1  # too short to pay for workers
    assert job_count(3600, None, cpus=16) == 9  # at least 400 documents each
    assert job_count(3600, None, cpus=2) == 2
    assert job_count(100_000, None, cpus=16) == 16
    assert job_count(5, 8, cpus=1) == 5  # asked for: never more jobs than documents
    assert job_count(5, 1, cpus=16) == 1


def test_parallel_report_equals_one_pass(tmp_path: Path) -> None:
    snapshots = [
        Snapshot(timestamp=T0 + timedelta(seconds=s), gpus=(_trainer(s % 4), _idler(s)))
        for s in range(40)
    ]
    path = write_stream(tmp_path / "run.xml", snapshots)
    serial, serial_warnings = build_report(path, jobs=1)
    parallel, parallel_warnings = build_report(path, jobs=3)
    assert summary_to_json(parallel.summary()) == summary_to_json(serial.summary())
    assert parallel.traces()[0].times == serial.traces()[0].times
    assert parallel_warnings == serial_warnings == []


def test_parallel_report_skips_a_malformed_document_like_one_pass(tmp_path: Path) -> None:
    documents = [snapshot_to_xml(s) for s in small_recording()]
    documents[2] = documents[2].replace(b"<gpu>", b"<gpu <>", 1)  # not well-formed
    path = tmp_path / "bad.xml"
    path.write_bytes(b"".join(documents))
    serial, serial_warnings = build_report(path, jobs=1)
    parallel, parallel_warnings = build_report(path, jobs=2)
    assert serial.summary().snapshots == parallel.summary().snapshots == 4
    assert len(serial_warnings) == len(parallel_warnings) == 1
    assert "skipped document 2" in parallel_warnings[0]
    assert summary_to_json(parallel.summary()) == summary_to_json(serial.summary())


def test_parts_with_different_origins_cannot_merge() -> None:
    a = ReportBuilder(origin=T0).add_all(small_recording()[:2])
    b = ReportBuilder(origin=T0 + timedelta(seconds=2)).add_all(small_recording()[2:])
    with pytest.raises(ValueError, match="origin"):
        ReportBuilder.merged([a, b])
    merged = ReportBuilder.merged(
        [
            ReportBuilder(origin=T0).add_all(small_recording()[:2]),
            ReportBuilder(origin=T0).add_all(small_recording()[2:]),
        ]
    )
    whole = ReportBuilder().add_all(small_recording())
    assert merged.summary() == whole.summary()


def test_time_going_backwards_is_counted_and_not_integrated() -> None:
    offsets = (0, 1, 2, 1, 2)
    snapshots = [Snapshot(T0 + timedelta(seconds=o), (_idler(0),)) for o in offsets]
    summary = summarize(snapshots, max_gap_s=5.0)
    assert summary.backward_steps == 1
    (idler,) = summary.gpus
    assert idler.idle_s == 3.0  # 0-1, 1-2, then (2 -> 1 is a gap), 1-2
    assert "time went backwards once (" in render_table(summary)
    parts = [
        ReportBuilder(origin=T0).add_all(snapshots[:3]),
        ReportBuilder(origin=T0).add_all(snapshots[3:]),
    ]
    assert ReportBuilder.merged(parts).summary().backward_steps == 1


# -- several machines, GPUs by UUID, time going back ----------------------------------------

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


def test_a_directory_of_captures_of_different_machines_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `gputop report snapshots/` printed start after end, 101117 h idle and peak memory
    # above total: GPU 0 of eleven machines taken for one GPU.
    assert report_main([str(SNAPSHOTS), "--no-charts"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "11 different machines" in err and "report each on its own" in err
    folder = tmp_path / "two"
    folder.mkdir()
    for name in ("tesla-t4-v11.xml", "rtx3090x4-procs-v12.xml"):
        (folder / name).write_bytes((SNAPSHOTS / name).read_bytes())
    assert report_main([str(folder)]) == 2
    err = capsys.readouterr().err
    assert "2 different machines" in err
    assert "Tesla T4" in err and "4x NVIDIA GeForce RTX 3090" in err


def test_a_stream_appended_to_from_another_machine_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = [
        Snapshot(
            s.timestamp,
            tuple(dataclasses.replace(g, uuid=f"{g.uuid}-elsewhere") for g in s.gpus),
            host="elsewhere",
        )
        for s in small_recording()
    ]
    path = write_stream(tmp_path / "run.xml", small_recording() + other)
    assert report_main([str(path), "--json"]) == 2
    assert "2 different machines" in capsys.readouterr().err
    # Each machine alone reports; a GPU that fell off the bus leaves the same machine.
    fewer = [Snapshot(s.timestamp, s.gpus[:1]) for s in small_recording()[3:]]
    path = write_stream(tmp_path / "one.xml", small_recording()[:3] + fewer)
    assert report_main([str(path), "--json"]) == 0


def test_gpus_are_matched_by_uuid_not_by_position() -> None:
    snapshots = small_recording()
    # From the third snapshot on the two GPUs are listed the other way round.
    swapped = [
        Snapshot(
            s.timestamp,
            tuple(dataclasses.replace(g, index=1 - g.index) for g in reversed(s.gpus)),
        )
        for s in snapshots[2:]
    ]
    summary = summarize(snapshots[:2] + swapped, max_gap_s=5.0)
    by_uuid = {gpu.uuid: gpu for gpu in summary.gpus}
    assert sorted(str(uuid) for uuid in by_uuid) == ["GPU-aaaa", "GPU-bbbb"]
    assert by_uuid["GPU-aaaa"].samples == by_uuid["GPU-bbbb"].samples == 5
    # The trainer's figures are the ones of the unswapped recording.
    assert by_uuid["GPU-aaaa"] == summarize(snapshots, max_gap_s=5.0).gpus[0]


def test_two_gpus_given_one_uuid_stay_two() -> None:
    same = [
        Snapshot(s.timestamp, tuple(dataclasses.replace(g, uuid="GPU-anon") for g in s.gpus))
        for s in small_recording()
    ]
    summary = summarize(same, max_gap_s=5.0)
    assert [gpu.index for gpu in summary.gpus] == [0, 1]
    assert [gpu.samples for gpu in summary.gpus] == [5, 5]


def test_figures_across_time_going_back_are_not_printed_as_valid() -> None:
    offsets = (0, 1, 2, 1, 2)
    snapshots = [Snapshot(T0 + timedelta(seconds=o), (_idler(0),)) for o in offsets]
    summary = summarize(snapshots, max_gap_s=5.0)
    assert summary.start is None and summary.end is None
    (idler,) = summary.gpus
    assert idler.start is None and idler.end is None
    assert summary.duration_s == idler.duration_s == 3.0  # the steps that went forward
    table = render_table(summary)
    assert "start and end unknown" in table
    assert "2024-09-18 14:00:02 to 2024-09-18 14:00:01" not in table
    figures = summary_to_json(summary)
    assert (figures["start"], figures["end"], figures["duration_s"]) == (None, None, 3.0)
    forward = summarize(snapshots[:3], max_gap_s=5.0)
    assert (forward.start, forward.end) == (T0, T0 + timedelta(seconds=2))


def test_charts_are_left_out_when_time_went_back(tmp_path: Path) -> None:
    offsets = (0, 1, 2, 1, 2)
    snapshots = [Snapshot(T0 + timedelta(seconds=o), (_idler(0),)) for o in offsets]
    path = write_stream(tmp_path / "back.xml", snapshots)
    out = io.StringIO()
    assert report_main([str(path), "--charts"], stdout=out) == 0
    assert "charts left out: time went backwards" in out.getvalue()


def test_one_snapshot_and_one_sample_read_in_the_singular() -> None:
    """Issue 25: "1 snapshots", "1 samples"."""
    text = render_table(summarize([Snapshot(T0, (_idler(0),))]))
    assert text.startswith("recording: 1 snapshot, ")
    assert "; 1 sample; " in text
    assert "1 snapshots" not in text and "1 samples" not in text
    assert fmt_count(1, "process", "processes") == "1 process"
    assert fmt_count(2, "process", "processes") == "2 processes"
    assert fmt_count(0, "snapshot") == "0 snapshots"
