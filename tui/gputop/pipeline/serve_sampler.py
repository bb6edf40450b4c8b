"""`gputop serve`'s one live sampler: polls the source every interval and publishes each
snapshot (to ``gputop.web.snapshot_publisher``), so that no viewer opens the driver itself."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Protocol

from gputop.pipeline.redact import without_commands

if TYPE_CHECKING:
    from gputop.model import Snapshot
    from gputop.sources.base import Source


class Publisher(Protocol):
    """Where the samples go (``SnapshotPublisher``)."""

    def publish(self, snapshot: Snapshot) -> None:
        """Send a new snapshot."""

    def fail(self, message: str) -> None:
        """Say that the last sample failed."""


class Sampler:
    """The one live sampler: polls the source every interval and publishes each snapshot."""

    def __init__(
        self, source: Source, publisher: Publisher, *, interval: float, hide: bool
    ) -> None:
        """Poll ``source`` into ``publisher``, without command lines when ``hide``."""
        self._source = source
        self._publisher = publisher
        self._interval = interval
        self._hide = hide
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gputop-sampler", daemon=True)

    def publish(self, snapshot: Snapshot) -> None:
        """Publish one snapshot (without commands when asked)."""
        self._publisher.publish(without_commands(snapshot) if self._hide else snapshot)

    def start(self) -> None:
        """Start sampling (the first snapshot has been published by the caller)."""
        self._thread.start()

    def _run(self) -> None:
        due = time.monotonic() + self._interval
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            try:
                self.publish(self._source.poll())
            except Exception as error:  # a driver hiccup must not end the server
                self._publisher.fail(f"{type(error).__name__}: {error}")
            due += self._interval
            now = time.monotonic()
            if due <= now:
                due = now + self._interval

    def stop(self) -> None:
        """Stop sampling (a call stuck in the driver is left to the daemon thread)."""
        self._stop.set()
        self._thread.join(2.0)
