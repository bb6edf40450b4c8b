"""Every terminal size draws the fleet and node screens, as ``test_terminal_sizes`` walks the
single-box view: widths at one height, heights at one width, the narrow corner (the layout's
edges and a sample of the rest by default, every size with ``--slow``), and the node screen,
the filter and the help opened at tiny sizes. A refresh comes at every step, so each size
also redraws changed rows; the frame must fill the terminal and show what there is room for."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest
from textual.pilot import Pilot

from gputop.model.fleet import FleetSnapshot
from gputop.pipeline.fleet_loop import ManualFleetLoop
from gputop.ui.fleet_app import FleetApp
from gputop.ui.screens.fleet import FleetScreen
from gputop.ui.screens.help import HelpScreen
from gputop.ui.screens.node import NodeScreen
from support.fleet import MemoryFleet, demo_fleet, demo_histories, fleet_app
from support.sizes import SWEEPS, Step, drawn, resize, settle, sweep


def moving_source() -> MemoryFleet:
    """Answers that alternate with a failed one, so the error line comes and goes."""
    histories = demo_histories()
    good = demo_fleet(histories=histories)
    bad = FleetSnapshot(
        taken_at=good.taken_at,
        nodes=good.nodes,
        scrape_interval=good.scrape_interval,
        error="Prometheus at http://a-long-host-name.example:9090 did not answer in 5 s",
    )
    return MemoryFleet([good, bad] * 400, dict(histories))


async def walk(pilot: Pilot[int], sizes: Iterable[Step], what: str) -> None:
    """At each size: a refresh, then the frame; the app must still be running after it and,
    on the fleet screen, have drawn what the size has room for."""
    app = pilot.app
    assert isinstance(app, FleetApp)
    loop = app.loop
    assert isinstance(loop, ManualFleetLoop)
    for width, height in sizes:
        loop.advance()
        await resize(pilot, width, height)
        assert app.return_code is None, f"{what}: crashed at {width}x{height}"
        lines = await drawn(pilot, width, height, what)
        if isinstance(app.screen, FleetScreen) and width >= 30:
            assert "^p" in lines[-1], f"{what}: no keys at {width}x{height}"
            if height >= 2:
                assert lines[0].startswith(" gputop"), f"{what}: no header at {width}x{height}"
            if height >= 8:
                assert any(line.startswith(" node-") for line in lines), (
                    f"{what}: no node at {width}x{height}"
                )


NARROW_CORNER = [(width, height) for height in range(1, 9) for width in range(1, 31)]
CORNER_EDGES = [(1, 1), (30, 1), (1, 8), (30, 8), (20, 5), (24, 5)]
WIDTHS = [(width, 8) for width in range(1, 241)]
HEIGHTS = [(100, height) for height in range(1, 61)]


@pytest.mark.parametrize("every", SWEEPS)
async def test_the_fleet_draws_at_every_width_and_height(every: bool) -> None:
    app = fleet_app(moving_source())
    async with app.run_test(size=(80, 24)) as pilot:
        await walk(pilot, sweep(NARROW_CORNER, CORNER_EDGES, 30, every), "fleet, narrow corner")
        edges = [(w, 8) for w in (1, 2, 3, 30, 40, 60, 80, 100, 120, 160, 240)]
        await walk(pilot, sweep(WIDTHS, edges, 30, every), "fleet")
        edges = [(100, h) for h in (1, 2, 3, 4, 5, 8, 12, 24, 60)]
        await walk(pilot, sweep(HEIGHTS, edges, 15, every), "fleet")


async def press(pilot: Pilot[int], keys: Sequence[str]) -> None:
    for key in keys:
        await pilot.press(key)
    await settle(pilot)


async def test_node_filter_and_help_open_draw_and_close_at_tiny_sizes() -> None:
    app = fleet_app(moving_source())
    async with app.run_test(size=(80, 24)) as pilot:
        for width, height in [(20, 5), (1, 1)]:
            await resize(pilot, width, height)
            for host in ("node-c", "node-d", "node-a"):
                app.open_node(host)
                await settle(pilot)
                assert isinstance(app.screen, NodeScreen), f"{host} at {width}x{height}"
                await walk(pilot, [(1, 1), (24, 5), (150, 45), (width, height)], host)
                await press(pilot, ["m"])
                await walk(pilot, [(1, 1), (60, 12), (width, height)], f"{host} MIG")
                await press(pilot, ["m", "escape"])
                assert isinstance(app.screen, FleetScreen)
            await press(pilot, ["slash", "n", "o"])
            await walk(pilot, [(1, 1), (24, 5), (width, height)], "filter")
            await press(pilot, ["escape", "escape"])
            await press(pilot, ["question_mark"])
            assert isinstance(app.screen, HelpScreen)
            await walk(pilot, [(1, 1), (24, 5), (150, 45), (width, height)], "help")
            await press(pilot, ["escape"])
            assert isinstance(app.screen, FleetScreen)
