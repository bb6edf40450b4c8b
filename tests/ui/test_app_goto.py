"""The `g` dialog refuses a time outside the recording, at either end, with its span."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from gputop.ui.app import GputopApp
from gputop.ui.screens.goto import GotoDialog
from gputop.ui.screens.main import MainScreen
from support.apps import load, replay_app, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
SPAN = "runs from 2024-09-18 21:34:12 to 21:34:51 (40 snapshots)"


def position(app: GputopApp) -> int:
    tick = app.last_tick
    assert tick is not None and tick.replay is not None
    return tick.replay.position


async def test_g_refuses_times_past_either_end_and_shows_the_span() -> None:
    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 40)
    app = replay_app(stream, position=10)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("g")
        assert isinstance(app.screen, GotoDialog)
        hint = str(app.screen.query_one(".dialog-hint", Static).render())
        assert SPAN in hint
        for typed, where in (("21:35:30", "after the recording ends"), ("21:34:11", "before")):
            await pilot.press(*typed, "enter")
            await pilot.pause()
            assert isinstance(app.screen, GotoDialog)  # still asking: nothing was shown
            error = str(app.screen.query_one("#goto-error", Static).render())
            assert where in error and SPAN in error
            for _ in typed:
                await pilot.press("backspace")
        await pilot.press(*"21:34:51", "enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and position(app) == 39
