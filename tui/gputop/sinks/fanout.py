"""Several sinks written as one: what `--record` and `--log` together amount to.

A sink whose write fails (a full disk) is closed and left out from then on; the others go on.
Its failure is kept, so that whoever runs the sinks can say it once, show it while running
and end with a non-zero exit code.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gputop.errors import GputopError
from gputop.model import Snapshot


class Sink(Protocol):
    """Appends snapshots somewhere; ``write`` raises GputopError when it cannot."""

    @property
    def option(self) -> str:
        """The command-line option that asked for it (``--record``, ``--log``)."""
        ...

    @property
    def path(self) -> Path:
        """The file written."""
        ...

    def write(self, snapshot: Snapshot) -> None:
        """Append one snapshot."""
        ...

    def close(self) -> None:
        """Flush and release the file."""
        ...


@dataclass(frozen=True, slots=True)
class SinkState:
    """One sink as it stands: the file it writes and, once a write failed, why."""

    option: str
    """``--record`` or ``--log``."""
    path: Path
    error: str | None = None
    """The failure that stopped the sink (one line naming the file); None while it writes."""


class SnapshotSinks:
    """Several sinks written in turn, as one; a failing sink stops, the others go on."""

    def __init__(self, sinks: list[Sink]) -> None:
        self._sinks = sinks
        self._errors: dict[int, str] = {}
        """Position in ``_sinks`` -> the error that stopped that sink."""

    def write(self, snapshot: Snapshot) -> list[str]:
        """Write ``snapshot`` to every sink still writing; the failures this write caused.

        A sink that fails is closed and not written again; its error (one line naming the
        file) is returned here once and stays in ``states`` and ``failures``.
        """
        failed: list[str] = []
        for position, sink in enumerate(self._sinks):
            if position in self._errors:
                continue
            try:
                sink.write(snapshot)
            except GputopError as error:
                self._errors[position] = str(error)
                failed.append(str(error))
                with contextlib.suppress(Exception):
                    sink.close()
        return failed

    def states(self) -> tuple[SinkState, ...]:
        """Every sink, in the order given, with its failure if it has stopped."""
        return tuple(
            SinkState(sink.option, sink.path, self._errors.get(position))
            for position, sink in enumerate(self._sinks)
        )

    @property
    def failures(self) -> tuple[str, ...]:
        """The errors that stopped sinks, in the order of the sinks."""
        return tuple(self._errors[position] for position in sorted(self._errors))

    def close(self) -> None:
        """Close every sink, even when one fails to (states and failures stay)."""
        sinks = self._sinks
        with contextlib.ExitStack() as closing:
            for sink in sinks:
                closing.callback(sink.close)
