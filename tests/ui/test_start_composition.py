"""The main screen composes, for its first frame, only what a start of its kind can show
(issue 17: each node costs the first frame its composing, styling and layout)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.widgets import Static

from gputop.pipeline.feed import LiveFeed, ReplayFeed
from gputop.sources.playback.replay import ReplayPlayer
from gputop.ui.widgets.footer import Footer
from gputop.ui.widgets.gpu_grid import GpuGrid
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.status_line import ReplayBar
from support.apps import CyclingSource, SnapshotTimeline, load, started_app

CAPTURE = Path(__file__).resolve().parents[2] / "snapshots" / "rtx3090x4-procs-v12.xml"


async def test_a_live_start_composes_no_replay_bar() -> None:
    """As ``gputop`` starts live: the first tick is taken before the app, and it is live."""
    snapshot = load(CAPTURE)
    app = started_app(LiveFeed(CyclingSource([snapshot])))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        assert len(screen.query(GpuPanel)) == len(snapshot.gpus)
        assert not screen.query(ReplayBar)
        await pilot.press("space")  # pausing and resuming live needs no replay bar either
        await pilot.pause()
        assert screen.tick is not None and screen.tick.paused


async def test_lines_a_start_does_not_show_are_composed_only_when_first_shown() -> None:
    """The compact layout's column titles and detail line, and the line about the container
    gputop runs in, are not composed (hidden) for a tall terminal on a host; they appear
    when the terminal gets short."""
    snapshot = load(CAPTURE)
    app = started_app(LiveFeed(CyclingSource([snapshot])))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        for name in ("#gpu-columns", "#gpu-detail", "#process-container"):
            assert not screen.query(name), name
        await pilot.resize_terminal(120, 16)
        await pilot.pause()
        assert screen.has_class("-compact")
        titles = screen.query_one("#gpu-columns", Static)
        assert titles.display and "MEMORY" in str(titles.render())
        assert screen.query_one("#gpu-detail", Static).display
        assert screen.query_one("#gpu-columns").region.y < screen.query(GpuPanel).first().region.y


async def test_a_replay_start_composes_its_replay_bar() -> None:
    snapshot = load(CAPTURE)
    player = ReplayPlayer(SnapshotTimeline([snapshot, snapshot]), paused=True)
    app = started_app(ReplayFeed(player))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.main_screen.query_one(ReplayBar)
        assert bar.display
        assert "1/2" in bar.plain


@pytest.mark.patch("styled_once")
async def test_the_first_frame_styles_each_node_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual styles a node as it mounts; the main screen's first showing does not style
    them all over again (``StyledOnceScreen``)."""
    styled: Counter[int] = Counter()
    apply = Stylesheet.apply

    def counting(self: Stylesheet, node: DOMNode, *args: Any, **kwargs: Any) -> None:
        styled[id(node)] += 1
        apply(self, node, *args, **kwargs)

    monkeypatch.setattr(Stylesheet, "apply", counting)
    snapshot = load(CAPTURE)
    app = started_app(LiveFeed(CyclingSource([snapshot])))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        nodes = [screen.query_one(GpuGrid), *screen.query(GpuPanel), screen.query_one(Footer)]
        assert [styled[id(node)] for node in nodes] == [1] * len(nodes)
        # A later showing (back from a dialog) styles again, as Textual does.
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert all(styled[id(node)] > 1 for node in nodes)
