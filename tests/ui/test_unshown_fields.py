"""The GPU fields the TUI alone reads every few seconds (``cli.live.TUI_UNSHOWN``) are shown
nowhere on its screens: a snapshot that differs only in them draws the same screen, in every
layout and with the focused GPU's detail line, so the slower cadence can never show as a
stale value."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputop.cli.live import TUI_UNSHOWN
from gputop.model import Clocks, GpuSample, Snapshot
from gputop.ui.app import GputopApp
from support.apps import live_app, load

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"


def _moved(gpu: GpuSample, step: int) -> GpuSample:
    """``gpu`` with every field of ``TUI_UNSHOWN`` set to something of its own."""
    clocks = gpu.clocks
    return dataclasses.replace(
        gpu,
        clocks=Clocks(
            graphics=1111 + step,
            sm=clocks.sm,
            memory=clocks.memory,
            video=777 + step,
        ),
        power=dataclasses.replace(gpu.power, energy=123456.0 * (step + 1)),
    )


def _screen(app: GputopApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def test_the_list_names_clocks_and_energy_only() -> None:
    assert {"clocks.graphics", "clocks.video", "power.energy"} == TUI_UNSHOWN


@pytest.mark.parametrize("size", [(120, 40), (200, 60), (80, 24)])
async def test_a_snapshot_differing_only_in_unshown_fields_draws_the_same_screen(
    size: tuple[int, int],
) -> None:
    base = load(CAPTURES / "rtx3090x4-procs-v12.xml")
    screens = []
    for step in (0, 1):
        moved: Snapshot = dataclasses.replace(
            base, gpus=tuple(_moved(gpu, step) for gpu in base.gpus)
        )
        app = live_app([moved])
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            # The screen once it has stopped changing: on a busy machine a part (the
            # footer) may come a frame later than the rest.
            drawn = _screen(app)
            for _ in range(20):
                await pilot.pause()
                again, drawn = drawn, _screen(app)
                if again == drawn:
                    break
            screens.append(drawn)
    assert screens[0] == screens[1]
    assert any("MiB" in line or "GiB" in line for line in screens[0])
