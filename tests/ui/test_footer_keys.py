"""The footer lets go of the keys it drew before (issue 17, RSS): Textual's footer draws its
keys again at each change of the bindings, and each key it drew stayed alive through the
footer's ``compact`` watcher, 14 keys at every change of focus for the life of the app."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gputop.cli.tui import tui_pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from support.apps import FIXED_SETTINGS, CyclingSource, load

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


def _keys_alive() -> int:
    gc.collect()
    return sum(1 for thing in gc.get_objects() if isinstance(thing, FooterKey))


@pytest.mark.patch("quiet_footer")
async def test_moving_the_focus_keeps_only_the_keys_on_screen() -> None:
    snapshot = load(CAPTURE)
    pipeline = tui_pipeline(LiveFeed(CyclingSource([snapshot])))
    app = GputopApp(ManualLoop(pipeline), FIXED_SETTINGS, first_tick=pipeline.start())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(Footer)
        seen: weakref.WeakSet[FooterKey] = weakref.WeakSet()
        drawn = 0
        for _ in range(8):
            app.screen.focus_next()  # each area has its own keys: the footer draws anew
            await pilot.pause()
            keys = list(footer.query(FooterKey))
            drawn += sum(1 for key in keys if key not in seen)
            seen.update(keys)
            del keys
        on_screen = len(footer.query(FooterKey))
        assert on_screen > 5
        assert drawn > 4 * on_screen
        assert _keys_alive() == on_screen
