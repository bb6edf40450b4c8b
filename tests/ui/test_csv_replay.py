"""A `--query-gpu` CSV log plays in the TUI as an XML recording does."""

from __future__ import annotations

from pathlib import Path

from gputop.sources.csvlog import CsvRecording
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.status_line import ReplayBar
from support.apps import timeline_app

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


async def test_a_real_csv_log_replays_in_the_app() -> None:
    recording = CsvRecording.open(SNAPSHOTS / "csv-l40s-595.csv")
    app = timeline_app(recording, position=1, source_label="csv-l40s-595.csv")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.main_screen.query_one(ReplayBar)
        assert "2/2" in bar.plain
        (panel,) = app.main_screen.query(GpuPanel)
        assert panel.gpu is not None
        assert panel.gpu.name == "NVIDIA L40S"
        assert panel.gpu.utilization.gpu == recording.snapshot(1).gpus[0].utilization.gpu
        await pilot.press("left")
        await pilot.pause()
        assert "1/2" in app.main_screen.query_one(ReplayBar).plain
    recording.close()
