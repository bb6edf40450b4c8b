"""A GPU panel's line charts: utilization, memory, power and temperature over the last minutes.

When GPUs are few and the terminal tall, a panel grows (as nvitop's screen fills with history
graphs and nvtop's with plots): beneath its gauge lines, the four gauges' histories as braille
line charts, each with its scale, its average and peak, and a time axis. They draw what the
sparklines draw, at a larger size: the means of whole groups of ``SPARK_TICKS`` ticks (one
braille dot column each, two to a cell; the group still filling is the sparkline's newest
cell), from the copies of the history the pipeline hands every tick (``Tick.history``);
nothing here reads a history itself.

Pure functions, no Textual, like ``panel_lines``: the result is lines of (text, role) parts
that the panel compares with what it drew and repaints only where they differ. A chart
changes when a group of ticks is whole, once in five ticks: its newest cell, and since two
groups make a cell, the whole plot moves one cell in ten ticks.

The history screen charts with plotext; a panel cannot: a plotext chart of this size costs
about 18 ms to build (and loading plotext 0.2 s), four of them every five ticks; the braille
cells here are looked up, and a chart that moved is patched, not drawn again.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gputop.history import Metric, Series
from gputop.model.units import NA
from gputop.ui.render.gauges import FALLBACK_TEMP_SCALE, SPARK_TICKS, Gauge, Level

Part = tuple[str, str]
Line = tuple[Part, ...]

CHART_METRICS = (Metric.GPU_UTIL, Metric.MEM_USED, Metric.POWER, Metric.TEMP)
"""The charts, in the gauges' order (``panel_lines.GAUGE_METRICS``)."""
CHART_TITLES = ("GPU utilization", "Memory used", "Power draw", "Temperature")

MIN_CHART_ROWS = 5
"""Rows of the smallest chart: its title, three rows of plot, its time axis."""
MIN_PLOT_CELLS = 16
"""Cells of plot (beside the scale) of the narrowest chart: under that it says little."""
TARGET_ASPECT = 8.0
"""Cells of plot per row of plot a chart reads best at (a cell is about twice as tall as it
is wide: a plot four times as wide as tall, minutes of history at a readable height): of the
arrangements that fit, the closest wins."""
ARRANGEMENTS = ((2, 2), (4, 1), (1, 4))
"""(columns, rows) the four charts may be laid out in."""
CHART_GAP = 3
"""Blank cells between two charts side by side."""
DOTS_PER_CELL = 2
"""Braille has two dot columns a cell: a cell is two groups of ``SPARK_TICKS`` ticks."""
LEVELS_PER_ROW = 4
"""And four dot rows."""

GIB = 1024**3

_BRAILLE = 0x2800
_DOT_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
"""The bit of each dot of a braille cell: [column][row from the top]."""

_LEVEL_ROLE = {Level.OK: "spark", Level.WARN: "warn", Level.CRIT: "crit", Level.NA: "na"}

AXIS_STEPS = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)
"""Seconds between two marks of a time axis; the first that leaves room for its labels."""
MIN_LABEL_GAP = 10
"""Cells from one time label's end to the next one's at least."""
CLOSE_LABEL_GAP = 5
"""The same for a history too young for a label so far apart."""


@dataclass(frozen=True, slots=True)
class ChartData:
    """What the charts of one panel draw at one tick.

    ``means`` are per metric the means of whole ``SPARK_TICKS``-tick groups, oldest first,
    the newest (still filling) group last; ``raw`` the samples they were made of, for the
    average and the peak a chart's title gives; ``times`` when each of the newest ticks was
    taken (epoch seconds, NaN unknown), ending where the series end; ``end`` the number of
    the next tick (groups start at multiples of ``SPARK_TICKS``).
    """

    means: Mapping[Metric, Sequence[float]]
    raw: Mapping[Metric, Series]
    times: Series
    end: int


def arrangement(width: int, rows: int) -> tuple[int, int] | None:
    """(columns, rows) of the four charts in a block ``width`` cells by ``rows`` rows; None
    when no arrangement gives every chart its least size."""
    best: tuple[float, tuple[int, int]] | None = None
    for columns, lines in ARRANGEMENTS:
        chart_width = (width - CHART_GAP * (columns - 1)) // columns
        chart_rows = rows // lines
        # The scale beside the plot takes at most five cells and its rule one.
        if chart_rows < MIN_CHART_ROWS or chart_width - 6 < MIN_PLOT_CELLS:
            continue
        plot_rows = chart_rows - 2
        distance = abs(math.log(chart_width / plot_rows / TARGET_ASPECT))
        if best is None or distance < best[0]:
            best = (distance, (columns, lines))
    return None if best is None else best[1]


def fits(width: int, rows: int) -> bool:
    """Whether charts can be drawn in ``width`` x ``rows`` (the screen asks, to size panels)."""
    return arrangement(width, rows) is not None


def groups_wanted(width: int) -> int:
    """Groups of ticks the widest chart of a block ``width`` cells wide can draw: what the
    panel's series must hold."""
    return DOTS_PER_CELL * max(0, width)


# -- scales and labels --------------------------------------------------------------------


def _percent(value: float) -> str:
    return f"{value:.0f}%"


def _gib(value: float) -> str:
    gib = value / GIB
    return f"{gib:.1f}G" if gib < 10 else f"{gib:.0f}G"


def _watts(value: float) -> str:
    return f"{value:.0f}W"


def _celsius(value: float) -> str:
    return f"{value:.0f}C"


_FORMATS: dict[Metric, Callable[[float], str]] = {
    Metric.GPU_UTIL: _percent,
    Metric.MEM_USED: _gib,
    Metric.POWER: _watts,
    Metric.TEMP: _celsius,
}


def chart_top(metric: Metric, gauge: Gauge, values: Sequence[float]) -> float:
    """The top of a chart's scale: the gauge's (100 %, the memory, the power limit, the
    slowdown temperature) so a chart reads like its sparkline; the highest value shown where
    the GPU reports no such bound."""
    if gauge.scale is not None:
        return gauge.scale
    if metric is Metric.TEMP:
        return FALLBACK_TEMP_SCALE
    known = [value for value in values if value == value]
    return max(known) if known and max(known) > 0 else 1.0


def stats_text(metric: Metric, values: Sequence[float]) -> str:
    """``avg 63% · max 100%`` of the samples behind a chart; ``n/a`` when none is known."""
    form = _FORMATS[metric]
    total = sum(values)
    if total == total and values:
        # No gap (the common case): sums and maxima in C, no list of the values built.
        return f"avg {form(total / len(values))} · max {form(max(values))}"
    known = [value for value in values if value == value]
    if not known:
        return NA
    return f"avg {form(sum(known) / len(known))} · max {form(max(known))}"


# -- the plot -----------------------------------------------------------------------------


def newest_whole_group(end: int) -> int:
    """The number of the newest whole group of a history whose next tick is ``end`` (-1:
    none yet)."""
    return end // SPARK_TICKS - 1


def place_dots(means: Sequence[float], newest_group: int, cells: int) -> list[float]:
    """The dot columns of a plot ``cells`` wide, oldest first: one per group, the newest
    at the right; a group in the left column of its cell (an even group number) leaves the
    right column of the newest cell empty, so a group keeps its cell as the plot grows."""
    dots = DOTS_PER_CELL * cells
    pad = 1 if newest_group % DOTS_PER_CELL == 0 else 0
    shown = list(means[-(dots - pad) :]) if dots - pad > 0 else []
    return [math.nan] * (dots - pad - len(shown)) + shown + [math.nan] * pad


def braille_plot(
    dots: Sequence[float],
    cells: int,
    rows: int,
    top: float,
    reuse: tuple[Sequence[float], Sequence[str]] | None = None,
) -> list[str]:
    """A line through ``dots`` (one per dot column, NaN a gap) on a 0..``top`` scale, as
    ``rows`` strings of ``cells`` braille cells. A rise or fall between two dots is drawn
    as a vertical run in the later column, so the line stays joined.

    A cell depends only on its two dots and the dot before them, and is looked up
    (``_cell_column``). ``reuse``: the dots and rows of this plot drawn last, at this size
    and scale; where only the newest cell changed since (most ticks) or the plot moved by a
    cell (one tick in ten), the rows are that drawing's with the new cells put in.
    """
    wanted = DOTS_PER_CELL * cells
    values = list(dots[:wanted])
    values += [math.nan] * (wanted - len(values))
    column = _cell_column
    if reuse is not None and cells >= 3 and len(reuse[0]) == wanted and len(reuse[1]) == rows:
        old, drawn = reuse
        newest = column(values[-3], values[-2], values[-1], rows, top)
        if list(old[:-2]) == values[:-2]:
            return [row[:-1] + cell for row, cell in zip(drawn, newest, strict=True)]
        if list(old[2:]) == values[:-2]:
            # The first cell has no dot before it now: drawn again, as the newest.
            first = column(math.nan, values[0], values[1], rows, top)
            return [
                head + row[2:] + cell for head, row, cell in zip(first, drawn, newest, strict=True)
            ]
    columns = [
        column(
            values[2 * cell - 1] if cell else math.nan,
            values[2 * cell],
            values[2 * cell + 1],
            rows,
            top,
        )
        for cell in range(cells)
    ]
    return ["".join(row) for row in zip(*columns, strict=True)] if columns else [""] * rows


_COLUMNS: dict[tuple[float, float, float, int, float], tuple[str, ...]] = {}
_COLUMNS_KEPT = 8192
"""Cell columns kept at most (a few hundred make up every chart of a steady screen)."""


def _level(value: float, scale: float, last: int) -> int | None:
    return None if value != value else min(max(round(value * scale), 0), last)


def _cell_column(
    previous: float, left: float, right: float, rows: int, top: float
) -> tuple[str, ...]:
    """The ``rows`` characters of one cell, top first: its left and right dots (NaN: a
    gap), joined to the dot before them."""
    key = (previous, left, right, rows, top)
    found = _COLUMNS.get(key)
    if found is not None:
        return found
    levels = rows * LEVELS_PER_ROW
    scale = (levels - 1) / top if top > 0 else 0.0
    levelled = [_level(value, scale, levels - 1) for value in (previous, left, right)]
    bits = [0] * rows
    for side in range(DOTS_PER_CELL):
        before, level = levelled[side], levelled[side + 1]
        if level is None:
            continue
        if before is None or abs(level - before) <= 1:
            run = range(level, level + 1)
        elif level > before:
            run = range(before + 1, level + 1)
        else:
            run = range(level, before)
        mask = _DOT_BITS[side]
        for dot in run:
            from_top = levels - 1 - dot
            bits[from_top // LEVELS_PER_ROW] |= mask[from_top % LEVELS_PER_ROW]
    found = tuple(chr(_BRAILLE + b) if b else " " for b in bits)
    if len(_COLUMNS) >= _COLUMNS_KEPT:
        _COLUMNS.clear()
    _COLUMNS[key] = found
    return found


# -- the time axis ------------------------------------------------------------------------


def cell_times(times: Series, end: int, newest_group: int, cells: int) -> list[float]:
    """When each cell of a plot ``cells`` wide begins (its first tick's time; NaN unknown),
    oldest first, for the groups ``place_dots`` puts there."""
    newest_cell = newest_group // DOTS_PER_CELL
    count = len(times)
    found: list[float] = []
    for cell in range(newest_cell - cells + 1, newest_cell + 1):
        tick = cell * DOTS_PER_CELL * SPARK_TICKS
        at = count - (end - tick)
        found.append(times[at] if 0 <= at < count else math.nan)
    return found


def _ago(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"-{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"-{seconds // 60}m"
    return f"-{seconds}s"


_AXES: dict[tuple[float, ...], str] = {}
"""The axes drawn last, by their cells' times: they change when the plot moves a cell."""


def time_axis(starts: Sequence[float], cells: int) -> str:
    """The rule under a plot with ``-2m``-style labels, each ending under the cell taken
    that long before the newest one (a regular step, the first that leaves room)."""
    key = (cells, *starts)
    found = _AXES.get(key)
    if found is None:
        if len(_AXES) >= 8:
            _AXES.clear()
        found = _AXES[key] = _time_axis(starts, cells)
    return found


def _time_axis(starts: Sequence[float], cells: int) -> str:
    axis = ["─"] * cells
    known = [(cell, moment) for cell, moment in enumerate(starts) if moment == moment]
    if len(known) < 2:
        return "".join(axis)
    (first, oldest), (last, newest) = known[0], known[-1]
    per_cell = (newest - oldest) / (last - first) if last > first else 0.0
    if per_cell <= 0:
        return "".join(axis)
    # The first step that spaces labels well and puts one on the history; a young history
    # (a minute or two) gets closer labels rather than none.
    span = newest - oldest
    steps = [step for step in AXIS_STEPS if step <= span]
    step = next(
        (step for step in steps if step / per_cell >= MIN_LABEL_GAP),
        next((step for step in reversed(steps) if step / per_cell >= CLOSE_LABEL_GAP), 0),
    )
    if not step:
        return "".join(axis)
    free = cells - 1  # the newest cell itself needs no label: it is now
    moments = [moment for _, moment in known]
    mark = 1
    while True:
        target = newest - mark * step
        if target < oldest - per_cell / 2:
            break
        # The cell that began closest to the mark, among those whose time is known.
        after = min(bisect.bisect_left(moments, target), len(known) - 1)
        if after and target - moments[after - 1] < moments[after] - target:
            after -= 1
        cell = known[after][0]
        label = _ago(mark * step)
        start = cell - len(label) + 1
        if start >= 0 and cell < free:
            axis[start : cell + 1] = list(label)
            free = start - 1
        mark += 1
    return "".join(axis)


# -- one chart and the block --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChartSpec:
    """Everything one chart's picture depends on: two equal specs draw the same lines."""

    metric: Metric
    title: str
    width: int
    rows: int
    dots: tuple[float, ...]
    top: float
    role: str
    stats: str
    axis: str


def chart_spec(
    metric: Metric,
    gauge: Gauge,
    data: ChartData,
    size: tuple[int, int],
    axis: Callable[[int], str],
) -> ChartSpec:
    """What the chart of ``metric`` shows at ``size`` (width, rows)."""
    width, rows = size
    means = data.means.get(metric, ())
    # Whole groups only: the group still filling is left to the sparkline above, so a
    # chart changes once in SPARK_TICKS ticks, not on every one.
    filling = data.end % SPARK_TICKS
    if filling and means:
        means = means[:-1]
    top = chart_top(metric, gauge, means)
    cells = max(0, width - scale_width(metric, top) - 1)
    newest_group = newest_whole_group(data.end)
    dots = place_dots(means, newest_group, cells)
    # The average and peak of the ticks the plot covers (a peak of one tick shows even
    # where its group's mean is lower).
    shown = min(len(means), DOTS_PER_CELL * cells - (1 - newest_group % DOTS_PER_CELL))
    raw = data.raw.get(metric, ())
    stop = len(raw) - filling
    covered = raw[max(0, stop - shown * SPARK_TICKS) : stop] if shown > 0 else raw[:0]
    title = CHART_TITLES[CHART_METRICS.index(metric)]
    return ChartSpec(
        metric,
        title,
        width,
        rows,
        tuple(dots),
        top,
        _LEVEL_ROLE[gauge.level],
        stats_text(metric, covered),
        axis(cells),
    )


def scale_width(metric: Metric, top: float) -> int:
    """Cells of the labels of a scale up to ``top``."""
    form = _FORMATS[metric]
    return max(len(form(top)), len(form(top / 2)), 1)


def chart_lines(
    spec: ChartSpec, before: tuple[ChartSpec, tuple[Line, ...]] | None = None
) -> tuple[Line, ...]:
    """One chart, ``spec.rows`` lines of exactly ``spec.width`` cells: the title with the
    average and peak, the plot with its scale, the time axis. ``before``: the chart as it
    was drawn last, whose plot is reused where only its newest cell changed or it moved by
    a cell (``braille_plot``)."""
    form = _FORMATS[spec.metric]
    labels = (form(spec.top), form(spec.top / 2), "0")
    width = scale_width(spec.metric, spec.top)
    cells = max(0, spec.width - width - 1)
    plot_rows = spec.rows - 2
    name = spec.title[: spec.width]
    stats = spec.stats if len(name) + 1 + len(spec.stats) <= spec.width else ""
    head: Line = ((name, "label"), (" " * (spec.width - len(name) - len(stats)), "dim"))
    if stats:
        head = (*head, (stats, "na" if stats == NA else "dim"))
    lines: list[Line] = [head]
    reuse = None
    if before is not None:
        old, drawn = before
        if (old.metric, old.width, old.rows, old.top) == (
            spec.metric,
            spec.width,
            spec.rows,
            spec.top,
        ):
            reuse = (old.dots, [line[1][0] for line in drawn[1:-1]])
    plot = braille_plot(spec.dots, cells, plot_rows, spec.top, reuse)
    middle = plot_rows // 2 if plot_rows >= 5 else -1
    for row, text in enumerate(plot):
        if row == 0:
            label, rule = labels[0], "┤"
        elif row == plot_rows - 1:
            label, rule = labels[2], "┤"
        elif row == middle:
            label, rule = labels[1], "┤"
        else:
            label, rule = "", "│"
        lines.append(((label.rjust(width) + rule, "dim"), (text, spec.role)))
    lines.append(((" " * width + "└" + spec.axis, "dim"),))
    return tuple(lines)


Drawn = dict[int, tuple[ChartSpec, tuple[Line, ...]]]
"""The lines each chart (by its place) was drawn as last, with the spec they were drawn for."""


def chart_block(
    gauges: Sequence[Gauge], data: ChartData, width: int, rows: int, drawn: Drawn
) -> tuple[Line, ...]:
    """The four charts of a panel in ``width`` x ``rows`` (empty when they do not fit).

    ``drawn`` keeps each chart's lines between calls: a chart whose spec is unchanged (its
    data, size and scale) is not drawn again.
    """
    found = arrangement(width, rows)
    if found is None:
        return ()
    columns, bands = found
    widths = _share(width - CHART_GAP * (columns - 1), columns)
    heights = _share(rows, bands)
    axes: dict[int, str] = {}

    def axis(cells: int) -> str:
        # The four charts share one time axis per plot width: worked out once.
        found = axes.get(cells)
        if found is None:
            newest_group = newest_whole_group(data.end)
            starts = cell_times(data.times, data.end, newest_group, cells)
            found = axes[cells] = time_axis(starts, cells)
        return found

    pictures: list[tuple[Line, ...]] = []
    for index, (metric, gauge) in enumerate(zip(CHART_METRICS, gauges, strict=True)):
        size = (widths[index % columns], heights[index // columns])
        spec = chart_spec(metric, gauge, data, size, axis)
        kept = drawn.get(index)
        if kept is None or kept[0] != spec:
            kept = drawn[index] = (spec, chart_lines(spec, kept))
        pictures.append(kept[1])
    gap: Part = (" " * CHART_GAP, "dim")
    out: list[Line] = []
    for band in range(bands):
        band_pictures = pictures[band * columns : (band + 1) * columns]
        for row in range(heights[band]):
            parts: list[Part] = []
            for column, picture in enumerate(band_pictures):
                if column:
                    parts.append(gap)
                parts.extend(picture[row])
            out.append(tuple(parts))
    return tuple(out)


def _share(total: int, count: int) -> list[int]:
    """``total`` split into ``count`` parts differing by at most one, the larger ones last."""
    base, extra = divmod(total, count)
    return [base + (1 if index >= count - extra else 0) for index in range(count)]
