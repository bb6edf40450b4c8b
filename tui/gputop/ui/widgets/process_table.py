"""The process table: keyed, diffed, sortable, filterable, and able to signal processes.

The widget holds the keys, the messages and the DataTable; what it shows is worked out in
plain Python by :class:`~gputop.ui.render.process_view.ProcessView` (columns, sort, filter,
pods), kept in the DataTable by :class:`~gputop.ui.widgets.drawn_rows.DrawnRows` (the diff,
drawing rows as they come into view, column widths, batched repaints), and signals go
through :class:`~gputop.ui.widgets.process_signals.ProcessSignals`.
"""

from __future__ import annotations

import operator
import os
import signal
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.console import JustifyMethod
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from gputop.model import Snapshot
from gputop.ui.render.column_widths import (
    MIN_COMMAND,
    OtherColumns,
    fit_commands,
    pad,
)
from gputop.ui.render.owners import container_line
from gputop.ui.render.process_rows import (
    COLUMN_INDEX,
    COLUMNS,
    GroupRow,
    Kill,
    ProcessRow,
    RowCache,
    TableRow,
    TypeFilter,
    build_rows,
    cursor_after,
    detail_fields,
    owner_columns,
)
from gputop.ui.render.process_view import NARROW_WIDTH, ProcessView
from gputop.ui.widget_css import css_beside
from gputop.ui.widgets.column_sort import ColumnSortKeys
from gputop.ui.widgets.drawn_rows import DrawnRows
from gputop.ui.widgets.filter_bar import FilteredTable
from gputop.ui.widgets.process_grid import ProcessGrid
from gputop.ui.widgets.process_signals import ProcessSignals, say_signalled

_SORT = Binding.Group("Sort", compact=True)
"""``<`` and ``>`` share one footer entry, leaving room for Tab, Quit and Help."""

MIN_FIRST_FILL = 24
"""Rows an empty table takes in at once, at least (more on a taller terminal: its height)."""


class ProcessTable(ColumnSortKeys, FilteredTable):
    """The processes of the latest snapshot, one row per (GPU index, PID).

    ``show`` diffs the new rows against the table (add, update changed cells, remove) and
    re-sorts, so the cursor stays on the same process and the scroll position holds across
    refreshes. Keys: ``<`` ``>`` sort column, ``r`` reverse, ``/`` filter, ``t`` process type,
    ``p`` one line per pod (job, container), Enter details (on a pod's line: its processes),
    ``k`` ``K`` ``i`` SIGTERM/SIGKILL/SIGINT (absent when read-only).

    The POD, CONTAINER and JOB columns are there while some process has one.
    """

    DEFAULT_CSS = css_beside(__file__)
    FILTER_ID = "process-filter"
    FILTER_PLACEHOLDER = "user, command, PID, GPU or pod  (Enter keeps, Esc clears)"

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "process-table--foreign",
        "process-table--missing",
    }
    """``--foreign``: rows of another PID namespace; ``--missing``: n/a cells."""

    COLUMN_COUNT = len(COLUMNS)
    COLUMN_BY_KEY = COLUMN_INDEX
    BINDINGS: ClassVar[list[BindingType]] = [
        # The screen's Tab, repeated here so that the footer names it first while the
        # table has the keys (the footer lists the focused widget's keys first).
        Binding("tab", "screen.area('gpus')", "GPUs", key_display="Tab"),
        Binding("slash", "open_filter", "Filter"),
        Binding("less_than_sign", "sort_by(-1)", "Sort ◀", key_display="<", group=_SORT),
        Binding("greater_than_sign", "sort_by(1)", "Sort ▶", key_display=">", group=_SORT),
        Binding("r", "reverse_sort", "Reverse"),
        Binding("t", "toggle_type", "Type"),
        Binding("p", "toggle_groups", "Group by pod"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("k", "signal('TERM')", "TERM"),
        Binding("K", "signal('KILL')", "KILL"),
        Binding("i", "signal('INT')", "INT"),
    ]

    readonly: reactive[bool] = reactive(False, bindings=True)
    """No signals: set in replay (always) and with ``--readonly``."""

    class OnScreen(Message):
        """The processes on screen are others now (a tick, scrolling, sorting, filtering):
        their driver PIDs, a group's processes included."""

        def __init__(self, pids: frozenset[int]) -> None:
            super().__init__()
            self.pids = pids

    class SignalResult(Message):
        """A signal was sent, or could not be; ``error`` says why not in plain words."""

        def __init__(self, pid: int | None, sig: signal.Signals, error: str | None) -> None:
            super().__init__()
            self.pid = pid
            self.sig = sig
            self.error = error

    def __init__(
        self,
        readonly: bool = False,
        *,
        kill: Kill = os.kill,
        clock: Callable[[], float] = time.time,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """Create the table.

        Args:
            readonly: hide and refuse the signal keys.
            kill: sends a signal; tests pass a fake so no real process is signalled.
            clock: epoch seconds now, for the TIME column.
            name: as for any widget.
            id: as for any widget.
            classes: as for any widget.
            disabled: as for any widget.
        """
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.set_reactive(ProcessTable.readonly, readonly)
        self._clock = clock
        self._view = ProcessView()
        """What is shown: rows, columns, sort, filter, pods."""
        self._grid_rows = DrawnRows(self)
        """What the DataTable holds of it."""
        self._signals = ProcessSignals(kill, self._report)
        self._row_cache: RowCache = {}
        self._others = OtherColumns()
        self._applying = False
        self._status = ""
        self._container: str | None = None
        """What is said of the container gputop runs in (None: not in one)."""
        self._room = 0
        """Cells COMMAND was last fitted to."""
        self._on_screen: frozenset[int] | None = None
        """The PIDs last said to be on screen (``OnScreen``)."""

    # What the view holds, under the names the table has always answered to.

    @property
    def sort_column(self) -> int:
        """Index into ``COLUMNS`` of the column rows are sorted by."""
        return self._view.sort_column

    @sort_column.setter
    def sort_column(self, index: int) -> None:
        self._view.sort_column = index

    @property
    def sort_reverse(self) -> bool:
        """Largest (or last) first."""
        return self._view.sort_reverse

    @sort_reverse.setter
    def sort_reverse(self, reverse: bool) -> None:
        self._view.sort_reverse = reverse

    @property
    def filter_text(self) -> str:
        """Words every shown row must contain (user, command, PID, GPU, pod, container, job)."""
        return self._view.filter_text

    @filter_text.setter
    def filter_text(self, text: str) -> None:
        self._view.filter_text = text

    @property
    def type_filter(self) -> TypeFilter:
        """Which process types are shown."""
        return self._view.type_filter

    @property
    def grouped(self) -> bool:
        """One line per pod (job, container), its processes under it when expanded."""
        return self._view.grouped

    @property
    def expanded(self) -> set[str]:
        """Key texts of the groups whose processes are shown."""
        return self._view.expanded

    @property
    def _columns(self) -> tuple[int, ...]:  # type: ignore[override]
        # Read-only here (ColumnSortKeys reads it; the fleet table assigns its own): the
        # view chooses the columns.
        return self._view.columns

    @property
    def columns(self) -> list[str]:
        """Keys of the columns on screen, in order."""
        return [COLUMNS[index].key for index in self._view.columns]

    @property
    def _table(self) -> ProcessGrid:
        return self._grid_rows.table

    @property
    def rows(self) -> list[ProcessRow]:
        """The process rows shown, in display order (a group's, when it is expanded)."""
        return [row for row in self.lines if isinstance(row, ProcessRow)]

    @property
    def lines(self) -> list[TableRow]:
        """Every line shown, groups too, in display order."""
        by_key = self._grid_rows.by_key
        return [by_key[key] for key in self._grid_rows.order]

    @property
    def rows_wanted(self) -> int:
        """Rows that show every line without scrolling: the status line (and the container's
        and the filter's lines when shown), the column titles, and a row per line. The main
        screen gives the table these, and the rest to the GPU panels' charts."""
        lines = 2 + self.has_class("-in-container") + self.has_class("-filtering")
        for grid in self.query(ProcessGrid):  # none before it is composed
            if grid.show_horizontal_scrollbar:
                # Columns wider than the screen (a pod's): the scrollbar takes a row.
                lines += grid.scrollbar_size_horizontal
        return lines + len(self._grid_rows.order)

    @property
    def highlighted_line(self) -> TableRow | None:
        """The line under the cursor, a process's or a group's, if any."""
        key = self._grid_rows.cursor_key()
        return None if key is None else self._grid_rows.by_key.get(key)

    # Mounting, sizes and themes.

    def compose(self) -> ComposeResult:
        """A status line and the table; the filter input is added when first wanted, and
        so is the line about the container gputop runs in (above the status line)."""
        yield Static(id="process-status")
        grid = ProcessGrid(id="process-data", cursor_type="row", zebra_stripes=True, cell_padding=0)
        self._grid_rows.grid = grid
        grid.before_render = self._grid_rows.draw_rows
        yield grid

    def watch_readonly(self) -> None:
        """Say so in the status line (the footer follows through ``bindings=True``)."""
        if self.is_mounted:
            self._update_status(self._table.row_count)

    def on_mount(self) -> None:
        """Add the columns, then whatever was shown before mounting."""
        self._rebuild()
        self._show_container()
        self.app.theme_changed_signal.subscribe(self, self._restyle)
        self.watch(self._table, "scroll_y", self._catch_up, init=False)

    def on_resize(self) -> None:
        """Drop (or bring back) the host-side columns as the widget narrows (or widens)."""
        narrow = self.size.width < NARROW_WIDTH
        self.set_class(narrow, "-narrow")
        if not self._set_columns(self._view.columns_for(self.size.width)) and (
            self._command_room(self._view.rows) != self._room
        ):
            self._apply()
        # A taller table shows rows that were off screen: once laid out, draw them.
        self.call_after_refresh(self._catch_up)

    def _set_columns(self, columns: tuple[int, ...]) -> bool:
        """Show ``columns`` (indices into ``COLUMNS``); False when they already are."""
        if not self._view.set_columns(columns):
            return False
        self._rebuild()
        return True

    def _rebuild(self) -> None:
        cursor_key = self._grid_rows.cursor_key()
        columns = self._view.columns
        self._grid_rows.clear(columns, [self._label(index) for index in columns])
        self._apply(cursor_key=cursor_key)

    def _restyle(self, _theme: object) -> None:
        # Cells carry colours resolved from the theme they were made under.
        self._grid_rows.restyle()
        self._apply(restyle=True)

    def _label(self, index: int) -> Text:
        justify: JustifyMethod = "right" if COLUMNS[index].right else "left"
        return Text(pad(self._view.title(index)), justify=justify)

    def _command_room(self, rows: Sequence[TableRow]) -> int:
        """Cells COMMAND may take: what the other columns, as wide as ``rows`` need, leave
        of the table's width."""
        width = self.size.width or self.app.size.width
        others = self._others.width(self._view.columns, rows)
        table = self._table
        # A vertical scrollbar takes cells only when the rows overflow the table.
        overflows = not table.size.height or len(rows) + table.header_height > table.size.height
        scrollbar = table.styles.scrollbar_size_vertical if overflows else 0
        # The command's cell starts with one space of padding.
        return max(MIN_COMMAND, width - others - scrollbar - 1)

    # Showing a snapshot.

    def show(self, snapshot: Snapshot) -> None:
        """Display the processes of ``snapshot``."""
        view = self._view
        before = view.rows
        view.rows = build_rows(snapshot, self._clock(), self._row_cache)
        container = container_line(snapshot)
        if container != self._container:
            self._container = container
            if self.is_mounted:
                self._show_container()
        if len(before) == len(view.rows) and all(map(operator.is_, before, view.rows)):
            # Every row is last tick's (``build_rows`` keeps a row while its process and
            # its TIME text hold): the table already shows them, as filtered and sorted.
            return
        owners = owner_columns(view.rows)
        if owners != view.owners:
            # Rare (the first pod arrives, the last leaves): the columns are built again.
            view.owners = owners
            self.refresh_bindings()
            if self.is_mounted and self._set_columns(view.columns_for(self.size.width or None)):
                return
        if self.is_mounted:
            self._apply()

    def _show_container(self) -> None:
        line = self._container
        self.set_class(line is not None, "-in-container")
        found = self.query("#process-container")
        if found:
            found.first(Static).update(Text(line or ""))
        elif line is not None:
            self.mount(Static(Text(line), id="process-container"), before="#process-status")

    def _apply(
        self, restyle: bool = False, cursor_key: str | None = None, resort: bool = False
    ) -> None:
        """Bring the table in line with the rows, filter and sort order.

        Args:
            restyle: redo every cell, not only changed ones.
            cursor_key: the row to keep the cursor on, when the table no longer knows it.
            resort: sort the table even when its row order is already right (new labels).
        """
        total, lines = self._view.lines()
        room = self._room = self._command_room(lines)
        ordered = fit_commands(lines, room)
        grid_rows = self._grid_rows
        cursor_key = cursor_key or grid_rows.cursor_key()
        first_fill = max(self.app.size.height, MIN_FIRST_FILL)
        if not grid_rows.shown and cursor_key is None and total > first_fill:
            # An empty table filling up, as on the first tick: the rows a screen can show
            # go in first and the rest once that frame is out (each row is built, measured
            # and diffed: on a 200-process box most of the first frame's table work). The
            # columns get the widths of all rows now, so the rest moves nothing.
            grid_rows.widen_columns_for(ordered)
            ordered = ordered[:first_fill]
            self.call_after_refresh(self._apply)
        wanted = {row.key_text: row for row in ordered}
        cursor_key = cursor_after(cursor_key, grid_rows.by_key, wanted)
        self._applying = True
        try:
            grid_rows.sync(ordered, wanted, restyle, resort, cursor_key)
        finally:
            self._applying = False
        self._say_on_screen()
        self._update_status(total)

    def _update_status(self, shown: int) -> None:
        status = self._view.status(shown, self._grid_rows.by_key.values(), self.readonly)
        # Updating a Static repaints it (and with layout=True lays out the whole screen);
        # the line's height is fixed at 1 and its width follows the widget, never the text.
        if status != self._status:
            self._status = status
            self.query_one("#process-status", Static).update(Text(status), layout=False)

    # What is on screen (``Tick.in_view``: the sampler reads these processes' details).

    def pids_on_screen(self) -> frozenset[int]:
        """The driver PIDs of the processes on screen (all of a group's on its line)."""
        pids: set[int] = set()
        by_key = self._grid_rows.by_key
        for key in self._grid_rows.keys_on_screen():
            line = by_key.get(key)
            if isinstance(line, GroupRow):
                pids.update(member.process.pid for member in line.members)
            elif line is not None:
                pids.add(line.process.pid)
        return frozenset(pids)

    def _say_on_screen(self) -> None:
        """Post ``OnScreen`` when the processes on screen are others than last said."""
        pids = self.pids_on_screen()
        if pids != self._on_screen:
            self._on_screen = pids
            self.post_message(self.OnScreen(pids))

    def _catch_up(self) -> None:
        """Draw the rows scrolled (or grown) into view; ``_apply`` does its own."""
        if self._applying or not self.is_mounted:
            return
        self._say_on_screen()
        self._grid_rows.draw_rows(*self._grid_rows.rows_on_screen())

    # Sorting, filtering, pods.

    def sort_by(self, index: int, reverse: bool | None = None) -> None:
        """Sort by column ``index``; ``reverse`` defaults to that column's natural order."""
        self._view.sort_by(index, reverse)
        self._grid_rows.retitle([self._label(column) for column in self._view.columns])
        # DataTable.sort is what repaints the header with the new labels.
        self._apply(resort=True)

    def action_toggle_groups(self) -> None:
        """One line per pod (job, container), or one per process again."""
        self._view.grouped = not self._view.grouped
        self._apply()

    def toggle_group(self, key_text: str) -> None:
        """Show the processes of the group ``key_text`` under its line, or hide them."""
        self._view.toggle_group(key_text)
        self._apply()

    def action_toggle_type(self) -> None:
        """Cycle all → compute → graphics."""
        self._view.type_filter = self._view.type_filter.next()
        self._apply()

    # Details and signals.

    @on(DataTable.RowSelected, "#process-data")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self._grid_rows.by_key.get(str(event.row_key.value))
        if isinstance(row, GroupRow):
            self.toggle_group(row.key_text)
        elif row is not None:
            title = f"PID {row.process.pid} on GPU {row.cell('gpu')}"
            # Deferred: the dialog, at the key press that opens it (a start does not draw it).
            from gputop.ui.widgets.process_details import ProcessDetails

            self.app.push_screen(ProcessDetails(title, detail_fields(row, self._clock())))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the signal keys when read-only; let Esc through when there is no filter."""
        if action == "signal":
            return not self.readonly
        if action == "clear_filter":
            return self.filter_to_clear()
        if action == "toggle_groups":
            # Offered while there is something to group by (or grouping to turn off).
            return bool(self._view.owners) or self._view.grouped
        return True

    def action_signal(self, name: str) -> None:
        """Ask, then send SIG``name`` to the highlighted process."""
        sig = signal.Signals[f"SIG{name}"]
        if self.readonly:
            return
        self._signals.ask(self.app, self.highlighted_line, sig, lambda: self._view.rows)

    def _report(self, pid: int | None, sig: signal.Signals, error: str | None) -> None:
        self.post_message(self.SignalResult(pid, sig, error))
        say_signalled(self.app, pid, sig, error)
