"""The summary of a recording: per GPU, how busy it was, how long it idled or waited, peaks
and energy.

Built in one pass over the snapshots (:class:`ReportBuilder`), keeping per GPU only four
compact arrays (time, utilization, power, state) for the percentiles, the time integrals and
the charts: a few MB for a day of one-second samples of 8 GPUs. Given the gap threshold up
front, it keeps none and adds the figures up as they come (``gpu_figures.RunningGpu``), and
it takes runs of snapshots read column by column (:meth:`ReportBuilder.add_columns`): the
figures are the same, sums being exact (``steps``).

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
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import compress, islice, repeat
from operator import eq, lt, sub

from gputop.insight.diagnosis import DEFAULT_THRESHOLDS, DiagnosisThresholds
from gputop.insight.gpu_figures import STATES as STATES
from gputop.insight.gpu_figures import GpuSummary as GpuSummary
from gputop.insight.gpu_figures import GpuTrace as GpuTrace
from gputop.insight.gpu_figures import KeptGpu, RunningGpu, StateCache
from gputop.insight.health_log import HealthLog
from gputop.insight.steps import Intervals, extend_floats, ranked
from gputop.insight.textfmt import fmt_duration
from gputop.model import GpuSample, Snapshot
from gputop.model.columns import GpuColumns, SnapshotColumns
from gputop.model.fields import IDENTITY
from gputop.model.gpu_state import sample_verdict
from gputop.model.machine import Machine, Machines
from gputop.model.units import NA, fmt_bytes, fmt_count, fmt_percent, fmt_watts

MIN_AUTO_GAP_S = 10.0
"""The automatic gap threshold is three sampling intervals, but never below this."""


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
        keep_samples: keep every sample of every GPU (for :meth:`traces` and
            :meth:`merged`). False adds the figures up as samples come, in memory that does
            not grow with the recording; without ``max_gap_s`` the intervals longer than
            ``min_auto_gap_s`` are kept aside (:attr:`pending`) and settled by the
            summary, once the threshold is known.
    """

    def __init__(
        self,
        *,
        max_gap_s: float | None = None,
        min_auto_gap_s: float = MIN_AUTO_GAP_S,
        thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS,
        origin: datetime | None = None,
        keep_samples: bool = True,
    ) -> None:
        if max_gap_s is not None and max_gap_s <= 0:
            raise ValueError("max_gap_s must be positive")
        self._max_gap_s = max_gap_s
        self._min_auto_gap_s = min_auto_gap_s
        self._thresholds = thresholds
        self._keep = keep_samples
        self._gpus: dict[str, KeptGpu | RunningGpu] = {}
        """By UUID (``index:N`` for a GPU without one)."""
        self._machines = Machines()
        self._origin = origin
        self._first: datetime | None = None
        self._last: datetime | None = None
        self._offsets = array("d")
        self._snapshots = 0
        self._untimed = 0
        self._backward = 0
        self._states = StateCache(thresholds)
        self.health = HealthLog()
        """Health events and changes (``insight.health_log``); a CSV log's runs read column
        by column add none."""

    def add(self, snapshot: Snapshot) -> None:
        """Take one snapshot into account (the next in time order)."""
        self._snapshots += 1
        self._machines.add(snapshot)
        self.health.add(snapshot)
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
        for key, gpu in zip(_keys(snapshot.gpus), snapshot.gpus, strict=True):
            self._accumulator(key, gpu).add(moment, offset, gpu, sample_verdict(gpu, thresholds))

    def _accumulator(self, key: str, gpu: GpuSample | GpuColumns) -> KeptGpu | RunningGpu:
        accumulator = self._gpus.get(key)
        if accumulator is None:
            if self._keep:
                accumulator = KeptGpu(gpu)
            elif self._max_gap_s is None:
                accumulator = RunningGpu(gpu, self._min_auto_gap_s, deferred=True)
            else:
                accumulator = RunningGpu(gpu, self._max_gap_s)
            self._gpus[key] = accumulator
        return accumulator

    def add_columns(self, run: SnapshotColumns) -> None:
        """Take a run of consecutive snapshots into account, read column by column: the
        same figures as :meth:`add` of each of them."""
        if not len(run):
            return
        self._snapshots += len(run)
        self._machines.add(
            Snapshot(
                timestamp=None,
                host=run.host,
                gpus=tuple(GpuSample(index=g.index, name=g.name, uuid=g.uuid) for g in run.gpus),
            )
        )
        if self._origin is None:
            self._origin = run.origin
        elif self._origin != run.origin:
            raise ValueError("a run of columns must count from the report's origin")
        offsets = run.offsets
        self._first = self._first or run.first
        if self._last is not None and run.first < self._last:
            self._backward += 1
        self._backward += sum(map(lt, islice(offsets, 1, None), offsets))
        self._last = run.last
        extend_floats(self._offsets, offsets)
        # Worked out once for all GPUs; only a report that keeps no samples adds them up now.
        # (Without a threshold yet, its floor: the longer intervals wait in ``pending``.)
        counting = self._min_auto_gap_s if self._max_gap_s is None else self._max_gap_s
        intervals = None if self._keep else Intervals(offsets, counting)
        for key, gpu in zip(_keys(run.gpus), run.gpus, strict=True):
            accumulator = self._accumulator(key, gpu)
            states = self._states.of(gpu)
            if isinstance(accumulator, RunningGpu):
                assert intervals is not None
                accumulator.add_columns(run, intervals, gpu, states)
            else:
                accumulator.add_columns(run, intervals, gpu, states)

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
        if any(part._keep != first._keep for part in parts):
            raise ValueError("parts of a report must all keep their samples, or none")
        whole = cls(
            max_gap_s=first._max_gap_s,
            min_auto_gap_s=first._min_auto_gap_s,
            thresholds=first._thresholds,
            keep_samples=first._keep,
        )
        whole.health = HealthLog.merged([part.health for part in parts])
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
                elif isinstance(existing, KeptGpu):
                    assert isinstance(accumulator, KeptGpu)
                    existing.extend(accumulator)
                else:
                    assert isinstance(accumulator, RunningGpu)
                    existing.extend(accumulator)
        return whole

    @property
    def max_gap_s(self) -> float:
        """The gap threshold in use (worked out from the samples when not given)."""
        if self._max_gap_s is not None:
            return self._max_gap_s
        return gap_threshold(self._offsets, self._min_auto_gap_s)

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
        """Every GPU's samples over time, in index order (none when no sample was kept)."""
        return tuple(gpu.trace() for gpu in self._in_order() if isinstance(gpu, KeptGpu))

    @property
    def pending(self) -> int:
        """How many intervals wait for the gap threshold, over every GPU: what a
        report that keeps no samples and has no threshold yet holds beyond its sums."""
        return sum(gpu.pending for gpu in self._gpus.values() if isinstance(gpu, RunningGpu))

    @property
    def backward_steps(self) -> int:
        """Times a snapshot was older than the one before it."""
        return self._backward

    def _in_order(self) -> list[KeptGpu | RunningGpu]:
        return [self._gpus[key] for key in sorted(self._gpus, key=self._order)]

    def _order(self, key: str) -> tuple[int, str]:
        return self._gpus[key].index, key


def _forward(times: Sequence[float]) -> float:
    """The sum of the steps of ``times`` that go forward: last - first when all do."""
    return math.fsum(map(max, map(sub, islice(times, 1, None), times), repeat(0.0)))


def gap_threshold(offsets: Sequence[float], floor: float = MIN_AUTO_GAP_S) -> float:
    """The automatic gap threshold of snapshots taken at ``offsets`` (seconds, in order;
    NaN, a snapshot without a time, is left out): three times the median interval that went
    forward, at least ``floor``.

    The intervals are counted, not listed: a log's sampling intervals take few values, and
    a list of them would be the largest thing a long log's report holds.
    """
    timed = compress(offsets, map(eq, offsets, offsets))
    first, second = itertools.tee(timed)
    next(second, None)
    steps = Counter(filter((0.0).__lt__, map(sub, second, first)))
    total = steps.total()
    if not total:
        return floor
    ordered = sorted(steps.items())
    # statistics.median of the listed intervals, taken from their counts.
    middle = total // 2
    median = ranked(ordered, middle)
    if total % 2 == 0:
        median = (ranked(ordered, middle - 1) + median) / 2
    return max(floor, 3 * median)


def _keys(gpus: Sequence[GpuSample] | Sequence[GpuColumns]) -> list[str]:
    """Each GPU's key in a report: its UUID, else ``index:N``."""
    keys: list[str] = []
    seen: set[str] = set()
    for gpu in gpus:
        key = gpu.uuid or f"index:{gpu.index}"
        if key in seen:  # an edited capture giving two GPUs one UUID: still two GPUs
            key = f"{key}@{gpu.index}"
        seen.add(key)
        keys.append(key)
    return keys


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
        "busy_s": _round(gpu.busy_s, 3),
        "busy_at_power_cap_s": _round(gpu.busy_at_cap_s, 3),
        "power_cap_w": None if gpu.power_cap is None else _round(gpu.power_cap.limit_w, 2),
        "power_cap_sm_clock_mhz": _clock_range(gpu),
        "waiting_s": _round(gpu.waiting_s, 3),
        "idle_s": _round(gpu.idle_s, 3),
        "throttled_s": _round(gpu.throttled_s, 3),
        "unknown_s": round(gpu.unknown_s, 3),
        "gap_s": round(gpu.gap_s, 3),
        "peak_memory_used_bytes": gpu.peak_memory_used_bytes,
        "memory_total_bytes": gpu.memory_total_bytes,
        "peak_power_w": _round(gpu.peak_power_w, 2),
        "energy_wh": _round(gpu.energy_wh, 4),
        "unavailable": unavailable(gpu),
    }


def _clock_range(gpu: GpuSummary) -> dict[str, float] | None:
    """The SM clock range of the busy samples at the power cap, as ``{"min", "max"}``."""
    cap = gpu.power_cap
    if cap is None or cap.sm_clock_mhz is None:
        return None
    low, high = cap.sm_clock_mhz
    return {"min": low, "max": high}


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
    ("BUSY", ">"),
    ("WAITING", ">"),
    ("IDLE", ">"),
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
        _duration(gpu.busy_s),
        _duration(gpu.waiting_s),
        _duration(gpu.idle_s),
        _duration(gpu.throttled_s),
        fmt_bytes(gpu.peak_memory_used_bytes),
        fmt_watts(gpu.peak_power_w),
        fmt_energy(gpu.energy_wh),
    )


def _duration(seconds: float | None) -> str:
    return NA if seconds is None else fmt_duration(seconds)


NO_REASONS = "the recording holds no clock-event (throttle) reasons"
"""Why THROTTLED (and the time at the power cap) is n/a."""
NO_MEMORY = "the recording holds no memory use, so waiting cannot be told from idle"
NO_UTILIZATION = "no sample reported utilization"


def unavailable(gpu: GpuSummary) -> dict[str, str]:
    """Each figure of ``gpu`` the recording cannot give (None), with why."""
    why: dict[str, str] = {}
    if gpu.busy_s is None:
        why["busy_s"] = NO_UTILIZATION
    if gpu.waiting_s is None:
        why["waiting_s"] = NO_MEMORY
    if gpu.idle_s is None:
        why["idle_s"] = NO_MEMORY
    if gpu.throttled_s is None:
        why["throttled_s"] = NO_REASONS
    if gpu.busy_at_cap_s is None:
        why["busy_at_power_cap_s"] = NO_REASONS
    if gpu.peak_power_w is None:
        why["peak_power_w"] = why["energy_wh"] = "no sample reported power draw"
    if gpu.peak_memory_used_bytes is None:
        why["peak_memory_used_bytes"] = "no sample reported memory use"
    return why


def busy_text(gpu: GpuSummary) -> str:
    """``busy 56s, 95% of it at the 700W power cap (SM clock 1245-1470MHz)``: the busy time
    with the share of it at the power cap, a fact beside the state."""
    if gpu.busy_s is None:
        return f"busy {NA} ({NO_UTILIZATION})"
    text = f"busy {fmt_duration(gpu.busy_s)}"
    share = gpu.busy_at_cap_share
    cap = gpu.power_cap
    if share is None or cap is None:
        return text
    limit = (
        f"the {fmt_watts(cap.limit_w)} power cap" if cap.limit_w is not None else "the power cap"
    )
    text += f", {share * 100:.0f}% of it at {limit}"
    if cap.sm_clock_mhz is not None:
        low, high = cap.sm_clock_mhz
        clocks = f"{low:.0f}MHz" if low == high else f"{low:.0f}-{high:.0f}MHz"
        text += f" (SM clock {clocks})"
    return text


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
        f"{summary.source or 'recording'}: {fmt_count(summary.snapshots, 'snapshot')}, "
        f"{span} ({fmt_duration(summary.duration_s)})"
    ]
    if summary.untimed_snapshots:
        lines.append(
            f"{fmt_count(summary.untimed_snapshots, 'snapshot')} without a timestamp left out"
        )
    if summary.backward_steps:
        times = "once" if summary.backward_steps == 1 else f"{summary.backward_steps} times"
        lines.append(
            f"time went backwards {times} (a clock change, or files not "
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
            f"{fmt_count(gpu.samples, 'sample')}; {busy_text(gpu)}; "
            f"peak memory {fmt_bytes(gpu.peak_memory_used_bytes)}{total}"
            + (f"; {fmt_duration(gpu.gap_s)} in gaps" if gpu.gap_s else "")
        )
        if gpu.idle_s is None:
            lines.append(
                f"GPU {gpu.index}: WAITING and IDLE n/a: {NO_MEMORY}: "
                f"{fmt_duration(gpu.unknown_s)} at low or unknown utilization is either"
            )
        if gpu.throttled_s is None:
            lines.append(
                f"GPU {gpu.index}: THROTTLED n/a: {NO_REASONS} (`--query-gpu` with "
                "clocks_event_reasons.active, `-q -x` or gputop's own recordings hold them)"
            )
    low = DEFAULT_THRESHOLDS.low_utilization_pct
    lines.append(
        f"UTIL is the mean over samples; BUSY: utilization {low:.0f}% or more, at the power "
        f"cap too; WAITING: work loaded but utilization below {low:.0f}%; IDLE: nothing "
        "loaded; THROTTLED: held back by heat, a hardware slowdown, the power brake, or the "
        f"power cap at low utilization; gaps over {fmt_duration(summary.max_gap_s)} are not "
        "counted."
    )
    return "\n".join(lines)


def clock_at(start: datetime | None, offset: float) -> datetime | None:
    """The time of day ``offset`` seconds after ``start``."""
    return None if start is None else start + timedelta(seconds=offset)
