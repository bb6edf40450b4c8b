"""Several sinks written as one: what `--record` and `--log` together amount to."""

from __future__ import annotations

import contextlib
from typing import Protocol

from gputop.model import Snapshot


class Sink(Protocol):
    """Appends snapshots somewhere; ``write`` raises GputopError when it cannot."""

    def write(self, snapshot: Snapshot) -> None:
        """Append one snapshot."""
        ...

    def close(self) -> None:
        """Flush and release the file."""
        ...


class SnapshotSinks:
    """Several sinks written in turn, as one."""

    def __init__(self, sinks: list[Sink]) -> None:
        self._sinks = sinks

    def write(self, snapshot: Snapshot) -> None:
        """Write ``snapshot`` to every sink."""
        for sink in self._sinks:
            sink.write(snapshot)

    def close(self) -> None:
        """Close every sink, even when one fails to."""
        sinks, self._sinks = self._sinks, []
        with contextlib.ExitStack() as closing:
            for sink in sinks:
                closing.callback(sink.close)
