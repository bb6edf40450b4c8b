"""The GPU area uses the rows and columns the terminal has: details for every GPU in the
compact layout, sparklines set off from the next column, plots across their whole width, and
a MIG GPU's instances listed on its panel."""

from __future__ import annotations

import re
from array import array
from pathlib import Path

import pytest

from gputop.history import Metric
from gputop.model import GpuSample, Memory, Power, Temperature, Utilization
from gputop.ui.app import GputopApp
from gputop.ui.render.gauges import BARS, MAX_STRETCH, sparkline
from gputop.ui.render.panel_lines import (
    COLUMN_RULE,
    PanelState,
    compact_header,
    compact_line,
    full_lines,
)
from gputop.ui.screens.main_layout import details_fit, mig_rows_fit
from support.apps import eight_gpus, live_app, load, replay_app, varied_stream

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
GIB = 1024**3


def screen_lines(app: GputopApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def card() -> GpuSample:
    return GpuSample(
        index=0,
        name="NVIDIA A100-SXM4-80GB",
        utilization=Utilization(gpu=50.0),
        memory=Memory(total=80 * GIB, used=20 * GIB),
        power=Power(draw=200.0, limit=400.0),
        temperature=Temperature(gpu=50.0, slowdown=90.0),
        fan_speed=40.0,
        performance_state="P0",
        throttle_reasons=(),
    )


def plain(line: tuple[tuple[str, str], ...]) -> str:
    return "".join(text for text, _ in line)


# -- compact: details for every GPU where the rows allow ----------------------------------


async def test_at_80x24_every_gpu_of_four_shows_fan_p_state_and_power() -> None:
    app = live_app(varied_stream(load(CAPTURES / "rtx3090x4-procs-v12.xml"), 30), ticks=30)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.main_screen.compact
        lines = screen_lines(app)
        gpu_rows = [i for i, line in enumerate(lines) if re.match(r"^ +[0-3] RTX 3090", line)]
        assert len(gpu_rows) == 4
        for row in gpu_rows:
            assert re.search(r"\d+/350W", lines[row]), lines[row]
            # Its own details on the next line, under its name.
            assert lines[row + 1].startswith("    fan 30% · P2 · "), lines[row + 1]
        # No rows left blank above the processes: the table's status line follows.
        assert "of 8 processes" in lines[gpu_rows[-1] + 2]


async def test_eight_gpus_at_120x40_each_have_their_details() -> None:
    snapshots = varied_stream(eight_gpus(load(CAPTURES / "rtx3090x4-procs-v12.xml")), 30)
    app = live_app(snapshots, ticks=30)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert text.count("fan 30% · P2") == 8


def test_details_fit_only_where_the_process_table_keeps_its_rows() -> None:
    assert details_fit(24, 4, replaying=False)
    assert details_fit(40, 8, replaying=False)
    assert not details_fit(24, 8, replaying=False)
    assert not details_fit(21, 4, replaying=True)


# -- compact: a sparkline belongs to the value before it ---------------------------------


@pytest.mark.parametrize("width", [80, 118, 160])
def test_a_rule_closes_each_column_after_its_sparkline(width: int) -> None:
    state = PanelState(card(), {m: array("f", [30.0] * 100) for m in Metric})
    (line,) = compact_line(state, width, 10)
    text = plain(line)
    # value, sparkline, rule: never a sparkline cell right before the next value.
    assert text.count(COLUMN_RULE[0]) == 3
    assert not re.search(f"[{BARS}] +[0-9n]", text), text
    for column in re.findall("│[^│]+", text):
        assert re.fullmatch(rf"│ +\S+ [{BARS}]+ *", column), column
    header = plain(compact_header(width, 10))
    assert [m.start() for m in re.finditer("│", header)] == [
        m.start() for m in re.finditer("│", text)
    ]


# -- panels: a young history spreads over the plot ---------------------------------------


def test_a_young_history_takes_the_whole_plot_width() -> None:
    series = {m: array("f", [float(10 * (i % 10)) for i in range(19)]) for m in Metric}
    lines = full_lines(PanelState(card(), series), 116)
    for line in lines[:2]:
        plots = [text for text, role in line if role == "spark" and text.strip()]
        assert len(plots) == 2
        for plot in plots:
            assert len(plot) > 30 and " " not in plot, plot
    assert sparkline([10.0, 10.0], 4, 100.0, stretch=True) == "▁▁▁▁"
    assert sparkline([0.0, 100.0], 5, 100.0, stretch=True) == "▁▁███"
    # A sample is never drawn wider than MAX_STRETCH cells: one sample is no history.
    assert sparkline([100.0], 10, 100.0, stretch=True) == " " * (10 - MAX_STRETCH) + "█" * 3
    # Once the history is longer than the plot, one cell per sample, newest on the right.
    assert sparkline([0.0] * 10 + [100.0], 4, 100.0, stretch=True) == "▁▁▁█"


# -- MIG: the instances on the panel where there is room ----------------------------------


async def test_a_mig_gpu_lists_its_instances_on_its_panel_at_160x50() -> None:
    app = replay_app(varied_stream(load(CAPTURES / "a100-sxm4-80gb-mig-v12.xml"), 3))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        lines = screen_lines(app)
        rows = [line for line in lines if "MIG  1g.20gb" in line]
        assert len(rows) == 4
        for gi, row in zip((3, 4, 5, 6), rows, strict=True):
            assert f"GI {gi} CI 0 · MEM 0.01/19.50GiB · 0 processes" in row, row
            assert row.startswith("│ MIG") and row.rstrip().endswith("│")


async def test_mig_instances_stay_off_the_panel_where_there_is_no_room() -> None:
    app = replay_app(varied_stream(load(CAPTURES / "a100-sxm4-80gb-mig-v12.xml"), 3))
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.pause()
        assert not any("MIG  1g.20gb" in line for line in screen_lines(app))
    assert mig_rows_fit(50, [4], wide=False, replaying=False)
    assert not mig_rows_fit(20, [4], wide=False, replaying=False)
    # Two columns: a row of panels is as tall as its tallest.
    assert mig_rows_fit(50, [7, 0, 7, 0], wide=True, replaying=False)
    assert not mig_rows_fit(50, [7, 0, 7, 0], wide=False, replaying=False)
