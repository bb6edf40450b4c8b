"""Where live snapshots are written besides the screen: `--record` (XML) and `--log` (CSV)."""

from __future__ import annotations

import contextlib
from typing import Protocol

from gputop.model import Snapshot
from gputop.options import Options


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


def open_sinks(options: Options) -> SnapshotSinks | None:
    """Open what `--record` and `--log` ask for, or None when neither is given.

    Opening happens before the first tick so that an unwritable path is one clear error
    before the UI takes the terminal.
    """
    sinks: list[Sink] = []
    try:
        if options.record is not None:
            from gputop.sources.smi_writer import SmiXmlWriter

            sinks.append(SmiXmlWriter(options.record))
        if options.log is not None:
            from gputop.insight.csv_log import CsvLogger

            sinks.append(CsvLogger(options.log))
    except BaseException:
        SnapshotSinks(sinks).close()
        raise
    return SnapshotSinks(sinks) if sinks else None
