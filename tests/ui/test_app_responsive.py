"""The UI stays responsive while the source blocks, and a lagging UI skips to the newest tick."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from textual.message import Message

from gputop.cli.tui import tui_pipeline
from gputop.model import Snapshot
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import PollLoop
from gputop.pipeline.tick import Tick
from gputop.ui.app import GputopApp
from gputop.ui.messages import TickArrived
from gputop.ui.screens.help import HelpScreen
from gputop.ui.screens.main import MainScreen
from support.apps import FIXED_SETTINGS, live_app, load, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
# Only a safety net: the test releases the source itself once it has checked the UI.
BLOCK_SECONDS = 60.0


class BlockingSource:
    """Answers its first poll at once; the second blocks until released."""

    def __init__(self, snapshots: list[Snapshot]) -> None:
        self.snapshots = snapshots
        self.polls = 0
        self.blocking = threading.Event()
        self.release = threading.Event()
        self.threads: set[str] = set()

    def poll(self) -> Snapshot:
        self.threads.add(threading.current_thread().name)
        self.polls += 1
        if self.polls == 2:
            self.blocking.set()
            self.release.wait(BLOCK_SECONDS)
        return self.snapshots[self.polls % len(self.snapshots)]

    def close(self) -> None:
        self.release.set()


async def wait_for(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def test_keys_and_timers_work_while_the_source_blocks_for_seconds() -> None:
    source = BlockingSource(varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 5))
    app = GputopApp(PollLoop(tui_pipeline(LiveFeed(source), interval=0.25)), FIXED_SETTINGS)
    timer_ticks = 0

    def count() -> None:
        nonlocal timer_ticks
        timer_ticks += 1

    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: app.ticks_shown >= 1)
        app.set_interval(0.05, count)
        await wait_for(source.blocking.is_set)
        timers_before = timer_ticks

        await pilot.press("m")
        assert app.main_screen.has_class("-mig")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        await wait_for(lambda: timer_ticks - timers_before >= 5)

        # All of that happened while the poller was still stuck in the source.
        assert source.blocking.is_set() and not source.release.is_set()
        assert source.polls == 2

        source.release.set()
        shown = app.ticks_shown
        await wait_for(lambda: app.ticks_shown > shown)
    assert source.threads == {"gputop-poller"}


async def test_a_lagging_ui_renders_only_the_newest_of_a_burst_of_ticks() -> None:
    snapshots = varied_stream(load(CAPTURES / "tesla-t4-v11.xml"), 200)
    app = live_app(snapshots[:1])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = app.ticks_shown
        ticks = [Tick(seq=1000 + n, snapshot=snapshot) for n, snapshot in enumerate(snapshots)]

        def burst() -> None:
            for tick in ticks:
                app.post_message(TickArrived(tick))

        poster = threading.Thread(target=burst)
        poster.start()
        # Keep the UI thread busy while the poller thread posts: the ticks queue up.
        time.sleep(0.3)
        poster.join()
        await pilot.pause()
        await pilot.pause()
        assert app.last_tick is ticks[-1]
        assert app.ticks_shown - shown < len(ticks) // 4


def test_tick_messages_replace_each_other_and_nothing_else() -> None:
    first = TickArrived(Tick(seq=1, snapshot=Snapshot(timestamp=None)))
    second = TickArrived(Tick(seq=2, snapshot=Snapshot(timestamp=None)))
    assert first.can_replace(second) and second.can_replace(first)
    assert not first.can_replace(Message())
