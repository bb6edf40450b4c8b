"""Replay through the whole app: real recordings, the threaded poller, errors at launch."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from gputop.cli.options import Options
from gputop.cli.tui import run_tui, tui_pipeline
from gputop.errors import BadArguments, BadCapture
from gputop.pipeline.feed import ReplayFeed
from gputop.pipeline.gpu_select import GpuSelection
from gputop.pipeline.loop import PollLoop
from gputop.sinks.smi_xml import snapshot_to_xml
from gputop.sources.playback.replay import ReplayPlayer
from gputop.sources.smi.recording import Recording
from gputop.ui.app import GputopApp
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.status_line import ReplayBar
from support.apps import FIXED_SETTINGS, load, timeline_app, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"


def write_stream(path: Path, count: int, *, cut_tail: bool = False) -> Path:
    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), count)
    data = b"".join(snapshot_to_xml(snapshot) for snapshot in stream)
    if cut_tail:
        data += snapshot_to_xml(stream[0])[:500]
    path.write_bytes(data)
    return path


def paused(app: GputopApp) -> bool:
    tick = app.last_tick
    return tick is not None and tick.replay is not None and tick.replay.paused


async def wait_for(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def test_run_tui_reports_unreadable_captures_and_bad_selections(tmp_path: Path) -> None:
    with pytest.raises(BadCapture):
        run_tui(Options(replay=tmp_path / "missing.xml"))
    with pytest.raises(BadArguments, match="nothing matches"):
        run_tui(Options(replay=CAPTURES / "tesla-t4-v11.xml", gpu="7"))
    with pytest.raises(BadArguments, match="nothing to show"):
        run_tui(Options())


async def test_the_poller_plays_a_recording_and_space_pauses_it(tmp_path: Path) -> None:
    recording = Recording.open(write_stream(tmp_path / "stream.xml", 200))
    player = ReplayPlayer(recording, speed=64.0)
    app = GputopApp(PollLoop(tui_pipeline(ReplayFeed(player))), FIXED_SETTINGS)

    def position() -> int:
        tick = app.last_tick
        return -1 if tick is None or tick.replay is None else tick.replay.position

    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: position() > 20)
        await pilot.press("space")
        await wait_for(lambda: paused(app))
        stopped_at = position()
        await asyncio.sleep(0.6)
        assert position() == stopped_at
        await pilot.press("right")
        await wait_for(lambda: position() == stopped_at + 1)
        bar = app.main_screen.query_one(ReplayBar)
        assert f"{stopped_at + 2}/200" in bar.plain and "paused" in bar.plain
        await pilot.press("q")
    recording.close()


async def test_a_cut_off_recording_plays_what_is_complete_and_says_so(tmp_path: Path) -> None:
    recording = Recording.open(write_stream(tmp_path / "cut.xml", 5, cut_tail=True))
    app = timeline_app(recording, position=4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.main_screen.query_one(ReplayBar)
        assert "5/5" in bar.plain and "1 warning" in bar.plain
        assert any("incomplete" in n.message for n in app._notifications)
    recording.close()


async def test_gpu_selection_applies_to_the_replay(tmp_path: Path) -> None:
    recording = Recording.open(write_stream(tmp_path / "stream.xml", 5))
    player = ReplayPlayer(recording, paused=True)
    pipeline = tui_pipeline(ReplayFeed(player), selection=GpuSelection.parse("1,3"))
    app = GputopApp(PollLoop(pipeline), FIXED_SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: app.last_tick is not None)
        await pilot.pause()
        panels = list(app.main_screen.query(GpuPanel))
        indices = [panel.gpu.index for panel in panels if panel.gpu is not None]
        assert indices == [1, 3]
    recording.close()
