"""The fleet screen's q ends gputop at once, whatever the network does (issue 26 §6).

A server that sends its answer a byte at a time holds every refresh; with ``--timeout 60``
the refresh would hold for a minute. q must end the app, the refresh loop and the requests in
flight within half a second.
"""

from __future__ import annotations

import time

from gputop.cli.fleet_tui import fleet_driver, stop_fleet
from gputop.pipeline.fleet_loop import FleetPollLoop
from gputop.sources.prometheus.client import PrometheusClient
from gputop.sources.prometheus.source import PrometheusFleet
from gputop.ui.fleet_app import FleetApp
from gputop.ui.settings import UiSettings
from support.hostile import Connection, hostile


def one_byte_at_a_time(conn: Connection) -> None:
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999\r\n\r\n")
    conn.trickle(b'{"status": "success", "data": []}', 0.2)


async def test_q_quits_within_half_a_second_while_a_refresh_hangs() -> None:
    with hostile(one_byte_at_a_time) as server:
        source = PrometheusFleet(PrometheusClient(server.url, timeout=60))
        loop = FleetPollLoop(fleet_driver(source, refresh=1.0), interval=1.0)
        app = FleetApp(loop, UiSettings(readonly=True), refresh=1.0)
        async with app.run_test(size=(120, 30)) as pilot:
            deadline = time.monotonic() + 5
            while len(server.requests) < 2 and time.monotonic() < deadline:
                await pilot.pause(0.05)
            assert len(server.requests) == 2  # the refresh is waiting on the server
            started = time.monotonic()
            await pilot.press("q")
        stop_fleet(loop, source)  # what `gputop cluster` does once the app has returned
        took = time.monotonic() - started
        assert app.return_code == 0
        assert took < 0.5
        assert not loop.alive
