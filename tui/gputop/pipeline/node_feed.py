"""One node of a fleet as a feed: the node screen draws a remote box with the single-box pipeline.

The feed starts from the node's recent past (``FleetSource.node_history``, Prometheus's
``query_range``), so the sparklines are full at once, and then takes each fleet refresh's
``NodeView`` of that node (``offer``): one render path for live, replay and remote. A refresh
that brings no newer sample (Prometheus scrapes every 15-30 s; the fleet refreshes every few
seconds) adds nothing to the history, so a sample is never counted twice. A node whose
exporter stopped answering keeps its last values, marked stale on every GPU, never zeroed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gputop.errors import GputopError
from gputop.model import Snapshot
from gputop.model.age import age_seconds, fmt_age
from gputop.model.fleet import FleetSnapshot, NodeView
from gputop.pipeline.commands import Command, TogglePause
from gputop.pipeline.feed import NOTHING, Arrival
from gputop.sources.fleet import FleetSource


def stale_marked(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with every GPU marked stale (its values are the last ones known)."""
    return dataclasses.replace(
        snapshot, gpus=tuple(dataclasses.replace(gpu, stale=True) for gpu in snapshot.gpus)
    )


class NodeFeed:
    """The snapshots of one node of a ``FleetSource``. Only its loop's thread calls it."""

    def __init__(self, source: FleetSource, host: str, seconds: float) -> None:
        """Follow ``host``; its history covers the last ``seconds``."""
        self._source = source
        self._host = host
        self._seconds = seconds
        self._pending: NodeView | None = None
        self._last: Snapshot | None = None
        """The newest snapshot handed on (to tell a new sample from the same one again)."""
        self._last_stale = False
        self._paused = False
        self._history_error: str | None = None
        self._error: str | None = None

    @property
    def host(self) -> str:
        """The node followed."""
        return self._host

    def offer(self, fleet: FleetSnapshot) -> None:
        """The latest fleet refresh: this node's view in it, and what went wrong."""
        view = next((node for node in fleet.nodes if node.key == self._host), None)
        if view is not None:
            self._pending = view
        if fleet.error is not None:
            self._error = fleet.error
        elif view is None:
            self._error = f"{self._host} is not in the latest answer"
        elif view.stale:
            age = age_seconds(view.newest_sample or view.snapshot.timestamp, fleet.taken_at)
            # Short: the header cuts its left half, and this is the part that matters.
            self._error = "stale" if age is None else f"stale: newest sample {fmt_age(age)} old"
        else:
            self._error = None

    def start(self) -> Arrival:
        """The node's recent past, then its newest sample if that came after it."""
        past: list[Snapshot] = []
        try:
            past = list(self._source.node_history(self._host, self._seconds))
        except GputopError as error:  # the screen still shows the newest sample
            self._history_error = f"no history: {error}"
        except Exception as error:  # never the exception's own text: it may quote the wire
            self._history_error = f"no history: {type(error).__name__}"
        snapshots = [self._named(snapshot) for snapshot in past]
        if snapshots:
            self._last = snapshots[-1]
        newest = self._take()
        return Arrival((*snapshots, *newest))

    def advance(self) -> Arrival:
        """The newest sample offered, if it is new (or its stale state changed)."""
        if self._paused:
            return NOTHING
        return Arrival(self._take())

    def _take(self) -> tuple[Snapshot, ...]:
        view = self._pending
        if view is None:
            return ()
        snapshot = self._named(view.snapshot)
        last = self._last
        newer = (
            last is None
            or snapshot.timestamp is None
            or last.timestamp is None
            or snapshot.timestamp > last.timestamp
        )
        if not newer and view.stale == self._last_stale:
            return ()
        self._last_stale = view.stale
        self._last = snapshot
        return (stale_marked(snapshot) if view.stale else snapshot,)

    def _named(self, snapshot: Snapshot) -> Snapshot:
        # The header names the machine a snapshot is of; a remote one must never read as
        # the machine gputop runs on.
        if snapshot.host is None:
            return dataclasses.replace(snapshot, host=self._host)
        return snapshot

    def apply(self, command: Command) -> Arrival:
        """Pause or resume following the node; nothing else concerns it."""
        if isinstance(command, TogglePause):
            self._paused = not self._paused
            if not self._paused:
                return Arrival(self._take())
        return NOTHING

    def next_delay(self, interval: float) -> float | None:
        """The fleet's refresh drives this feed: due every ``interval`` unless paused."""
        return None if self._paused else interval

    def window(self, size: int) -> Sequence[Snapshot]:
        """Never rebuilt."""
        return ()

    def status(self) -> None:
        """Live: no replay bar."""
        return None

    @property
    def paused(self) -> bool:
        """Following is paused."""
        return self._paused

    @property
    def error(self) -> str | None:
        """The fleet query failed, the node is stale or gone, or its history failed."""
        return self._error or self._history_error

    @property
    def waiting(self) -> None:
        """The source answered before the node screen opened."""
        return None

    def close(self) -> None:
        """The source is the fleet's, closed by its owner."""
