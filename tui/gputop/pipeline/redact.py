"""`gputop serve --hide-commands`: snapshots without the processes' command lines.

A command line can hold paths, hostnames and tokens (``--api-key=…``); a view shared on a
network should be able to leave it out. The executable's own name is kept (its last path
part: ``python3``), so a process can still be told apart; users and PIDs are kept.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from gputop.model import Snapshot
from gputop.model.sample import ProcessSample
from gputop.sources.playback.replay import Timeline


def _process(process: ProcessSample) -> ProcessSample:
    name = process.name
    if name is not None:
        name = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or None
    return dataclasses.replace(process, command=None, name=name)


def without_commands(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with every process's command line dropped and its name cut to the
    executable's."""
    gpus = []
    for gpu in snapshot.gpus:
        migs = tuple(
            dataclasses.replace(mig, processes=tuple(_process(p) for p in mig.processes))
            for mig in gpu.mig_devices
        )
        gpus.append(
            dataclasses.replace(
                gpu, processes=tuple(_process(p) for p in gpu.processes), mig_devices=migs
            )
        )
    return dataclasses.replace(snapshot, gpus=tuple(gpus))


class WithoutCommands:
    """A recording whose snapshots come out through ``without_commands``."""

    def __init__(self, inner: Timeline) -> None:
        """Wrap ``inner`` (closed with this one)."""
        self._inner = inner
        self.warnings = inner.warnings

    def __len__(self) -> int:
        return len(self._inner)

    def snapshot(self, index: int) -> Snapshot:
        """Document ``index``, without commands."""
        return without_commands(self._inner.snapshot(index))

    def timestamp(self, index: int) -> datetime | None:
        """Document ``index``'s time."""
        return self._inner.timestamp(index)

    def index_at(self, moment: datetime) -> int:
        """The last document at or before ``moment``."""
        return self._inner.index_at(moment)

    @property
    def following(self) -> bool:
        """The wrapped recording is still being followed."""
        return bool(getattr(self._inner, "following", False))

    def close(self) -> None:
        """Close the wrapped recording."""
        self._inner.close()
