"""The real H200 of ``snapshots/h200-live/h200-train-stream.xml.gz`` (8 s of matrix
products, 4 s idle, repeated; a second process holding 10 GiB), played in a loop for as long
as a test wants."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from functools import cache
from pathlib import Path

from gputop.model import Snapshot
from gputop.sources.smi.recording import Recording
from support.apps import START

STREAM = (
    Path(__file__).resolve().parents[2] / "snapshots" / "h200-live" / "h200-train-stream.xml.gz"
)

PERIOD = 12
"""Documents of one busy-then-idle cycle of the load."""


@cache
def recorded() -> tuple[Snapshot, ...]:
    """Every document of the recording, in order."""
    recording = Recording.open(STREAM)
    try:
        return tuple(recording.snapshot(index) for index in range(len(recording)))
    finally:
        recording.close()


def h200_loop(count: int) -> list[Snapshot]:
    """``count`` snapshots one second apart from ``START``: the recording's whole cycles
    over and over (its last, cut cycle left out, so the load keeps its rhythm)."""
    documents = recorded()
    cycles = documents[: len(documents) // PERIOD * PERIOD]
    return [
        dataclasses.replace(cycles[index % len(cycles)], timestamp=START + timedelta(seconds=index))
        for index in range(count)
    ]
