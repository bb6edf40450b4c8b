"""The fleet screen's q ends gputop at once, whatever the network does (issue 26 §6).

A server that sends its answer a byte at a time holds every refresh; with ``--timeout 60``
the refresh would hold for a minute. q must end the app without waiting on that refresh,
and what `gputop cluster` does once the app has returned (abort the requests in flight, end
the refresh loop) must take well under half a second. Each wait is timed on its own: the
time Textual takes to handle a key on a machine starved of CPU is not the network's.
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


class TimedLoop(FleetPollLoop):
    """The fleet loop, each ``stop`` call's wait written down."""

    waits: list[float]

    def stop(self, timeout: float = 1.0) -> bool:
        started = time.monotonic()
        try:
            return super().stop(timeout)
        finally:
            self.waits.append(time.monotonic() - started)


async def test_q_quits_within_half_a_second_while_a_refresh_hangs() -> None:
    with hostile(one_byte_at_a_time) as server:
        source = PrometheusFleet(PrometheusClient(server.url, timeout=60))
        loop = TimedLoop(fleet_driver(source, refresh=1.0), interval=1.0)
        loop.waits = []
        app = FleetApp(loop, UiSettings(readonly=True), refresh=1.0)
        async with app.run_test(size=(120, 30)) as pilot:
            deadline = time.monotonic() + 5
            while len(server.requests) < 2 and time.monotonic() < deadline:
                await pilot.pause(0.05)
            assert len(server.requests) == 2  # the refresh is waiting on the server
            await pilot.press("q")
        assert app.return_code == 0
        assert loop.alive  # the refresh still hangs: the app did not wait for it
        # The app's own stops (q, then unmount) only asked: no wait on the network.
        assert loop.waits and max(loop.waits) < 0.1, loop.waits
        started = time.monotonic()
        stop_fleet(loop, source)  # what `gputop cluster` does once the app has returned
        assert time.monotonic() - started < 0.5
        assert not loop.alive
