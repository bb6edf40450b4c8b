"""The fleet table: one row per node, sortable and filterable with the process table's keys.

``<`` ``>`` sort column, ``r`` reverse, ``/`` filter, Esc clears the filter, a click on a
header sorts by it; Enter opens the node (the screen answers ``NodeChosen``). A refresh
rewrites the rows but keeps the cursor on the same node.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from gputop.model.fleet import FleetSnapshot
from gputop.model.units import NA
from gputop.ui.render.fleet_rows import (
    COLUMN_INDEX,
    COLUMNS,
    FleetRow,
    build_rows,
    sort_rows,
    visible_rows,
)
from gputop.ui.widget_css import css_beside
from gputop.ui.widgets.column_sort import ColumnSortKeys
from gputop.ui.widgets.filter_bar import FilteredTable
from gputop.ui.widgets.process_grid import ProcessGrid, foreground

_ARROWS = {False: "▲", True: "▼"}
_SORT = Binding.Group("Sort", compact=True)

NARROW_HIDDEN: tuple[tuple[int, frozenset[str]], ...] = (
    (64, frozenset({"exporter", "unknown", "throttled", "util", "power"})),
    (100, frozenset({"exporter", "unknown", "throttled"})),
)
"""(below this width, the columns dropped): the counts and the host stay longest."""


def shown_columns(width: int) -> tuple[int, ...]:
    """Indices into ``COLUMNS`` of the columns a table ``width`` cells wide shows."""
    hidden: frozenset[str] = frozenset()
    for below, keys in NARROW_HIDDEN:
        if width < below:
            hidden = keys
            break
    return tuple(i for i, column in enumerate(COLUMNS) if column.key not in hidden)


class FleetTable(ColumnSortKeys, FilteredTable):
    """Every node of the latest fleet answer."""

    DEFAULT_CSS = css_beside(__file__)
    FILTER_ID = "fleet-filter"
    FILTER_PLACEHOLDER = "host, exporter, GPU, pod or namespace  (Enter keeps, Esc clears)"

    COMPONENT_CLASSES: ClassVar[set[str]] = {"fleet-table--stale", "fleet-table--missing"}
    """``--stale``: a node whose exporter stopped answering; ``--missing``: n/a cells."""

    COLUMN_COUNT = len(COLUMNS)
    COLUMN_BY_KEY = COLUMN_INDEX
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "open_filter", "Filter"),
        Binding("less_than_sign", "sort_by(-1)", "Sort ◀", key_display="<", group=_SORT),
        Binding("greater_than_sign", "sort_by(1)", "Sort ▶", key_display=">", group=_SORT),
        Binding("r", "reverse_sort", "Reverse"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    class NodeChosen(Message):
        """Enter (or a click) on a node's row."""

        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

    def __init__(
        self, *, source_label: str = "", refresh: float | None = None, id: str | None = None
    ) -> None:
        """An empty table; ``show`` fills it; the status line names ``source_label`` and
        the ``refresh`` interval."""
        super().__init__(id=id)
        self.source_label = source_label
        self.refresh_interval = refresh
        self._rows: list[FleetRow] = []
        self._order: list[str] = []
        self._drawn: dict[str, tuple[tuple[str, ...], bool]] = {}
        self._columns: tuple[int, ...] = tuple(range(len(COLUMNS)))
        self._status = ""
        self._styles: tuple[Style, Style] | None = None
        self.sort_column = COLUMN_INDEX["idle"]
        """Index into ``COLUMNS``: the nodes with the most idle GPUs first."""
        self.sort_reverse = True
        self.filter_text = ""
        """Words every shown node must contain (host, instance, exporter, GPU, pod)."""

    def compose(self) -> ComposeResult:
        """A status line and the table; the filter input is added when first wanted."""
        yield Static(id="fleet-status")
        yield ProcessGrid(id="fleet-data", cursor_type="row", zebra_stripes=True)

    @property
    def _table(self) -> ProcessGrid:
        return self.query_one("#fleet-data", ProcessGrid)

    def on_mount(self) -> None:
        """Columns, then what was shown before mounting."""
        self.app.theme_changed_signal.subscribe(self, self._restyle)
        self._rebuild()

    def on_resize(self) -> None:
        """Drop (or bring back) the least needed columns as the table narrows (or widens)."""
        columns = shown_columns(self.size.width)
        if columns != self._columns:
            self._columns = columns
            if self.sort_column not in columns:
                self.sort_column, self.sort_reverse = COLUMN_INDEX["idle"], True
            self._rebuild()

    def _restyle(self, _theme: object) -> None:
        self._styles = None
        self._drawn.clear()
        self._apply(rebuild=True)

    @property
    def columns(self) -> list[str]:
        """Keys of the columns on screen, in order."""
        return [COLUMNS[index].key for index in self._columns]

    @property
    def rows(self) -> list[FleetRow]:
        """The rows shown, in display order."""
        by_host = {row.host: row for row in self._rows}
        return [by_host[host] for host in self._order]

    @property
    def highlighted_host(self) -> str | None:
        """The node under the cursor."""
        return self._table.cursor_row_key()

    def show(self, fleet: FleetSnapshot) -> None:
        """Display the nodes of ``fleet``."""
        self._rows = build_rows(fleet.nodes, fleet.taken_at)
        if self.is_mounted:
            self._apply()

    def _label(self, index: int) -> Text:
        column = COLUMNS[index]
        arrow = _ARROWS[self.sort_reverse] if index == self.sort_column else " "
        return Text(f"{column.label}{arrow}", justify="right" if column.right else "left")

    def _cell_styles(self) -> tuple[Style, Style]:
        if self._styles is None:
            self._styles = (
                foreground(self.get_component_rich_style("fleet-table--stale")),
                foreground(self.get_component_rich_style("fleet-table--missing")),
            )
        return self._styles

    def _cells(self, row: FleetRow) -> list[Text]:
        stale, missing = self._cell_styles()
        cells = []
        for index in self._columns:
            text = row.cells[index]
            style = stale if row.stale else missing if text == NA else Style()
            cells.append(
                Text(text, style=style, justify="right" if COLUMNS[index].right else "left")
            )
        return cells

    def _rebuild(self) -> None:
        table = self._table
        self._drawn.clear()
        self._order = []
        table.clear(columns=True)
        for index in self._columns:
            table.add_column(self._label(index), key=COLUMNS[index].key)
        self._apply(rebuild=True)

    def _apply(self, rebuild: bool = False) -> None:
        """Bring the table in line with the rows, the filter and the sort order."""
        if not self.is_mounted:
            return
        table = self._table
        shown = sort_rows(
            visible_rows(self._rows, self.filter_text), self.sort_column, self.sort_reverse
        )
        order = [row.host for row in shown]
        drawn = {row.host: (row.cells, row.stale) for row in shown}
        if rebuild or order != self._order:
            # Nodes came, went or moved: a fleet has tens of rows, at most a few hundred,
            # so they are laid again (a few ms).
            cursor = self.highlighted_host
            table.clear()
            for row in shown:
                table.add_row(*self._cells(row), key=row.host)
            self._order = order
            if cursor in order:
                table.move_cursor(row=order.index(cursor), animate=False)
        elif drawn != self._drawn:
            self._update_cells(shown)
        self._drawn = drawn
        self._update_status(len(shown))

    def _update_cells(self, shown: list[FleetRow]) -> None:
        """Update the cells that changed, then fit the columns whose widest cell changed.

        Every refresh changes every node's AGE: updating those cells alone leaves the other
        cells' renders cached (``ProcessGrid``), where laying the rows again rendered every
        visible cell anew. Widths are fitted once per column, not per cell: DataTable's
        ``update_width`` re-measures the whole column each time (seconds at 128 nodes).
        """
        table = self._table
        changed: set[int] = set()
        with table.repaint_batch() as touched:
            for row in shown:
                before = self._drawn.get(row.host)
                if before == (row.cells, row.stale):
                    continue
                cells = self._cells(row)
                for position, index in enumerate(self._columns):
                    if (
                        before is None
                        or before[1] != row.stale
                        or before[0][index] != row.cells[index]
                    ):
                        table.update_cell(row.host, COLUMNS[index].key, cells[position])
                        changed.add(index)
                        touched.rows[row.host] = max(touched.rows.get(row.host, 0), position + 1)
            for index in sorted(changed):
                key = ColumnKey(COLUMNS[index].key)
                column = table.columns[key]
                widths = [cell_len(row.cells[index]) for row in shown]
                widest = max(widths, default=0)
                if max(widest, column.label.cell_len) == column.content_width or not widths:
                    continue
                # One re-measure of the column, through its widest cell.
                host = shown[widths.index(widest)].host
                table.update_cell(host, key, table.get_cell(host, key), update_width=True)
                touched.whole = True

    def _update_status(self, shown: int) -> None:
        column = COLUMNS[self.sort_column]
        parts = [
            f"{shown} of {len(self._rows)} nodes",
            f"sort {column.label} {_ARROWS[self.sort_reverse]}",
        ]
        if self.filter_text:
            parts.append(f"filter “{self.filter_text}”")
        stale = sum(row.stale for row in self._rows)
        if stale:
            parts.append(f"{stale} stale")
        where = f"from {self.source_label}" if self.source_label else ""
        if self.refresh_interval is not None:
            where += f" every {self.refresh_interval:g}s"
        if where:
            parts.append(where.strip())
        status = "  ·  ".join(parts)
        if status != self._status:
            self._status = status
            self.query_one("#fleet-status", Static).update(Text(status))

    # Sorting and filtering, as in the process table.

    def sort_by(self, index: int, reverse: bool | None = None) -> None:
        """Sort by column ``index``; ``reverse`` defaults to that column's natural order."""
        self.sort_column = index % len(COLUMNS)
        self.sort_reverse = COLUMNS[self.sort_column].descending if reverse is None else reverse
        table = self._table
        for shown in self._columns:
            table.columns[ColumnKey(COLUMNS[shown].key)].label = self._label(shown)
        table.refresh()
        self._apply()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Let Esc through when there is no filter (the screen's, the app's)."""
        if action == "clear_filter":
            return self.filter_to_clear()
        return True

    @on(DataTable.RowSelected, "#fleet-data")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.NodeChosen(str(event.row_key.value)))
