"""Every terminal size draws the fleet and node screens, as ``test_terminal_sizes`` walks the
single-box view: every width at one height, every height at one width, the narrow corner
densely, and the node screen, the filter and the help opened at tiny sizes. A refresh comes
at every step, so each size also redraws changed rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.events import Resize
from textual.geometry import Size
from textual.pilot import Pilot

from gputop.model.fleet import FleetSnapshot
from gputop.pipeline.fleet_loop import ManualFleetLoop
from gputop.ui.fleet_app import FleetApp
from gputop.ui.screens.fleet import FleetScreen
from gputop.ui.screens.help import HelpScreen
from gputop.ui.screens.node import NodeScreen
from support.fleet import MemoryFleet, demo_fleet, demo_histories, fleet_app

Step = tuple[int, int]


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


async def settle(pilot: Pilot[int]) -> None:
    await pilot._wait_for_screen()
    pilot.app.screen._on_timer_update()
    await pilot._wait_for_screen()


async def resize(pilot: Pilot[int], width: int, height: int) -> None:
    app = pilot.app
    size = Size(width, height)
    driver = app._driver
    assert driver is not None
    driver._size = size
    app.post_message(Resize(size, size))
    await settle(pilot)


async def walk(pilot: Pilot[int], sizes: Iterable[Step], what: str) -> None:
    app = pilot.app
    assert isinstance(app, FleetApp)
    loop = app.loop
    assert isinstance(loop, ManualFleetLoop)
    for width, height in sizes:
        loop.advance()
        await resize(pilot, width, height)
        assert app.return_code is None, f"{what}: crashed at {width}x{height}"


NARROW_CORNER = [(width, height) for height in range(1, 9) for width in range(1, 31)]


async def test_the_fleet_draws_at_every_width_and_height() -> None:
    app = fleet_app(moving_source())
    async with app.run_test(size=(80, 24)) as pilot:
        await walk(pilot, NARROW_CORNER, "fleet, narrow corner")
        await walk(pilot, [(width, 8) for width in range(1, 241)], "fleet")
        await walk(pilot, [(100, height) for height in range(1, 61)], "fleet")


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
