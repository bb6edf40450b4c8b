"""The summary of a recording: per GPU, how busy it was, how long it idled or waited, peaks
and energy.

Built in one pass over the snapshots (:class:`ReportBuilder`), keeping per GPU only four
compact arrays (time, utilization, power, state) for the percentiles, the time integrals and
the charts: a few MB for a day of one-second samples of 8 GPUs.

How the figures are computed (the README documents these):

* GPUs are told apart by UUID (by index only when a capture gives none), never by position
  alone; a recording of several machines (see ``model.machine``) is not one timeline, and
  :attr:`ReportBuilder.machines` says so for the caller to refuse it.
* Each sample stands for the time until the next one; the last sample of a GPU stands for no
  time. An interval longer than ``max_gap_s`` is a gap: it counts towards no state and no
  energy, only towards ``gap_s`` (and ``duration_s``). An interval that goes back in time (a
  clock change, files out of order) counts towards nothing: the durations are the sums of the
  intervals that went forward, and start and end are not given (None), since the first and
  the last snapshot are then not the earliest and the latest.
* Utilization statistics are over samples (not time-weighted), leaving out samples where the
  GPU did not report utilization (MIG): those never count as 0.
* Energy integrates power draw over time with the trapezoid rule, over intervals whose both
  ends report power.
"""

from __future__ import annotations

import itertools
import statistics
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from gputop.insight.diagnosis import DEFAULT_THRESHOLDS, DiagnosisThresholds, GpuState, gpu_state
from gputop.insight.series import known, percentile, value_or_nan
from gputop.insight.textfmt import fmt_duration
from gputop.model import GpuSample, Snapshot
from gputop.model.fields import IDENTITY
from gputop.model.machine import Machine, Machines
from gputop.model.units import NA, fmt_bytes, fmt_percent, fmt_watts

STATES: tuple[GpuState, ...] = tuple(GpuState)
_STATE_CODE = {state: code for code, state in enumerate(STATES)}

MIN_AUTO_GAP_S = 10.0
"""The automatic gap threshold is three sampling intervals, but never below this."""


@dataclass(frozen=True, slots=True)
class GpuSummary:
    """The figures of one GPU over a recording. Times in seconds, power in W, memory in bytes."""

    index: int
    name: str | None
    uuid: str | None
    samples: int
    start: datetime | None
    """None when this GPU's samples went back in time."""
    end: datetime | None
    duration_s: float
    """From this GPU's first sample to its last, gaps included (the sum of the intervals that
    went forward)."""
    utilization_samples: int
    """Samples that reported utilization (the statistics below are over these)."""
    utilization_mean_pct: float | None
    utilization_p50_pct: float | None
    utilization_p95_pct: float | None
    busy_s: float
    waiting_s: float | None
    """None when the recording holds no memory use (nor processes) for this GPU: then
    waiting (work loaded, little done) cannot be told from idle (nothing loaded)."""
    idle_s: float | None
    throttled_s: float
    unknown_s: float
    gap_s: float
    peak_memory_used_bytes: int | None
    memory_total_bytes: int | None
    peak_power_w: float | None
    energy_wh: float | None
    """None when no sample reported power."""


@dataclass(frozen=True, slots=True)
class RecordingSummary:
    """The whole report: every GPU seen, and what was left out."""

    source: str
    snapshots: int
    """Snapshots read, those without a timestamp included."""
    untimed_snapshots: int
    """Snapshots without a readable timestamp: they cannot be placed in time, so left out."""
    start: datetime | None
    """None when time went backwards (then the first snapshot is not the earliest)."""
    end: datetime | None
    duration_s: float
    """The sum of the intervals that went forward, gaps included."""
    max_gap_s: float
    gpus: tuple[GpuSummary, ...]
    warnings: tuple[str, ...] = ()
    backward_steps: int = 0
    """Times a snapshot was older than the one before it (a clock change, or files that are
    not one recording in order); such steps count as gaps."""


@dataclass(frozen=True, slots=True)
class GpuTrace:
    """One GPU's samples over time, for charts. NaN marks a value not reported."""

    index: int
    times: Sequence[float]
    """Seconds since the recording's first timed snapshot."""
    utilization: Sequence[float]
    power: Sequence[float]
    throttled: Sequence[bool]


_N = TypeVar("_N", int, float)


def _forward(times: Sequence[float]) -> float:
    """The sum of the steps of ``times`` that go forward: last - first when all do."""
    return sum(max(b - a, 0.0) for a, b in itertools.pairwise(times))


def _peak(a: _N | None, b: _N | None) -> _N | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


class _GpuAccumulator:
    __slots__ = (
        "end",
        "index",
        "memory_total",
        "name",
        "peak_memory",
        "peak_power",
        "power",
        "start",
        "states",
        "times",
        "utilization",
        "uuid",
    )

    def __init__(self, gpu: GpuSample) -> None:
        self.index = gpu.index
        self.name = gpu.name
        self.uuid = gpu.uuid
        self.memory_total: int | None = None
        self.peak_memory: int | None = None
        self.peak_power: float | None = None
        self.start: datetime | None = None
        self.end: datetime | None = None
        self.times = array("d")
        self.utilization = array("d")
        self.power = array("d")
        self.states = bytearray()

    def add(self, moment: datetime, offset: float, gpu: GpuSample, state: GpuState) -> None:
        if self.start is None:
            self.start = moment
        self.end = moment
        self.name = self.name or gpu.name
        self.uuid = self.uuid or gpu.uuid
        self.times.append(offset)
        self.utilization.append(value_or_nan(gpu.utilization.gpu))
        draw = gpu.power.draw
        self.power.append(value_or_nan(draw))
        self.states.append(_STATE_CODE[state])
        used = gpu.memory.used
        if used is not None and (self.peak_memory is None or used > self.peak_memory):
            self.peak_memory = used
        if gpu.memory.total is not None:
            self.memory_total = gpu.memory.total
        if draw is not None and (self.peak_power is None or draw > self.peak_power):
            self.peak_power = draw

    def extend(self, later: _GpuAccumulator) -> None:
        """Append the samples of ``later``, which come after this one's."""
        self.name = self.name or later.name
        self.uuid = self.uuid or later.uuid
        self.start = self.start or later.start
        self.end = later.end or self.end
        self.times.extend(later.times)
        self.utilization.extend(later.utilization)
        self.power.extend(later.power)
        self.states.extend(later.states)
        if later.memory_total is not None:
            self.memory_total = later.memory_total
        self.peak_memory = _peak(self.peak_memory, later.peak_memory)
        self.peak_power = _peak(self.peak_power, later.peak_power)

    def summary(self, max_gap_s: float) -> GpuSummary:
        times, power, states = self.times, self.power, self.states
        per_state = [0.0] * len(STATES)
        gap = 0.0
        joules = 0.0
        backward = False
        for i in range(len(times) - 1):
            step = times[i + 1] - times[i]
            if step < 0:
                backward = True
                continue
            if step > max_gap_s:
                gap += step
                continue
            per_state[states[i]] += step
            before, after = power[i], power[i + 1]
            if before == before and after == after:  # neither is NaN
                joules += (before + after) / 2 * step
        utils = sorted(known(self.utilization))
        held_known = self.peak_memory is not None
        return GpuSummary(
            index=self.index,
            name=self.name,
            uuid=self.uuid,
            samples=len(times),
            start=None if backward else self.start,
            end=None if backward else self.end,
            duration_s=_forward(times),
            utilization_samples=len(utils),
            utilization_mean_pct=statistics.fmean(utils) if utils else None,
            utilization_p50_pct=percentile(utils, 0.50) if utils else None,
            utilization_p95_pct=percentile(utils, 0.95) if utils else None,
            busy_s=per_state[_STATE_CODE[GpuState.BUSY]],
            waiting_s=per_state[_STATE_CODE[GpuState.WAITING]] if held_known else None,
            idle_s=per_state[_STATE_CODE[GpuState.IDLE]] if held_known else None,
            throttled_s=per_state[_STATE_CODE[GpuState.THROTTLED]],
            unknown_s=per_state[_STATE_CODE[GpuState.UNKNOWN]],
            gap_s=gap,
            peak_memory_used_bytes=self.peak_memory,
            memory_total_bytes=self.memory_total,
            peak_power_w=self.peak_power,
            energy_wh=joules / 3600 if self.peak_power is not None else None,
        )

    def trace(self) -> GpuTrace:
        throttled = _STATE_CODE[GpuState.THROTTLED]
        return GpuTrace(
            index=self.index,
            times=self.times,
            utilization=self.utilization,
            power=self.power,
            throttled=[code == throttled for code in self.states],
        )


class ReportBuilder:
    """Feed snapshots in time order with :meth:`add`; read :meth:`summary` and :meth:`traces`.

    Args:
        max_gap_s: intervals longer than this are gaps (not integrated); None picks three
            times the median sampling interval, at least ``min_auto_gap_s``.
        min_auto_gap_s: the floor of the automatic gap threshold.
        thresholds: what counts as idle, waiting, throttled (see ``diagnosis``).
        origin: the moment offsets count from; None takes the first timed snapshot. Builders
            fed consecutive parts of one recording share it, so that :meth:`merged` can join
            them.
    """

    def __init__(
        self,
        *,
        max_gap_s: float | None = None,
        min_auto_gap_s: float = MIN_AUTO_GAP_S,
        thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS,
        origin: datetime | None = None,
    ) -> None:
        if max_gap_s is not None and max_gap_s <= 0:
            raise ValueError("max_gap_s must be positive")
        self._max_gap_s = max_gap_s
        self._min_auto_gap_s = min_auto_gap_s
        self._thresholds = thresholds
        self._gpus: dict[str, _GpuAccumulator] = {}
        """By UUID (``index:N`` for a GPU without one)."""
        self._machines = Machines()
        self._origin = origin
        self._first: datetime | None = None
        self._last: datetime | None = None
        self._offsets = array("d")
        self._snapshots = 0
        self._untimed = 0
        self._backward = 0

    def add(self, snapshot: Snapshot) -> None:
        """Take one snapshot into account (the next in time order)."""
        self._snapshots += 1
        self._machines.add(snapshot)
        moment = snapshot.timestamp
        if moment is None:
            self._untimed += 1
            return
        if self._origin is None:
            self._origin = moment
        if self._first is None:
            self._first = moment
        if self._last is not None and moment < self._last:
            self._backward += 1
        self._last = moment
        offset = (moment - self._origin).total_seconds()
        self._offsets.append(offset)
        thresholds = self._thresholds
        seen: set[str] = set()
        for gpu in snapshot.gpus:
            key = gpu.uuid or f"index:{gpu.index}"
            if key in seen:  # an edited capture giving two GPUs one UUID: still two GPUs
                key = f"{key}@{gpu.index}"
            seen.add(key)
            accumulator = self._gpus.get(key)
            if accumulator is None:
                accumulator = self._gpus[key] = _GpuAccumulator(gpu)
            accumulator.add(moment, offset, gpu, gpu_state(gpu, thresholds))

    def add_all(self, snapshots: Iterable[Snapshot]) -> ReportBuilder:
        """:meth:`add` each snapshot; returns self for chaining."""
        for snapshot in snapshots:
            self.add(snapshot)
        return self

    @property
    def machines(self) -> list[Machine]:
        """The machines the snapshots are of; more than one makes no one recording."""
        return self._machines.machines

    @property
    def origin(self) -> datetime | None:
        """The moment the trace times count from."""
        return self._origin

    @classmethod
    def merged(cls, parts: Sequence[ReportBuilder]) -> ReportBuilder:
        """One builder from builders fed consecutive parts of a recording, in order.

        The parts must share ``origin`` (and their settings); the result is what one builder
        fed every snapshot would hold.
        """
        if not parts:
            return cls()
        first = parts[0]
        whole = cls(
            max_gap_s=first._max_gap_s,
            min_auto_gap_s=first._min_auto_gap_s,
            thresholds=first._thresholds,
        )
        for part in parts:
            if None not in (part._origin, first._origin) and part._origin != first._origin:
                raise ValueError("parts of a report must share their origin")
            whole._origin = whole._origin or part._origin
            whole._first = whole._first or part._first
            if whole._last is not None and part._first is not None and part._first < whole._last:
                whole._backward += 1
            whole._backward += part._backward
            whole._last = part._last or whole._last
            whole._offsets.extend(part._offsets)
            whole._snapshots += part._snapshots
            whole._untimed += part._untimed
            whole._machines.merge(part._machines)
            for key, accumulator in part._gpus.items():
                existing = whole._gpus.get(key)
                if existing is None:
                    whole._gpus[key] = accumulator
                else:
                    existing.extend(accumulator)
        return whole

    @property
    def max_gap_s(self) -> float:
        """The gap threshold in use (worked out from the samples when not given)."""
        if self._max_gap_s is not None:
            return self._max_gap_s
        offsets = self._offsets
        steps = [b - a for a, b in itertools.pairwise(offsets) if b > a]
        if not steps:
            return self._min_auto_gap_s
        return max(self._min_auto_gap_s, 3 * statistics.median(steps))

    def summary(self, source: str = "", warnings: Iterable[str] = ()) -> RecordingSummary:
        """Every GPU's figures, in index order."""
        max_gap = self.max_gap_s
        backward = self._backward > 0
        return RecordingSummary(
            source=source,
            snapshots=self._snapshots,
            untimed_snapshots=self._untimed,
            start=None if backward else self._first,
            end=None if backward else self._last,
            duration_s=_forward(self._offsets),
            max_gap_s=max_gap,
            gpus=tuple(gpu.summary(max_gap) for gpu in self._in_order()),
            warnings=tuple(warnings),
            backward_steps=self._backward,
        )

    def traces(self) -> tuple[GpuTrace, ...]:
        """Every GPU's samples over time, in index order."""
        return tuple(gpu.trace() for gpu in self._in_order())

    @property
    def backward_steps(self) -> int:
        """Times a snapshot was older than the one before it."""
        return self._backward

    def _in_order(self) -> list[_GpuAccumulator]:
        return [self._gpus[key] for key in sorted(self._gpus, key=self._order)]

    def _order(self, key: str) -> tuple[int, str]:
        return self._gpus[key].index, key


def summarize(
    snapshots: Iterable[Snapshot],
    *,
    max_gap_s: float | None = None,
    thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS,
) -> RecordingSummary:
    """The summary of snapshots given in time order (convenience over ReportBuilder)."""
    return ReportBuilder(max_gap_s=max_gap_s, thresholds=thresholds).add_all(snapshots).summary()


# -- output -------------------------------------------------------------------------------


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def gpu_to_json(gpu: GpuSummary) -> dict[str, object]:
    """One GPU's figures as JSON-ready values (field names carry their units); the GPU is
    named by the field table's identity fields, under their ``--json`` names."""
    return {
        **{field.json: field.read(gpu) for field in IDENTITY if field.json},
        "samples": gpu.samples,
        "start": _iso(gpu.start),
        "end": _iso(gpu.end),
        "duration_s": round(gpu.duration_s, 3),
        "utilization_samples": gpu.utilization_samples,
        "utilization_mean_pct": _round(gpu.utilization_mean_pct, 2),
        "utilization_p50_pct": _round(gpu.utilization_p50_pct, 2),
        "utilization_p95_pct": _round(gpu.utilization_p95_pct, 2),
        "busy_s": round(gpu.busy_s, 3),
        "waiting_s": _round(gpu.waiting_s, 3),
        "idle_s": _round(gpu.idle_s, 3),
        "throttled_s": round(gpu.throttled_s, 3),
        "unknown_s": round(gpu.unknown_s, 3),
        "gap_s": round(gpu.gap_s, 3),
        "peak_memory_used_bytes": gpu.peak_memory_used_bytes,
        "memory_total_bytes": gpu.memory_total_bytes,
        "peak_power_w": _round(gpu.peak_power_w, 2),
        "energy_wh": _round(gpu.energy_wh, 4),
    }


def summary_to_json(summary: RecordingSummary) -> dict[str, object]:
    """The whole report as JSON-ready values."""
    return {
        "source": summary.source,
        "snapshots": summary.snapshots,
        "untimed_snapshots": summary.untimed_snapshots,
        "start": _iso(summary.start),
        "end": _iso(summary.end),
        "duration_s": round(summary.duration_s, 3),
        "max_gap_s": round(summary.max_gap_s, 3),
        "backward_steps": summary.backward_steps,
        "complete": not summary.warnings,
        "warnings": list(summary.warnings),
        "gpus": [gpu_to_json(gpu) for gpu in summary.gpus],
    }


def fmt_energy(wh: float | None) -> str:
    """Watt-hours: ``0.14Wh``, ``312.4Wh``, ``1.25kWh``."""
    if wh is None:
        return NA
    if wh >= 1000:
        return f"{wh / 1000:.2f}kWh"
    if wh < 10:
        return f"{wh:.2f}Wh"
    return f"{wh:.1f}Wh"


_COLUMNS = (
    ("GPU", ">"),
    ("TIME", ">"),
    ("UTIL", ">"),
    ("P50", ">"),
    ("P95", ">"),
    ("IDLE", ">"),
    ("WAITING", ">"),
    ("THROTTLED", ">"),
    ("PEAK MEM", ">"),
    ("PEAK PWR", ">"),
    ("ENERGY", ">"),
)


def _row(gpu: GpuSummary) -> tuple[str, ...]:
    return (
        str(gpu.index),
        fmt_duration(gpu.duration_s),
        fmt_percent(gpu.utilization_mean_pct),
        fmt_percent(gpu.utilization_p50_pct),
        fmt_percent(gpu.utilization_p95_pct),
        NA if gpu.idle_s is None else fmt_duration(gpu.idle_s),
        NA if gpu.waiting_s is None else fmt_duration(gpu.waiting_s),
        fmt_duration(gpu.throttled_s),
        fmt_bytes(gpu.peak_memory_used_bytes),
        fmt_watts(gpu.peak_power_w),
        fmt_energy(gpu.energy_wh),
    )


def _when(moment: datetime | None) -> str:
    return NA if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def render_table(summary: RecordingSummary) -> str:
    """The report as plain text: a heading, one row per GPU, then each GPU's name."""
    span = (
        f"{_when(summary.start)} to {_when(summary.end)}"
        if summary.start is not None and summary.end is not None
        else "start and end unknown"
    )
    lines = [
        f"{summary.source or 'recording'}: {summary.snapshots} snapshots, "
        f"{span} ({fmt_duration(summary.duration_s)})"
    ]
    if summary.untimed_snapshots:
        lines.append(f"{summary.untimed_snapshots} snapshots without a timestamp left out")
    if summary.backward_steps:
        lines.append(
            f"time went backwards {summary.backward_steps} times (a clock change, or files not "
            "in time order): those steps count towards nothing, every time below is the sum "
            "of the intervals that went forward"
        )
    if not summary.gpus:
        lines.append("no GPU in the recording")
        return "\n".join(lines)
    rows = [tuple(name for name, _ in _COLUMNS), *(_row(gpu) for gpu in summary.gpus)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_COLUMNS))]
    lines.append("")
    for row in rows:
        cells = (
            f"{cell:{align}{width}}"
            for cell, (_, align), width in zip(row, _COLUMNS, widths, strict=True)
        )
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    for gpu in summary.gpus:
        total = f" of {fmt_bytes(gpu.memory_total_bytes)}" if gpu.memory_total_bytes else ""
        lines.append(
            f"GPU {gpu.index}: {gpu.name or NA} ({gpu.uuid or 'no UUID'}); "
            f"{gpu.samples} samples; busy {fmt_duration(gpu.busy_s)}; "
            f"peak memory {fmt_bytes(gpu.peak_memory_used_bytes)}{total}"
            + (f"; {fmt_duration(gpu.gap_s)} in gaps" if gpu.gap_s else "")
        )
        if gpu.idle_s is None:
            lines.append(
                f"GPU {gpu.index}: the recording holds no memory use, so waiting cannot be "
                f"told from idle: {fmt_duration(gpu.unknown_s)} at low or unknown utilization "
                "is either"
            )
    lines.append(
        "UTIL is the mean over samples; IDLE: nothing loaded; WAITING: work loaded but "
        f"utilization below {DEFAULT_THRESHOLDS.low_utilization_pct:.0f}%; gaps over "
        f"{fmt_duration(summary.max_gap_s)} are not counted."
    )
    return "\n".join(lines)


def clock_at(start: datetime | None, offset: float) -> datetime | None:
    """The time of day ``offset`` seconds after ``start``."""
    return None if start is None else start + timedelta(seconds=offset)
