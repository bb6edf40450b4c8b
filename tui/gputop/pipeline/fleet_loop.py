"""Who drives the fleet view: one thread asks the ``FleetSource`` for every node on an interval
and, while a node screen is open, moves that node's pipeline with the same answer.

One refresh, one round of queries: the node screen reads what the fleet refresh brought
(``NodeFeed.offer``) instead of asking Prometheus again. Everything that waits on the network
(``fleet``, ``node_history``) runs on the loop's thread, never on the UI thread;
``FleetPollLoop`` is that thread, ``ManualFleetLoop`` a test's hand on the same
``FleetDriver``.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from gputop.model.fleet import FleetSnapshot
from gputop.pipeline.clock import Clock
from gputop.pipeline.commands import Command
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import Feed
from gputop.pipeline.loop_thread import LoopThread
from gputop.pipeline.node_feed import NodeFeed
from gputop.pipeline.tick import Tick
from gputop.sources.fleet import FleetSource

DEFAULT_REFRESH = 5.0
"""Seconds between fleet refreshes: Prometheus itself scrapes every 15-30 s, so a faster
refresh would mostly read the same samples again."""
DEFAULT_NODE_HISTORY = 600.0
"""Seconds of a node's past loaded when its screen opens (``query_range``)."""

OnFleet = Callable[[FleetSnapshot], None]
OnNode = Callable[[str, Tick], None]
"""(host, tick of that node's pipeline)."""
NodePipeline = Callable[[Feed], Pipeline]
"""Builds the pipeline a node screen is fed by (the TUI's: panels' series, diagnosis)."""


class FleetDriver:
    """The fleet refresh and the followed node's pipeline. Single-threaded: one loop calls it."""

    def __init__(
        self,
        source: FleetSource,
        node_pipeline: NodePipeline,
        *,
        node_history: float = DEFAULT_NODE_HISTORY,
    ) -> None:
        """Refresh from ``source``; a node's pipeline comes from ``node_pipeline``."""
        self._source = source
        self._node_pipeline = node_pipeline
        self._node_history = node_history
        self._fleet: FleetSnapshot | None = None
        self._feed: NodeFeed | None = None
        self._pipeline: Pipeline | None = None

    @property
    def host(self) -> str | None:
        """The node followed, if any."""
        return None if self._feed is None else self._feed.host

    def refresh(self) -> tuple[FleetSnapshot, Tick | None]:
        """Ask for every node; the followed node's pipeline takes its new sample."""
        try:
            fleet = self._source.fleet()
        except Exception as error:  # the protocol says it does not raise; never trust a wire
            last = self._fleet
            fleet = FleetSnapshot(
                taken_at=datetime.now().astimezone(),
                nodes=() if last is None else last.nodes,
                window_seconds=300.0 if last is None else last.window_seconds,
                scrape_interval=None if last is None else last.scrape_interval,
                # Never the exception's own text: it may quote the wire, raw.
                error=f"the fleet could not be read ({type(error).__name__}); last view kept",
            )
        self._fleet = fleet
        if self._feed is None or self._pipeline is None:
            return fleet, None
        self._feed.offer(fleet)
        return fleet, self._pipeline.advance()

    def open_node(self, host: str) -> Tick:
        """Follow ``host``: its recent past, then its newest sample."""
        feed = NodeFeed(self._source, host, self._node_history)
        if self._fleet is not None:
            feed.offer(self._fleet)
        self._feed = feed
        self._pipeline = self._node_pipeline(feed)
        return self._pipeline.start()

    def close_node(self) -> None:
        """Stop following the node (its history goes with its pipeline)."""
        self._feed = self._pipeline = None

    def apply(self, command: Command) -> Tick | None:
        """A node screen's command (pause); None when no node is followed."""
        if self._pipeline is None:
            return None
        self._pipeline.apply(command)
        return self._pipeline.tick()

    def close(self) -> None:
        """Close the source."""
        self._source.close()


class FleetLoop(Protocol):
    """What the fleet app drives: a thread (``FleetPollLoop``) or a test's hand."""

    def start(
        self,
        on_fleet: OnFleet,
        on_node: OnNode,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Begin refreshing; the first refresh follows at once."""
        ...

    def open_node(self, host: str) -> None:
        """Follow ``host``: its ticks go to ``on_node``."""
        ...

    def close_node(self) -> None:
        """Stop following the node."""
        ...

    def submit(self, command: Command) -> None:
        """A command for the followed node's pipeline."""
        ...

    def stop(self, timeout: float = 1.0) -> bool:
        """End; True when nothing runs any more."""
        ...


@dataclass(frozen=True, slots=True)
class _Open:
    host: str


@dataclass(frozen=True, slots=True)
class _Close:
    pass


_Request = _Open | _Close | Command


def _ignore_fleet(fleet: FleetSnapshot) -> None:
    """The fleet sink before ``start``."""


def _ignore_node(host: str, tick: Tick) -> None:
    """The node sink before ``start``."""


class _Hands:
    """Carries requests to a driver and its answers to the callbacks (both loops share it)."""

    def __init__(self, driver: FleetDriver) -> None:
        self.driver = driver
        self.on_fleet: OnFleet = _ignore_fleet
        self.on_node: OnNode = _ignore_node

    def refresh(self) -> None:
        fleet, tick = self.driver.refresh()
        self.on_fleet(fleet)
        host = self.driver.host
        if tick is not None and host is not None:
            self.on_node(host, tick)

    def handle(self, request: _Request) -> None:
        """Carry out ``request``."""
        driver = self.driver
        if isinstance(request, _Open):
            self.on_node(request.host, driver.open_node(request.host))
        elif isinstance(request, _Close):
            driver.close_node()
        else:
            tick = driver.apply(request)
            host = driver.host
            if tick is not None and host is not None:
                self.on_node(host, tick)


class ManualFleetLoop:
    """A ``FleetDriver`` moved by hand on the caller's thread: tests and snapshots.

    ``start`` refreshes once; every request is carried out at once; ``advance`` is a
    scheduled refresh.
    """

    def __init__(self, driver: FleetDriver) -> None:
        """Drive ``driver``."""
        self._hands = _Hands(driver)
        self.refreshes = 0
        self.stopped = False

    @property
    def driver(self) -> FleetDriver:
        """What is driven."""
        return self._hands.driver

    def start(
        self,
        on_fleet: OnFleet,
        on_node: OnNode,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """The first refresh, now."""
        self._hands.on_fleet, self._hands.on_node = on_fleet, on_node
        self.advance()

    def advance(self, times: int = 1) -> None:
        """Refresh ``times`` times."""
        for _ in range(times):
            self.refreshes += 1
            self._hands.refresh()

    def open_node(self, host: str) -> None:
        """Follow ``host`` now."""
        self._hands.handle(_Open(host))

    def close_node(self) -> None:
        """Stop following."""
        self._hands.handle(_Close())

    def submit(self, command: Command) -> None:
        """Apply ``command`` now."""
        self._hands.handle(command)

    def stop(self, timeout: float = 1.0) -> bool:
        """Nothing runs."""
        self.stopped = True
        return True


class FleetPollLoop(LoopThread):
    """The fleet refresh on its own daemon thread, every ``interval`` seconds.

    Requests from the UI (open a node, close it, pause it) queue up and wake the thread at
    once; a refresh that takes longer than the interval delays the next one, it never stacks
    them.
    """

    def __init__(
        self,
        driver: FleetDriver,
        *,
        interval: float = DEFAULT_REFRESH,
        clock: Clock | None = None,
        name: str = "gputop-fleet",
    ) -> None:
        """Prepare (not start) the loop."""
        self._hands = _Hands(driver)
        self.interval = interval
        super().__init__(clock=clock, name=name)
        self._requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()

    def start(
        self,
        on_fleet: OnFleet,
        on_node: OnNode,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Start the thread; the first refresh follows at once."""
        self._hands.on_fleet = self._unless_stopping(on_fleet)
        self._hands.on_node = self._unless_stopping_node(on_node)
        self._start_thread(on_failure)

    def _unless_stopping(self, on_fleet: OnFleet) -> OnFleet:
        def deliver(fleet: FleetSnapshot) -> None:
            if not self._stopping.is_set():
                on_fleet(fleet)

        return deliver

    def _unless_stopping_node(self, on_node: OnNode) -> OnNode:
        def deliver(host: str, tick: Tick) -> None:
            if not self._stopping.is_set():
                on_node(host, tick)

        return deliver

    def _put(self, request: _Request) -> None:
        self._requests.put(request)
        self._wake.set()

    def open_node(self, host: str) -> None:
        """Follow ``host`` (its history is read on the loop's thread)."""
        self._put(_Open(host))

    def close_node(self) -> None:
        """Stop following the node."""
        self._put(_Close())

    def submit(self, command: Command) -> None:
        """A command for the followed node."""
        self._put(command)

    def _loop(self) -> None:
        hands = self._hands
        hands.refresh()
        due = self._clock.monotonic() + self.interval
        while not self._stopping.is_set():
            self._wake.wait(max(0.0, due - self._clock.monotonic()))
            if self._stopping.is_set():
                break
            self._wake.clear()
            while True:
                try:
                    request = self._requests.get_nowait()
                except queue.Empty:
                    break
                hands.handle(request)
            if self._clock.monotonic() >= due:
                hands.refresh()
                due = self._clock.monotonic() + self.interval
