"""Each GPU's figures in a report, gathered sample by sample or run by run.

Two ways to gather them, with the same figures: ``KeptGpu`` keeps every sample (for the
charts, and for a gap threshold worked out once all are in), ``RunningGpu`` adds the figures
up as samples come and keeps none (the gap threshold known from the start). ``StateCache``
classifies samples read column by column as ``sample_verdict`` classifies the samples they
stand for.
"""

from __future__ import annotations

import statistics
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import compress, repeat
from operator import eq, getitem, le
from typing import TypeVar, cast

from gputop.insight.diagnosis import DiagnosisThresholds, GpuState
from gputop.insight.series import known, percentile, value_or_nan
from gputop.insight.steps import Intervals, StepSums, count_stats
from gputop.model import GpuSample, Memory, Power, Reason, Utilization
from gputop.model.columns import GpuColumns, SnapshotColumns
from gputop.model.gpu_state import Verdict, cap_binds, sample_verdict

STATES: tuple[GpuState, ...] = tuple(GpuState)
STATE_CODE = {state: code for code, state in enumerate(STATES)}
"""Each state's number in a GPU's array of states."""
AT_CAP = len(STATES)
"""The number of a busy sample at the power cap: busy, and counted apart as well, for the
share of busy time at the cap."""
CODES = len(STATES) + 1
_BUSY = STATE_CODE[GpuState.BUSY]


def verdict_code(verdict: Verdict) -> int:
    """A verdict's number in a GPU's array of states."""
    if verdict.at_power_cap and verdict.state is GpuState.BUSY:
        return AT_CAP
    return STATE_CODE[verdict.state]


@dataclass(frozen=True, slots=True)
class PowerCap:
    """What a GPU did while busy at its power cap."""

    limit_w: float | None
    """The highest power limit reported in those samples."""
    sm_clock_mhz: tuple[float, float] | None
    """The lowest and highest SM clock in those samples; None when none reported it."""


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
    busy_s: float | None
    """None when no sample reported utilization: busy cannot be told."""
    waiting_s: float | None
    """None when the recording holds no memory use (nor processes) for this GPU: then
    waiting (work loaded, little done) cannot be told from idle (nothing loaded)."""
    idle_s: float | None
    throttled_s: float | None
    """None when no sample reported clock-event reasons (a log without that column): a
    throttled GPU cannot be told from one that is not."""
    unknown_s: float
    gap_s: float
    peak_memory_used_bytes: int | None
    memory_total_bytes: int | None
    peak_power_w: float | None
    energy_wh: float | None
    """None when no sample reported power."""
    busy_at_cap_s: float | None = None
    """Busy time at the power cap (part of ``busy_s``); None where the reasons were never
    reported."""
    power_cap: PowerCap | None = None
    """The power limit and SM clocks of the busy samples at the cap; None when there were
    none."""

    @property
    def busy_at_cap_share(self) -> float | None:
        """The share of busy time at the power cap (0 to 1); None when not known or there
        was no busy time."""
        if self.busy_at_cap_s is None or not self.busy_s:
            return None
        return self.busy_at_cap_s / self.busy_s


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


def _peak(a: _N | None, b: _N | None) -> _N | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


class CapTally:
    """What a GPU's samples say about clock-event reasons: how many reported them, and the
    power limit and SM clocks of those busy at the power cap."""

    __slots__ = ("capped", "limit", "reported", "sm_high", "sm_low")

    def __init__(self) -> None:
        self.reported = 0
        """Samples that reported their clock-event reasons (an empty list counts)."""
        self.capped = 0
        self.limit: float | None = None
        self.sm_low: float | None = None
        self.sm_high: float | None = None

    def add(self, gpu: GpuSample, code: int) -> None:
        if gpu.throttle_reasons is not None:
            self.reported += 1
        if code == AT_CAP:
            self.capped += 1
            self.limit = _peak(self.limit, gpu.power.limit)
            sm = gpu.clocks.sm
            if sm is not None:
                self.sm_low = sm if self.sm_low is None else min(self.sm_low, sm)
                self.sm_high = _peak(self.sm_high, float(sm))

    def add_columns(self, gpu: GpuColumns, codes: bytes) -> None:
        reasons = gpu.throttle_reasons
        if reasons is None:
            return
        self.reported += len(reasons) - reasons.count(None)
        capped = codes.count(AT_CAP)
        if not capped:
            return
        self.capped += capped
        at_cap = codes.translate(_AT_CAP_ONLY)
        if gpu.power_limit is not None:
            self.limit = _peak(self.limit, _top(list(compress(gpu.power_limit, at_cap))))
        if gpu.clocks_sm is not None:
            clocks = [c for c in compress(gpu.clocks_sm, at_cap) if c == c]
            if clocks:
                low, high = min(clocks), max(clocks)
                self.sm_low = low if self.sm_low is None else min(self.sm_low, low)
                self.sm_high = _peak(self.sm_high, high)

    def merge(self, later: CapTally) -> None:
        self.reported += later.reported
        self.capped += later.capped
        self.limit = _peak(self.limit, later.limit)
        if later.sm_low is not None:
            self.sm_low = later.sm_low if self.sm_low is None else min(self.sm_low, later.sm_low)
        self.sm_high = _peak(self.sm_high, later.sm_high)

    def power_cap(self) -> PowerCap | None:
        if not self.capped:
            return None
        clocks = None
        if self.sm_low is not None and self.sm_high is not None:
            clocks = (self.sm_low, self.sm_high)
        return PowerCap(limit_w=self.limit, sm_clock_mhz=clocks)


_AT_CAP_ONLY = bytes(int(code == AT_CAP) for code in range(256))


class KeptGpu:
    """One GPU's samples, every one kept (for the charts, and for a gap threshold worked
    out once all are in)."""

    __slots__ = (
        "caps",
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

    def __init__(self, gpu: GpuSample | GpuColumns) -> None:
        self.caps = CapTally()
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

    def add(self, moment: datetime, offset: float, gpu: GpuSample, verdict: Verdict) -> None:
        code = verdict_code(verdict)
        self.caps.add(gpu, code)
        if self.start is None:
            self.start = moment
        self.end = moment
        self.name = self.name or gpu.name
        self.uuid = self.uuid or gpu.uuid
        self.times.append(offset)
        self.utilization.append(value_or_nan(gpu.utilization.gpu))
        draw = gpu.power.draw
        self.power.append(value_or_nan(draw))
        self.states.append(code)
        used = gpu.memory.used
        if used is not None and (self.peak_memory is None or used > self.peak_memory):
            self.peak_memory = used
        if gpu.memory.total is not None:
            self.memory_total = gpu.memory.total
        if draw is not None and (self.peak_power is None or draw > self.peak_power):
            self.peak_power = draw

    def add_columns(
        self, run: SnapshotColumns, intervals: Intervals | None, gpu: GpuColumns, states: bytes
    ) -> None:
        """The GPU's samples in a run of snapshots."""
        if not run.offsets:
            return
        self.caps.add_columns(gpu, states)
        self.start = self.start or run.first
        self.end = run.last
        self.name = self.name or gpu.name
        self.uuid = self.uuid or gpu.uuid
        self.times.extend(run.offsets)
        self.utilization.extend(gpu.utilization)
        self.power.extend(gpu.power)
        self.states.extend(states)
        self.peak_memory = _peak(self.peak_memory, _top(gpu.memory_used))
        if gpu.memory_total is not None:
            self.memory_total = gpu.memory_total
        self.peak_power = _peak(self.peak_power, _top(gpu.power))

    def extend(self, later: KeptGpu) -> None:
        """Append the samples of ``later``, which come after this one's."""
        self.caps.merge(later.caps)
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
        sums = StepSums(CODES)
        sums.add(self.times, self.power, self.states, max_gap_s)
        utils = sorted(known(self.utilization))
        stats = (
            (len(utils), statistics.fmean(utils), percentile(utils, 0.50), percentile(utils, 0.95))
            if utils
            else (0, None, None, None)
        )
        return _summary(self, len(self.times), sums, stats)

    def trace(self) -> GpuTrace:
        throttled = STATE_CODE[GpuState.THROTTLED]
        return GpuTrace(
            index=self.index,
            times=self.times,
            utilization=self.utilization,
            power=self.power,
            throttled=[code == throttled for code in self.states],
        )


class RunningGpu:
    """One GPU's figures added up as its samples come, none kept: the gap threshold is
    known from the start, or (``deferred``) only its floor, ``max_gap_s``: then the
    intervals longer than that are kept aside until the summary settles them."""

    __slots__ = (
        "caps",
        "end",
        "first",
        "index",
        "last",
        "max_gap_s",
        "memory_total",
        "name",
        "peak_memory",
        "peak_power",
        "samples",
        "start",
        "sums",
        "utilization",
        "uuid",
    )

    def __init__(
        self, gpu: GpuSample | GpuColumns, max_gap_s: float, *, deferred: bool = False
    ) -> None:
        self.caps = CapTally()
        self.index = gpu.index
        self.name = gpu.name
        self.uuid = gpu.uuid
        self.max_gap_s = max_gap_s
        self.memory_total: int | None = None
        self.peak_memory: int | None = None
        self.peak_power: float | None = None
        self.start: datetime | None = None
        self.end: datetime | None = None
        self.samples = 0
        self.sums = StepSums(CODES, deferred=deferred)
        self.utilization: Counter[float] = Counter()
        """How many samples had each utilization (NaN: not reported)."""
        self.first: tuple[float, float, int] | None = None
        """(time, power, state) of the first sample: where a part before this one joins."""
        self.last: tuple[float, float, int] | None = None
        """(time, power, state) of the last sample: the next interval starts there."""

    def add(self, moment: datetime, offset: float, gpu: GpuSample, verdict: Verdict) -> None:
        code = verdict_code(verdict)
        self.caps.add(gpu, code)
        self.start = self.start or moment
        self.end = moment
        self.name = self.name or gpu.name
        self.uuid = self.uuid or gpu.uuid
        draw = value_or_nan(gpu.power.draw)
        self._join((offset, draw, code))
        self.last = (offset, draw, code)
        self.samples += 1
        self.utilization[value_or_nan(gpu.utilization.gpu)] += 1
        self.peak_memory = _peak(self.peak_memory, gpu.memory.used)
        if gpu.memory.total is not None:
            self.memory_total = gpu.memory.total
        self.peak_power = _peak(self.peak_power, gpu.power.draw)

    def add_columns(
        self, run: SnapshotColumns, intervals: Intervals, gpu: GpuColumns, states: bytes
    ) -> None:
        """The GPU's samples in a run of snapshots (``intervals``: between the run's times)."""
        offsets, power = run.offsets, gpu.power
        if not offsets:
            return
        self.caps.add_columns(gpu, states)
        self.start = self.start or run.first
        self.end = run.last
        self.name = self.name or gpu.name
        self.uuid = self.uuid or gpu.uuid
        self._join((offsets[0], power[0], states[0]))
        self.sums.add_intervals(intervals, power, states)
        self.last = (offsets[-1], power[-1], states[-1])
        self.samples += len(offsets)
        self.utilization.update(gpu.utilization)
        self.peak_memory = _peak(self.peak_memory, _top(gpu.memory_used))
        if gpu.memory_total is not None:
            self.memory_total = gpu.memory_total
        self.peak_power = _peak(self.peak_power, _top(power))

    def _join(self, sample: tuple[float, float, int]) -> None:
        """The interval from the last sample to ``sample``, the next one."""
        last = self.last
        if last is None:
            self.first = sample
        else:
            self.sums.add(
                (last[0], sample[0]), (last[1], sample[1]), (last[2], sample[2]), self.max_gap_s
            )

    def extend(self, later: RunningGpu) -> None:
        """Take in the figures of ``later``, whose samples come after this one's."""
        self.caps.merge(later.caps)
        if later.first is not None:
            self._join(later.first)
            self.last = later.last
        self.sums.merge(later.sums)
        self.samples += later.samples
        self.utilization.update(later.utilization)
        self.name = self.name or later.name
        self.uuid = self.uuid or later.uuid
        self.start = self.start or later.start
        self.end = later.end or self.end
        if later.memory_total is not None:
            self.memory_total = later.memory_total
        self.peak_memory = _peak(self.peak_memory, later.peak_memory)
        self.peak_power = _peak(self.peak_power, later.peak_power)

    def summary(self, max_gap_s: float) -> GpuSummary:
        sums = self.sums.settled(max_gap_s)
        return _summary(self, self.samples, sums, count_stats(self.utilization))

    @property
    def pending(self) -> int:
        """How many intervals wait for the gap threshold (0: none deferred)."""
        return 0 if self.sums.pending is None else len(self.sums.pending)


def _top(values: Sequence[_N | None] | None) -> _N | None:
    """The largest reported value (neither None nor NaN); None if none is."""
    if not values:
        return None
    try:
        top = max(cast("Sequence[_N]", values))
    except TypeError:
        pass  # a None among them
    else:
        # NaN compares false, so max passes over it unless it comes first: then it is max.
        if top == top:
            return top
    reported: Sequence[_N] = (
        [value for value in values if value is not None]
        if None in values
        else cast("Sequence[_N]", values)
    )
    return max(compress(reported, map(eq, reported, reported)), default=None)


def _summary(
    gpu: KeptGpu | RunningGpu,
    samples: int,
    sums: StepSums,
    stats: tuple[int, float | None, float | None, float | None],
) -> GpuSummary:
    per_state = [part.value for part in sums.per_state]
    held_known = gpu.peak_memory is not None
    reasons_known = gpu.caps.reported > 0
    busy = per_state[_BUSY] + per_state[AT_CAP]
    return GpuSummary(
        index=gpu.index,
        name=gpu.name,
        uuid=gpu.uuid,
        samples=samples,
        start=None if sums.backward else gpu.start,
        end=None if sums.backward else gpu.end,
        duration_s=sums.forward_s.value,
        utilization_samples=stats[0],
        utilization_mean_pct=stats[1],
        utilization_p50_pct=stats[2],
        utilization_p95_pct=stats[3],
        busy_s=busy if stats[0] else None,
        waiting_s=per_state[STATE_CODE[GpuState.WAITING]] if held_known else None,
        idle_s=per_state[STATE_CODE[GpuState.IDLE]] if held_known else None,
        throttled_s=per_state[STATE_CODE[GpuState.THROTTLED]] if reasons_known else None,
        unknown_s=per_state[STATE_CODE[GpuState.UNKNOWN]],
        gap_s=sums.gap_s.value,
        peak_memory_used_bytes=gpu.peak_memory,
        memory_total_bytes=gpu.memory_total,
        peak_power_w=gpu.peak_power,
        energy_wh=sums.energy_j.value / 3600 if gpu.peak_power is not None else None,
        busy_at_cap_s=per_state[AT_CAP] if reasons_known else None,
        power_cap=gpu.caps.power_cap(),
    )


_StateKey = tuple[float, int, "tuple[str, ...] | None", bool]
_NO_MEMORY_COLUMN = 2
_MEMORY_MISSING = 3


class StateCache(dict[_StateKey, int]):
    """The state number of a sample of columns, by what decides it: utilization, memory
    held (0 below the threshold, 1 at or above, 2 no such column, 3 not reported),
    clock-event reasons and whether the draw confirms a power cap (``cap_binds``).
    Each new combination is classified by ``sample_verdict`` itself, on a sample holding just
    those values, so columns are classified as the samples they stand for."""

    def __init__(self, thresholds: DiagnosisThresholds) -> None:
        super().__init__()
        self._thresholds = thresholds
        self._by_utilization = _ByUtilization(self)
        self._by_held = [_OneCase(self, held) for held in range(_MEMORY_MISSING + 1)]

    def __missing__(self, key: _StateKey) -> int:
        utilization, held, reasons, binds = key
        used = None if held > 1 else self._thresholds.held_memory_bytes if held else 0
        gpu = GpuSample(
            index=0,
            utilization=Utilization(gpu=None if utilization != utilization else utilization),
            memory=Memory(used=used),
            # Power unknown lets a reported cap bind; a draw of none of a limit does not.
            power=Power() if binds else Power(draw=0.0, limit=1.0),
            throttle_reasons=reasons,
            unavailable=(("memory.used", Reason.NOT_IN_LOG),) if held == _NO_MEMORY_COLUMN else (),
        )
        code = self[key] = verdict_code(sample_verdict(gpu, self._thresholds))
        return code

    def of(self, gpu: GpuColumns) -> bytes:
        """The state number of each of ``gpu``'s samples."""
        threshold = self._thresholds.held_memory_bytes
        used = gpu.memory_used
        held: int | Iterable[int]
        if used is None:
            held = _NO_MEMORY_COLUMN
        else:
            known = cast("Sequence[int]", used)
            try:
                # Memory held all along, or never (the common case): one case for all.
                same = 1 if min(known) >= threshold else 0 if max(known) < threshold else None
            except TypeError:  # None among them: not reported there
                held = [_MEMORY_MISSING if u is None else int(u >= threshold) for u in used]
            else:
                held = map(le, repeat(threshold), known) if same is None else same
        if gpu.throttle_reasons is None:
            if isinstance(held, int):
                # Without reasons and one memory case: one lookup a sample.
                return bytes(map(self._by_held[held].__getitem__, gpu.utilization))
            # Without reasons: a utilization's states by the memory case, one lookup each.
            codes = map(self._by_utilization.__getitem__, gpu.utilization)
            return bytes(map(getitem, codes, held))
        reasons = gpu.throttle_reasons
        cases = repeat(held) if isinstance(held, int) else held
        binds: Iterable[bool] = repeat(True)
        if gpu.power_limit is not None:
            binds = map(_binds, gpu.power, gpu.power_limit)
        keys = zip(gpu.utilization, cases, reasons, binds, strict=False)
        return bytes(map(self.__getitem__, keys))


def _binds(draw: float, limit: float) -> bool:
    """``cap_binds`` for a column's draw and limit (NaN: not reported)."""
    return cap_binds(None if draw != draw else draw, None if limit != limit else limit)


class _OneCase(dict[float, int]):
    """A utilization -> its state number in one memory case (no clock-event reasons)."""

    def __init__(self, states: StateCache, held: int) -> None:
        super().__init__()
        self._states = states
        self._held = held

    def __missing__(self, utilization: float) -> int:
        code = self[utilization] = self._states[(utilization, self._held, None, True)]
        return code


class _ByUtilization(dict[float, tuple[int, ...]]):
    """A utilization -> its state number in each memory case (no clock-event reasons)."""

    def __init__(self, states: StateCache) -> None:
        super().__init__()
        self._states = states

    def __missing__(self, utilization: float) -> tuple[int, ...]:
        codes = self[utilization] = tuple(
            self._states[(utilization, held, None, True)] for held in range(_MEMORY_MISSING + 1)
        )
        return codes
