"""A browser viewer's feed: the snapshots `gputop serve`'s one sampler publishes.

It is a live feed to the views (no replay bar, ``Tick.live``): the server's sampler is the
only one polling NVML, and this feed only passes on what it sends. The first arrival is the
server's recent past, so the sparklines and the diagnosis are full from the first frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gputop.model import Snapshot
from gputop.pipeline.commands import Command, TogglePause
from gputop.pipeline.feed import NOTHING, Arrival

WAIT_STEP = 0.5
"""Seconds one step waits for the next snapshot: a pause key waits at most this long."""


class Subscription(Protocol):
    """What the feed reads (``gputop.sources.serve_socket.SnapshotSubscriber``)."""

    def take(self, wait: float = 0.0) -> list[Snapshot]: ...

    @property
    def error(self) -> str | None: ...

    def close(self) -> None: ...


class SharedFeed:
    """Snapshots as the server sends them; paused, they wait in the subscription."""

    def __init__(self, subscription: Subscription) -> None:
        """Follow ``subscription``."""
        self._subscription = subscription
        self._paused = False
        self._closed = False

    def start(self) -> Arrival:
        """The server's recent snapshots (or, at worst, the first one it sends)."""
        snapshots = self._subscription.take(wait=10.0)
        return Arrival(tuple(snapshots)) if snapshots else NOTHING

    def advance(self) -> Arrival:
        """What arrived since the last step, waiting up to ``WAIT_STEP`` for something."""
        snapshots = self._subscription.take(wait=WAIT_STEP)
        return Arrival(tuple(snapshots)) if snapshots else NOTHING

    def apply(self, command: Command) -> Arrival:
        """Pause or resume; the server keeps sampling meanwhile and the history catches up."""
        if isinstance(command, TogglePause):
            self._paused = not self._paused
            if not self._paused:
                return self.advance()
        return NOTHING

    def next_delay(self, interval: float) -> float | None:
        """At once (``advance`` itself waits for the server); None while paused."""
        return None if self._paused else 0.0

    def window(self, size: int) -> Sequence[Snapshot]:
        """Never rebuilt: the past arrives in order."""
        return ()

    def status(self) -> None:
        """A live view: no replay bar."""
        return None

    @property
    def paused(self) -> bool:
        """Paused by this viewer (the server samples on)."""
        return self._paused

    @property
    def error(self) -> str | None:
        """The server's last sample failed, or the server has gone."""
        return self._subscription.error

    @property
    def waiting(self) -> None:
        """The server has sampled before any viewer connects."""
        return None

    def close(self) -> None:
        """Hang up on the server."""
        if not self._closed:
            self._closed = True
            self._subscription.close()
