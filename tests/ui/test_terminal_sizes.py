"""Every terminal size draws: widths 1..300 and heights 1..60, live and replay, every screen.

Drawing all 18,000 sizes would take twenty minutes (a new size costs Textual 20-70 ms of
layout), so the walks cover widths at two heights (16 live with the MIG tree open, 6 in a
replay), heights at two widths (120 live, 40 in a replay), the narrow corner (1..30 x 1..8,
where lines are cut hardest), and every screen opened at 20x5 and 1x1, drawn at a tiny, a
small and a large size while open, and closed. By default each walk takes the layout's edges
(the widths and heights where it changes its mind, and the corners) and a sample of the rest
with a fixed seed; ``--slow`` walks every size. At each size the frame must fill the terminal
exactly and show what there is room for: the header line and, given eight rows, the GPUs.
Values move on every step, so each size also redraws a changed header clock, panel and
table, which is where a cut line used to index past its end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen

from fakes.nvml_fake import FakeNvml
from fakes.nvml_harness import nvml_source
from fakes.nvml_scenarios import gpu_sample, mig_gpu, snapshot, varying
from gputop.cli.tui import tui_pipeline
from gputop.model import Snapshot
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.render.process_view import CONTAINER_WIDTH, NARROW_WIDTH
from gputop.ui.screens.goto import GotoDialog
from gputop.ui.screens.help import HelpScreen
from gputop.ui.screens.history import HistoryScreen
from gputop.ui.screens.main import MainScreen
from gputop.ui.screens.main_layout import (
    FULL_PANEL_ROWS,
    MIN_FULL_WIDTH,
    MIN_LOWER_ROWS,
    WIDE_COLUMNS,
)
from gputop.ui.settings import UiSettings
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.process_details import ProcessDetails
from gputop.ui.widgets.process_grid import ProcessGrid
from support.apps import START, eight_gpus, load, replay_app, varied_stream
from support.sizes import SWEEPS, Step, around, drawn, resize, settle, sweep

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
LIVE_SETTINGS = UiSettings(theme="dark", show_host=True, show_clock=True, animate=False)
"""As a user runs it: the header carries the host and a clock that changes every tick."""


class Stamped:
    """Live ticks one second apart, so the header clock moves on every tick as in a real run
    at a 1 s interval: the snapshots the fake NVML gave, in turn, with new timestamps."""

    def __init__(self, snapshots: Sequence[Snapshot]) -> None:
        self._snapshots = snapshots
        self._ticks = 0

    def poll(self) -> Snapshot:
        snapshot = self._snapshots[self._ticks % len(self._snapshots)]
        self._ticks += 1
        return dataclasses.replace(snapshot, timestamp=START + timedelta(seconds=self._ticks))

    def close(self) -> None:
        """Nothing to release."""


@cache
def fake_nvml_ticks() -> tuple[Snapshot, ...]:
    """What the live source reads from the fake NVML of seven busy cards and an H100 in MIG
    mode, values moving: read once, since polling 8 GPUs through pynvml at every step of a
    walk of a thousand sizes would double its time."""
    machine = snapshot(*(gpu_sample(i) for i in range(7)), mig_gpu(7, instances=3))
    with nvml_source(FakeNvml(varying(machine, 30)), deadline=None) as source:
        return tuple(source.poll() for _ in range(30))


def live_box() -> GputopApp:
    """Live on the fake NVML's ticks."""
    return GputopApp(
        ManualLoop(tui_pipeline(LiveFeed(Stamped(fake_nvml_ticks()))), warmup=2), LIVE_SETTINGS
    )


def replay_box() -> GputopApp:
    """A playing replay of an 8-GPU recording with processes."""
    stream = varied_stream(eight_gpus(load(CAPTURES / "rtx3090x4-procs-v12.xml")), 200)
    return replay_app(stream, position=5, paused=False, source_label="rtx3090x4-procs-v12.xml")


async def walk(pilot: Pilot[int], sizes: Iterable[Step], what: str) -> None:
    """At each size: a new tick, then the frame; the app must still be running after it and
    have drawn what the size has room for."""
    app = pilot.app
    assert isinstance(app, GputopApp)
    loop = app.loop
    assert isinstance(loop, ManualLoop)
    for width, height in sizes:
        loop.advance()
        await resize(pilot, width, height)
        # An exception in a handler or a render ends the app with return code 1.
        assert app.return_code is None, f"{what}: crashed at {width}x{height}"
        lines = await drawn(pilot, width, height, what)
        if app.screen is app.main_screen and width >= 30:
            assert "^p" in lines[-1], f"{what}: no keys at {width}x{height}"
            if height >= 2:
                assert lines[0].startswith(" gputop"), f"{what}: no header at {width}x{height}"
            if height >= 8:
                assert any("NAME" in line for line in lines[1:3]), (
                    f"{what}: no GPUs at {width}x{height}"
                )


WIDTHS = range(1, 301)
HEIGHTS = range(1, 61)
EDGE_WIDTHS = [
    1,
    2,
    3,
    30,
    *around(MIN_FULL_WIDTH, NARROW_WIDTH, CONTAINER_WIDTH, WIDE_COLUMNS),
    300,
]
EDGE_HEIGHTS = [1, 2, 3, *around(FULL_PANEL_ROWS, MIN_LOWER_ROWS), 24, 40, 60]


def widths(height: int, every: bool) -> list[Step]:
    return sweep([(w, height) for w in WIDTHS], [(w, height) for w in EDGE_WIDTHS], 30, every)


def heights(width: int, every: bool) -> list[Step]:
    return sweep([(width, h) for h in HEIGHTS], [(width, h) for h in EDGE_HEIGHTS], 15, every)


NARROW_CORNER = [(width, height) for height in range(1, 9) for width in range(1, 31)]
CORNER_EDGES = [(1, 1), (30, 1), (1, 8), (30, 8), (20, 5), (24, 5)]


def narrow_corner(every: bool) -> list[Step]:
    return sweep(NARROW_CORNER, CORNER_EDGES, 30, every)


@pytest.mark.parametrize("every", SWEEPS)
async def test_live_draws_at_every_width_and_height(every: bool) -> None:
    app = live_box()
    async with app.run_test(size=(80, 24)) as pilot:
        await walk(pilot, narrow_corner(every), "live, narrow corner")
        await pilot.press("m")  # the MIG tree beside the processes
        await walk(pilot, widths(16, every), "live, MIG tree")
        await pilot.press("m")
        await walk(pilot, heights(120, every), "live")


@pytest.mark.parametrize("every", SWEEPS)
async def test_replay_draws_at_every_width_and_height(every: bool) -> None:
    app = replay_box()
    async with app.run_test(size=(80, 24)) as pilot:
        await walk(pilot, widths(6, every), "replay")
        await walk(pilot, heights(40, every), "replay")


def test_the_sampled_walk_keeps_the_edges_and_its_order() -> None:
    walked = widths(16, every=False)
    assert [w for w, _ in walked] == sorted(w for w, _ in walked)
    assert {w for w, _ in walked} >= set(EDGE_WIDTHS)
    assert 30 < len(walked) < 70 and walked == widths(16, every=False)
    assert len(widths(16, every=True)) == 300


async def focus_gpu(pilot: Pilot[int]) -> None:
    pilot.app.screen.query(GpuPanel).first().focus()
    await settle(pilot)


async def focus_processes(pilot: Pilot[int]) -> None:
    pilot.app.screen.query_one(ProcessGrid).focus()
    await settle(pilot)


Opener = tuple[str, Sequence[str], type[Screen[Any]] | str, Sequence[str]]
"""(name, keys that open it, the screen it opens or the main screen's class it sets, keys
that close it); "gpu"/"processes" in the keys focus that widget first."""

SCREENS: list[Opener] = [
    ("help", ["question_mark"], HelpScreen, ["escape"]),
    ("history", ["gpu", "enter"], HistoryScreen, ["escape"]),
    ("MIG tree", ["m"], "-mig", ["m"]),
    ("process details", ["processes", "enter"], ProcessDetails, ["escape"]),
    ("filter", ["slash", "p", "y"], "-filtering", ["escape", "escape"]),
    ("go to", ["g"], GotoDialog, ["escape"]),
]

OPEN_AT = [(20, 5), (1, 1)]
"""Sizes a screen is opened at (20x5 is where a user hit the crash; the other tests open
them at ordinary sizes)."""
WHILE_OPEN = [(1, 1), (24, 5), (150, 45)]
"""Sizes walked while it is open."""


async def press(pilot: Pilot[int], keys: Sequence[str]) -> None:
    for key in keys:
        if key == "gpu":
            await focus_gpu(pilot)
        elif key == "processes":
            await focus_processes(pilot)
        else:
            await pilot.press(key)
    await settle(pilot)


def is_open(app: GputopApp, shows: type[Screen[Any]] | str) -> bool:
    if isinstance(shows, str):
        if shows == "-filtering":
            return (
                app.screen is app.main_screen
                and app.focused is not None
                and (app.focused.id == "process-filter")
            )
        return app.main_screen.has_class(shows)
    return isinstance(app.screen, shows)


async def open_and_close_everywhere(app: GputopApp, live: bool) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        for name, opening, shows, closing in SCREENS:
            if live and shows is GotoDialog:
                continue  # replay only
            for width, height in OPEN_AT:
                await resize(pilot, width, height)
                await press(pilot, opening)
                assert is_open(app, shows), f"{name} did not open at {width}x{height}"
                await walk(pilot, [*WHILE_OPEN, (width, height)], f"{name} open")
                await press(pilot, closing)
                assert isinstance(app.screen, MainScreen), f"{name} did not close"
                assert not is_open(app, shows)
                await walk(pilot, [(width, height), (width + 1, height + 1)], f"after {name}")


async def test_every_screen_opens_draws_and_closes_at_any_size_live() -> None:
    await open_and_close_everywhere(live_box(), live=True)


async def test_every_screen_opens_draws_and_closes_at_any_size_in_a_replay() -> None:
    await open_and_close_everywhere(replay_box(), live=False)


@pytest.mark.parametrize(("width", "height"), [(24, 5), (20, 5)])
async def test_the_sizes_of_the_report_with_keys_pressed_at_them(width: int, height: int) -> None:
    # As reported: the header redrawn at 24x5, and at 20x5 after "? Esc Enter".
    app = live_box()
    async with app.run_test(size=(width, height)) as pilot:
        await walk(pilot, [(width, height)] * 3, "live")
        await pilot.press("question_mark", "escape")
        await focus_gpu(pilot)
        await pilot.press("enter")
        await walk(pilot, [(width, height)] * 3, "history")
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("escape")
        await walk(pilot, [(width, height)] * 3, "live")
