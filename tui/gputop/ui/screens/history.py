"""Enter on a GPU: its history, and what the diagnosis makes of it.

Charts of utilization (with GPM's SM activity where measured), memory, power,
temperature and clocks over a selectable window
(keys 1: 1 min, 2: 10 min, 3: 1 h, 4: all), min/avg/max of each, marks (x) where throttling
was active, and the findings of :func:`gputop.insight.diagnosis.diagnose`. Esc closes.

The numbers come from the poller's history store, read through the
:class:`~gputop.history.HistoryReader` a tick carries (a copy taken under the store's lock):
every tick of the last hour, minute buckets beyond it. The title says what the window holds
(``10m00s · 601 samples``). Only the last few minutes of snapshots are kept here, for the
diagnosis; each chart thins its window to two points per column when it draws.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from gputop.history import HistoryReader, Metric
from gputop.history.window import EMPTY_WINDOW, HistoryWindow
from gputop.insight.diagnosis import (
    DEFAULT_THRESHOLDS,
    DiagnosisThresholds,
    Finding,
    Severity,
    diagnose,
)
from gputop.insight.series import downsample, downsample_flags, time_ticks
from gputop.insight.textfmt import fmt_duration, seconds_between
from gputop.model import Snapshot
from gputop.model.health import HealthEvent
from gputop.model.health import Severity as HealthSeverity
from gputop.ui.widgets.footer import Footer

WINDOWS: dict[str, tuple[float | None, str]] = {
    "1": (60.0, "1 min"),
    "2": (600.0, "10 min"),
    "3": (3600.0, "1 h"),
    "4": (None, "all"),
}
"""Key -> (seconds before the newest sample, or None for everything; label)."""

DIAGNOSIS_KEEP_S = 600.0
"""Seconds of snapshots kept for the diagnosis (its rules read 30 s; runs of throttling and
the like are dated back at most this far)."""

DIAGNOSIS_KEEP_MAX = 2400
"""Snapshots kept for the diagnosis at most, whatever their timestamps say."""

_SEVERITY_STYLE = {
    Severity.CRITICAL: ("✖", "bold $error"),
    Severity.WARNING: ("▲", "$warning"),
    Severity.INFO: ("●", "$accent"),
}


def findings_content(findings: Sequence[Finding]) -> Content:
    """The findings, one per line, marked by severity; a reassuring line when none."""
    if not findings:
        return Content.styled(
            "● nothing to report: no sign of waiting, idling or throttling", "$success"
        )
    lines = []
    for finding in findings:
        mark, style = _SEVERITY_STYLE[finding.severity]
        lines.append(Content.assemble((f"{mark} ", style), finding.text))
    return Content("\n").join(lines)


_EVENT_SEVERITY = {
    HealthSeverity.CRITICAL: Severity.CRITICAL,
    HealthSeverity.WARNING: Severity.WARNING,
    HealthSeverity.INFO: Severity.INFO,
}

EVENTS_SHOWN = 8
"""Health events listed at most, newest first (the history keeps more)."""


def events_content(events: Sequence[HealthEvent], gpu_index: int) -> Content | None:
    """GPU ``gpu_index``'s health events, newest first, each with its time, what it is and
    what to do; None when it had none."""
    mine = [event for event in events if event.gpu == gpu_index]
    if not mine:
        return None
    shown = mine[-EVENTS_SHOWN:][::-1]
    more = len(mine) - len(shown)
    head = f"health events ({len(mine)}{', newest first' if len(mine) > 1 else ''})"
    lines = [Content.styled(head, "bold")]
    for event in shown:
        mark, style = _SEVERITY_STYLE[_EVENT_SEVERITY[event.severity]]
        where = ""
        if event.gpu_instance_id is not None:
            where = f" (MIG GI {event.gpu_instance_id} CI {event.compute_instance_id})"
        lines.append(
            Content.assemble(
                (f"{mark} ", style),
                (f"{event.time:%Y-%m-%d %H:%M:%S} ", "$text-muted"),
                (event.title() + where, style),
                event.advice(),
            )
        )
    if more:
        lines.append(Content.styled(f"… {more} older", "$text-muted"))
    return Content("\n").join(lines)


def _tick_format(span: float) -> str:
    if span >= 86400:
        return "%m-%d %H:%M"
    if span >= 600:
        return "%H:%M"
    return "%H:%M:%S"


def _fmt_value(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


GIB = 1024**3
"""Memory is stored in bytes and shown in GiB."""


Rgb = tuple[int, int, int]

BLUE: Rgb = (95, 175, 255)
GREEN: Rgb = (135, 215, 95)
GREY: Rgb = (138, 138, 138)
ORANGE: Rgb = (255, 175, 95)
PURPLE: Rgb = (175, 135, 255)
RED: Rgb = (255, 95, 95)


def _hex(color: Rgb) -> str:
    return "#{:02x}{:02x}{:02x}".format(*color)


Line = tuple[Metric, str, Rgb]
"""A chart line: the metric, its label in the key, its colour."""


def chart_title(title: str, lines: Sequence[Line], throttled: bool) -> Content:
    """``title`` then a coloured key for each line (and the throttle mark when shown).

    The key lives in the border rather than in a plotext legend, which would be drawn over
    the top left of the plot, where a busy GPU's lines are. ``lines`` are those with data
    (a GPU without GPM keys no SM line it cannot draw).
    """
    parts: list[Content | tuple[str, str]] = [Content(title)]
    if len(lines) > 1:
        for _, label, color in lines:
            parts.append((f" ━ {label}", _hex(color)))
    if throttled:
        parts.append((" x throttled", _hex(RED)))
    return Content.assemble(*parts)


class HistoryChart(PlotextPlot):
    """One metric over the window: a line per channel, x marks where throttling was active.

    The window is thinned to two points per column each time the chart draws, so a resize
    redraws at the right resolution and no chart holds more points than it can show.
    """

    def __init__(
        self,
        title: str,
        lines: Sequence[Line],
        *,
        digits: int = 0,
        scale: float = 1.0,
        ylim: tuple[float, float] | None = None,
        marks: bool = True,
        id: str | None = None,
    ) -> None:
        """A chart titled ``title`` of ``lines``, values multiplied by ``scale``.

        The y axis runs from 0 to ``ylim``'s top when given, else to the highest value shown.
        """
        super().__init__(id=id)
        self.lines = tuple(lines)
        self.digits = digits
        self.scale = scale
        self.ylim = ylim
        self.marks = marks
        self.chart_title = title
        self.border_title = chart_title(title, self.lines, False)
        self._window = EMPTY_WINDOW
        self._throttled: list[bool] = []

    def show(self, window: HistoryWindow) -> None:
        """Draw ``window``; its first line's min/avg/max go into the subtitle."""
        self._window = window
        self._throttled = window.flags(Metric.THROTTLED) if self.marks else []
        keyed = [self.lines[0], *(line for line in self.lines[1:] if _has_data(window, line))]
        self.border_title = chart_title(self.chart_title, keyed, any(self._throttled))
        primary = window.stats(self.lines[0][0])
        if primary is None:
            self.border_subtitle = "n/a"
        else:
            scale, digits = self.scale, self.digits
            self.border_subtitle = (
                f"min {_fmt_value(primary.minimum * scale, digits)} "
                f"avg {_fmt_value(primary.mean * scale, digits)} "
                f"max {_fmt_value(primary.maximum * scale, digits)}"
            )
        self.refresh()

    def render(self) -> RenderResult:
        """Rebuild the plot at the current size, then let PlotextPlot draw it."""
        plt = self.plt
        plt.clear_figure()
        window = self._window
        points = max(2, self.size.width * 2)
        top = 0.0
        drawn = False
        for metric, _, color in self.lines:
            xs, ys = downsample(window.times, window.series(metric), points)
            if not xs:
                continue
            if self.scale != 1.0:
                ys = [y * self.scale for y in ys]
            plt.plot(xs, ys, marker="braille", color=color)
            drawn = True
            top = max(top, max(ys))
        if self.ylim is not None:
            bottom, top = self.ylim
        else:
            # From 0: a 2 C wobble should look like one, not fill the chart.
            bottom, top = 0.0, top or 1.0
        if not drawn:
            plt.title("not reported" if window.times else "no data")
        elif self._throttled:
            marks = downsample_flags(window.times, self._throttled, points)
            if marks:
                # On the bottom row: a throttled GPU's lines are high, not at 0.
                plt.scatter(marks, [bottom] * len(marks), marker="x", color=RED)
        plt.ylim(bottom, top)
        if window.times:
            first, last = window.times[0], window.times[-1]
            if last > first:
                plt.xlim(first, last)
            form = _tick_format(last - first)
            positions, labels = time_ticks(
                first, last, lambda t: datetime.fromtimestamp(t).strftime(form), count=3
            )
            plt.xticks(positions, labels)
        return super().render()


class HistoryScreen(Screen[None]):
    """The history of one GPU with the diagnosis; push it, Esc pops it."""

    CSS_PATH = "history.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "window('1')", "1 min"),
        Binding("2", "window('2')", "10 min"),
        Binding("3", "window('3')", "1 h"),
        Binding("4", "window('4')", "all"),
        Binding("escape", "dismiss", "Close"),
    ]

    window_key: reactive[str] = reactive("4")
    """Which entry of ``WINDOWS`` the charts show."""

    def __init__(
        self,
        gpu_index: int,
        key: str,
        history: HistoryReader,
        snapshots: Iterable[Snapshot] = (),
        *,
        now: datetime | None = None,
        thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS,
    ) -> None:
        """Show GPU ``gpu_index``, filed under ``key`` in ``history``.

        Args:
            gpu_index: the GPU's NVML index.
            key: its history key (``gputop.history.gpu_key``).
            history: the poller's history, read again at each new snapshot.
            snapshots: the recent snapshots (a tick's window), oldest first, for the
                diagnosis; read once, not kept beyond its few minutes.
            now: the current time for the "stale" rule; None (replay) skips it.
            thresholds: the diagnosis's numbers.
        """
        super().__init__()
        self.gpu_index = gpu_index
        self.key = key
        self.thresholds = thresholds
        self._history = history
        self._gpu_name: str | None = None
        self._recent: deque[Snapshot] = deque(maxlen=DIAGNOSIS_KEEP_MAX)
        for snapshot in snapshots:
            self._keep(snapshot)
        self._now = now
        self.findings: tuple[Finding, ...] = diagnose(
            self._recent, gpu_index, now=now, thresholds=thresholds
        )

    def compose(self) -> ComposeResult:
        """Title, findings, then a grid of five charts and the statistics."""
        yield Static(id="history-title")
        yield Static(id="history-findings")
        with Grid(id="history-charts"):
            yield HistoryChart(
                "Utilization %",
                [
                    (Metric.GPU_UTIL, "GPU", BLUE),
                    (Metric.MEM_UTIL, "memory", GREEN),
                    # GPM (Hopper and later): how much of the GPU worked while it was busy
                    # (tensor activity is in the statistics: its key would not fit too).
                    (Metric.SM_ACTIVE, "SM", ORANGE),
                ],
                ylim=(0.0, 100.0),
                id="chart-utilization",
            )
            yield HistoryChart(
                "Memory GiB",
                [(Metric.MEM_USED, "used", BLUE), (Metric.MEM_TOTAL, "total", GREY)],
                digits=1,
                scale=1 / GIB,
                marks=False,
                id="chart-memory",
            )
            yield HistoryChart(
                "Power W",
                [(Metric.POWER, "draw", BLUE), (Metric.POWER_LIMIT, "limit", GREY)],
                id="chart-power",
            )
            yield HistoryChart(
                "Temperature C", [(Metric.TEMP, "GPU", ORANGE)], id="chart-temperature"
            )
            yield HistoryChart(
                # The memory clock is steady and an order of magnitude higher: it would flatten
                # the SM clock, which is the one throttling moves; it stays in the table.
                "SM clock MHz",
                [(Metric.SM_CLOCK, "SM", PURPLE)],
                id="chart-clocks",
            )
            stats_box = Static(id="history-stats")
            stats_box.border_title = "Window statistics"
            yield stats_box
        yield Footer()

    def on_mount(self) -> None:
        """Fill everything in once the widgets exist."""
        self._update()

    def watch_window_key(self) -> None:
        """Redraw for the newly chosen window."""
        if self.is_mounted:
            self._update()

    def action_window(self, key: str) -> None:
        """Show the window bound to ``key`` (see ``WINDOWS``)."""
        if key in WINDOWS:
            self.window_key = key

    def append(self, snapshot: Snapshot, now: datetime | None = None) -> None:
        """A new snapshot arrived (live use): findings follow, the charts are read again."""
        self._keep(snapshot)
        self._now = now
        self.findings = diagnose(self._recent, self.gpu_index, now=now, thresholds=self.thresholds)
        if self.is_mounted:
            self._update()

    def _keep(self, snapshot: Snapshot) -> None:
        gpu = snapshot.gpu(self.gpu_index)
        if gpu is not None and gpu.name:
            self._gpu_name = gpu.name
        recent = self._recent
        recent.append(snapshot)
        newest = snapshot.timestamp
        while len(recent) > 1 and newest is not None:
            oldest = recent[0].timestamp
            if oldest is not None and seconds_between(oldest, newest) <= DIAGNOSIS_KEEP_S:
                break
            recent.popleft()

    def window(self) -> HistoryWindow:
        """What the chosen window holds now."""
        seconds, _ = WINDOWS[self.window_key]
        return self._history.window(self.key, seconds)

    def _update(self) -> None:
        _, label = WINDOWS[self.window_key]
        window = self.window()
        name = self._gpu_name or "unknown GPU"
        self.query_one("#history-title", Static).update(
            Content(  # plain text: a GPU named "[bold]x" shows as written
                f"GPU {self.gpu_index} · {name} · window {label}: {fmt_duration(window.span)} · "
                f"{window.samples:,} sample{'' if window.samples == 1 else 's'}"
            )
        )
        findings = (
            findings_content(self.findings) if len(window) else Content("no data for this GPU yet")
        )
        events = events_content(self._history.events(), self.gpu_index)
        if events is not None:
            findings = Content("\n").join([findings, events])
        self.query_one("#history-findings", Static).update(findings)
        for chart in self.query(HistoryChart):
            chart.show(window)
        self.query_one("#history-stats", Static).update(_stats_table(window))


_STAT_ROWS = (
    ("GPU util %", Metric.GPU_UTIL, 0, 1.0),
    ("mem util %", Metric.MEM_UTIL, 0, 1.0),
    ("SM active %", Metric.SM_ACTIVE, 0, 1.0),
    ("tensor %", Metric.TENSOR_ACTIVE, 0, 1.0),
    ("memory GiB", Metric.MEM_USED, 1, 1 / GIB),
    ("power W", Metric.POWER, 0, 1.0),
    ("temp C", Metric.TEMP, 0, 1.0),
    ("SM MHz", Metric.SM_CLOCK, 0, 1.0),
    ("mem MHz", Metric.MEM_CLOCK, 0, 1.0),
)


_MEASURED_ONLY = frozenset({Metric.SM_ACTIVE, Metric.TENSOR_ACTIVE})
"""Rows shown only where the window has values."""


def _has_data(window: HistoryWindow, line: Line) -> bool:
    return window.stats(line[0]) is not None


def _stats_table(window: HistoryWindow) -> Table:
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(no_wrap=True)
    for _ in range(3):
        table.add_column(justify="right", no_wrap=True)
    table.add_row("", "min", "avg", "max", style="bold")
    for label, metric, digits, scale in _STAT_ROWS:
        found = window.stats(metric)
        if found is None and metric in _MEASURED_ONLY:
            continue  # GPM's rows on a GPU without GPM (most): n/a each time says nothing
        if found is None:
            table.add_row(label, "n/a", "n/a", "n/a")
        else:
            table.add_row(
                label,
                _fmt_value(found.minimum * scale, digits),
                _fmt_value(found.mean * scale, digits),
                _fmt_value(found.maximum * scale, digits),
            )
    throttled = window.stats(Metric.THROTTLED)
    share = f"{100 * throttled.mean:.0f}%" if throttled is not None else "n/a"
    table.add_row("throttled", "", "", share)
    return table
