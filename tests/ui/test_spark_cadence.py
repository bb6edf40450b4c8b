"""Sparklines move once in ``SPARK_TICKS`` ticks: a cell is the mean of that many samples.

A sparkline that moved one cell a tick rewrote all its cells every second (most of what
gputop sent to a terminal). Now, between two moves, only its newest cell may change.
"""

from __future__ import annotations

import itertools
import math
from array import array
from pathlib import Path

from gputop.history import HistoryStore
from gputop.pipeline.tick import Tick
from gputop.ui.render.gauges import SPARK_TICKS, bucketed, sparkline
from gputop.ui.render.panel_lines import GAUGE_METRICS, SPARKLINE_SAMPLES
from gputop.ui.widgets.gpu_grid import GpuGrid
from support.apps import live_app, load, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"


def test_groups_start_at_fixed_ticks_and_keep_their_samples() -> None:
    values = array("f", [float(n) for n in range(12)])
    # Ticks 0..11: groups 0-4, 5-9, and the open 10-11.
    assert bucketed(values, 5, 12, 10) == [2.0, 7.0, 10.5]
    # The same values as ticks 8..19: the group cut by the view's start (8, 9) is left out.
    assert bucketed(values, 5, 20, 10) == [4.0, 9.0]
    assert bucketed(values, 5, 20, 1) == [9.0]
    # Gaps are left out of a mean; a group of gaps is a gap.
    gappy = bucketed(array("f", [1, math.nan, 3, math.nan, math.nan]), 2, 5, 10)
    assert gappy[:2] == [1.0, 3.0] and math.isnan(gappy[2])
    assert bucketed(values, 1, 12, 4) == [8.0, 9.0, 10.0, 11.0]


def test_between_moves_only_the_newest_cell_changes() -> None:
    samples = [50 + 45 * math.sin(n / 3) for n in range(200)]
    lines = []
    for end in range(100, 130):
        shown = bucketed(array("f", samples[:end][-SPARKLINE_SAMPLES:]), SPARK_TICKS, end, 30)
        lines.append(sparkline(shown, 30, 100.0))
    moves = 0
    for before, after, end in zip(lines, lines[1:], range(101, 130), strict=False):
        if (end - 1) % SPARK_TICKS == 0:
            moves += 1  # a new group opened: the line moved one cell to the left
            assert after[:-2] == before[1:-1]
        else:
            assert after[:-1] == before[:-1]
    assert moves == 6


async def test_the_panels_draw_one_cell_per_five_ticks() -> None:
    stream = varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 40)
    store = HistoryStore(metrics=GAUGE_METRICS)
    app = live_app([stream[0]])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        panel = screen.query_one(GpuGrid).panels[0]
        sparks: list[list[str]] = []
        for seq, snapshot in enumerate(stream):
            store.append(snapshot)
            history = store.view(SPARKLINE_SAMPLES, GAUGE_METRICS)
            screen.show_tick(Tick(seq=seq, snapshot=snapshot, history=history, window=(snapshot,)))
            await pilot.pause()
            lines = [panel.render_line(y).text for y in range(2)]
            sparks.append(
                [word for line in lines for word in line.split() if "▁" <= word[0] <= "█"]
            )
    # 40 ticks are 8 cells, spread over the width while the history is young (3 cells each).
    assert all(len(spark) == 3 * 8 for spark in sparks[-1])
    unchanged_but_newest = 0
    for end, (before, after) in enumerate(itertools.pairwise(sparks), start=2):
        if (end - 1) % SPARK_TICKS:
            assert [s[:-3] for s in before] == [s[:-3] for s in after]
            unchanged_but_newest += 1
    assert unchanged_but_newest > 20
