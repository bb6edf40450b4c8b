"""A tick that moves every GPU's numbers costs the UI thread a couple of messages, not a
round trip per panel: the panels hand their changed cells to the screen directly.

``Widget.refresh`` wakes the widget's own message pump (a ``Prompt``), which at idle posts an
``Update`` to the screen: with four panels that was nine messages on every tick before the
screen drew anything.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from textual.message import Message

from gputop.pipeline.loop import ManualLoop
from gputop.ui.widgets.gpu_grid import GpuGrid
from support.apps import live_app, load, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"


@pytest.mark.patch("direct_repaint")
async def test_a_tick_that_changes_every_panel_posts_no_message_per_panel() -> None:
    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 12)
    app = live_app(stream, ticks=4)
    seen: Counter[str] = Counter()
    counting = False

    def hook(message: Message) -> None:
        if counting:
            seen[type(message).__name__] += 1

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        # Settled first: on a busy machine the first frames may still be laid out after
        # one pause, and their Updates are not the tick's.
        for _ in range(20):
            counting = True
            await pilot.pause()
            counting = False
            settled = seen["Update"] == 0
            seen.clear()
            if settled:
                break
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        panels = app.main_screen.query_one(GpuGrid).panels
        assert len(panels) == 4
        before = [panel.paints for panel in panels]
        counting = True
        loop.advance()
        await pilot.pause()
        counting = False
        after = [panel.paints for panel in panels]
    # Every panel drew its changed lines again...
    assert all(now > then for now, then in zip(after, before, strict=True))
    # ... with no Update posted to the screen for any of them, and one Prompt (the screen's).
    assert seen["TickArrived"] == 1
    assert seen["Update"] == 0
    assert seen["Prompt"] <= 1
