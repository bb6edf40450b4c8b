"""The GPU panels of the main screen, kept in line with each tick's GPUs.

Panels are keyed by GPU (UUID, else index): a tick with the same GPUs only updates them; a
GPU that vanished from the latest snapshot but is still in the recent window stays, marked
gone, so a GPU falling off the bus is visible instead of silently disappearing. In compact
mode (one line per GPU) a column header sits above the panels and the detail line of the
focused GPU below them. When the screen gives full panels more rows than their lines take,
they chart their four gauges' histories in them (``render.panel_charts``), from the same
copies of the history as the sparklines.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container
from textual.events import DescendantFocus
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from gputop.history import Metric, gpu_key
from gputop.model import GpuSample
from gputop.pipeline.tick import Tick
from gputop.ui.render.gauges import SPARK_TICKS, Buckets
from gputop.ui.render.panel_charts import ChartData, groups_wanted
from gputop.ui.render.panel_lines import (
    GAUGE_METRICS,
    Line,
    PanelState,
    compact_header,
    compact_name_width,
    detail_line,
    panel_finding,
)
from gputop.ui.widgets.gpu_panel import ROLES, GpuPanel

Entry = tuple[str, GpuSample, bool]
"""(history key, sample, gone)."""


def panel_entries(tick: Tick) -> list[Entry]:
    """Every GPU of the latest snapshot, plus recently seen ones now missing, by index."""
    entries: dict[str, Entry] = {}
    for gpu in tick.snapshot.gpus:
        entries[gpu_key(gpu)] = (gpu_key(gpu), gpu, False)
    shown = {gpu.index for gpu in tick.snapshot.gpus}
    for snapshot in reversed(tick.window):
        for gpu in snapshot.gpus:
            # ``gpu_key`` inlined: this runs for every GPU of every snapshot of the window
            # on every tick, and almost always finds a key already there.
            uuid = gpu.uuid
            key = uuid if uuid else f"index:{gpu.index}"
            # A sample known only by its index (no UUID yet: a first sample that did not
            # finish in time) is the GPU at that index now, not a second one that went.
            if key not in entries and (uuid or gpu.index not in shown):
                entries[key] = (key, gpu, True)
    return sorted(entries.values(), key=lambda entry: (entry[1].index, entry[0]))


def panel_keys(tick: Tick) -> list[str]:
    """The keys of the panels ``tick`` needs, in display order."""
    return [key for key, _, _ in panel_entries(tick)]


class GpuGrid(Widget):
    """Column header (compact), the panels, and the focused GPU's detail line (compact)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"gpu-panel--{role}" for role in ROLES}
    """``--label`` titles, ``--name`` product name (compact), ``--value`` normal numbers,
    ``--warn``/``--crit`` numbers past a threshold, ``--na`` values not reported, ``--spark``
    sparklines, ``--dim`` separators and the detail line: for the compact header and detail
    lines, and for the parts of every panel."""

    class LeftBelow(Message):
        """Down was pressed on a panel of the last row: focus goes on below the grid."""

    def __init__(self, *, id: str | None = None, keys: list[str] | None = None) -> None:
        """A grid composed with panels for ``keys`` (``show`` adds or drops panels later)."""
        super().__init__(id=id)
        self._keys: list[str] = list(keys or [])
        self._panels: list[GpuPanel] = [GpuPanel(key, self) for key in self._keys]
        self._entries: list[Entry] = []
        self._tick: Tick | None = None
        self._compact = False
        self._details = False
        self._mig = False
        self._rows = 0
        self._name_width = 12
        self._header_line: Line | None = None
        self._detail_line: Line | None = None
        self._selected: str | None = None
        self._entries_memo: tuple[Tick, list[Entry]] | None = None
        self._buckets: dict[tuple[str, Metric], Buckets] = {}
        """Each sparkline's means, kept from tick to tick (only the newest one moves)."""

    def compose(self) -> ComposeResult:
        """The panel container; the compact layout's column titles above it and detail line
        below are added the first time the panels go compact (each node costs the first
        frame its composing and styling, and most terminals are tall enough)."""
        yield Container(*self._panels, id="gpu-panels")

    def _compact_line(self, name: str) -> Static:
        """The compact layout's line ``name`` (``gpu-columns``, ``gpu-detail``), mounted
        around the panels the first time it is wanted."""
        found = self.query(f"#{name}")
        if found:
            return found.first(Static)
        line = Static(id=name)
        container = self.query_one("#gpu-panels", Container)
        if name == "gpu-columns":
            self.mount(line, before=container)
        else:
            self.mount(line, after=container)
        return line

    @property
    def panels(self) -> list[GpuPanel]:
        """The panels, in display order."""
        return list(self._panels)

    @property
    def count(self) -> int:
        """How many panels the last tick needed."""
        return len(self._entries)

    def entries_for(self, tick: Tick) -> list[Entry]:
        """What ``show(tick)`` would display (the screen sizes its layout from this)."""
        memo = self._entries_memo
        if memo is not None and memo[0] is tick:
            return memo[1]
        entries = panel_entries(tick)
        # The screen asks for the layout, then shows the same tick: worked out once.
        self._entries_memo = (tick, entries)
        return entries

    def show(
        self,
        tick: Tick,
        *,
        compact: bool,
        details: bool = False,
        mig: bool = False,
        rows: int = 0,
    ) -> None:
        """Bring the panels in line with ``tick``.

        ``details``: one-line panels each get their GPU's detail line beneath; ``mig``: full
        panels list their MIG devices; ``rows``: full panels take that many content rows and
        chart their history in what their lines leave (the screen decides when the terminal
        has the rows).
        """
        self._tick = tick
        self._details = details
        self._mig = mig
        self._rows = rows
        entries = self.entries_for(tick)
        self._entries = entries
        keys = [key for key, _, _ in entries]
        container = self.query_one("#gpu-panels", Container)
        if keys != self._keys:
            self._keys = keys
            container.remove_children()
            self._panels = [GpuPanel(key, self) for key in keys]
            container.mount_all(self._panels)
            self._buckets = {}
        width = container.content_size.width
        self._compact = compact
        self._name_width = compact_name_width([gpu for _, gpu, _ in entries], width or 80)
        history = tick.history
        # No sparkline is wider than half the grid: the cells a panel can draw. Charts draw
        # two groups a cell, across at most the grid's width: the sparklines take the newest.
        cells = max(1, (width or 80) // 2)
        charting = rows > 0 and not compact
        if charting:
            cells = max(cells, groups_wanted(width or 80))
        buckets = self._buckets
        for panel, (key, gpu, gone) in zip(self._panels, entries, strict=True):
            series = {}
            raw = {}
            for metric in GAUGE_METRICS:
                means = buckets.get((key, metric))
                if means is None:
                    means = buckets[key, metric] = Buckets()
                samples = raw[metric] = history.series(key, metric)
                series[metric] = means(samples, SPARK_TICKS, history.end, cells)
            charts = ChartData(series, raw, history.times, history.end) if charting else None
            panel.show(
                gpu,
                series,
                gone=gone,
                compact=compact,
                name_width=self._name_width,
                finding=panel_finding(tick, gpu.index),
                details=details,
                mig=mig,
                rows=rows,
                charts=charts,
            )
        self._update_compact_lines()

    def _update_compact_lines(self) -> None:
        if not self._compact:
            return
        columns = self._compact_line("gpu-columns")
        # The lines' own width, as the panels below get theirs: inside the padding. Built
        # for the grid's width, the titles drifted off their columns by a cell or two.
        width = self.content_size.width - columns.styles.padding.width
        header = compact_header(width, self._name_width)
        if header != self._header_line:
            self._header_line = header
            columns.update(self._text(header), layout=False)
        # With a detail line under every GPU the focused GPU's line is hidden: not built.
        entry = None if self._details else self._selected_entry()
        detail: Line = ()
        if entry is not None:
            _, gpu, gone = entry
            finding = None if self._tick is None else panel_finding(self._tick, gpu.index)
            state = PanelState(gpu, {}, gone, finding)
            detail = ((f"{gpu.index:>2} ", "label"), *detail_line(state, max(0, width - 3)))
        if detail != self._detail_line:
            self._detail_line = detail
            self._compact_line("gpu-detail").update(self._text(detail), layout=False)

    def _selected_entry(self) -> Entry | None:
        for entry in self._entries:
            if entry[0] == self._selected:
                return entry
        return self._entries[0] if self._entries else None

    def _text(self, line: Line) -> Text:
        text = Text(no_wrap=True, overflow="crop", end="")
        for part, role in line:
            text.append(part, self.get_component_rich_style(f"gpu-panel--{role}", partial=True))
        return text

    def focus_panel(self) -> bool:
        """Focus the panel of the GPU selected last (the first one before any); False when
        there is no panel."""
        panels = self._panels
        if not panels:
            return False
        chosen = next((panel for panel in panels if panel.key == self._selected), panels[0])
        # At once, not after the queue: a key already read behind this one is the panel's.
        self.screen.set_focus(chosen)
        return True

    def on_gpu_panel_move_requested(self, event: GpuPanel.MoveRequested) -> None:
        """Up and Down on a panel: the panel in the row above or below, in either layout."""
        event.stop()
        panels = self._panels
        if event.panel not in panels:
            return
        columns = self.query_one("#gpu-panels", Container).styles.grid_size_columns or 1
        target = panels.index(event.panel) + event.rows * columns
        if 0 <= target < len(panels):
            self.screen.set_focus(panels[target])
        elif target >= len(panels):
            self.post_message(self.LeftBelow())

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """The detail line follows the focused panel."""
        if isinstance(event.widget, GpuPanel):
            self._selected = event.widget.key
            self._update_compact_lines()

    def on_resize(self) -> None:
        """Widths changed: the header and detail line are laid out again."""
        self._header_line = None
        self._detail_line = None
        if self._tick is not None:
            self.show(
                self._tick,
                compact=self._compact,
                details=self._details,
                mig=self._mig,
                rows=self._rows,
            )
