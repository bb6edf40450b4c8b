"""Checks of the command line's numbers, one set for every subcommand.

Every numeric option of `gputop` and `gputop report` is an argparse ``type=`` made by
:class:`Bounded`: finite (``nan`` and ``inf`` parse as floats but are never a setting), within
its range, and refused with one line naming the option, the value and the range.
:class:`Parser` turns any argparse complaint into that one line (as :class:`BadArguments`,
exit 2) instead of a usage block.
"""

from __future__ import annotations

import argparse
import math
from typing import Generic, NoReturn, TypeVar

from gputop.errors import BadArguments
from gputop.pipeline.interval import MAX_INTERVAL, MIN_INTERVAL

_N = TypeVar("_N", int, float)

MAX_COUNT = 1_000_000_000
"""--count: more than 31 years of 1 s samples; anything above is a typo."""
MAX_PICK = 1024
"""--pick: far above the GPUs any one machine holds."""
MAX_GAP_SECONDS = 30 * 24 * 3600.0
"""report --max-gap: a month; longer is no longer a gap threshold."""
MAX_JOBS = 256
"""report --jobs: each job is a process; more than this only thrashes."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2, like every bad input."""

    def error(self, message: str) -> NoReturn:
        """Raise instead of printing usage: the caller prints ``gputop: ...`` and exits 2."""
        raise BadArguments(f"{message} (see {self.prog} --help)")


class Bounded(Generic[_N]):
    """An argparse type: a finite ``kind`` from ``low`` to ``high`` (both included)."""

    def __init__(self, kind: type[_N], low: _N, high: _N, unit: str) -> None:
        """``unit`` names what the number counts, for the message (``"seconds"``)."""
        self.kind: type[_N] = kind
        self.low: _N = low
        self.high: _N = high
        what = "a whole number" if kind is int else "a number"
        self.span = f"{what} of {unit} from {_show(low)} to {_show(high)}"

    def __call__(self, text: str) -> _N:
        """The value of ``text``, or ArgumentTypeError saying what was expected."""
        try:
            value: _N = self.kind(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.span}") from None
        # float('nan') and float('inf') parse, but neither is a setting (and nan compares
        # false with every bound, so a range check alone lets it through).
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.span}")
        if not self.low <= value <= self.high:
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: {self.span}")
        return value


def _show(value: float) -> str:
    """``0.25``, ``60``, ``2592000``: no exponent, no trailing ``.0``."""
    return f"{value:g}" if abs(value) < 1e6 else str(int(value))


interval_seconds = Bounded(float, MIN_INTERVAL, MAX_INTERVAL, "seconds")
"""--interval: seconds between samples."""
sample_count = Bounded(int, 1, MAX_COUNT, "snapshots")
"""--count: snapshots to take or print."""
pick_count = Bounded(int, 1, MAX_PICK, "GPUs")
"""--pick: GPUs to pick."""
gap_seconds = Bounded(float, 0.001, MAX_GAP_SECONDS, "seconds")
"""report --max-gap: the longest interval still counted."""
jobs_count = Bounded(int, 1, MAX_JOBS, "processes")
"""report --jobs: parsing processes."""
viewer_count = Bounded(int, 1, 1000, "viewers")
"""serve --max-viewers: browser connections at once (each one is an app process)."""

window_seconds = Bounded(float, 10.0, 7 * 24 * 3600.0, "seconds")
"""cluster --window: how long each GPU's state is judged over."""
refresh_seconds = Bounded(float, 1.0, 3600.0, "seconds")
"""cluster --refresh: seconds between fleet refreshes on screen."""
timeout_seconds = Bounded(float, 0.1, 300.0, "seconds")
"""cluster --timeout: how long one HTTP request may take."""

NUMERIC_TYPES: tuple[Bounded[int] | Bounded[float], ...] = (
    interval_seconds,
    sample_count,
    pick_count,
    gap_seconds,
    jobs_count,
    viewer_count,
    window_seconds,
    refresh_seconds,
    timeout_seconds,
)
"""Every checker above: a test makes sure each numeric option uses one of them."""
