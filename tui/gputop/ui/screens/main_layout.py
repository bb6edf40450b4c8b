"""How the main screen shares the terminal: compact lines or full panels, one column of
panels or two, detail lines, MIG rows, charts, and the rows the process table keeps.

Plain arithmetic on sizes and counts, so each rule is tested without running an app; the
screen (``main.py``) turns the chosen :class:`Arrangement` into classes its ``.tcss`` styles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gputop.pipeline.tick import Tick
from gputop.ui.render.panel_charts import MIN_CHART_ROWS, fits
from gputop.ui.render.panel_lines import FULL_HEIGHT

FULL_PANEL_ROWS = 5
"""A full panel: three lines and its border."""
MIN_LOWER_ROWS = 10
"""Rows the process table keeps at least before panels go compact."""
MAX_PANEL_SHARE = 0.62
"""Full panels may take at most this share of the rows below the header."""
WIDE_COLUMNS = 160
"""From this width panels sit in two columns."""
MIN_FULL_WIDTH = 70
"""Below this width panels are always one line each."""
CHART_GPUS = 4
"""Full panels chart their history for this many GPUs at most (most boxes have one to
four); more keep their three lines whatever the terminal's height."""
TABLE_SHARE = 0.5
"""With charts, the process table's share of the rows below the header, at most (and at
least ``MIN_LOWER_ROWS``): what its lines need, up to this."""
LOWER_MIN = 4
"""Rows the processes' area never goes under (``#lower``'s min-height)."""
PANEL_FRAME = (2, 4)
"""Rows and columns a full panel's border and padding take."""
TABLE_HOLD_TICKS = 10
"""Ticks the process table keeps rows it no longer needs before the charts take them back,
so a process that comes and goes does not make the charts jump every tick."""


def choose_layout(width: int, height: int, gpus: int, replaying: bool) -> tuple[bool, bool]:
    """(compact, wide) for a terminal of ``width`` x ``height`` showing ``gpus`` panels."""
    wide = width >= WIDE_COLUMNS and gpus >= 2
    rows = math.ceil(max(gpus, 1) / (2 if wide else 1))
    chrome = 2 + (1 if replaying else 0)
    panel_rows = rows * FULL_PANEL_ROWS
    fits = panel_rows + chrome + MIN_LOWER_ROWS <= height and panel_rows <= MAX_PANEL_SHARE * (
        height - chrome
    )
    compact = width < MIN_FULL_WIDTH or not fits
    return compact, wide and not compact


def details_fit(height: int, gpus: int, replaying: bool) -> bool:
    """In the compact layout, whether every GPU can have its detail line (fan, P-state,
    clocks, throttling) beneath its line, as nvitop shows them, leaving the process table
    its rows."""
    chrome = 2 + (1 if replaying else 0)
    rows = 1 + 2 * max(gpus, 1)  # the column titles, then two lines per GPU
    return rows + chrome + MIN_LOWER_ROWS <= height and rows <= MAX_PANEL_SHARE * (height - chrome)


def mig_rows_fit(height: int, extra: Sequence[int], wide: bool, replaying: bool) -> bool:
    """In the panel layout, whether the panels can list their MIG devices (``extra`` lines
    per panel, in display order) within the rules that chose full panels."""
    columns = 2 if wide else 1
    rows = [extra[start : start + columns] for start in range(0, len(extra), columns)]
    panel_rows = sum(FULL_PANEL_ROWS + max(row) for row in rows)
    chrome = 2 + (1 if replaying else 0)
    return panel_rows + chrome + MIN_LOWER_ROWS <= height and panel_rows <= MAX_PANEL_SHARE * (
        height - chrome
    )


def chart_rows(
    width: int,
    height: int,
    extra: Sequence[int],
    wide: bool,
    replaying: bool,
    table_rows: int,
) -> int:
    """Content rows of each full panel when the panels chart their history, 0 when they
    keep their lines alone; ``extra`` lines per panel (MIG devices) in display order,
    ``table_rows`` what the process table needs to show every line.

    The rule for the rows below the header: the process table gets what its lines need (a
    box with a few processes leaves no blank rows under them), but at most ``TABLE_SHARE``
    of the rows, and never less than ``MIN_LOWER_ROWS`` of them while it has the lines to
    fill them: a box with many processes keeps a table it can scroll in. The panels share
    the rest, row by row of panels, and chart when every chart gets its least size;
    otherwise (and past ``CHART_GPUS`` GPUs) the layout is the one without charts.
    """
    gpus = len(extra)
    if not 0 < gpus <= CHART_GPUS:
        return 0
    chrome = 2 + (1 if replaying else 0)
    body = height - chrome
    table = min(table_rows, max(MIN_LOWER_ROWS, math.floor(body * TABLE_SHARE)))
    table = max(table, LOWER_MIN)
    columns = 2 if wide else 1
    bands = math.ceil(gpus / columns)
    rows = (body - table) // bands - PANEL_FRAME[0]
    # Each column of panels: its share of the width, less the gutter between columns.
    panel_width = (width - (columns - 1)) // columns - PANEL_FRAME[1]
    chart_area = rows - FULL_HEIGHT - max(extra)
    if chart_area < MIN_CHART_ROWS or not fits(panel_width, chart_area):
        return 0
    return rows


def table_estimate(tick: Tick) -> int:
    """The process table's rows before it has shown a tick (the first frame's layout is
    chosen while the screen composes): its status line, titles and a row per process."""
    return 2 + sum(len(gpu.processes) for gpu in tick.snapshot.gpus)


@dataclass(frozen=True, slots=True)
class Arrangement:
    """What the main screen shows for its size: each field a class of the screen's."""

    compact: bool = False
    """One line per GPU (``-compact``)."""
    wide: bool = False
    """Two columns of panels (``-wide``)."""
    details: bool = False
    """Compact, with a detail line under each GPU (``-details``)."""
    mig_rows: bool = False
    """Full panels list their MIG devices."""
    chart_rows: int = 0
    """Content rows of each full panel with charts (``-charts``); 0: no charts."""


def plan_layout(
    width: int,
    height: int,
    gpus: int,
    replaying: bool,
    extra: Callable[[], Sequence[int]] | None,
    table_rows: int,
) -> Arrangement:
    """The layout for a terminal of ``width`` x ``height`` showing ``gpus`` panels.

    Args:
        width: the screen's columns.
        height: the screen's rows.
        gpus: panels to show.
        replaying: a replay bar takes a row.
        extra: the MIG lines of each panel in display order, asked for only when full
            panels are shown; None before any tick (then panels neither list nor chart).
        table_rows: rows the process table wants below the panels.
    """
    compact, wide = choose_layout(width, height, gpus, replaying)
    details = compact and details_fit(height, gpus, replaying)
    if compact or extra is None:
        return Arrangement(compact, wide, details)
    lines = extra()
    listed = any(lines) and mig_rows_fit(height, lines, wide, replaying)
    charted = lines if listed else [0] * len(lines)
    charts = chart_rows(width, height, charted, wide, replaying, table_rows)
    return Arrangement(compact, wide, details, listed, charts)


class TableRoom:
    """Rows the process table is given room for: what it needs at once, and rows it no
    longer needs back to the charts after ``TABLE_HOLD_TICKS`` ticks of not needing them."""

    def __init__(self) -> None:
        self.rows = 0
        """Rows held for the table; 0 before it has shown a tick."""
        self._hold = 0

    def hold(self, wanted: int) -> None:
        """The table wants ``wanted`` rows this tick."""
        if wanted >= self.rows:
            self.rows = wanted
            self._hold = TABLE_HOLD_TICKS
        elif self._hold > 0:
            self._hold -= 1
        else:
            self.rows = wanted
