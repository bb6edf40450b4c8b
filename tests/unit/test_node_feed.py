"""A node of the fleet through the single-box pipeline: its history from ``node_history``,
then each fleet refresh's newest sample, once; stale nodes marked stale, never zeroed; one
fleet query per refresh whether a node screen is open or not."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from datetime import timedelta

import pytest

from gputop.cli.fleet_tui import fleet_driver
from gputop.model import Snapshot
from gputop.model.fleet import FleetSnapshot
from gputop.pipeline.commands import TogglePause
from gputop.pipeline.fleet_loop import FleetPollLoop
from gputop.pipeline.tick import Tick
from gputop.sources.prometheus.client import PrometheusError
from support.fleet import POINTS, SCRAPE, TAKEN, MemoryFleet, demo_fleet, demo_histories


def later_answer(seconds: float, *, stale: str | None = None) -> FleetSnapshot:
    """The demo fleet ``seconds`` after TAKEN, every node one scrape newer (``stale``: that
    node's exporter stopped, so its sample stays where it was)."""
    histories = demo_histories()
    grown: dict[str, list[Snapshot]] = {}
    for host, history in histories.items():
        if host == stale:
            grown[host] = history
            continue
        newest = history[-1]
        assert newest.timestamp is not None
        moved = newest.timestamp + timedelta(seconds=seconds)
        grown[host] = [*history, dataclasses.replace(newest, timestamp=moved)]
    fleet = demo_fleet(TAKEN + timedelta(seconds=seconds), grown)
    if stale is None:
        return fleet
    nodes = tuple(
        dataclasses.replace(node, stale=True) if node.host == stale else node
        for node in fleet.nodes
    )
    return dataclasses.replace(fleet, nodes=nodes)


def source(*later: FleetSnapshot) -> MemoryFleet:
    histories = demo_histories()
    return MemoryFleet([demo_fleet(histories=histories), *later], dict(histories))


def test_a_node_opens_with_its_history_and_takes_only_new_samples() -> None:
    fleet = source(later_answer(SCRAPE), later_answer(SCRAPE))
    driver = fleet_driver(fleet, history=600.0)
    driver.refresh()
    opened = driver.open_node("node-a")
    assert fleet.history_calls == [("node-a", 600.0)]
    assert opened.snapshot.host == "node-a"
    # The history's newest point is the fleet's newest sample: taken once, not twice.
    assert opened.history.length == POINTS
    _, tick = driver.refresh()
    assert tick is not None and tick.history.length == POINTS + 1
    newest = demo_histories()["node-a"][-1].timestamp
    assert newest is not None
    assert tick.snapshot.timestamp == newest + timedelta(seconds=SCRAPE)
    # The next refresh brings the same sample again (Prometheus has not scraped since).
    _, again = driver.refresh()
    assert again is not None and again.history.length == POINTS + 1
    assert again.error is None


def test_one_fleet_query_per_refresh_with_a_node_open() -> None:
    fleet = source()
    driver = fleet_driver(fleet)
    driver.refresh()
    driver.open_node("node-b")
    for _ in range(3):
        driver.refresh()
    assert fleet.fleet_calls == 4
    assert [host for host, _ in fleet.history_calls] == ["node-b"]


def test_a_node_that_turns_stale_keeps_its_values_marked_stale() -> None:
    fleet = source(later_answer(SCRAPE * 20, stale="node-a"))
    driver = fleet_driver(fleet)
    driver.refresh()
    before = driver.open_node("node-a")
    _, tick = driver.refresh()
    assert tick is not None
    assert all(gpu.stale for gpu in tick.snapshot.gpus)
    assert [g.utilization.gpu for g in tick.snapshot.gpus] == [
        g.utilization.gpu for g in before.snapshot.gpus
    ]
    assert tick.error is not None and tick.error.startswith("stale")
    assert "5 min old" in tick.error  # 300 s after its newest sample


def test_a_failed_fleet_query_is_said_on_the_node_and_its_values_stay() -> None:
    failed = dataclasses.replace(later_answer(SCRAPE), error="Prometheus did not answer")
    fleet = source(failed)
    driver = fleet_driver(fleet)
    driver.refresh()
    before = driver.open_node("node-c")
    _, tick = driver.refresh()
    assert tick is not None and tick.error == "Prometheus did not answer"
    assert tick.snapshot.gpus[0].memory.used is not None
    assert before.snapshot.gpus[0].name == tick.snapshot.gpus[0].name


def test_a_node_gone_from_the_answer_keeps_its_last_snapshot() -> None:
    gone = dataclasses.replace(demo_fleet(), nodes=demo_fleet().nodes[1:])
    fleet = source(gone)
    driver = fleet_driver(fleet)
    driver.refresh()
    before = driver.open_node("node-a")
    _, tick = driver.refresh()
    assert tick is not None and tick.snapshot is before.snapshot
    assert tick.error == "node-a is not in the latest answer"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (PrometheusError("Prometheus at p did not answer"), "Prometheus at p did not answer"),
        # Not gputop's own one-line message: its name only, never its text off the wire.
        (TimeoutError("query_range \x1b[2J timed out"), "TimeoutError"),
    ],
)
def test_a_failed_history_still_shows_the_newest_sample(error: Exception, said: str) -> None:
    class NoHistory(MemoryFleet):
        def node_history(self, host: str, seconds: float) -> Sequence[Snapshot]:
            raise error

    histories = demo_histories()
    driver = fleet_driver(NoHistory([demo_fleet(histories=histories)], {}))
    driver.refresh()
    tick = driver.open_node("node-b")
    assert len(tick.snapshot.gpus) == 8
    assert tick.error == f"no history: {said}"


def test_pause_holds_the_node_and_resume_catches_up() -> None:
    fleet = source(later_answer(SCRAPE))
    driver = fleet_driver(fleet)
    driver.refresh()
    first = driver.open_node("node-a")
    paused = driver.apply(TogglePause())
    assert paused is not None and paused.paused
    _, tick = driver.refresh()
    assert tick is not None and tick.snapshot is first.snapshot
    resumed = driver.apply(TogglePause())
    assert resumed is not None and not resumed.paused
    assert resumed.snapshot.timestamp != first.snapshot.timestamp


def test_a_source_that_raises_becomes_an_error_with_the_last_nodes() -> None:
    class Flaky(MemoryFleet):
        def fleet(self) -> FleetSnapshot:
            if self.fleet_calls:
                raise ConnectionError("\x1b]0;pwned\x07refused")
            return super().fleet()

    driver = fleet_driver(Flaky([demo_fleet()], {}))
    first, _ = driver.refresh()
    second, _ = driver.refresh()
    # Never the exception's own text: it may quote the wire, controls and all.
    assert second.error == "the fleet could not be read (ConnectionError); last view kept"
    assert second.nodes == first.nodes


def test_the_poll_loop_refreshes_off_the_callers_thread_and_follows_a_node() -> None:
    fleet = source()
    loop = FleetPollLoop(fleet_driver(fleet), interval=0.05)
    threads: set[str] = set()
    got_node = threading.Event()
    refreshed = threading.Event()
    hosts: list[str] = []

    def on_fleet(answer: FleetSnapshot) -> None:
        threads.add(threading.current_thread().name)
        if fleet.fleet_calls >= 3:
            refreshed.set()

    def on_node(host: str, tick: Tick) -> None:
        hosts.append(host)
        got_node.set()

    loop.start(on_fleet, on_node)
    try:
        loop.open_node("node-e")
        assert got_node.wait(5.0)
        assert refreshed.wait(5.0)
    finally:
        assert loop.stop(2.0)
    assert threads == {"gputop-fleet"}
    assert hosts and set(hosts) == {"node-e"}
    assert fleet.history_calls[0][0] == "node-e"
