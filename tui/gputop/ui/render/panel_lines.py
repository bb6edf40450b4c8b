"""The text of a GPU panel as (text, role) parts, laid out for a given width.

Pure functions, no Textual: the panel widget turns roles into styles. Because the result is a
plain value, the widget compares it with what it drew last and skips the redraw when nothing
visible changed (an idle GPU's flat sparkline shifts every second but looks the same).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gputop.history import Metric, Series
from gputop.insight.diagnosis import Finding, FindingKind, Severity
from gputop.model import GpuSample, MigDeviceSample, ProcessSample
from gputop.model.safe_text import terminal_safe
from gputop.model.units import NA, fmt_memory_pair, fmt_percent, ratio
from gputop.pipeline.tick import Tick, ViewSpec
from gputop.ui.render.gauges import (
    MEM_CRIT,
    MEM_WARN,
    SPARK_TICKS,
    Gauge,
    Level,
    compact_gauges,
    detail_parts,
    gauges,
    short_name,
    sparkline,
)
from gputop.ui.render.owners import device_holders, gpu_holder, holders_text

Part = tuple[str, str]
"""(text, role); role names a ``gpu-panel--<role>`` component style."""
Line = tuple[Part, ...]

GAUGE_METRICS = (Metric.GPU_UTIL, Metric.MEM_USED, Metric.POWER, Metric.TEMP)
"""The series behind the four gauges, in gauge order."""

SPARKLINE_SAMPLES = 240 * SPARK_TICKS
"""Samples per series the panels are handed: more than the widest sparkline they draw, a
cell per ``SPARK_TICKS`` samples, and enough for a chart of 120 cells, two such groups a cell
(``panel_charts``): 20 minutes at 1 s."""

PANEL_VIEW = ViewSpec(GAUGE_METRICS, SPARKLINE_SAMPLES)
"""What each tick must carry for the panels (the TUI's builder hands it to the pipeline)."""

FULL_HEIGHT = 3
"""Content lines of a full panel (its border adds two rows)."""

COMPACT_VALUE_WIDTHS = (4, 12, 9, 4)
"""Value columns of the one-line layout: util, memory, power, temperature."""

COMPACT_TITLES = ("UTIL", "MEMORY", "POWER", "TEMP")

MIN_SPARK = 3
"""Narrower than this a sparkline says nothing; it is left out."""

SEPARATOR = " · "
ELLIPSIS = "…"
COLUMN_RULE: Part = (" │", "dim")
"""Closes a one-line panel's column after its sparkline, so the sparkline reads as belonging
to the value before it, not to the next column's value."""
DETAIL_INDENT = "   "
"""The per-GPU detail line of the compact layout starts under the GPU's name."""

_LEVEL_ROLE = {Level.OK: "value", Level.WARN: "warn", Level.CRIT: "crit", Level.NA: "na"}
_SPARK_ROLE = {Level.OK: "spark", Level.WARN: "warn", Level.CRIT: "crit", Level.NA: "spark"}


@dataclass(frozen=True, slots=True)
class PanelState:
    """What one panel shows: a GPU (or its last known sample when gone) and its series."""

    gpu: GpuSample
    series: Mapping[Metric, Series]
    gone: bool = False
    """The GPU was in recent snapshots but not in the latest one."""
    finding: Part | None = None
    """The diagnosis's worst finding as (text, role), shown first on the detail line."""


_SEVERITY_ROLE = {Severity.INFO: "value", Severity.WARNING: "warn", Severity.CRITICAL: "crit"}


def worst_finding(findings: Sequence[Finding]) -> Part | None:
    """The first (worst) finding as a styled part, or None when there is none.

    "no trend yet" is about the history, not the GPU: the history screen says it, a panel
    (one line for what matters most) does not.
    """
    shown = [finding for finding in findings if finding.kind is not FindingKind.NO_TREND]
    if not shown:
        return None
    worst = shown[0]
    return (worst.text, _SEVERITY_ROLE[worst.severity])


def panel_finding(tick: Tick, gpu_index: int) -> Part | None:
    """What the detail line says first: the GPU's health alarm in red until acknowledged
    (an XID, a pending or failed row remap: ``Tick.alarms``), else the diagnosis's worst
    finding."""
    alarm = tick.alarm_for(gpu_index)
    if alarm is not None:
        # The footer offers the key that acknowledges it while some GPU is in alarm.
        return (f"⚠ {terminal_safe(alarm)}", "crit")
    return worst_finding(tick.findings_for(gpu_index))


def gone_sample(gpu: GpuSample) -> GpuSample:
    """A last-known sample shown as absent: every value reads n/a."""
    return replace(gpu, lost=True)


def title(state: PanelState) -> str:
    """The panel's border title: index and full product name."""
    return f" {state.gpu.index} · {state.gpu.name or NA} "


def badge(state: PanelState) -> str:
    """The border subtitle: what is wrong with the GPU, else its PCI bus id."""
    if state.gone:
        return " GONE "
    if state.gpu.lost:
        return " LOST "
    if state.gpu.stale:
        return " STALE "
    return f" {state.gpu.pci_bus_id} " if state.gpu.pci_bus_id else ""


def _shown(state: PanelState) -> GpuSample:
    return gone_sample(state.gpu) if state.gone else state.gpu


def _series(state: PanelState, metric: Metric) -> Series:
    return state.series.get(metric, ())


_LABEL_WIDTH = 5


def _spark_width(value_width: int, width: int) -> int:
    """Cells left for the sparkline of a gauge ``width`` wide: label, value, a space."""
    return width - _LABEL_WIDTH - value_width - 1


def _gauge_parts(gauge: Gauge, values: Series, value_width: int, width: int) -> list[Part]:
    """``LABEL value sparkline`` filling ``width`` cells exactly."""
    label = f"{gauge.label:<{_LABEL_WIDTH}}"
    value = gauge.value.rjust(value_width)
    parts: list[Part] = [(label, "label"), (value, _LEVEL_ROLE[gauge.level])]
    spark_width = _spark_width(len(value), width)
    if spark_width >= MIN_SPARK:
        parts.append((" ", "dim"))
        spark = sparkline(values, spark_width, gauge.scale, stretch=True)
        parts.append((spark, _SPARK_ROLE[gauge.level]))
    else:
        parts.append((" " * max(0, width - len(label) - len(value)), "dim"))
    return parts


def fit_line(parts: Sequence[Part], width: int) -> Line:
    """Cut parts to ``width`` cells, ending in an ellipsis when something visible was cut.

    The ellipsis never follows a separator left dangling by the cut ("dec 0% · …" reads as
    if a part were missing but says nothing of it): the cut backs up to the last word.
    """
    if sum(len(text) for text, _ in parts) <= width:
        return tuple(parts)
    line = "".join(text for text, _ in parts)
    if not line[width:].strip():
        return _take_cells(parts, width)[0]  # only padding goes
    kept, cut_role = _take_cells(parts, len(line[: max(0, width - len(ELLIPSIS))].rstrip(" ·")))
    if kept and kept[-1][1] == cut_role:
        return (*kept[:-1], (kept[-1][0] + ELLIPSIS, cut_role))
    return (*kept, (ELLIPSIS, cut_role))


def _take_cells(parts: Sequence[Part], cells: int) -> tuple[Line, str]:
    """The first ``cells`` characters of ``parts``, and the role of the first one left out."""
    kept: list[Part] = []
    for text, role in parts:
        if len(text) > cells:
            if cells:
                kept.append((text[:cells], role))
            return tuple(kept), role
        kept.append((text, role))
        cells -= len(text)
    return tuple(kept), parts[-1][1] if parts else ""


_CLAUSE_ENDS = (" (", "; ", ", ", " — ", ": ")
"""Where a sentence may end early: before a parenthesis, after a semicolon or comma."""
MIN_DETAIL = 12
"""Fewest cells a detail after the diagnosis is cut to; with less room it is left out."""
MIN_CLAUSE_SHARE = 0.5
"""A clause cut keeps at least this share of the width; else the cut is after a word."""


def clause_cut(text: str, width: int) -> str:
    """``text`` in ``width`` cells, cut after its last whole clause that fits (else after
    its last whole word), ending in an ellipsis."""
    if len(text) <= width:
        return text
    if width <= len(ELLIPSIS):
        return ELLIPSIS[:width]
    room = width - len(ELLIPSIS)
    end = max(text.rfind(end, 0, room + 1) for end in _CLAUSE_ENDS)
    if end < MIN_CLAUSE_SHARE * width:
        # No clause ends late enough: the last whole word, so no number is cut in half.
        end = text.rfind(" ", 0, room + 1)
    kept = text[:end].rstrip(" ;,:—(") if end > 0 else text[:room]
    return kept + ELLIPSIS


def holder_part(gpu: GpuSample) -> Part | None:
    """``pod ml/llama-0`` when one pod (Slurm job, container) holds the whole GPU."""
    holder = gpu_holder(gpu)
    return None if holder is None else (holder.describe(), "name")


def detail_line(state: PanelState, width: int) -> Line:
    """The diagnosis, the pod holding the GPU, then fan, P-state, clocks, codecs, throttle
    and n/a reasons, to ``width``."""
    if state.gone:
        pieces = [("not in the latest snapshot: the GPU disappeared", Level.CRIT)]
    else:
        pieces = detail_parts(state.gpu)
    details = [(text, _detail_role(level)) for text, level in pieces]
    holder = None if state.gone or state.gpu.lost else holder_part(state.gpu)
    if holder is not None:
        details.insert(0, holder)
    parts: list[Part] = []
    if state.finding is not None and not state.gone:
        text, role = state.finding
        if len(text) > width:
            # The finding alone is too long: end it with its last whole clause rather
            # than mid-clause, so what stays reads as a statement (its numbers come first).
            return ((clause_cut(text, width), role),)
        # The details follow, as many as fit, the first that does not cut at a clause: the
        # finding is never cut for them.
        line: list[Part] = [state.finding]
        used = len(text)
        for detail, detail_role in details:
            room = width - used - len(SEPARATOR)
            shown = detail if len(detail) <= room else clause_cut(detail, room)
            if len(shown) < min(len(detail), MIN_DETAIL):
                break
            line += [(SEPARATOR, "dim"), (shown, detail_role)]
            used += len(SEPARATOR) + len(shown)
            if shown is not detail:
                break
        return tuple(line)
    for number, part in enumerate(details):
        if number:
            parts.append((SEPARATOR, "dim"))
        parts.append(part)
    return fit_line(parts, width)


def _detail_role(level: Level) -> str:
    return "dim" if level is Level.OK else _LEVEL_ROLE[level]


def full_lines(state: PanelState, width: int) -> tuple[Line, ...]:
    """Three lines: GPU and memory gauges, power and temperature gauges, the detail line."""
    gpu = _shown(state)
    util, memory, power, temperature = gauges(gpu)
    column = max(0, (width - 2) // 2)
    # Each value gets its own width: sparklines end in the same column (newest sample on
    # the right), which is what lines them up in time; a young history is spread over the
    # plot's width, so a plot never sits as a sliver beside an empty gap.
    gap: Part = ("  ", "dim")
    first = (
        *_gauge_parts(util, _series(state, Metric.GPU_UTIL), 4, column),
        gap,
        *_gauge_parts(memory, _series(state, Metric.MEM_USED), 15, column),
    )
    second = (
        *_gauge_parts(power, _series(state, Metric.POWER), 9, column),
        gap,
        *_gauge_parts(temperature, _series(state, Metric.TEMP), 7, column),
    )
    return (fit_line(first, width), fit_line(second, width), detail_line(state, width))


def compact_spark_width(width: int, name_width: int) -> int:
    """Cells per sparkline in the one-line layout, 0 when there is no room for them."""
    columns = len(COMPACT_VALUE_WIDTHS)
    rules = len(COLUMN_RULE[0]) * (columns - 1)
    fixed = 3 + name_width + sum(2 + value for value in COMPACT_VALUE_WIDTHS) + rules
    spark = (width - fixed) // columns
    return spark if spark >= MIN_SPARK else 0


def compact_line(state: PanelState, width: int, name_width: int) -> tuple[Line, ...]:
    """One line: index, short name, then each gauge's value and sparkline."""
    gpu = _shown(state)
    spark_width = compact_spark_width(width, name_width)
    name = short_name(gpu.name)
    if state.gone or gpu.lost:
        name = ("GONE " if state.gone else "LOST ") + name
    parts: list[Part] = [
        (f"{gpu.index:>2} ", "label"),
        (_pad(name, name_width), "crit" if state.gone or gpu.lost else "name"),
    ]
    for number, (gauge, metric, value_width) in enumerate(
        zip(compact_gauges(gpu), GAUGE_METRICS, COMPACT_VALUE_WIDTHS, strict=True)
    ):
        if number and spark_width:
            parts.append(COLUMN_RULE)
        parts.append((" " + gauge.value.rjust(value_width), _LEVEL_ROLE[gauge.level]))
        if spark_width:
            spark = sparkline(_series(state, metric), spark_width, gauge.scale)
            parts.append((" " + spark, _SPARK_ROLE[gauge.level]))
    return (fit_line(parts, width),)


def compact_lines(
    state: PanelState, width: int, name_width: int, details: bool
) -> tuple[Line, ...]:
    """The one-line panel, and with ``details`` its GPU's detail line beneath it."""
    line = compact_line(state, width, name_width)
    if not details:
        return line
    detail = detail_line(state, max(0, width - len(DETAIL_INDENT)))
    return (*line, ((DETAIL_INDENT, "dim"), *detail))


def compact_header(width: int, name_width: int) -> Line:
    """Column titles above the one-line panels, aligned with ``compact_line``."""
    spark_width = compact_spark_width(width, name_width)
    parts: list[Part] = [(" # ", "label"), (_pad("NAME", name_width), "label")]
    for number, (heading, value_width) in enumerate(
        zip(COMPACT_TITLES, COMPACT_VALUE_WIDTHS, strict=True)
    ):
        if number and spark_width:
            parts.append(COLUMN_RULE)
        cell = value_width + (1 + spark_width if spark_width else 0)
        parts.append((" " + heading.ljust(cell), "label"))
    return fit_line(parts, width)


def compact_name_width(gpus: Sequence[GpuSample], width: int) -> int:
    """Wide enough for the longest short name, within limits that leave room for numbers."""
    longest = max((len(short_name(gpu.name)) + 5 for gpu in gpus if gpu.lost), default=0)
    longest = max([longest, *(len(short_name(gpu.name)) for gpu in gpus)], default=8)
    return max(6, min(longest, 18, width // 5))


def _pad(text: str, width: int) -> str:
    return text[: width - 1] + ELLIPSIS if len(text) > width else text.ljust(width)


def device_processes(gpu: GpuSample, device: MigDeviceSample) -> list[ProcessSample]:
    """The MIG device's processes; also the GPU's own list where a source files them only
    there (matched by GPU and compute instance), by PID."""
    found = {process.pid: process for process in device.processes}
    for process in gpu.processes:
        if (
            process.gpu_instance_id == device.gpu_instance_id
            and process.compute_instance_id in (None, device.compute_instance_id)
            and process.pid not in found
        ):
            found[process.pid] = process
    return sorted(found.values(), key=lambda process: process.pid)


def mig_rows(gpu: GpuSample) -> int:
    """How many lines ``mig_lines`` draws for ``gpu``: one per MIG device."""
    return len(gpu.mig_devices) if gpu.mig_mode and not gpu.lost else 0


def _memory_role(used: int | None, total: int | None) -> str:
    fraction = ratio(used, total)
    if fraction is None:
        return "na" if used is None else "value"
    return "crit" if fraction >= MEM_CRIT else "warn" if fraction >= MEM_WARN else "value"


def mig_lines(state: PanelState, width: int) -> tuple[Line, ...]:
    """One line per MIG device, as nvitop lists them: profile, instance ids, memory used and
    total, utilization where measured, processes, and the pods holding it."""
    gpu = state.gpu
    if state.gone or not mig_rows(gpu):
        return ()
    profiles = [device.profile or f"profile {NA}" for device in gpu.mig_devices]
    profile_width = max(len(profile) for profile in profiles)
    lines: list[Line] = []
    for device, profile in zip(gpu.mig_devices, profiles, strict=True):
        gi = NA if device.gpu_instance_id is None else device.gpu_instance_id
        ci = NA if device.compute_instance_id is None else device.compute_instance_id
        used, total = device.memory.used, device.memory.total
        processes = device_processes(gpu, device)
        count = len(processes)
        parts: list[Part] = [
            ("MIG  ", "label"),
            (profile.ljust(profile_width), "na" if device.profile is None else "value"),
            (f"  GI {gi} CI {ci}", "dim"),
            (SEPARATOR, "dim"),
            ("MEM ", "label"),
            (fmt_memory_pair(used, total, separator="/"), _memory_role(used, total)),
        ]
        if device.utilization.gpu is not None:
            parts += [(SEPARATOR, "dim"), ("util ", "label")]
            parts.append((fmt_percent(device.utilization.gpu), "value"))
        parts += [(SEPARATOR, "dim"), (f"{count} process{'' if count == 1 else 'es'}", "value")]
        holders = device_holders(device, (process.owner for process in processes))
        if holders:
            parts += [(SEPARATOR, "dim"), (holders_text(holders), "name")]
        lines.append(fit_line(parts, width))
    return tuple(lines)
