"""Why is a GPU idle? Short findings, each with its evidence, from a window of snapshots.

A rented GPU that waits for its CPU or its disk burns money; this module says so in one line
(``waiting: 1 process holds 30.0GiB but utilization averaged 12% over the last 30s (likely
input-bound; python train.py at 98% CPU)``) and stays quiet about a GPU that is simply busy.

Two entry points:

* :func:`gpu_state` classifies one sample (busy / waiting / idle / throttled / unknown, as
  ``model.gpu_state`` defines them for every view); the recording report adds up time per
  state.
* :func:`diagnose` looks at the recent history of one GPU and returns :class:`Finding` values.

Utilization the driver does not report (``None``, e.g. under MIG) never counts as 0: a rule
that needs it stays silent instead.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import NamedTuple

from gputop.insight.textfmt import fmt_clock, fmt_duration, seconds_between
from gputop.model import GpuSample, ProcessSample, Snapshot, ThrottleKind, ThrottleReason
from gputop.model.activity import load_name, load_percent
from gputop.model.gpu_state import DEFAULT_THRESHOLDS as STATE_DEFAULTS
from gputop.model.gpu_state import GpuState as GpuState
from gputop.model.gpu_state import compute_processes as compute_processes
from gputop.model.gpu_state import holds_work as holds_work
from gputop.model.gpu_state import power_holds_back, sample_state
from gputop.model.throttle import reasons_of_kind
from gputop.model.units import fmt_bytes, fmt_celsius, fmt_mhz, fmt_percent, fmt_watts, ratio


@dataclass(frozen=True, slots=True)
class DiagnosisThresholds:
    """Every number the rules compare against; the defaults suit a 1 s sampling interval."""

    window_s: float = 30.0
    """Seconds of recent history that the averaging rules (waiting, idle, ECC) look at."""
    min_span_s: float = 10.0
    """The averaging rules stay silent until the window covers at least this many seconds:
    one sample at 0% is not evidence of anything."""
    low_utilization_pct: float = STATE_DEFAULTS.low_utilization_pct
    """A GPU holding work below this utilization is waiting rather than busy."""
    idle_utilization_pct: float = STATE_DEFAULTS.idle_utilization_pct
    """At or above this utilization something runs, even when no process is listed."""
    held_memory_bytes: int = STATE_DEFAULTS.held_memory_bytes
    """Memory in use that counts as work loaded when no process is listed (containers often
    cannot see the processes, but the memory they hold still shows)."""
    memory_full_fraction: float = 0.95
    cpu_busy_pct: float = 80.0
    """A GPU process at or above this CPU % is saturating its CPU side."""
    cpu_quiet_pct: float = 10.0
    """GPU processes all below this CPU % are doing nothing on the CPU either."""
    stale_after_s: float = 10.0
    """No new snapshot for longer than this (compared with ``now``) makes the data stale."""


DEFAULT_THRESHOLDS = DiagnosisThresholds()


class Severity(enum.IntEnum):
    """How much a finding matters; ordered, so findings sort worst first."""

    INFO = 1
    WARNING = 2
    CRITICAL = 3


class FindingKind(str, enum.Enum):
    """What a finding is about; the value is the word the text starts with."""

    WAITING = "waiting"
    HELD = "held"
    """Work loaded at ~0% utilization in the one moment there is: too soon to call waiting."""
    IDLE = "idle"
    THERMAL = "thermal"
    POWER = "power"
    SLOWDOWN = "slowdown"
    MEMORY_FULL = "memory"
    ECC = "ecc"
    STALE = "stale"
    LOST = "lost"
    NO_TREND = "trend"
    """Too little history for the rules that average over time: says so, rather than
    letting an empty list read as "nothing wrong". Not a condition of the GPU, so panels,
    which show one finding, leave it out."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One plain statement about a GPU, with the evidence in ``text``."""

    kind: FindingKind
    severity: Severity
    text: str
    since: datetime | None = None
    """When the condition began, as far as the history given shows; None when unknown."""


# -- throttle reasons ---------------------------------------------------------------------
# Classified by ThrottleReason.kind; names come from the model as the source spelled them.


def thermal_reasons(reasons: Iterable[str] | None) -> tuple[str, ...]:
    """The active reasons that mean heat: ``sw_thermal_slowdown``, ``hw_thermal_slowdown``."""
    return reasons_of_kind(reasons, ThrottleKind.THERMAL)


def power_reasons(reasons: Iterable[str] | None) -> tuple[str, ...]:
    """The active reasons that mean power: ``sw_power_cap``, ``hw_power_brake_slowdown``."""
    return reasons_of_kind(reasons, ThrottleKind.POWER)


def slowdown_reasons(reasons: Iterable[str] | None) -> tuple[str, ...]:
    """A hardware slowdown not explained by heat or power (``hw_slowdown``)."""
    return reasons_of_kind(reasons, ThrottleKind.HARDWARE)


# -- the input: how busy a GPU is --------------------------------------------------------
# Activity: GPM's engine activity if the source measured it, else utilization
# (``gputop.model.activity``). The rules below read a GPU's load through these two alone.
_load = load_percent
_load_name = load_name


# -- one sample ---------------------------------------------------------------------------


def gpu_state(
    gpu: GpuSample | None, thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS
) -> GpuState:
    """Classify one sample of a GPU (None: the GPU is missing from that snapshot): the
    model's :func:`~gputop.model.gpu_state.sample_state`, with these thresholds."""
    return sample_state(gpu, thresholds)


# -- a window of samples ------------------------------------------------------------------


class _Point(NamedTuple):
    at: datetime | None
    gpu: GpuSample


_point: Callable[[tuple[datetime | None, GpuSample]], _Point] = partial(tuple.__new__, _Point)
"""``_Point`` from an (at, gpu) pair without the Python-level ``__new__`` that NamedTuple
generates: the window holds a point per GPU and snapshot, rebuilt on every tick."""


def _before(
    at: datetime | None, latest: datetime | None, oldest: datetime | None, window_s: float
) -> bool:
    """``at`` lies more than ``window_s`` before ``latest`` (``oldest`` is ``latest`` minus
    the window), or either time is unknown."""
    if at is None or latest is None or oldest is None:
        return True
    if (at.tzinfo is None) == (latest.tzinfo is None):
        return at < oldest
    return seconds_between(at, latest) > window_s


def _recent(snapshots: Sequence[Snapshot], gpu_index: int, window_s: float) -> list[_Point]:
    """Samples of the GPU within ``window_s`` of the latest snapshot, oldest first.

    Walks back from the end, so a long history costs only what the window holds.
    """
    latest_at = snapshots[-1].timestamp
    oldest = None if latest_at is None else latest_at - timedelta(seconds=window_s)
    points: list[_Point] = []
    for position in range(len(snapshots) - 1, -1, -1):
        snapshot = snapshots[position]
        at = snapshot.timestamp
        if points and _before(at, latest_at, oldest, window_s):
            break
        gpus = snapshot.gpus
        # ``Snapshot.gpu`` inlined, as in ``_since``: this runs for every GPU and every
        # snapshot of the window on every tick.
        if gpu_index < len(gpus) and gpus[gpu_index].index == gpu_index:
            gpu: GpuSample | None = gpus[gpu_index]
        else:
            gpu = snapshot.gpu(gpu_index)
        if gpu is None:
            if points:
                break  # the GPU vanished: what came before is another run
            continue
        points.append(_point((at, gpu)))
    points.reverse()
    return points


def _since(
    snapshots: Sequence[Snapshot], gpu_index: int, holds: Callable[[GpuSample], bool]
) -> datetime | None:
    """The timestamp of the first sample of the trailing run where ``holds`` is true."""
    since: datetime | None = None
    for position in range(len(snapshots) - 1, -1, -1):
        snapshot = snapshots[position]
        gpus = snapshot.gpus
        # ``Snapshot.gpu`` inlined for a live source's layout (each GPU at its own index):
        # a condition that lasts is walked back through the whole window on every tick.
        if gpu_index < len(gpus) and gpus[gpu_index].index == gpu_index:
            gpu: GpuSample | None = gpus[gpu_index]
        else:
            gpu = snapshot.gpu(gpu_index)
        if gpu is None or not holds(gpu):
            break
        since = snapshot.timestamp or since
    return since


def _reasons_test(
    kinds: Callable[[Iterable[str] | None], tuple[str, ...]],
) -> Callable[[GpuSample], bool]:
    """Whether a sample reports any of the reasons ``kinds`` picks, each combination of
    reasons classified once (a cap lasts, and every sample of it reports the same names)."""
    seen: dict[tuple[str, ...] | None, bool] = {}

    def holds(gpu: GpuSample) -> bool:
        names = gpu.throttle_reasons
        answer = seen.get(names)
        if answer is None:
            answer = seen[names] = bool(kinds(names))
        return answer

    return holds


def _span(points: Sequence[_Point]) -> float | None:
    first, last = points[0].at, points[-1].at
    if first is None or last is None:
        return None
    return seconds_between(first, last)


def _since_text(since: datetime | None, latest: datetime | None) -> str:
    if since is None or (latest is not None and since >= latest):
        return ""
    return f" since {fmt_clock(since, latest)}"


def _label(process: ProcessSample) -> str:
    """``python train.py`` from a command line, else the process name, else its PID."""
    if process.command:
        words = process.command.split()
        words[0] = os.path.basename(words[0])
        label = " ".join(words[:2])
    elif process.name:
        label = os.path.basename(process.name)
    else:
        label = f"pid {process.pid}"
    return label if len(label) <= 40 else label[:39] + "…"


def _cpu_hint(processes: Sequence[ProcessSample], thresholds: DiagnosisThresholds) -> str:
    measured = sorted(
        (p for p in processes if p.cpu_percent is not None),
        key=lambda p: p.cpu_percent or 0.0,
        reverse=True,
    )
    evidence = "; ".join(f"{_label(p)} at {p.cpu_percent:.0f}% CPU" for p in measured[:2])
    if not measured:
        return "likely input-bound: the GPU waits for the CPU or for data"
    top = measured[0].cpu_percent or 0.0
    if top < thresholds.cpu_quiet_pct:
        return f"likely stalled on I/O, or left idle; {evidence}"
    return f"likely input-bound; {evidence}"


def _waiting(
    points: Sequence[_Point], span: float, since: datetime | None, th: DiagnosisThresholds
) -> Finding | None:
    loads = [_load(p.gpu) for p in points]
    utils = [load for load in loads if load is not None]
    if not utils:
        return None  # MIG and friends: unknown is not 0
    mean = sum(utils) / len(utils)
    if mean >= th.low_utilization_pct:
        return None
    processes = compute_processes(points[-1].gpu)
    text = (
        f"waiting: {_holders(points[-1].gpu)} but {_load_name(points[-1].gpu)} averaged "
        f"{mean:.0f}% over the last {fmt_duration(span)} ({_cpu_hint(processes, th)})"
    )
    return Finding(FindingKind.WAITING, Severity.WARNING, text, since)


def _holders(gpu: GpuSample) -> str:
    """``1 process holds 30.0GiB``: who holds how much of the GPU's memory."""
    processes = compute_processes(gpu)
    sizes = [p.memory_used for p in processes if p.memory_used is not None]
    held = sum(sizes) if sizes else gpu.memory.used
    amount = fmt_bytes(held) if held is not None else "memory"
    if len(processes) == 1:
        return f"1 process holds {amount}"
    if processes:
        return f"{len(processes)} processes hold {amount}"
    return f"{amount} is held (no process listed)"


def _held_now(gpu: GpuSample, th: DiagnosisThresholds) -> Finding | None:
    """Work loaded at (near) 0% utilization in the latest sample, said without a trend.

    With too little history the waiting rule is silent, yet one snapshot of 21.9GiB held
    at 0% is still worth a line: it says what is true right now and claims nothing more.
    """
    util = _load(gpu)
    if util is None or util >= th.idle_utilization_pct or not holds_work(gpu, th):
        return None
    text = f"held: {_holders(gpu)} at {util:.0f}% {_load_name(gpu)} right now"
    return Finding(FindingKind.HELD, Severity.INFO, text)


def _no_trend(
    snapshots: Sequence[Snapshot],
    points: Sequence[_Point],
    span: float | None,
    th: DiagnosisThresholds,
) -> Finding:
    """What history there is, and that it is too little for a trend."""
    if len(snapshots) == 1:
        text = "one snapshot: no trend"
    elif span is None:
        text = f"{len(snapshots)} snapshots without times: no trend"
    elif len(points) == 1:
        text = f"one snapshot in the last {fmt_duration(th.window_s)}: no trend"
    else:
        text = (
            f"{len(points)} snapshots over {fmt_duration(span)}: no trend yet "
            f"(the rules need {fmt_duration(th.min_span_s)})"
        )
    return Finding(FindingKind.NO_TREND, Severity.INFO, text)


def _clock_evidence(gpu: GpuSample) -> tuple[bool | None, str]:
    """(are the clocks at idle, what shows it)."""
    parts = [gpu.performance_state] if gpu.performance_state else []
    if gpu.clocks.sm is not None:
        parts.append(f"SM {fmt_mhz(gpu.clocks.sm)}")
    evidence = ", ".join(parts)
    if any(ThrottleReason.parse(r) is ThrottleReason.GPU_IDLE for r in gpu.throttle_reasons or ()):
        return True, evidence
    state = gpu.performance_state
    if state and state.upper().startswith("P") and state[1:].isdigit():
        return int(state[1:]) >= 8, evidence
    sm, top = gpu.clocks.sm, gpu.max_clocks.sm
    if sm is not None and top:
        return sm <= 0.3 * top, evidence
    return None, evidence


def _idle(points: Sequence[_Point], since: datetime | None) -> Finding:
    gpu = points[-1].gpu
    latest = points[-1].at
    start = since if since is not None else points[0].at
    duration = seconds_between(start, latest) if start and latest else None
    at_idle, evidence = _clock_evidence(gpu)
    text = f"idle: no process for {fmt_duration(duration)}"
    if at_idle is True:
        text += f", clocks at idle ({evidence})" if evidence else ", clocks at idle"
    elif at_idle is False:
        text += f", yet clocks stay up ({evidence})"
    return Finding(FindingKind.IDLE, Severity.INFO, text, since)


def _activity(
    snapshots: Sequence[Snapshot],
    gpu_index: int,
    points: Sequence[_Point],
    th: DiagnosisThresholds,
) -> Finding | None:
    span = _span(points)
    if span is None or span < th.min_span_s:
        return _held_now(points[-1].gpu, th)
    held = holds_work(points[-1].gpu, th)
    if held:
        since = _since(snapshots, gpu_index, lambda g: gpu_state(g, th) is GpuState.WAITING)
        return _waiting(points, span, since or points[0].at, th)
    if held is False and all(holds_work(p.gpu, th) is False for p in points):
        return _idle(points, _since(snapshots, gpu_index, lambda g: holds_work(g, th) is False))
    return None


def _throttling(
    snapshots: Sequence[Snapshot],
    gpu_index: int,
    gpu: GpuSample,
    latest: datetime | None,
    th: DiagnosisThresholds,
) -> list[Finding]:
    findings: list[Finding] = []
    thermal = thermal_reasons(gpu.throttle_reasons)
    if thermal:
        since = _since(snapshots, gpu_index, _reasons_test(thermal_reasons))
        temp = gpu.temperature
        evidence = ", ".join(thermal)
        if temp.gpu is not None:
            evidence += f"; GPU at {fmt_celsius(temp.gpu)}"
            if temp.slowdown is not None:
                evidence += f", slows down at {fmt_celsius(temp.slowdown)}"
        findings.append(
            Finding(
                FindingKind.THERMAL,
                Severity.WARNING,
                f"thermal throttling{_since_text(since, latest)} ({evidence})",
                since,
            )
        )
    power = _power_finding(snapshots, gpu_index, gpu, latest, th)
    if power is not None:
        findings.append(power)
    slowdown = slowdown_reasons(gpu.throttle_reasons)
    if slowdown and not thermal and (power is None or power.severity is Severity.INFO):
        since = _since(snapshots, gpu_index, _reasons_test(slowdown_reasons))
        findings.append(
            Finding(
                FindingKind.SLOWDOWN,
                Severity.WARNING,
                f"hardware slowdown{_since_text(since, latest)} ({', '.join(slowdown)}: "
                "high temperature or a power supply problem)",
                since,
            )
        )
    return findings


def _power_finding(
    snapshots: Sequence[Snapshot],
    gpu_index: int,
    gpu: GpuSample,
    latest: datetime | None,
    th: DiagnosisThresholds,
) -> Finding | None:
    """The power brake, or the power cap: a warning where it holds the GPU back (the
    state is throttled), a fact where the GPU is busy at it (the way a datacenter GPU runs
    a training job), nothing where the reason only outlasts the load for a moment."""
    power = power_reasons(gpu.throttle_reasons)
    if not power:
        return None
    since = _since(snapshots, gpu_index, _reasons_test(power_reasons))
    if any(ThrottleReason.parse(r) is ThrottleReason.HW_POWER_BRAKE_SLOWDOWN for r in power):
        text = (
            f"power brake{_since_text(since, latest)} ({', '.join(power)}: the board's "
            "power supply asked the GPU to slow down)"
        )
        return Finding(FindingKind.POWER, Severity.WARNING, text, since)
    draw, limit = gpu.power.draw, gpu.power.limit
    if power_holds_back(gpu, th):
        drawing = (
            f"drawing {fmt_watts(draw)} of a {fmt_watts(limit)} limit at "
            if draw is not None and limit is not None
            else ""
        )
        text = (
            f"power capped at low utilization{_since_text(since, latest)} ({drawing}"
            f"{fmt_percent(gpu.utilization.gpu)} utilization: the power limit, not the work, "
            "holds the GPU back)"
        )
        return Finding(FindingKind.POWER, Severity.WARNING, text, since)
    util = gpu.utilization.gpu
    if util is None or util < th.low_utilization_pct:
        return None  # the cap outlasting the load by a moment: the GPU is not held back
    cap = f"the {fmt_watts(limit)} power cap" if limit is not None else "the power cap"
    # Busy, or throttled by something else (heat), which its own finding says.
    cap = f"busy at {cap}" if gpu_state(gpu, th) is GpuState.BUSY else f"at {cap}"
    evidence = [f"drawing {fmt_watts(draw)}"] if draw is not None else []
    if gpu.clocks.sm is not None:
        evidence.append(f"SM clock {fmt_mhz(gpu.clocks.sm)}")
    shown = f" ({', '.join(evidence)})" if evidence else ""
    text = f"{cap}{_since_text(since, latest)}{shown}"
    return Finding(FindingKind.POWER, Severity.INFO, text, since)


def _memory_full(
    snapshots: Sequence[Snapshot],
    gpu_index: int,
    gpu: GpuSample,
    latest: datetime | None,
    th: DiagnosisThresholds,
) -> Finding | None:
    def full(sample: GpuSample) -> bool:
        fraction = ratio(sample.memory.used, sample.memory.total)
        return fraction is not None and fraction >= th.memory_full_fraction

    if not full(gpu):
        return None
    fraction = ratio(gpu.memory.used, gpu.memory.total) or 0.0
    since = _since(snapshots, gpu_index, full)
    text = (
        f"memory {fraction * 100:.0f}% full{_since_text(since, latest)} "
        f"({fmt_bytes(gpu.memory.used)} of {fmt_bytes(gpu.memory.total)})"
    )
    return Finding(FindingKind.MEMORY_FULL, Severity.WARNING, text, since)


def _ecc_counts(gpu: GpuSample) -> tuple[int | None, int | None]:
    errors = gpu.ecc_errors
    corrected = errors.volatile_corrected
    uncorrected = errors.volatile_uncorrected
    # Old drivers report only the aggregate counters.
    if corrected is None:
        corrected = errors.aggregate_corrected
    if uncorrected is None:
        uncorrected = errors.aggregate_uncorrected
    return corrected, uncorrected


def _ecc_rising(points: Sequence[_Point]) -> Finding | None:
    if len(points) < 2:
        return None
    base = _ecc_counts(points[0].gpu)
    last = _ecc_counts(points[-1].gpu)
    deltas = [
        (b - a) if a is not None and b is not None else 0 for a, b in zip(base, last, strict=True)
    ]
    corrected, uncorrected = deltas
    if corrected <= 0 and uncorrected <= 0:
        return None
    since: datetime | None = None
    for point in points:
        counts = _ecc_counts(point.gpu)
        if any(
            a is not None and b is not None and b > a for a, b in zip(base, counts, strict=True)
        ):
            since = point.at
            break
    parts = []
    if uncorrected > 0:
        parts.append(f"+{uncorrected} uncorrected")
    if corrected > 0:
        parts.append(f"+{corrected} corrected")
    span = _span(points)
    text = f"ECC errors rising: {', '.join(parts)} over the last {fmt_duration(span)}"
    severity = Severity.CRITICAL if uncorrected > 0 else Severity.WARNING
    return Finding(FindingKind.ECC, severity, text, since)


def _stale(latest: Snapshot, now: datetime | None, th: DiagnosisThresholds) -> Finding | None:
    if now is None or latest.timestamp is None:
        return None
    age = seconds_between(latest.timestamp, now)
    if age <= th.stale_after_s:
        return None
    return Finding(
        FindingKind.STALE,
        Severity.WARNING,
        f"stale: no data for {fmt_duration(age)}",
        latest.timestamp,
    )


def diagnose(
    snapshots: Sequence[Snapshot],
    gpu_index: int,
    *,
    now: datetime | None = None,
    thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS,
) -> tuple[Finding, ...]:
    """Findings about GPU ``gpu_index`` from ``snapshots`` (oldest first), worst first.

    Args:
        snapshots: recent history in time order; any length (only the last
            ``thresholds.window_s`` seconds, and the runs of conditions still active, are read).
        gpu_index: the GPU's NVML index.
        now: the current time, to tell stale data; None skips that rule (replay).
        thresholds: the numbers the rules compare against.

    A healthy busy GPU gets no finding but, when it works at its power cap, that fact
    (information, not a warning).
    """
    if not snapshots:
        return ()
    latest_snapshot = snapshots[-1]
    latest = latest_snapshot.timestamp
    findings: list[Finding] = []
    stale = _stale(latest_snapshot, now, thresholds)
    if stale is not None:
        findings.append(stale)
    gpu = latest_snapshot.gpu(gpu_index)
    if gpu is None:
        seen = next(
            (s.timestamp for s in reversed(snapshots) if s.gpu(gpu_index) is not None), None
        )
        if any(s.gpu(gpu_index) is not None for s in snapshots):
            findings.append(
                Finding(
                    FindingKind.LOST,
                    Severity.CRITICAL,
                    f"missing: GPU {gpu_index} is not in the latest snapshot"
                    + (f" (last seen {fmt_clock(seen, latest)})" if seen else ""),
                    seen,
                )
            )
        return _ordered(findings)
    if gpu.lost:
        since = _since(snapshots, gpu_index, lambda g: g.lost)
        findings.append(
            Finding(
                FindingKind.LOST,
                Severity.CRITICAL,
                f"lost: the GPU stopped answering{_since_text(since, latest)}",
                since,
            )
        )
        return _ordered(findings)
    if gpu.stale:
        since = _since(snapshots, gpu_index, lambda g: g.stale)
        findings.append(
            Finding(
                FindingKind.STALE,
                Severity.WARNING,
                f"stale: no new values for this GPU{_since_text(since, latest)} (a hung "
                "driver call, or a node's exporter no longer scraped); values are from an "
                "earlier sample",
                since,
            )
        )
    points = _recent(snapshots, gpu_index, thresholds.window_s)
    findings.extend(_throttling(snapshots, gpu_index, gpu, latest, thresholds))
    for finding in (
        _activity(snapshots, gpu_index, points, thresholds),
        _memory_full(snapshots, gpu_index, gpu, latest, thresholds),
        _ecc_rising(points),
    ):
        if finding is not None:
            findings.append(finding)
    ordered = _ordered(findings)
    span = _span(points)
    if span is None or span < thresholds.min_span_s:
        ordered += (_no_trend(snapshots, points, span, thresholds),)
    return ordered


def _ordered(findings: list[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: -f.severity))
