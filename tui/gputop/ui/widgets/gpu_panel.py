"""One GPU: current numbers, fixed-scale sparklines, a detail line, and where the screen
gives it the rows, line charts of the same four metrics (``render.panel_charts``).

The panel is a single widget that draws its lines itself (no child widgets per number), and
it repaints only when the text it would draw changed: most of a monitoring minute's ticks
change a few cells of a few panels, and an unchanged panel costs nothing to the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.content import Content
from textual.filter import LineFilter
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from gputop.history import Metric, Series
from gputop.model import GpuSample
from gputop.ui.compat import repaint_regions
from gputop.ui.render.gauges import gauges
from gputop.ui.render.panel_charts import ChartData, Drawn, chart_block
from gputop.ui.render.panel_lines import (
    FULL_HEIGHT,
    Line,
    PanelState,
    Part,
    badge,
    compact_lines,
    full_lines,
    gone_sample,
    mig_lines,
    mig_rows,
    title,
)
from gputop.ui.widgets.line_strip import changed_spans, line_strip, role_styles

ROLES = ("label", "name", "value", "warn", "crit", "na", "spark", "dim")
"""Every role a panel part may have; each is styled by ``gpu-panel--<role>``."""


class GpuPanel(Widget, can_focus=True):
    """One GPU's panel; ``show`` hands it a new sample and its history series.

    Its parts are styled by the ``gpu-panel--<role>`` component classes of the widget that
    holds it (a ``GpuGrid``), not by component classes of its own: Textual styles each
    component class of each panel as a node of its own, every time the panel is restyled,
    which for four panels was a tenth of the work before the first frame. Every panel's
    parts look the same anyway; what differs between panels (focus, a lost GPU) is the
    panel's own style, which each part's style is laid over.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_history", "History", key_display="⏎"),
        Binding("up", "move(-1)", "Previous GPU", key_display="↑", show=False),
        Binding("down", "move(1)", "Next GPU, then the processes", key_display="↓", show=False),
    ]

    class HistoryRequested(Message):
        """The user asked for the history screen of a GPU."""

        def __init__(self, gpu_index: int, key: str) -> None:
            """Ask for the history of GPU ``gpu_index``, filed under history ``key``."""
            super().__init__()
            self.gpu_index = gpu_index
            self.key = key

    class MoveRequested(Message):
        """The user asked for the panel ``rows`` rows above (negative) or below this one."""

        def __init__(self, panel: GpuPanel, rows: int) -> None:
            """Ask to move ``rows`` rows from ``panel``."""
            super().__init__()
            self.panel = panel
            self.rows = rows

    def __init__(self, key: str, styled_by: Widget, *, id: str | None = None) -> None:
        """A panel for the GPU filed under history ``key``; empty until ``show``.

        ``styled_by`` has the ``gpu-panel--<role>`` component classes (see the class).
        """
        super().__init__(id=id)
        self.key = key
        self._styled_by = styled_by
        self._state: PanelState | None = None
        self._compact = False
        self._details = False
        self._mig = False
        self._name_width = 12
        self._titles: tuple[str, str] | None = None
        """The title and badge shown, as plain text."""
        self._rows = 0
        """Content rows the screen gave a full panel with charts; 0: its own lines' height."""
        self._charts: ChartData | None = None
        self._drawn: Drawn = {}
        """Each chart's lines as drawn last, with what they were drawn from."""
        self._lines: tuple[Line, ...] = ()
        self._lines_width = -1
        self._styles: dict[str, Style] | None = None
        self._strips: dict[int, tuple[Line, Strip]] = {}
        self._frame: _Frame | None = None
        """What Textual puts around a content line (border, padding, filters), learnt from
        a line it rendered; None: not known for the current styles and size."""
        self._framed: dict[int, tuple[Strip, _Frame, Strip]] = {}
        """Per screen row of the panel, the content strip last framed, the frame, and the
        framed strip: a partial repaint renders every line from the first changed one to
        the last (a panel with charts changes lines all down its height), and a line whose
        content strip is the one framed last is not framed again."""
        self.paints = 0
        """How many content lines were rendered (tests read it: an unchanged panel renders
        none on a new tick, a change renders only the lines it touched)."""

    @property
    def gpu(self) -> GpuSample | None:
        """The sample shown (the last known one when the GPU is gone)."""
        return None if self._state is None else self._state.gpu

    @property
    def gone(self) -> bool:
        """The GPU is not in the latest snapshot."""
        return self._state is not None and self._state.gone

    def show(
        self,
        gpu: GpuSample,
        series: Mapping[Metric, Series],
        *,
        gone: bool = False,
        compact: bool = False,
        name_width: int = 12,
        finding: Part | None = None,
        details: bool = False,
        mig: bool = False,
        rows: int = 0,
        charts: ChartData | None = None,
    ) -> None:
        """Display ``gpu``; repaints only when what would be drawn changed.

        ``details``: a one-line panel gets its detail line beneath (when the terminal has the
        rows); ``mig``: a full panel lists the GPU's MIG devices beneath its gauges;
        ``rows`` with ``charts``: a full panel takes that many content rows, its lines first
        and its charts in the rows they leave.
        """
        height = self._height()
        self._state = PanelState(gpu, series, gone, finding)
        rows = rows if charts is not None and not compact else 0
        layout_changed = (compact, name_width, details, mig, rows) != (
            self._compact,
            self._name_width,
            self._details,
            self._mig,
            self._rows,
        )
        self._compact = compact
        self._name_width = name_width
        self._details = details
        self._mig = mig
        self._rows = rows
        self._charts = charts if rows else None
        if self._height() != height:
            # More or fewer lines: the grid lays its rows out again.
            layout_changed = True
            self.refresh(layout=True)
        self.set_class(gone, "-gone")
        self.set_class(gpu.lost and not gone, "-lost")
        self.set_class(gpu.stale, "-stale")
        titles = (title(self._state), badge(self._state))
        if titles != self._titles:
            # Plain text, not markup: a GPU named "[bold red]x" shows as written.
            self._titles = titles
            self.border_title, self.border_subtitle = Content(titles[0]), Content(titles[1])
        width = self.size.width
        if width <= 0:
            self._lines_width = -1
            self.refresh()
            return
        lines = self._build(width)
        if lines == self._lines and not layout_changed and width == self._lines_width:
            return
        regions = None if layout_changed else self._changed_regions(lines, width)
        self._lines = lines
        self._lines_width = width
        if regions is None:
            self.refresh()
        elif regions:
            repaint_regions(self, regions)

    def _changed_regions(self, lines: tuple[Line, ...], width: int) -> list[Region] | None:
        """The runs of cells that differ from what is on screen; None to repaint everything.

        Only those cells are sent (see ``compat.write_changed_spans_only``): a power figure
        and the newest cell of its sparkline, not the GPU's name and memory before them nor
        the sparkline's unchanged cells between; nor are unchanged lines, the border and its
        title.
        """
        if width != self._lines_width or len(lines) != len(self._lines):
            return None
        regions = []
        for y, (old, new) in enumerate(zip(self._lines, lines, strict=True)):
            if old != new:
                spans = changed_spans(old, new, width)
                regions += [Region(start, y, end - start, 1) for start, end in spans]
        return regions

    def _build(self, width: int) -> tuple[Line, ...]:
        if self._state is None:
            return ()
        if self._compact:
            return compact_lines(self._state, width, self._name_width, self._details)
        lines = full_lines(self._state, width)
        if self._mig:
            lines = (*lines, *mig_lines(self._state, width))
        charts = self._charts
        if charts is None or self._rows <= len(lines):
            return lines
        # The same gauges as the lines above: the charts' scales and colours are theirs.
        state = self._state
        gpu = gone_sample(state.gpu) if state.gone else state.gpu
        block = chart_block(gauges(gpu), charts, width, self._rows - len(lines), self._drawn)
        return (*lines, *block)

    def _height(self) -> int:
        if self._compact:
            return 2 if self._details else 1
        if self._rows:
            return self._rows
        if self._mig and self._state is not None and not self._state.gone:
            return FULL_HEIGHT + mig_rows(self._state.gpu)
        return FULL_HEIGHT

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Three lines (and one per MIG device when listed), the rows the screen gave a
        panel with charts, or one in compact mode (two with the detail line); the grid sizes
        its rows from this."""
        return self._height()

    def render_line(self, y: int) -> Strip:
        """One content line, drawn straight to segments (Textual's Line API).

        Unchanged lines reuse their strip from the last paint; lines are rebuilt when the
        width changed since they were built.
        """
        width = self.size.width
        if width != self._lines_width:
            self._lines = self._build(width)
            self._lines_width = width
            self._strips.clear()
        self.paints += 1
        styles = self._styles
        if styles is None:
            styles = self._styles = role_styles(self, "gpu-panel", ROLES, self._styled_by)
            self._strips.clear()
        if y >= len(self._lines):
            return Strip.blank(width, styles[""])
        line = self._lines[y]
        cached = self._strips.get(y)
        if cached is not None and cached[0] == line:
            return cached[1]
        strip = line_strip(line, styles, width, styles[""])
        self._strips[y] = (line, strip)
        return strip

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual's rendering, except that content lines of the whole width are framed
        here with the border and padding Textual drew around one of them.

        Each tick changes a few content lines of each panel; Textual's style cache worked
        out the border's and the padding's styles and colours again for each of them (about
        three quarters of the cost of drawing a panel line). The frame is learnt from a line
        Textual rendered, kept only when framing that line here gives the very same strip,
        and forgotten when the panel's styles (focus, a class, the theme) or size change.
        """
        frame = self._frame
        x, y, width, height = crop
        if (
            frame is not None
            and x == 0
            and width == frame.width
            and y >= frame.top
            and y + height <= frame.bottom
            and self.size == frame.size
        ):
            framed = self._framed
            lines = []
            for row in range(y, y + height):
                content = self.render_line(row - frame.top)
                kept = framed.get(row)
                if kept is None or kept[0] is not content or kept[1] is not frame:
                    kept = framed[row] = (content, frame, frame.around(content))
                lines.append(kept[2])
            return lines
        strips = super().render_lines(crop)
        if frame is None and x == 0:
            self._frame = _Frame.learn(self, crop, strips)
        return strips

    def notify_style_update(self) -> None:
        """Styles changed (theme, class, focus): forget the cached ones."""
        self._styles = None
        self._strips.clear()
        self._frame = None
        self._framed.clear()
        super().notify_style_update()

    def action_move(self, rows: int) -> None:
        """Ask the grid for the panel ``rows`` rows away (the grid knows the layout)."""
        self.post_message(self.MoveRequested(self, rows))

    def action_open_history(self) -> None:
        """Ask the screen for this GPU's history."""
        if self._state is not None:
            self.post_message(self.HistoryRequested(self._state.gpu.index, self.key))


class _Frame:
    """The border and padding segments Textual draws left and right of a panel's content
    lines, and the line filters it applies (see ``GpuPanel.render_lines``)."""

    __slots__ = ("background", "bottom", "filters", "left", "right", "size", "top", "width")

    def __init__(
        self,
        size: Size,
        width: int,
        top: int,
        bottom: int,
        left: list[Segment],
        right: list[Segment],
        filters: Sequence[LineFilter],
        background: Color,
    ) -> None:
        self.size = size
        self.width = width
        self.top = top
        self.bottom = bottom
        self.left = left
        self.right = right
        self.filters = filters
        self.background = background

    def around(self, content: Strip) -> Strip:
        """``content`` (a line exactly the content's width) as Textual would frame it."""
        for line_filter in self.filters:
            content = content.apply_filter(line_filter, self.background)
        return Strip([*self.left, *content, *self.right], self.width)

    @classmethod
    def learn(cls, panel: GpuPanel, crop: Region, strips: list[Strip]) -> _Frame | None:
        """The frame of ``panel``'s content lines, from lines Textual rendered for ``crop``;
        None when none of them is a content line, or when the panel is drawn in a way the
        frame does not reproduce (a tint, opacity, hatching: then every line is Textual's)."""
        styles = panel.styles
        if (
            styles.tint.a
            or styles.text_opacity != 1.0
            or panel.opacity != 1.0
            or (styles.has_rule("hatch") and styles.hatch != "none")
            or styles.outline.top[0]
            or styles.outline.left[0]
        ):
            return None
        gutter = styles.gutter
        size = panel.size
        outer = panel.outer_size
        top, bottom = gutter.top, outer.height - gutter.bottom
        if crop.width != outer.width or size.width != outer.width - gutter.width:
            return None
        for row, strip in zip(crop.line_range, strips, strict=False):
            if not top <= row < bottom or row - top >= size.height:
                continue
            # The line Textual just framed (not drawn again: ``paints`` counts real draws).
            drawn = panel._strips.get(row - top)
            if drawn is None or drawn[1].cell_length != size.width:
                continue
            content = drawn[1]
            left = list(strip.crop(0, gutter.left))
            right = list(strip.crop(outer.width - gutter.right, outer.width))
            _, background = panel.background_colors
            frame = cls(
                size, outer.width, top, bottom, left, right, panel.get_line_filters(), background
            )
            # Kept only if it frames this line exactly as Textual did.
            return frame if frame.around(content) == strip else None
        return None
