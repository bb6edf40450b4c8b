"""The history screen shows the span each window names, read from the poller's own history.

A live source stamps its samples with a manual clock that moves one interval a poll, as the
poller would at 1 s; the screen is opened from the main screen as a user does (Enter on a GPU
panel), and its title says the span and the number of samples the chosen window covers.
"""

from __future__ import annotations

from datetime import datetime

from textual.widgets import Static

from gputop.cli.tui import tui_pipeline
from gputop.model import GpuSample, Snapshot, Utilization
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.screens.history import HistoryScreen
from support.apps import FIXED_SETTINGS, open_history
from support.clock import ManualClock

START = datetime(2024, 9, 18, 14, 0, 0)


class ClockedSource:
    """A live source whose samples are taken ``interval`` s apart on ``clock``."""

    def __init__(self, clock: ManualClock, interval: float = 1.0) -> None:
        self.clock = clock
        self.interval = interval
        self.polls = 0

    def poll(self) -> Snapshot:
        if self.polls:
            self.clock.advance(self.interval)
        self.polls += 1
        gpu = GpuSample(
            index=0,
            uuid="GPU-7f3a",
            name="NVIDIA A100-SXM4-80GB",
            utilization=Utilization(gpu=float(self.polls % 100)),
        )
        return Snapshot(timestamp=self.clock.now(), gpus=(gpu,))

    def close(self) -> None:
        pass


def title(screen: HistoryScreen) -> str:
    return str(screen.query_one("#history-title", Static).render())


def windows(screen: HistoryScreen) -> dict[str, str]:
    """What the title says for each window key."""
    said: dict[str, str] = {}
    for key in ("1", "2", "3", "4"):
        screen.action_window(key)
        said[key] = title(screen).split("window ", 1)[1]
    return said


async def test_each_window_covers_its_span_after_ten_minutes_then_an_hour_then_two() -> None:
    clock = ManualClock(START)
    source = ClockedSource(clock)
    pipeline = tui_pipeline(LiveFeed(source))
    loop = ManualLoop(pipeline, warmup=600)  # the first tick shown is at 10 minutes
    app = GputopApp(loop, FIXED_SETTINGS, now=clock.now)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert clock.monotonic() == 600.0
        screen = await open_history(pilot)
        assert screen.key == "GPU-7f3a"
        assert windows(screen) == {
            "1": "1 min: 1m00s · 61 samples",
            "2": "10 min: 10m00s · 601 samples",
            "3": "1 h: 10m00s · 601 samples",  # all there is so far
            "4": "all: 10m00s · 601 samples",
        }
        for _ in range(3000 - 1):  # to an hour; ticks the screen does not see, as at warm-up
            pipeline.advance()
        loop.advance()  # the tick of second 3600 reaches the open screen
        await pilot.pause()
        assert clock.monotonic() == 3600.0
        assert windows(screen) == {
            "1": "1 min: 1m00s · 61 samples",
            "2": "10 min: 10m00s · 601 samples",
            "3": "1 h: 1h00m · 3,601 samples",
            "4": "all: 1h00m · 3,601 samples",
        }
        for _ in range(3600 - 1):
            pipeline.advance()
        loop.advance()
        await pilot.pause()
        assert windows(screen) == {
            "1": "1 min: 1m00s · 61 samples",
            "2": "10 min: 10m00s · 601 samples",
            "3": "1 h: 1h00m · 3,601 samples",
            # Beyond the hour of whole ticks, minute buckets: every tick is still counted.
            "4": "all: 2h00m · 7,201 samples",
        }


async def test_one_sample_is_said_in_the_singular() -> None:
    clock = ManualClock(START)
    app = GputopApp(ManualLoop(tui_pipeline(LiveFeed(ClockedSource(clock)))), FIXED_SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = await open_history(pilot)
        assert title(screen).endswith(": 0s · 1 sample")
