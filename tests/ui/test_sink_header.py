"""The header says that `--record` and `--log` are running, into which files, and when one of
them has stopped; the stop stays on screen, not only in a toast."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop.cli.tui import tui_pipeline
from gputop.model import Snapshot
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.sinks.fanout import SnapshotSinks
from gputop.ui.app import GputopApp
from gputop.ui.widgets.status_line import StatusHeader
from support.apps import FIXED_SETTINGS, CyclingSource, load, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
BOTH = "⚠ rec box.xml: No space left on device  ⚠ log gpus.csv: No space left on device"
FULL = "--log /var/log/gpus.csv: write failed: No space left on device"


class Sink:
    def __init__(self, option: str, path: str, fail_from: int | None = None) -> None:
        self.option = option
        self.path = Path(path)
        self.fail_from = fail_from
        self.fail_with = FULL
        self.written = 0

    def write(self, snapshot: Snapshot) -> None:
        if self.fail_from is not None and self.written >= self.fail_from:
            from gputop.sinks.csv_log import CsvLogError

            raise CsvLogError(self.fail_with)
        self.written += 1

    def close(self) -> None:
        pass


def app_with_sinks(*sinks: Sink) -> GputopApp:
    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 4)
    pipeline = tui_pipeline(LiveFeed(CyclingSource(stream)), recorder=SnapshotSinks(list(sinks)))
    return GputopApp(ManualLoop(pipeline), FIXED_SETTINGS)


@pytest.mark.parametrize("width", [120, 80])
async def test_the_header_names_the_files_being_written(width: int) -> None:
    app = app_with_sinks(Sink("--record", "/data/box.xml.gz"), Sink("--log", "/var/log/gpus.csv"))
    async with app.run_test(size=(width, 30)) as pilot:
        await pilot.pause()
        line = app.main_screen.query_one(StatusHeader).render_line(0).text
    assert line.endswith("● rec box.xml.gz  ● log gpus.csv  live · every 1s ")
    assert line.startswith(" gputop  driver")


async def test_a_stopped_log_stays_in_the_header_and_the_recording_goes_on() -> None:
    record = Sink("--record", "/data/box.xml")
    log = Sink("--log", "/var/log/gpus.csv", fail_from=1)
    app = app_with_sinks(record, log)
    async with app.run_test(size=(150, 30)) as pilot:
        await pilot.pause()
        header = app.main_screen.query_one(StatusHeader)
        assert "● log gpus.csv" in header.plain
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        failed = header.render_line(0).text
        toasts = [n.message for n in app._notifications]
        for _ in range(3):
            app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()
        later = header.render_line(0).text
    assert failed.endswith("● rec box.xml  ⚠ log stopped  live · every 1s ")
    assert failed.startswith(" gputop  ⚠ log gpus.csv: No space left on device  driver ")
    assert failed.count("No space") == 1 and failed.count("gpus.csv") == 1
    assert later == failed  # not a toast that goes away: it stays
    assert toasts == [f"{FULL} (stopped)"]
    assert record.written == 5 and log.written == 1


async def test_a_narrow_header_keeps_the_stop_and_cuts_the_details() -> None:
    app = app_with_sinks(Sink("--log", "/var/log/gpus.csv", fail_from=0))
    async with app.run_test(size=(70, 24)) as pilot:
        await pilot.pause()
        line = app.main_screen.query_one(StatusHeader).render_line(0).text
    assert len(line) == 70
    assert line.endswith("⚠ log stopped  live · every 1s ")
    assert line.startswith(" gputop  ⚠ log") and "…" in line


@pytest.mark.parametrize("width", [220, 140, 100])
async def test_each_failure_reads_once_with_its_file_cut_at_a_word(width: int) -> None:
    record = Sink("--record", "/data/box.xml", fail_from=0)
    record.fail_with = "--record /data/box.xml: write failed: No space left on device"
    log = Sink("--log", "/var/log/gpus.csv", fail_from=0)
    app = app_with_sinks(record, log)
    async with app.run_test(size=(width, 30)) as pilot:
        await pilot.pause()
        line = app.main_screen.query_one(StatusHeader).render_line(0).text
    assert line.endswith("⚠ rec stopped  ⚠ log stopped  live · every 1s ")
    assert line.count("box.xml") <= 1 and line.count("gpus.csv") <= 1
    if width >= 140:
        assert BOTH in line
    else:
        # Cut at a word of the errors, never mid-word, nor leaving a bare "⚠".
        left = line.split("  ⚠ rec stopped")[0].rstrip()
        assert left == " gputop  ⚠ rec box.xml: No space left on device…"
