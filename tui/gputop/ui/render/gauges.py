"""What a GPU panel says, as plain values: thresholds, gauge texts, fixed-scale sparklines.

No Textual here: the panel widget only styles and lays out what these functions return, so
every rule (when a temperature turns red, how a missing value reads) is unit-testable.
"""

from __future__ import annotations

import enum
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from gputop.model import GpuSample, Reason, ThrottleKind, ThrottleReason
from gputop.model.fields import GPU_FIELDS
from gputop.model.gpu_state import power_holds_back
from gputop.model.units import (
    NA,
    fmt_bytes,
    fmt_celsius,
    fmt_count,
    fmt_percent,
    fmt_rate,
    fmt_used_of,
    fmt_watts,
    ratio,
)

BARS = "▁▂▃▄▅▆▇█"
"""Eight levels; the lowest is drawn even for 0 so an idle GPU still shows a baseline."""

MAX_STRETCH = 3
"""A stretched sparkline draws a sample at most this many cells wide."""

GAP_CELL = " "
"""A sample that was not reported (or the GPU was absent) leaves a hole in the line."""


LOST_TEXT = "GPU lost: the driver cannot reach it; its values are n/a until it returns"


class Level(enum.Enum):
    """How alarming a value is; the panel maps each to a style."""

    OK = "ok"
    WARN = "warn"
    CRIT = "crit"
    NA = "na"

    # Members are singletons compared by identity; Enum's own hash (of the name, in Python)
    # was a tenth of drawing a compact panel line, which looks levels up in role tables.
    __hash__ = object.__hash__


TEMP_WARN_MARGIN = 10.0
"""Degrees below the slowdown threshold where a temperature turns to a warning."""
TEMP_CRIT_MARGIN = 3.0
FALLBACK_TEMP_WARN = 80.0
"""Used when the GPU does not report a slowdown threshold."""
FALLBACK_TEMP_CRIT = 90.0
FALLBACK_TEMP_SCALE = 100.0
MEM_WARN = 0.85
MEM_CRIT = 0.95

FIELD_LABELS: dict[str, str] = {field.path: field.label for field in GPU_FIELDS}
"""Short names for the fields whose absence the detail line explains (the field table's)."""


def temperature_level(gpu: GpuSample) -> Level:
    """Warn near the slowdown threshold, critical within a few degrees of it."""
    temp = gpu.temperature.gpu
    if temp is None or gpu.lost:
        return Level.NA
    slowdown = gpu.temperature.slowdown
    if slowdown is None:
        warn, crit = FALLBACK_TEMP_WARN, FALLBACK_TEMP_CRIT
    else:
        warn, crit = slowdown - TEMP_WARN_MARGIN, slowdown - TEMP_CRIT_MARGIN
    if temp >= crit:
        return Level.CRIT
    return Level.WARN if temp >= warn else Level.OK


def memory_level(gpu: GpuSample) -> Level:
    """Warn when memory is nearly full, critical when it is about to run out."""
    fraction = ratio(gpu.memory.used, gpu.memory.total)
    if fraction is None or gpu.lost:
        return Level.NA
    if fraction >= MEM_CRIT:
        return Level.CRIT
    return Level.WARN if fraction >= MEM_WARN else Level.OK


def power_level(gpu: GpuSample) -> Level:
    """Power drawn up to the limit is a GPU at work (a training job runs at its cap), not
    a fault: the gauge stands out only where power holds the GPU back, as the state says
    (``model.gpu_state``): critical for the power brake, a warning for the cap at low
    utilization."""
    if gpu.power.draw is None or gpu.lost:
        return Level.NA
    if not power_holds_back(gpu):
        return Level.OK
    brake = ThrottleReason.HW_POWER_BRAKE_SLOWDOWN
    reasons = gpu.throttle_reasons or ()
    return Level.CRIT if any(ThrottleReason.parse(r) is brake for r in reasons) else Level.WARN


def utilization_level(gpu: GpuSample) -> Level:
    """A busy GPU is the point, so utilization is never alarming; only n/a stands out."""
    return Level.NA if gpu.utilization.gpu is None or gpu.lost else Level.OK


def throttle_level(reasons: Sequence[str], gpu: GpuSample) -> Level:
    """Critical for thermal or hardware slowdowns; a warning for the power cap where it
    holds ``gpu`` back (at low utilization), information where the GPU is busy at it; else
    fine."""
    parsed = [ThrottleReason.parse(name) for name in reasons]
    if any(reason is not None and reason.severe for reason in parsed):
        return Level.CRIT
    # A name nvidia-smi does not have is not known to be harmless.
    if any(reason is None or reason.kind is ThrottleKind.UNKNOWN for reason in parsed):
        return Level.WARN
    return Level.WARN if power_holds_back(gpu) else Level.OK


@dataclass(frozen=True, slots=True)
class Gauge:
    """One metric of a panel: its label, value text, level and sparkline scale."""

    label: str
    value: str
    level: Level
    scale: float | None
    """The value that fills a sparkline cell; None when unknown (no sparkline drawn)."""


Mark = tuple[Level, float | None]
"""A gauge's level and sparkline scale."""


def _marks(gpu: GpuSample) -> tuple[Mark, Mark, Mark, Mark]:
    """Level and scale of the utilization, memory, power and temperature gauges, the same
    whichever texts the gauges carry."""
    return (
        (utilization_level(gpu), 100.0),
        (memory_level(gpu), _positive(gpu.memory.total)),
        (power_level(gpu), _positive(gpu.power.limit)),
        (temperature_level(gpu), _positive(gpu.temperature.slowdown) or FALLBACK_TEMP_SCALE),
    )


def gauges(gpu: GpuSample) -> tuple[Gauge, Gauge, Gauge, Gauge]:
    """Utilization, memory, power and temperature of ``gpu``, in that order."""
    lost = gpu.lost
    util, memory, power, temperature = _marks(gpu)
    memory_used, memory_total = gpu.memory.used, gpu.memory.total
    if not lost and memory_used is not None and memory_total is not None:
        memory_text = fmt_used_of(memory_used, memory_total)
    else:
        memory_text = _of(NA if lost else fmt_bytes(memory_used), fmt_bytes(memory_total))
    draw = NA if lost else fmt_watts(gpu.power.draw)
    slowdown = gpu.temperature.slowdown
    temp = NA if lost else fmt_celsius(gpu.temperature.gpu)
    return (
        Gauge("GPU", NA if lost else fmt_percent(gpu.utilization.gpu), *util),
        Gauge("MEM", memory_text, *memory),
        Gauge("PWR", _of(draw, fmt_watts(gpu.power.limit)), *power),
        Gauge(
            "TEMP", temp if slowdown is None else f"{temp}/{fmt_celsius(slowdown)}", *temperature
        ),
    )


def _of(value: str, bound: str) -> str:
    """``value/bound``; the value alone where the bound is not known ("n/a/n/a" says less
    than "n/a"). A known bound stays beside an unknown value: "n/a/24.0GiB"."""
    return value if bound == NA else f"{value}/{bound}"


def compact_gauges(gpu: GpuSample) -> tuple[Gauge, Gauge, Gauge, Gauge]:
    """The same four gauges with shorter texts, for one-line-per-GPU layouts."""
    lost = gpu.lost
    util, memory, power, temperature = _marks(gpu)
    used, total = gpu.memory.used, gpu.memory.total
    if lost or used is None:
        mem_text = NA
    elif total is None:
        mem_text = fmt_bytes(used)
    else:
        mem_text = fmt_used_of(used, total, short=True)
    draw, limit = gpu.power.draw, gpu.power.limit
    if lost or draw is None:
        pwr_text = NA
    elif limit is None:
        pwr_text = fmt_watts(draw)
    else:
        pwr_text = f"{draw:.0f}/{limit:.0f}W"
    return (
        Gauge("", NA if lost else fmt_percent(gpu.utilization.gpu), *util),
        Gauge("", mem_text, *memory),
        Gauge("", pwr_text, *power),
        Gauge("", NA if lost else fmt_celsius(gpu.temperature.gpu), *temperature),
    )


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


SPARK_TICKS = 5
"""Ticks (seconds at the default interval) summed up in one sparkline cell: its mean.

A sparkline that moved one cell a tick rewrote every one of its cells every second, most of
what gputop sent to the terminal. Grouped by five, it moves once in five ticks and, in
between, only its newest cell changes (the mean of the ticks so far in its group). The same
count in every panel and layout keeps every sparkline on one time scale: their right ends
line up in time, whatever their widths."""


def _group_starts(count: int, size: int, end: int, limit: int) -> range:
    """Where, in ``count`` values of a history whose next tick is ``end``, each group of
    ``bucketed`` starts (indices, ``size`` apart)."""
    first = end - count  # the number of values[0]
    start = 0
    if first > 0 and first % size:
        start = size - first % size
    # Where the newest open group starts, then back by whole groups to ``limit`` of them.
    newest = max(start, count - 1 - (end - 1) % size) if count else 0
    start = max(start, newest - (limit - 1) * size)
    return range(start, count, size)


def _group_mean(values: Sequence[float], at: int, size: int) -> float:
    chunk = values[at : at + size]
    total = sum(chunk)
    if total == total:
        return total / len(chunk)
    known = [value for value in chunk if value == value]
    return sum(known) / len(known) if known else math.nan


def bucketed(values: Sequence[float], size: int, end: int, limit: int) -> list[float]:
    """The mean of each group of ``size`` ticks in ``values``, oldest first, at most the
    newest ``limit`` groups.

    ``values`` are the newest samples of a history whose next tick is number ``end``;
    groups start at ticks numbered by multiples of ``size``, so a group keeps its ticks as
    new ones arrive (only the newest, still open, changes). A group cut by the start of
    ``values`` while older ticks exist is left out: its mean would drift as the view
    slides. Gaps (NaN) are left out of a mean; a group of gaps is a gap.
    """
    count = len(values)
    end = max(end, count)  # a view built by hand may not say
    if size <= 1:
        return list(values[-limit:]) if limit > 0 else []
    return [_group_mean(values, at, size) for at in _group_starts(count, size, end, limit)]


class Buckets:
    """``bucketed`` of one series, tick after tick, without working out again the groups
    that were whole last time and whose samples are the same now: between two ticks only
    the newest group changes, so a full sparkline's 60 means cost one.

    Exact: a mean is reused only when every sample of its group is, byte for byte, what the
    last call was handed under the same tick numbers (a history rebuilt under the same
    numbers, as a replay's seek does, fails that test and is worked out afresh).
    """

    __slots__ = ("_end", "_first", "_means", "_raw", "_size", "_starts")

    def __init__(self) -> None:
        self._raw = b""
        self._first = 0
        self._end = 0
        self._size = 0
        self._starts = range(0)
        """Tick numbers of the groups returned last."""
        self._means: list[float] = []

    def __call__(self, values: Sequence[float], size: int, end: int, limit: int) -> list[float]:
        """``bucketed(values, size, end, limit)``."""
        count = len(values)
        end = max(end, count)
        if size <= 1 or not isinstance(values, array):
            return bucketed(values, size, end, limit)
        first = end - count
        indices = _group_starts(count, size, end, limit)
        starts = range(first + indices.start, first + indices.stop, size)
        raw = values.tobytes()
        width = values.itemsize
        lo, hi = max(first, self._first), min(end, self._end)
        old = self._starts
        same = (
            size == self._size
            and hi > lo
            and raw[(lo - first) * width : (hi - first) * width]
            == self._raw[(lo - self._first) * width : (hi - self._first) * width]
        )
        means: list[float] = []
        reused = range(0)
        if same and old and starts:
            # Groups of both calls whose every tick lies in the samples both were handed
            # (so whole in both). Both calls' groups start at multiples of ``size``.
            low = max(starts.start, old.start, lo)
            low += -(low - starts.start) % size
            reused = range(low, min(starts.stop, old.stop, hi - size + 1), size)
        if reused:
            for tick in range(starts.start, reused.start, size):
                means.append(_group_mean(values, tick - first, size))
            at = (reused.start - old.start) // size
            means += self._means[at : at + len(reused)]
            for tick in range(reused.start + len(reused) * size, starts.stop, size):
                means.append(_group_mean(values, tick - first, size))
        else:
            means = [_group_mean(values, tick - first, size) for tick in starts]
        self._raw, self._first, self._end, self._size = raw, first, end, size
        self._starts, self._means = starts, means
        return means


def sparkline(
    values: Sequence[float], width: int, scale: float | None, *, stretch: bool = False
) -> str:
    """The newest ``width`` samples as bar cells on a fixed 0..scale axis.

    NaN samples are gaps; when there are fewer samples than cells the line is left-padded,
    so the newest sample is always the rightmost cell. With ``stretch`` a young history is
    spread over the width instead, up to ``MAX_STRETCH`` cells a sample (as nvtop's plots take
    theirs): plots of different widths that it fills span the same time, oldest sample at
    the left edge, newest at the right.
    """
    if width <= 0:
        return ""
    if scale is None or scale <= 0:
        return " " * width
    recent = values[-width:] if len(values) > width else values
    top = len(BARS) - 1
    count = len(recent)
    # Spread over at most MAX_STRETCH cells a sample: a few seconds never pose as a minute.
    spread = min(width, count * MAX_STRETCH) if stretch and count else count
    cells = [" "] * (width - spread)
    levels = len(BARS)
    bars = [
        GAP_CELL if value != value else BARS[min(max(int(value / scale * levels), 0), top)]
        for value in recent
    ]
    if spread == count:
        # A cell a sample (every sparkline once its history is long enough).
        cells += bars
        return "".join(cells)
    for place, cell in enumerate(bars):
        cells.append(cell * ((place + 1) * spread // count - place * spread // count))
    return "".join(cells)


def short_name(name: str | None) -> str:
    """A product name without the vendor words that every GPU here shares."""
    if not name:
        return NA
    for prefix in ("NVIDIA ", "GeForce ", "Tesla ", "Quadro "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def missing_reasons(gpu: GpuSample, paths: Sequence[str]) -> list[str]:
    """``"power: not supported"`` for each of ``paths`` the GPU left out, in order."""
    found: list[str] = []
    for path in paths:
        reason = gpu.reason(path)
        if reason is not None and reason is not Reason.GPU_LOST:
            found.append(f"{FIELD_LABELS.get(path, path)}: {reason.value}")
    return found


ACTIVITY_PARTS = (("SM", "sm"), ("tensor", "tensor"), ("occ", "sm_occupancy"), ("DRAM", "dram"))
"""What the detail line says of GPM's activity, in its order: (label, ``Activity`` field)."""
_ACTIVITY_TROUBLE = frozenset({Reason.NO_PERMISSION, Reason.ERROR})


def activity_parts(gpu: GpuSample) -> list[tuple[str, Level]]:
    """GPM's activity as detail parts: ``SM 94%``, ``tensor 91%``, ``occ 14%``, ``DRAM 16%``.

    Nothing for a GPU without GPM (most GPUs: a line of n/a on each would say nothing) nor
    before its first window; ``activity n/a (no permission)`` when it has GPM but could not
    be read.
    """
    activity = gpu.activity
    parts = [
        (f"{label} {fmt_percent(value)}", Level.OK)
        for label, name in ACTIVITY_PARTS
        if (value := getattr(activity, name)) is not None
    ]
    if parts:
        return parts
    reason = gpu.reason("activity.sm")
    if reason is not None and reason in _ACTIVITY_TROUBLE:
        return [(f"activity {NA} ({reason.value})", Level.NA)]
    return []


def traffic_parts(gpu: GpuSample) -> list[tuple[str, Level]]:
    """GPM's PCIe traffic, and NVLink's where any flows: ``PCIe tx 620KiB/s rx 2.4MiB/s``."""
    activity = gpu.activity
    parts = []
    for label, tx, rx in (
        ("PCIe", activity.pcie_tx, activity.pcie_rx),
        ("NVLink", activity.nvlink_tx, activity.nvlink_rx),
    ):
        if (tx is None and rx is None) or (label == "NVLink" and not (tx or rx)):
            continue
        parts.append((f"{label} tx {fmt_rate(tx)} rx {fmt_rate(rx)}", Level.OK))
    return parts


def detail_parts(gpu: GpuSample) -> list[tuple[str, Level]]:
    """The detail line as (text, level) parts: GPM's activity, fan, P-state, clocks, codecs,
    PCIe and NVLink traffic, throttling, n/a."""
    if gpu.lost:
        return [(LOST_TEXT, Level.CRIT)]
    parts: list[tuple[str, Level]] = activity_parts(gpu)
    parts.append(_field("fan", fmt_percent(gpu.fan_speed), gpu, "fan_speed"))
    parts.append(_field("", gpu.performance_state or NA, gpu, "performance_state", empty="P-state"))
    sm, mem = gpu.clocks.sm, gpu.clocks.memory
    if sm is None and mem is None:
        parts.append(_field("clocks", NA, gpu, "clocks.sm"))
    else:
        parts.append((f"sm {_mhz(sm)} mem {_mhz(mem)} MHz", Level.OK))
    enc, dec = gpu.utilization.encoder, gpu.utilization.decoder
    parts.append((f"enc {fmt_percent(enc)} dec {fmt_percent(dec)}", Level.OK))
    parts += traffic_parts(gpu)
    reasons = gpu.throttle_reasons
    if reasons is None:
        parts.append(_field("throttle", NA, gpu, "throttle_reasons"))
    elif reasons:
        parts.append(
            (
                "throttle: " + ", ".join(r.replace("_", " ") for r in reasons),
                throttle_level(reasons, gpu),
            )
        )
    if gpu.mig_mode:
        parts.append((f"MIG on: {fmt_count(len(gpu.mig_devices), 'device')}", Level.OK))
    missing = missing_reasons(
        gpu, ("utilization.gpu", "memory.used", "power.draw", "power.limit", "temperature.gpu")
    )
    if missing:
        parts.append(("n/a " + "; ".join(missing), Level.NA))
    if gpu.stale:
        parts.append(("stale: no new values this tick", Level.WARN))
    return parts


def _mhz(value: int | None) -> str:
    return NA if value is None else str(value)


def _field(label: str, text: str, gpu: GpuSample, path: str, empty: str = "") -> tuple[str, Level]:
    if text != NA:
        return (f"{label} {text}".strip(), Level.OK)
    reason = gpu.reason(path)
    name = label or empty
    suffix = f" ({reason.value})" if reason is not None else ""
    return (f"{name} {NA}{suffix}".strip(), Level.NA)
