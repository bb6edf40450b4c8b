"""What a source of many machines offers (Prometheus, or exporters scraped directly).

The fleet screen and ``gputop cluster --once --json`` are handed one of these; they never
build one nor speak HTTP. Every method does blocking network I/O and so runs in a worker
thread, never on the UI thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gputop.model import Snapshot
from gputop.model.fleet import FleetSnapshot


class FleetSource(Protocol):
    """Answers "what is every node doing" and "what did this node do lately"."""

    def fleet(self) -> FleetSnapshot:
        """Every node's newest values and its GPUs' states over the window.

        A failed query does not raise: the answer carries ``error`` and the last good nodes.
        """
        ...

    def node_history(self, host: str, seconds: float) -> Sequence[Snapshot]:
        """The node's snapshots over the last ``seconds`` (``query_range``), oldest first,
        for the node screen's sparklines and history; the last one is the newest sample."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...
