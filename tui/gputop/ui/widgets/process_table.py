"""The process table: keyed, diffed, sortable, filterable, and able to signal processes."""

from __future__ import annotations

import dataclasses
import operator
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import ClassVar

from rich.cells import cell_len
from rich.console import JustifyMethod
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Static
from textual.widgets.data_table import CellDoesNotExist, ColumnKey

from gputop.model import Snapshot
from gputop.model.units import NA
from gputop.ui.render.owners import container_line
from gputop.ui.render.process_rows import (
    COLUMN_INDEX,
    COLUMNS,
    OWNER_COLUMNS,
    GroupCache,
    GroupRow,
    Kill,
    ProcessRow,
    RowCache,
    TableRow,
    TypeFilter,
    build_rows,
    cursor_after,
    describe,
    detail_fields,
    fit_command,
    group_rows,
    owner_columns,
    send_signal,
    signal_refusal,
    sort_rows,
    target_pid,
    visible_rows,
)
from gputop.ui.toasts import toast
from gputop.ui.widget_css import css_beside
from gputop.ui.widgets.column_sort import ColumnSortKeys
from gputop.ui.widgets.filter_bar import FilteredTable
from gputop.ui.widgets.process_grid import ProcessGrid, RepaintBatch

_ARROWS = {False: "▲", True: "▼"}

_SORT = Binding.Group("Sort", compact=True)
"""``<`` and ``>`` share one footer entry, leaving room for Tab, Quit and Help."""

NARROW_WIDTH = 100
"""Below this many columns the table drops its host-side columns to leave room for commands."""

_NARROW_HIDDEN = frozenset({"cpu", "host_memory"})

CONTAINER_WIDTH = 120
"""Below this many columns CONTAINER is left out too (it is in the details and the filter):
beside POD it would leave COMMAND a few cells. POD and JOB stay: they say whose work it is."""

MIN_COMMAND = 12
"""Fewest cells COMMAND is cut to; with less room than that the table scrolls sideways."""

_COMMAND = COLUMN_INDEX["command"]

MIN_FIRST_FILL = 24
"""Rows an empty table takes in at once, at least (more on a taller terminal: its height)."""


def _justify(right: bool) -> JustifyMethod:
    return "right" if right else "left"


def _pad(text: str) -> str:
    # The DataTable runs with no cell padding; one leading space per cell separates columns
    # with one space instead of two, which leaves an 80-column terminal room for commands.
    return f" {text}"


def _width(text: str) -> int:
    """Terminal cells a padded cell of ``text`` takes, as DataTable measures it."""
    return max(cell_len(line) for line in _pad(text).split("\n"))


def _column_width(texts: list[str]) -> int:
    """Cells the widest padded cell of ``texts`` takes; plain ASCII is measured by length
    (this runs every tick over every row: 0.1 ms for 200 processes instead of 1 ms)."""
    if "".join(texts).isascii():
        return max(map(len, texts), default=-1) + 1
    return max(map(_width, texts), default=0)


_PLAIN = Style()

_JUSTIFY: tuple[JustifyMethod, ...] = tuple(_justify(column.right) for column in COLUMNS)


def _foreground(style: Style) -> Style:
    """A component's text colour and emphasis without its background, which would paint over
    the cursor and zebra stripes."""
    return Style(color=style.color, bold=style.bold, italic=style.italic)


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
        self._kill = kill
        self._clock = clock
        self._rows: list[ProcessRow] = []
        self._row_cache: RowCache = {}
        self._group_cache: GroupCache = {}
        self._shown: dict[str, tuple[tuple[str, ...], bool]] = {}
        """Per row key, its latest (cells, foreign): what column widths are counted from."""
        self._drawn: dict[str, tuple[tuple[str, ...], bool]] = {}
        """Per row key, the (cells, foreign) the DataTable holds; absent: to be redone."""
        self._stale: set[str] = set()
        """Rows whose DataTable cells lag behind ``_shown``: off screen when they changed.
        They are brought up to date when they come into view (scrolling, resizing, sorting),
        so a tick costs what is on screen, not what exists (every TIME cell changes each
        second)."""
        self._order: list[str] = []
        """Row keys in the DataTable's order (kept here: DataTable rebuilds its ordered list
        after every cell update)."""
        self._styles: tuple[Style, Style] | None = None
        """(foreign, missing) cell styles under the current theme."""
        self._applying = False
        self._by_key: dict[str, TableRow] = {}
        # How many shown cells of each column (index into COLUMNS) have each width, so that
        # the widest is known without DataTable re-measuring the whole column every tick.
        self._widths: dict[int, Counter[int]] = {}
        self._refit: set[int] = set()
        self._status = ""
        self._container: str | None = None
        """What is said of the container gputop runs in (None: not in one)."""
        self._owners: frozenset[str] = frozenset()
        """The owner columns some process of the latest snapshot has a value in."""
        self._columns: tuple[int, ...] = self._wanted_columns(None)
        self.sort_column = COLUMN_INDEX["gpu_memory"]
        """Index into ``COLUMNS`` of the column rows are sorted by."""
        self.sort_reverse = COLUMNS[self.sort_column].descending
        """Largest (or last) first."""
        self._hidden_sort: tuple[int, bool] | None = None
        """The user's sort while a narrow terminal hides its column, to go back to."""
        self._room = 0
        """Cells COMMAND was last fitted to."""
        self._others: tuple[tuple[int, ...], Sequence[TableRow], int] = ((), [], 0)
        """(columns, rows, width) of the last measure of the columns other than COMMAND."""
        self.filter_text = ""
        """Words every shown row must contain (user, command, PID, GPU, pod, container, job)."""
        self.type_filter = TypeFilter.ALL
        """Which process types are shown."""
        self.grouped = False
        """One line per pod (job, container), its processes under it when expanded."""
        self.expanded: set[str] = set()
        """Key texts of the groups whose processes are shown."""
        self._on_screen: frozenset[int] | None = None
        """The PIDs last said to be on screen (``OnScreen``)."""

    def compose(self) -> ComposeResult:
        """A status line and the table; the filter input is added when first wanted, and
        so is the line about the container gputop runs in (above the status line)."""
        yield Static(id="process-status")
        yield ProcessGrid(id="process-data", cursor_type="row", zebra_stripes=True, cell_padding=0)

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
        if not self._set_columns(self._wanted_columns(self.size.width)) and (
            self._command_room(self._rows) != self._room
        ):
            self._apply()
        # A taller table shows rows that were off screen: once laid out, draw them.
        self.call_after_refresh(self._catch_up)

    def _wanted_columns(self, width: int | None) -> tuple[int, ...]:
        """The columns for a table ``width`` cells wide (None: any width) and the owners
        the latest processes have."""
        hidden = set(OWNER_COLUMNS) - self._owners
        if width is not None and width < NARROW_WIDTH:
            hidden |= _NARROW_HIDDEN
        if width is not None and width < CONTAINER_WIDTH:
            hidden.add("container")
        return tuple(index for index, column in enumerate(COLUMNS) if column.key not in hidden)

    def _set_columns(self, columns: tuple[int, ...]) -> bool:
        """Show ``columns`` (indices into ``COLUMNS``); False when they already are."""
        if columns == self._columns:
            return False
        self._columns = columns
        self._sort_on_screen()
        self._rebuild()
        return True

    def _sort_on_screen(self) -> None:
        """Never sort by a hidden column: GPU memory stands in while the user's is hidden,
        and the user's comes back with its column."""
        hidden = self._hidden_sort
        if hidden is not None and hidden[0] in self._columns:
            self._hidden_sort = None
            self.sort_column, self.sort_reverse = hidden
        elif self.sort_column not in self._columns:
            self._hidden_sort = (self.sort_column, self.sort_reverse)
            self.sort_column = COLUMN_INDEX["gpu_memory"]
            self.sort_reverse = COLUMNS[self.sort_column].descending

    @property
    def columns(self) -> list[str]:
        """Keys of the columns on screen, in order."""
        return [COLUMNS[index].key for index in self._columns]

    def _rebuild(self) -> None:
        cursor_key = self._cursor_key()
        table = self._table
        # First: clearing the table scrolls it home, which would draw the stale rows.
        self._shown.clear()
        self._drawn.clear()
        self._stale.clear()
        self._order = []
        table.clear(columns=True)
        self._widths = {index: Counter() for index in self._columns}
        self._refit.clear()
        for index in self._columns:
            table.add_column(self._label(index), key=COLUMNS[index].key)
        self._apply(cursor_key=cursor_key)

    def _command_room(self, rows: Sequence[TableRow]) -> int:
        """Cells COMMAND may take: what the other columns, as wide as ``rows`` need, leave
        of the table's width."""
        width = self.size.width or self.app.size.width
        others = self._other_widths(rows)
        table = self._table
        # A vertical scrollbar takes cells only when the rows overflow the table.
        overflows = not table.size.height or len(rows) + table.header_height > table.size.height
        scrollbar = table.styles.scrollbar_size_vertical if overflows else 0
        # The command's cell starts with one space of padding.
        return max(MIN_COMMAND, width - others - scrollbar - 1)

    def _other_widths(self, rows: Sequence[TableRow]) -> int:
        """Cells the columns other than COMMAND take for ``rows``: measured again only when
        a row changed (most ticks change none on screen or off: a TIME cell moves once a
        minute), not over every row of every tick."""
        last_columns, last_rows, last = self._others
        if (
            last_columns == self._columns
            and len(last_rows) == len(rows)
            and all(map(operator.is_, rows, last_rows))
        ):
            return last
        others = sum(
            max(len(COLUMNS[index].label) + 2, _column_width([row.cells[index] for row in rows]))
            for index in self._columns
            if index != _COMMAND
        )
        self._others = (self._columns, rows, others)
        return others

    def _fitted(self, rows: list[TableRow]) -> list[TableRow]:
        """``rows`` with their commands cut to the room COMMAND has."""
        room = self._room = self._command_room(rows)
        fitted: list[TableRow] = []
        for row in rows:
            command = row.cells[_COMMAND]
            if len(command) > room:
                cells = (*row.cells[:_COMMAND], fit_command(row.command, room))
                row = dataclasses.replace(row, cells=cells + row.cells[_COMMAND + 1 :])
            fitted.append(row)
        return fitted

    def _restyle(self, _theme: object) -> None:
        # Cells carry colours resolved from the theme they were made under.
        self._styles = None
        self._apply(restyle=True)

    @property
    def _table(self) -> ProcessGrid:
        return self.query_one("#process-data", ProcessGrid)

    @property
    def rows(self) -> list[ProcessRow]:
        """The process rows shown, in display order (a group's, when it is expanded)."""
        return [row for row in self.lines if isinstance(row, ProcessRow)]

    @property
    def lines(self) -> list[TableRow]:
        """Every line shown, groups too, in display order."""
        return [self._by_key[key] for key in self._order]

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
        return lines + len(self._order)

    @property
    def highlighted_line(self) -> TableRow | None:
        """The line under the cursor, a process's or a group's, if any."""
        key = self._cursor_key()
        return None if key is None else self._by_key.get(key)

    @property
    def highlighted_row(self) -> ProcessRow | None:
        """The process under the cursor, if any (None on a group's line)."""
        line = self.highlighted_line
        return line if isinstance(line, ProcessRow) else None

    def show(self, snapshot: Snapshot) -> None:
        """Display the processes of ``snapshot``."""
        before = self._rows
        self._rows = build_rows(snapshot, self._clock(), self._row_cache)
        container = container_line(snapshot)
        if container != self._container:
            self._container = container
            if self.is_mounted:
                self._show_container()
        if len(before) == len(self._rows) and all(map(operator.is_, before, self._rows)):
            # Every row is last tick's (``build_rows`` keeps a row while its process and
            # its TIME text hold): the table already shows them, as filtered and sorted.
            return
        owners = owner_columns(self._rows)
        if owners != self._owners:
            # Rare (the first pod arrives, the last leaves): the columns are built again.
            self._owners = owners
            self.refresh_bindings()
            if self.is_mounted and self._set_columns(self._wanted_columns(self.size.width or None)):
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

    # Sorting, filtering and the diff.

    def _label(self, index: int) -> Text:
        column = COLUMNS[index]
        # Every label keeps room for the arrow so that sorting never changes column widths.
        arrow = _ARROWS[self.sort_reverse] if index == self.sort_column else " "
        return Text(_pad(f"{column.label}{arrow}"), justify=_justify(column.right))

    def _cursor_key(self) -> str | None:
        table = self._table
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except CellDoesNotExist:
            return None
        return None if key.value is None else str(key.value)

    def _cell_styles(self) -> tuple[Style, Style]:
        if self._styles is None:
            self._styles = (
                _foreground(self.get_component_rich_style("process-table--foreign")),
                _foreground(self.get_component_rich_style("process-table--missing")),
            )
        return self._styles

    def _cell(self, index: int, text: str, foreign: bool) -> Text:
        """The DataTable cell of column ``index`` showing ``text``."""
        foreign_style, missing = self._cell_styles()
        style = foreign_style if foreign else missing if text == NA else _PLAIN
        return Text(_pad(text), style=style, justify=_JUSTIFY[index])

    def _cells(self, row: TableRow) -> list[Text]:
        return [self._cell(index, row.cells[index], row.foreign) for index in self._columns]

    def _apply(
        self, restyle: bool = False, cursor_key: str | None = None, resort: bool = False
    ) -> None:
        """Bring the table in line with the rows, filter and sort order.

        Args:
            restyle: redo every cell, not only changed ones.
            cursor_key: the row to keep the cursor on, when the table no longer knows it.
            resort: sort the table even when its row order is already right (new labels).
        """
        visible = visible_rows(self._rows, self.filter_text, self.type_filter)
        if self.grouped:
            lines = group_rows(
                visible, self.sort_column, self.sort_reverse, self.expanded, self._group_cache
            )
        else:
            lines = list(sort_rows(visible, self.sort_column, self.sort_reverse))
        ordered = self._fitted(lines)
        total = len(visible)
        cursor_key = cursor_key or self._cursor_key()
        first_fill = max(self.app.size.height, MIN_FIRST_FILL)
        if not self._shown and cursor_key is None and total > first_fill:
            # An empty table filling up, as on the first tick: the rows a screen can show
            # go in first and the rest once that frame is out (each row is built, measured
            # and diffed: on a 200-process box most of the first frame's table work). The
            # columns get the widths of all rows now, so the rest moves nothing.
            self._widen_columns_for(ordered)
            ordered = ordered[:first_fill]
            self.call_after_refresh(self._apply)
        wanted = {row.key_text: row for row in ordered}
        cursor_key = cursor_after(cursor_key, self._by_key, wanted)
        self._applying = True
        try:
            self._apply_rows(ordered, wanted, restyle, resort, cursor_key)
        finally:
            self._applying = False
        self._update_status(total)

    def _apply_rows(
        self,
        ordered: list[TableRow],
        wanted: dict[str, TableRow],
        restyle: bool,
        resort: bool,
        cursor_key: str | None,
    ) -> None:
        table = self._table
        with table.repaint_batch() as touched:
            touched.whole = restyle
            self._by_key = wanted
            self._update_rows(ordered, wanted, restyle, touched)
            rows_changed = touched.whole
            if self._fit_columns(touched):
                touched.whole = True
            order = [row.key_text for row in ordered]
            # Sorting makes the table drop every cached row render, so only sort when the
            # order on screen is wrong (changed values, added rows) or the header needs
            # repainting.
            if resort or rows_changed or order != self._order:
                touched.whole = True
                table.order_rows(order)
            self._order = order
            if cursor_key in wanted:
                place = table.get_row_index(cursor_key)
                if place != table.cursor_row:
                    table.move_cursor(row=place)
            self._draw_visible(touched)
        self._say_on_screen()

    def _widen_columns_for(self, rows: list[TableRow]) -> None:
        """Make each column at least as wide as its widest cell among ``rows``."""
        table = self._table
        for index in self._columns:
            column = table.columns[ColumnKey(COLUMNS[index].key)]
            widest = max((_width(row.cells[index]) for row in rows), default=0)
            column.content_width = max(column.content_width, widest)

    def _update_rows(
        self,
        ordered: list[TableRow],
        wanted: dict[str, TableRow],
        restyle: bool,
        touched: RepaintBatch,
    ) -> None:
        """Remove, add and update rows; note in ``touched`` what a repaint must cover."""
        table = self._table
        widths = self._widths
        columns = {index: table.columns[ColumnKey(COLUMNS[index].key)] for index in widths}
        for key in [key for key in self._shown if key not in wanted]:
            table.remove_row(key)
            self._count_widths(self._shown.pop(key)[0], -1)
            self._drawn.pop(key, None)
            self._stale.discard(key)
            touched.whole = True
        if restyle:
            # Every cell is redone, the visible ones now and the rest as they come into view.
            self._drawn.clear()
            self._stale.update(self._shown)
        for row in ordered:
            key = row.key_text
            state = (row.cells, row.foreign)
            before = self._shown.get(key)
            if before is None:
                table.add_row(*self._cells(row), key=key)
                self._count_widths(row.cells, 1)
                self._drawn[key] = state
                touched.whole = True
            elif before != state:
                # Only the width counts follow every row; the cells themselves are made
                # when the row is on screen (``_draw_visible``).
                for index in widths:
                    old, new = before[0][index], row.cells[index]
                    if old != new:
                        old_width, new_width = _width(old), _width(new)
                        if old_width != new_width:
                            widths[index][old_width] -= 1
                            widths[index][new_width] += 1
                        if new_width != columns[index].content_width:
                            self._refit.add(index)
                self._stale.add(key)
            self._shown[key] = state

    def _keys_on_screen(self) -> list[str]:
        """The keys of the lines the table's height shows from its scroll position."""
        table = self._table
        header = table.header_height if table.show_header else 0
        height = table.size.height - header if table.size.height else self.app.size.height
        top = table.scroll_offset.y
        return self._order[top : top + max(height, 0)]

    def _draw_visible(self, touched: RepaintBatch | None = None) -> None:
        """Bring the DataTable cells of the rows on screen up to date."""
        if not self._stale:
            return
        for key in self._keys_on_screen():
            if key in self._stale:
                self._draw(key, touched)

    def pids_on_screen(self) -> frozenset[int]:
        """The driver PIDs of the processes on screen (all of a group's on its line)."""
        pids: set[int] = set()
        for key in self._keys_on_screen():
            line = self._by_key.get(key)
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

    def _draw(self, key: str, touched: RepaintBatch | None, only: int | None = None) -> None:
        """Update the DataTable cells of row ``key`` that differ from its latest text (only
        column ``only``'s, if given)."""
        cells, foreign = self._shown[key]
        drawn = self._drawn.get(key)
        table = self._table
        done = list(cells) if drawn is None else list(drawn[0])
        for position, index in enumerate(self._columns):
            if only is not None and index != only:
                continue
            if drawn is None or drawn[1] != foreign or drawn[0][index] != cells[index]:
                cell = self._cell(index, cells[index], foreign)
                table.update_cell(key, COLUMNS[index].key, cell, update_width=False)
                done[index] = cells[index]
                if touched is not None:
                    touched.changed(key, position)
        if only is None or (drawn is not None and drawn[1] == foreign and tuple(done) == cells):
            self._drawn[key] = (cells, foreign)
            self._stale.discard(key)
        elif drawn is not None:
            self._drawn[key] = (tuple(done), drawn[1])

    def _catch_up(self) -> None:
        """Draw the rows scrolled (or grown) into view; ``_apply`` does its own."""
        if self._applying or not self.is_mounted:
            return
        self._say_on_screen()
        if not self._stale:
            return
        with self._table.repaint_batch() as touched:
            self._draw_visible(touched)

    def _count_widths(self, cells: tuple[str, ...], step: int) -> None:
        for index, counter in self._widths.items():
            counter[_width(cells[index])] += step

    def _fit_columns(self, touched: RepaintBatch) -> bool:
        """Size the columns as ``update_width=True`` on every changed cell would, cheaply.

        With ``update_width=True`` DataTable re-measures every cell of a column whenever a new
        cell is narrower than the column, which at a few hundred rows costs more than the rest
        of a tick. Its rule is kept: a column whose cell changed to a width other than the
        column's is fitted to its widest cell or label (so it may shrink then, but not when
        rows only go away). The width counts give that width without measuring, and only when
        it differs is the widest cell handed over for measuring: that grows the column at once
        or, when it shrinks, re-measures it that one time.
        """
        table = self._table
        resized = False
        for index in sorted(self._refit):
            counts = self._widths.get(index)
            if counts is None:
                continue
            column = table.columns[ColumnKey(COLUMNS[index].key)]
            widest = max((width for width, count in counts.items() if count > 0), default=0)
            if not widest or max(widest, cell_len(column.label.plain)) == column.content_width:
                continue
            # DataTable measures the cells it holds: those of this column are made current
            # first, in rows off screen too (a column is refitted only when its widest
            # cell changes width).
            for key in [key for key in self._stale if key in self._drawn]:
                self._draw(key, touched, only=index)
            row_key = next(
                key for key, (cells, _) in self._shown.items() if _width(cells[index]) == widest
            )
            if row_key in self._stale:
                self._draw(row_key, touched)
            cell = table.get_cell(row_key, column.key)
            table.update_cell(row_key, column.key, cell, update_width=True)
            resized = True
        if self._refit:
            # DataTable measures when it next goes idle, over the rows it has then: a column
            # stays due for fitting until then, should rows go away before.
            self.call_later(self._refitted)
        return resized

    def _refitted(self) -> None:
        self._refit.clear()

    def _update_status(self, shown: int) -> None:
        column = COLUMNS[self.sort_column]
        parts = [
            f"{shown} of {len(self._rows)} processes",
            f"sort {column.label} {_ARROWS[self.sort_reverse]}",
            f"type {self.type_filter.value}",
        ]
        if self.grouped:
            groups = sum(isinstance(row, GroupRow) for row in self._by_key.values())
            parts.append(f"{groups} group{'' if groups == 1 else 's'}")
        if self.filter_text:
            parts.append(f"filter “{self.filter_text}”")
        foreign = sum(row.foreign for row in self._rows)
        if foreign:
            parts.append(f"{foreign} not in this PID namespace")
        if self.readonly:
            parts.append("read-only")
        status = "  ·  ".join(parts)
        # Updating a Static repaints it (and with layout=True lays out the whole screen);
        # the line's height is fixed at 1 and its width follows the widget, never the text.
        if status != self._status:
            self._status = status
            self.query_one("#process-status", Static).update(Text(status), layout=False)

    def _relabel(self) -> None:
        table = self._table
        for index in self._columns:
            table.columns[ColumnKey(COLUMNS[index].key)].label = self._label(index)
        # DataTable.sort is what repaints the header with the new labels.
        self._apply(resort=True)

    def sort_by(self, index: int, reverse: bool | None = None) -> None:
        """Sort by column ``index``; ``reverse`` defaults to that column's natural order."""
        self._hidden_sort = None
        self.sort_column = index % len(COLUMNS)
        self.sort_reverse = COLUMNS[self.sort_column].descending if reverse is None else reverse
        self._relabel()

    def action_toggle_groups(self) -> None:
        """One line per pod (job, container), or one per process again."""
        self.grouped = not self.grouped
        self._apply()

    def toggle_group(self, key_text: str) -> None:
        """Show the processes of the group ``key_text`` under its line, or hide them."""
        if key_text in self.expanded:
            self.expanded.discard(key_text)
        else:
            self.expanded.add(key_text)
        self._apply()

    def action_toggle_type(self) -> None:
        """Cycle all → compute → graphics."""
        self.type_filter = self.type_filter.next()
        self._apply()

    # Details and signals.

    @on(DataTable.RowSelected, "#process-data")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self._by_key.get(str(event.row_key.value))
        if isinstance(row, GroupRow):
            self.toggle_group(row.key_text)
        elif row is not None:
            title = f"PID {row.process.pid} on GPU {row.cell('gpu')}"
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
            return bool(self._owners) or self.grouped
        return True

    def action_signal(self, name: str) -> None:
        """Ask, then send SIG``name`` to the highlighted process."""
        sig = signal.Signals[f"SIG{name}"]
        if self.readonly:
            return
        row = self.highlighted_row
        if row is None:
            line = self.highlighted_line
            if isinstance(line, GroupRow):
                why = f"{line.holder.describe()} is not one process: Enter lists its processes"
            else:
                why = "no process selected"
            self._report(None, sig, why)
            return
        refusal = signal_refusal(row.process)
        if refusal is not None:
            self._report(row.process.pid, sig, refusal)
            return
        pid = target_pid(row.process)
        from gputop.ui.widgets.signal_dialog import SignalDialog

        dialog = SignalDialog(pid, sig, describe(row))
        self.app.push_screen(dialog, partial(self._answered, row, pid, sig))

    def _answered(self, row: ProcessRow, pid: int, sig: signal.Signals, send: bool | None) -> None:
        if not send:
            return
        # The dialog may have been open over several ticks: a process gone from the latest
        # snapshot (or there with another start time) has exited, and its PID may already
        # name another process.
        current = next((r for r in self._rows if r.key_text == row.key_text), None)
        started = row.process.start_time
        if current is None or (started is not None and current.process.start_time != started):
            self._report(pid, sig, "process has exited")
            return
        self._report(
            target_pid(current.process), sig, send_signal(self._kill, current.process, sig)
        )

    def _report(self, pid: int | None, sig: signal.Signals, error: str | None) -> None:
        self.post_message(self.SignalResult(pid, sig, error))
        target = "" if pid is None else f" to PID {pid}"
        if error is None:
            toast(self.app, "signal", f"Sent {sig.name}{target}", title="Signal")
        else:
            toast(
                self.app,
                "signal",
                f"{sig.name}{target}: {error}",
                title="Signal not sent",
                severity="error",
            )
