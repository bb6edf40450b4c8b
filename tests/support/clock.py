"""A clock that moves only when a test says (``gputop.pipeline.clock.Clock``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from gputop.pipeline.clock import Clock


class ManualClock:
    """Both of the pipeline's clocks, standing still until ``advance``."""

    def __init__(self, start: datetime) -> None:
        """Start at wall-clock time ``start`` (monotonic 0)."""
        self._start = start
        self._elapsed = 0.0

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        self._elapsed += seconds

    def monotonic(self) -> float:
        """Seconds since the start."""
        return self._elapsed

    def now(self) -> datetime:
        """The start plus the seconds let pass."""
        return self._start + timedelta(seconds=self._elapsed)


_IS_A_CLOCK: Clock = ManualClock(datetime(2024, 1, 1))
"""mypy checks here that a manual clock can stand in for the pipeline's."""
