"""Time as the pipeline sees it; tests inject a fixed clock."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """Time as the pipeline sees it; tests inject a fixed one."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    def now(self) -> datetime:
        """Local wall-clock time."""
        ...


class SystemClock:
    """The real clocks."""

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def now(self) -> datetime:
        """``datetime.now()``."""
        return datetime.now()
