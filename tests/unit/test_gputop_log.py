"""gputop reads the CSV its own `--log` writes (issue 25): `--replay X.xml --count N --log
conv.csv`, then `--replay conv.csv --once` and `report conv.csv`, as the README offers."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gputop.cli.main import main
from gputop.cli.report import report_main
from gputop.model import Reason
from gputop.model.fields import CSV_LOG
from gputop.sources.recordings.formats import detect, open_recording
from gputop.sources.smi.recording import Recording

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
FOUR = SNAPSHOTS / "rtx3090x4-procs-v12.xml"
H200 = SNAPSHOTS / "h200-live" / "h200-train-stream.xml.gz"


def convert(source: Path, target: Path, count: int) -> Path:
    assert main(["--replay", str(source), "--count", str(count), "--log", str(target),
                 "--json"]) == 0  # fmt: skip
    return target


def test_a_converted_recording_replays_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = convert(H200, tmp_path / "conv.csv", 3)
    capsys.readouterr()
    assert detect(log.read_bytes()[:4096]) is not None
    assert main(["--replay", str(log), "--once"]) == 0
    once = capsys.readouterr()
    assert "not a recording" not in once.err
    assert "NVIDIA H200" in once.out and "98%" in once.out and "690W / 700W" in once.out
    out = io.StringIO()
    assert report_main([str(log)], stdout=out) == 0
    assert out.getvalue().startswith(f"{log}: 3 snapshots, 2026-11-28 06:42:39 to")


def test_every_column_reads_back_as_the_recording_had_it(tmp_path: Path) -> None:
    log = convert(FOUR, tmp_path / "four.csv", 1)
    with Recording.open(FOUR) as recording:
        original = recording.snapshot(0)
    with open_recording(log) as recording:
        (back,) = list(recording)
    assert back.timestamp == original.timestamp
    assert len(back.gpus) == len(original.gpus) == 4
    for before, after in zip(original.gpus, back.gpus, strict=True):
        for field in CSV_LOG:
            if field.path == "processes":
                continue  # a count in the log: the list is unknown, not empty
            value = field.read(before)
            if field.unit == "B" and value is not None:
                value -= value % 1024**2  # the log holds whole MiB
            if isinstance(value, float):
                value = round(value, 2)
            assert field.read(after) == value, field.path
        assert after.processes == ()
        assert after.reason("processes") is Reason.NOT_IN_LOG
        # What the log has no column for is "not in this log", never 0.
        assert after.clocks.graphics is None
        assert after.reason("clocks.graphics") is Reason.NOT_IN_LOG


def test_the_report_of_a_converted_log_is_the_recordings(tmp_path: Path) -> None:
    log = convert(H200, tmp_path / "h200.csv", 80)
    keys = ("busy_s", "waiting_s", "idle_s", "throttled_s", "busy_at_power_cap_s", "samples")
    figures = []
    for path in (H200, log):
        out = io.StringIO()
        assert report_main([str(path), "--json", "--max-gap", "10"], stdout=out) == 0
        (gpu,) = json.loads(out.getvalue())["gpus"]
        figures.append({key: gpu[key] for key in keys})
    assert figures[0] == figures[1]
