"""What views send back to the pipeline: the user's commands.

Apart from ``gputop.pipeline.tick`` so that a start does not define them before the first
frame (issue 17: eight frozen dataclasses, about 20 M instructions): the screen and the
pipeline import them where a key press makes or handles one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class TogglePause:
    """Pause or resume polling / playback."""


@dataclass(frozen=True, slots=True)
class Step:
    """Replay: pause and move by ``delta`` documents."""

    delta: int


@dataclass(frozen=True, slots=True)
class Seek:
    """Replay: go to a document index (negative from the end)."""

    index: int


@dataclass(frozen=True, slots=True)
class SeekTime:
    """Replay: go to the document a time names: the first taken within ``within`` of
    ``moment`` (the second of a time given to the second), else the last one before."""

    moment: datetime
    within: timedelta = timedelta(0)


@dataclass(frozen=True, slots=True)
class ChangeSpeed:
    """Replay: move along the speed ladder by ``steps``."""

    steps: int


@dataclass(frozen=True, slots=True)
class SetInterval:
    """Live: poll every ``seconds`` (clamped to the allowed range)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class StepInterval:
    """Live: move the interval ``steps`` rungs along the interval ladder (positive: slower).

    Relative, so that presses sent faster than ticks answer them each count: the pipeline
    steps from its own interval, not from the one the screen last showed.
    """

    steps: int


@dataclass(frozen=True, slots=True)
class Refresh:
    """Produce a tick of the current state now (no new poll)."""


@dataclass(frozen=True, slots=True)
class Acknowledge:
    """Acknowledge the health alarms shown (``gpu``: that GPU's only; None: every GPU's)."""

    gpu: int | None = None


Command = (
    TogglePause
    | Step
    | Seek
    | SeekTime
    | ChangeSpeed
    | SetInterval
    | StepInterval
    | Refresh
    | Acknowledge
)
