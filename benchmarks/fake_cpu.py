"""Counting the CPU that the fake NVML library's own Python burns, for the benchmarks.

The fake stands in for the driver's C code, so its time is reported apart from gputop's.
Counting costs CPU too (two clock reads and a lock per call), on the calling thread:
``counting_cost_ns`` measures that on a call that does nothing, so it can be reported apart
as well.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class FakeCpu:
    """CPU nanoseconds spent inside counted calls, per thread, and the number of calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ns_by_thread: dict[int, int] = {}
        self.calls = 0

    @property
    def total_ns(self) -> int:
        """Nanoseconds over every thread."""
        return sum(self.ns_by_thread.values())

    def counted(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call``, with the thread CPU it takes added to this count."""

        def timed(*args: Any) -> Any:
            started = time.thread_time_ns()
            try:
                return call(*args)
            finally:
                spent = time.thread_time_ns() - started
                thread = threading.get_ident()
                with self._lock:
                    self.ns_by_thread[thread] = self.ns_by_thread.get(thread, 0) + spent
                    self.calls += 1

        return timed

    def install(self, fake: Any) -> None:
        """Count every C call of ``fake`` (a ``FakeNvml``) from now on."""
        fake._dispatch = self.counted(fake._dispatch)


def counting_cost_ns(rounds: int = 20000) -> float:
    """CPU nanoseconds that counting adds to one call, outside the time it counts."""

    def nothing(*_args: Any) -> None:
        return None

    counter = FakeCpu()
    timed_nothing = counter.counted(nothing)
    started = time.thread_time_ns()
    for _ in range(rounds):
        nothing()
    direct = time.thread_time_ns() - started
    started = time.thread_time_ns()
    for _ in range(rounds):
        timed_nothing()
    wrapped = time.thread_time_ns() - started
    return max(0, wrapped - direct - counter.total_ns) / rounds
