"""Few GPUs on a tall terminal: the panels grow and chart their history, so the screen has
no rows left blank (issue 25 §3: one H200 at 120x40 left 28 of them); the process table
keeps the rows its lines need, many processes keep half the screen, more GPUs keep the
panels they had; the charts follow the ticks and draw only when what they show changed."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gputop.model import Snapshot
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.render import panel_charts
from gputop.ui.screens.main_layout import TABLE_HOLD_TICKS
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.process_table import ProcessTable
from support.apps import eight_gpus, live_app, load, varied_stream
from support.h200 import h200_loop
from support.sizes import drawn, resize

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
HISTORY = 600
"""Ticks of history behind each screen: ten minutes, every chart filled."""
MOST_BLANK = 4
"""Blank rows the issue allows at the sizes it names."""


def screen_lines(app: GputopApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def blank_rows(lines: list[str]) -> list[int]:
    """Rows with nothing on them but spaces, or the two sides of a panel's border."""
    return [i for i, line in enumerate(lines) if not re.sub(r"^\s*│|│\s*$", "", line).strip()]


def panel(app: GputopApp) -> GpuPanel:
    return app.screen.query(GpuPanel).first()


def labelled_rows(lines: list[str]) -> int:
    """Rows of plot with a label on their scale (its top, middle or 0)."""
    return sum("┤" in line for line in lines)


def one_h200() -> GputopApp:
    return live_app(h200_loop(HISTORY), ticks=HISTORY)


def two_a5000() -> GputopApp:
    return live_app(varied_stream(load(CAPTURES / "rtx-a5000x2-v13.xml"), HISTORY), ticks=HISTORY)


# -- no rows left blank -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "size"),
    [(one_h200, (120, 40)), (two_a5000, (120, 50)), (one_h200, (100, 30))],
    ids=["1 GPU at 120x40", "2 GPUs at 120x50", "1 GPU at 100x30"],
)
async def test_few_gpus_leave_no_more_than_four_rows_blank(
    make: object, size: tuple[int, int]
) -> None:
    app = make()  # type: ignore[operator]
    assert isinstance(app, GputopApp)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        lines = screen_lines(app)
        assert len(blank_rows(lines)) <= MOST_BLANK, "\n".join(lines)
        screen = app.main_screen
        assert screen.has_class("-charts") and screen.chart_rows > 0
        # The charts are there, titled, each with its scale and time axis.
        text = "\n".join(lines)
        for title in ("GPU utilization", "Memory used", "Power draw", "Temperature"):
            assert title in text
        assert text.count("-2m") >= 4
        # Every process is on screen, none scrolled off.
        table = app.screen.query_one(ProcessTable)
        assert f"{len(table.rows)} of {len(table.rows)} processes" in text
        for row in table.rows:
            assert str(row.process.pid) in text


async def test_the_h200_charts_show_its_load() -> None:
    app = one_h200()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        # 700 W is the top of the power chart; 8 s busy of every 12: about two thirds.
        assert "700W┤" in text
        power = re.search(r"Power draw +avg (\d+)W · max (\d+)W", text)
        assert power is not None, text
        assert 450 <= int(power[1]) <= 560 and 690 <= int(power[2]) <= 710
        util = re.search(r"GPU utilization +avg (\d+)% · max (\d+)%", text)
        assert util is not None and 55 <= int(util[1]) <= 75 and int(util[2]) == 99


# -- the process table's share ------------------------------------------------------------


def with_processes(snapshot: Snapshot, count: int) -> Snapshot:
    base = snapshot.gpus[0].processes[0]
    processes = tuple(dataclasses.replace(base, pid=1000 + n) for n in range(count))
    return dataclasses.replace(
        snapshot, gpus=(dataclasses.replace(snapshot.gpus[0], processes=processes),)
    )


async def test_many_processes_keep_half_the_screen_for_their_table() -> None:
    stream = [with_processes(s, 60) for s in h200_loop(HISTORY)]
    app = live_app(stream, ticks=HISTORY)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(ProcessTable)
        # Half of the 38 rows below the header, the charts in the other half.
        assert table.outer_size.height == 19
        assert app.main_screen.chart_rows > 0
        assert labelled_rows(screen_lines(app)) >= 4
        # Too low for both: the table keeps its rows, the panel its three lines.
        await resize(pilot, 120, 20)
        await drawn(pilot, 120, 20, "too low for both")
        assert app.main_screen.chart_rows == 0
        assert panel(app).size.height == 3


async def test_rows_a_table_no_longer_needs_go_back_to_the_charts_a_little_later() -> None:
    many = [with_processes(s, 12) for s in h200_loop(HISTORY)]
    few = h200_loop(HISTORY + 40)[HISTORY:]
    app = live_app([*many, *few], ticks=HISTORY)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        before = app.main_screen.chart_rows
        loop.advance()  # two processes now
        await pilot.pause()
        assert app.main_screen.chart_rows == before  # held: no jump at once
        for _ in range(TABLE_HOLD_TICKS):
            loop.advance()
            await pilot.pause()
        assert app.main_screen.chart_rows == before
        loop.advance()  # the table's need is laid out a tick after it is known
        await pilot.pause()
        assert app.main_screen.chart_rows == before + 10
        assert len(blank_rows(screen_lines(app))) <= MOST_BLANK


async def test_the_mig_tree_takes_its_share_from_the_charts() -> None:
    app = live_app(varied_stream(load(CAPTURES / "a100-sxm4-80gb-mig-v12.xml"), 60), ticks=60)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        charts = app.main_screen.chart_rows
        assert charts > 0
        await pilot.press("m")
        await pilot.pause()
        # Half the 38 rows below the header for the processes and the tree beside them.
        assert app.main_screen.chart_rows < charts
        assert app.screen.query_one("#lower").outer_size.height == 19
        await pilot.press("m")
        await pilot.pause()
        assert app.main_screen.chart_rows == charts


# -- more GPUs keep today's panels --------------------------------------------------------


@pytest.mark.parametrize(("gpus", "size"), [(4, (120, 40)), (8, (120, 40)), (8, (200, 90))])
async def test_more_gpus_keep_three_line_panels(gpus: int, size: tuple[int, int]) -> None:
    base = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    box = base if gpus == 4 else eight_gpus(base)
    app = live_app(varied_stream(box, 60), ticks=60)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert not app.main_screen.has_class("-charts")
        assert "GPU utilization" not in "\n".join(screen_lines(app))


# -- the charts follow the ticks ----------------------------------------------------------


def util_at(snapshot: Snapshot, util: float) -> Snapshot:
    gpu = snapshot.gpus[0]
    busy = dataclasses.replace(gpu, utilization=dataclasses.replace(gpu.utilization, gpu=util))
    return dataclasses.replace(snapshot, gpus=(busy,))


def newest_cells(app: GputopApp) -> tuple[str, str]:
    """The newest cell of the utilization plot's top and bottom rows."""
    lines = ["".join(text for text, _ in line) for line in panel(app)._lines]
    top = next(line for line in lines if line.startswith("100%┤"))
    bottom = next(line for line in lines[lines.index(top) :] if line.startswith("   0┤"))
    # The utilization chart is the left one of two, half the width less the gap between.
    end = (panel(app).size.width - panel_charts.CHART_GAP) // 2
    return top[end - 1], bottom[end - 1]


async def test_the_charts_follow_the_ticks() -> None:
    idle = [util_at(s, 0.0) for s in h200_loop(HISTORY)]
    busy = [util_at(s, 100.0) for s in h200_loop(HISTORY + 30)[HISTORY:]]
    app = live_app([*idle, *busy], ticks=HISTORY)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        top, bottom = newest_cells(app)
        assert top == " " and bottom != " "
        drawn = screen_lines(app)
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        for _ in range(20):
            loop.advance()
        await pilot.pause()
        top, bottom = newest_cells(app)
        assert top != " " and bottom == " "
        assert screen_lines(app) != drawn
        assert "avg 100% · max 100%" not in "\n".join(screen_lines(app))  # ten minutes back


async def test_charts_draw_at_most_once_a_tick_and_not_when_nothing_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real = panel_charts.chart_lines

    def counted(
        spec: panel_charts.ChartSpec,
        before: tuple[panel_charts.ChartSpec, tuple[panel_charts.Line, ...]] | None = None,
    ) -> tuple[panel_charts.Line, ...]:
        calls.append(spec.title)
        return real(spec, before)

    monkeypatch.setattr(panel_charts, "chart_lines", counted)
    app = one_h200()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        for _ in range(12):
            calls.clear()
            loop.advance()
            await pilot.pause()
            # Each chart at most once, whatever the frames and layouts of the tick.
            assert len(calls) == len(set(calls)) <= 4
        # The same tick shown again (a dialog closed, a theme change): nothing redrawn.
        calls.clear()
        tick = app.main_screen.tick
        assert tick is not None
        app.main_screen.show_tick(tick)
        await pilot.pause()
        assert calls == []


# -- resizing from the few-GPU sizes down to the smallest ---------------------------------


SIZES = [
    *[(120, height) for height in range(50, 9, -3)],
    (100, 30),
    (80, 24),
    (70, 20),
    (69, 40),
    (40, 10),
    (20, 5),
    (1, 1),
    (300, 60),
    (120, 40),
]


@pytest.mark.parametrize("make", [one_h200, two_a5000], ids=["1 GPU", "2 GPUs"])
async def test_resizing_from_few_gpu_sizes_down_to_small_ones(make: object) -> None:
    app = make()  # type: ignore[operator]
    assert isinstance(app, GputopApp)
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.pause()
        loop = app.loop
        assert isinstance(loop, ManualLoop)
        for width, height in SIZES:
            loop.advance()
            await resize(pilot, width, height)
            assert app.return_code is None, f"crashed at {width}x{height}"
            await drawn(pilot, width, height, "resizing")  # the frame fills the terminal
            if app.main_screen.chart_rows:
                # Charts only where each gets its least size, below the panel's lines.
                assert panel(app).size.height == app.main_screen.chart_rows >= 3 + 5
        assert app.main_screen.chart_rows > 0
        assert len(blank_rows(screen_lines(app))) <= MOST_BLANK
