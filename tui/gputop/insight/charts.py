"""Terminal charts of a recording (utilization and power over time), drawn with plotext.

Each chart is drawn on a figure of its own (``plotext_compat``), so charts never leak into
each other; there is none when charts are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import plotext as plt

from gputop.insight.report import GpuTrace, clock_at
from gputop.insight.series import downsample, downsample_flags, time_ticks
from gputop.plotext_compat import new_figure

MIN_WIDTH = 40


def _clock_label(start: datetime | None) -> Callable[[float], str]:
    def label(offset: float) -> str:
        moment = clock_at(start, offset)
        return f"{offset:.0f}s" if moment is None else moment.strftime("%H:%M:%S")

    return label


def _panel(
    figure: Any,
    column: int,
    title: str,
    xs: Sequence[float],
    ys: Sequence[float],
    marks: Sequence[float],
    mark_at: float | None,
    points: int,
    start: datetime | None,
    ylim: tuple[float, float] | None,
) -> None:
    panel = figure.subplot(1, column)
    # A legend would sit on the top-left marks; the title explains them instead.
    panel.title(f"{title} (x: throttled)" if marks and mark_at is not None else title)
    x, y = downsample(xs, ys, points)
    if x:
        panel.plot(x, y, marker="braille")
    else:
        panel.text("not reported", x=0.5, y=0.5)
    if marks and mark_at is not None:
        panel.scatter(marks, [mark_at] * len(marks), marker="x")
    if ylim is not None:
        panel.ylim(*ylim)
    if xs:
        # Both panels span the whole recording, even where one has no values.
        if xs[-1] > xs[0]:
            panel.xlim(xs[0], xs[-1])
        # A label is 8 columns; plotext drops any that would touch another, so ask for no
        # more than fit with room to spare.
        count = max(2, min(5, (points // 2 - 8) // 14))
        positions, labels = time_ticks(xs[0], xs[-1], _clock_label(start), count=count)
        panel.xticks(positions, labels)


def render_gpu_charts(
    trace: GpuTrace,
    start: datetime | None,
    width: int,
    height: int = 12,
    color: bool = True,
) -> str | None:
    """Two side-by-side charts of one GPU: utilization % and power W over time (None when
    charts are left out: ``plotext_compat.new_figure``)."""
    width = max(width, MIN_WIDTH)
    figure = new_figure()
    if figure is None:
        return None
    figure.theme("pro" if color else "clear")
    figure.plotsize(width, height)
    figure.subplots(1, 2)
    # Each panel is about half the width; two points per column is all braille can show.
    points = max(1, width)
    marks = downsample_flags(trace.times, trace.throttled, points)
    _panel(
        figure,
        1,
        f"GPU {trace.index} utilization %",
        trace.times,
        trace.utilization,
        marks,
        100.0,
        points,
        start,
        (0.0, 100.0),
    )
    power_known = [p for p in trace.power if p == p]
    _panel(
        figure,
        2,
        f"GPU {trace.index} power W",
        trace.times,
        trace.power,
        marks,
        max(power_known) if power_known else None,
        points,
        start,
        None,
    )
    text: str = figure.build()
    if not color:
        text = plt.uncolorize(text)
    return "\n".join(line.rstrip() for line in text.splitlines())
