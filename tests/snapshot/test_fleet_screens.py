"""Pictures of the fleet view (pytest-textual-snapshot): the fleet with a stale node, a failed
refresh, a filtered and sorted fleet, and node screens (MIG and pods; a stale node).

Deterministic as the single-box pictures are: a test double of the fleet source over the
captures in ``snapshots/`` (``support.fleet``), a fixed answer time, a hand-driven loop,
no clock, animations off, fixed sizes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from gputop.ui.fleet_app import FleetApp
from support.fleet import demo_fleet, demo_source, fleet_app

SnapCompare = Callable[..., bool]


@pytest.fixture(autouse=True)
def steady(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No blinking cursor, and NO_COLOR unset."""
    monkeypatch.setattr(Input, "cursor_blink", False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield


def opening(host: str) -> Callable[[Pilot[int]], object]:
    async def run_before(pilot: Pilot[int]) -> None:
        app = pilot.app
        assert isinstance(app, FleetApp)
        await pilot.pause()
        app.open_node(host)
        await pilot.pause()
        await pilot.pause()

    return run_before


def test_fleet_with_a_stale_node(snap_compare: SnapCompare) -> None:
    assert snap_compare(fleet_app(demo_source()), terminal_size=(120, 16))


def test_fleet_after_a_failed_refresh(snap_compare: SnapCompare) -> None:
    failed = dataclasses.replace(
        demo_fleet(), error="Prometheus at http://prometheus:9090 did not answer in 5 s"
    )
    app = fleet_app(demo_source(failed))

    async def refresh(pilot: Pilot[int]) -> None:
        await pilot.pause()
        app.loop.advance()  # type: ignore[attr-defined]
        await pilot.pause()

    assert snap_compare(app, run_before=refresh, terminal_size=(120, 16))


def test_fleet_filtered_and_sorted_on_a_narrow_terminal(snap_compare: SnapCompare) -> None:
    # Two > from IDLE (the first sort): UTIL, then HELD IDLE; at 80 columns EXPORTER is
    # gone. The filter keeps the nodes holding pods of the research namespace.
    keys = ["greater_than_sign", "greater_than_sign", "slash", *"research", "enter"]
    assert snap_compare(fleet_app(demo_source()), press=keys, terminal_size=(80, 14))


def test_node_with_mig_and_pods(snap_compare: SnapCompare) -> None:
    app = fleet_app(demo_source())
    assert snap_compare(app, run_before=opening("node-c"), terminal_size=(120, 30))


def test_node_gone_stale(snap_compare: SnapCompare) -> None:
    app = fleet_app(demo_source())
    assert snap_compare(app, run_before=opening("node-d"), terminal_size=(100, 24))
