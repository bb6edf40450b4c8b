"""A followed recording in the app: the bar says following, keys work from one document on."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from gputop.cli.tui import tui_pipeline
from gputop.model import Snapshot
from gputop.pipeline.feed import ReplayFeed
from gputop.pipeline.loop import ManualLoop
from gputop.sources.playback.replay import ReplayPlayer
from gputop.ui.app import GputopApp
from gputop.ui.widgets.status_line import ReplayBar
from support.apps import FIXED_SETTINGS, SnapshotTimeline, load, varied_stream

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


class GrowingSnapshots(SnapshotTimeline):
    """An in-memory recording still being written: ``publish`` appends what is next."""

    def __init__(self, snapshots: list[Snapshot], shown: int) -> None:
        super().__init__(snapshots[:shown])
        self._coming = snapshots[shown:]
        self.following = True

    def publish(self, count: int = 1) -> None:
        self._snapshots += self._coming[:count]
        del self._coming[:count]


async def test_a_followed_recording_shows_new_snapshots_and_steps_back() -> None:
    stream = varied_stream(load(CAPTURE), 10)
    timeline = GrowingSnapshots(stream, 1)
    loop = ManualLoop(tui_pipeline(ReplayFeed(ReplayPlayer(timeline))))
    app = GputopApp(loop, FIXED_SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.main_screen.query_one(ReplayBar)
        # One document so far, yet not a still: more are coming.
        assert "following" in bar.plain and "1/1" in bar.plain and "still" not in bar.plain
        timeline.publish(3)
        loop.advance()
        await pilot.pause()
        assert "following" in bar.plain and "4/4" in bar.plain
        stamp = stream[3].timestamp
        assert stamp is not None and f"{stamp:%H:%M:%S}" in bar.plain
        await pilot.press("left")
        await pilot.pause()
        assert "paused" in bar.plain and "3/4" in bar.plain
        timeline.publish(2)
        loop.advance()
        await pilot.pause()
        assert "paused" in bar.plain and "3/6" in bar.plain
        await pilot.press("end")
        await pilot.pause()
        assert "following" in bar.plain and "6/6" in bar.plain
        first = stream[0].timestamp
        assert first is not None
        assert f"{first + timedelta(seconds=5):%H:%M:%S}" in bar.plain
        timeline.following = False
        loop.advance()
        await pilot.pause()
        assert "the stream ended" in bar.plain and "following" not in bar.plain
