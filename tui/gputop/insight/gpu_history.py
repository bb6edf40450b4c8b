"""One GPU's metrics over time, in bounded memory, for the history charts.

Values are floats (NaN: not reported, or the GPU was missing from that snapshot). When the
buffer is full its older half is averaged in pairs, so recent minutes keep every sample and
older hours keep ever coarser ones: memory stays bounded however long gputop runs, and no
window ever has more points than a chart could use.
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gputop.insight.diagnosis import limiting_reasons
from gputop.insight.series import NAN, known, value_or_nan
from gputop.model import GpuSample, Snapshot

_GIB = 1024**3

CHANNELS: tuple[str, ...] = (
    "utilization_gpu",
    "utilization_memory",
    "memory_used_gib",
    "memory_total_gib",
    "power_draw_w",
    "power_limit_w",
    "temperature_c",
    "sm_clock_mhz",
    "mem_clock_mhz",
)
"""The metrics kept, with their units."""

DEFAULT_CAPACITY = 4096
"""Points kept per channel: over an hour of 1 s samples before any averaging."""


def _gib(value: int | None) -> float:
    return NAN if value is None else value / _GIB


def channel_values(gpu: GpuSample | None) -> tuple[float, ...]:
    """The values of ``CHANNELS`` for one sample (all NaN when the GPU is missing)."""
    if gpu is None:
        return (NAN,) * len(CHANNELS)
    return (
        value_or_nan(gpu.utilization.gpu),
        value_or_nan(gpu.utilization.memory),
        _gib(gpu.memory.used),
        _gib(gpu.memory.total),
        value_or_nan(gpu.power.draw),
        value_or_nan(gpu.power.limit),
        value_or_nan(gpu.temperature.gpu),
        value_or_nan(gpu.clocks.sm),
        value_or_nan(gpu.clocks.memory),
    )


@dataclass(frozen=True, slots=True)
class HistoryWindow:
    """The samples of a time window: ``times`` in seconds since the epoch, oldest first."""

    times: Sequence[float]
    channels: Mapping[str, Sequence[float]]
    throttled: Sequence[bool]

    def __len__(self) -> int:
        return len(self.times)


@dataclass(frozen=True, slots=True)
class Stats:
    """Minimum, mean and maximum of the known values in a window."""

    minimum: float
    mean: float
    maximum: float


def stats(values: Iterable[float]) -> Stats | None:
    """Stats of the non-NaN values; None when there are none."""
    present = known(list(values))
    if not present:
        return None
    return Stats(min(present), math.fsum(present) / len(present), max(present))


def _mean_pair(a: float, b: float) -> float:
    if a != a:
        return b
    if b != b:
        return a
    return (a + b) / 2


class GpuHistory:
    """A bounded history of one GPU, fed snapshot by snapshot in time order."""

    def __init__(self, gpu_index: int, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 4:
            raise ValueError("capacity must be at least 4")
        self.gpu_index = gpu_index
        self.capacity = capacity
        self.name: str | None = None
        self.times = array("d")
        self.channels: dict[str, array[float]] = {name: array("d") for name in CHANNELS}
        self.throttled = array("b")

    def __len__(self) -> int:
        return len(self.times)

    def append(self, snapshot: Snapshot) -> None:
        """Add one snapshot; one without a timestamp cannot be placed and is skipped."""
        if snapshot.timestamp is None:
            return
        gpu = snapshot.gpu(self.gpu_index)
        if gpu is not None and gpu.name:
            self.name = gpu.name
        if len(self.times) >= self.capacity:
            self._compact()
        self.times.append(snapshot.timestamp.timestamp())
        for name, value in zip(CHANNELS, channel_values(gpu), strict=True):
            self.channels[name].append(value)
        throttled = gpu is not None and bool(limiting_reasons(gpu.throttle_reasons))
        self.throttled.append(1 if throttled else 0)

    def extend(self, snapshots: Iterable[Snapshot]) -> GpuHistory:
        """:meth:`append` each snapshot; returns self."""
        for snapshot in snapshots:
            self.append(snapshot)
        return self

    def _compact(self) -> None:
        """Average the older half in pairs: half as many points for the older half."""
        half = len(self.times) // 2
        half -= half % 2

        def merged(values: array[float]) -> array[float]:
            head = array("d", (_mean_pair(values[i], values[i + 1]) for i in range(0, half, 2)))
            return head + values[half:]

        self.times = merged(self.times)
        for name in CHANNELS:
            self.channels[name] = merged(self.channels[name])
        flags = self.throttled
        self.throttled = (
            array("b", (max(flags[i], flags[i + 1]) for i in range(0, half, 2))) + flags[half:]
        )

    def window(self, seconds: float | None) -> HistoryWindow:
        """The samples of the last ``seconds`` before the newest one (None: everything)."""
        start = 0
        if seconds is not None and self.times:
            start = bisect.bisect_left(self.times, self.times[-1] - seconds)
        return HistoryWindow(
            times=self.times[start:],
            channels={name: values[start:] for name, values in self.channels.items()},
            throttled=[bool(flag) for flag in self.throttled[start:]],
        )
