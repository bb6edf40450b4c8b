"""The rows the process table's DataTable holds, kept in line with the lines it should show.

A tick is diffed against what the DataTable holds (rows added, removed, reordered; cells
changed), and all of it goes through one repaint batch, so the terminal gets the rows that
changed rather than the whole table. A row's cells are made only while it is on screen:
rows off screen are marked stale and drawn when they scroll (or grow) into view, so a tick
costs what is on screen, not what exists (every TIME cell changes each second), and a row
added off screen holds no cells at all until then (a dozen Texts a row: on a box with
hundreds of processes most of what the table would hold).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import JustifyMethod
from rich.style import Style
from rich.text import Text
from textual.widget import Widget
from textual.widgets.data_table import ColumnKey

from gputop.model.units import NA
from gputop.ui.render.column_widths import ColumnWidths, cell_width, pad
from gputop.ui.render.process_rows import COLUMNS, TableRow
from gputop.ui.widgets.process_grid import ProcessGrid, RepaintBatch, foreground

_PLAIN = Style()


def _justify(right: bool) -> JustifyMethod:
    return "right" if right else "left"


_JUSTIFY: tuple[JustifyMethod, ...] = tuple(_justify(column.right) for column in COLUMNS)

RowState = tuple[tuple[str, ...], bool]
"""A row's cells and whether its process is of another PID namespace."""


class DrawnRows:
    """What the DataTable of ``owner`` holds, and brings it up to date.

    ``owner`` is the process table: its component classes colour the cells
    (``process-table--foreign``, ``process-table--missing``) and its message queue runs the
    callbacks that must wait for the DataTable to go idle.
    """

    def __init__(self, owner: Widget) -> None:
        self._owner = owner
        self.grid: ProcessGrid | None = None
        """The DataTable, once composed."""
        self.columns: tuple[int, ...] = ()
        """The columns on screen (indices into ``COLUMNS``)."""
        self.shown: dict[str, RowState] = {}
        """Per row key, its latest (cells, foreign): what column widths are counted from."""
        self.drawn: dict[str, RowState] = {}
        """Per row key, the (cells, foreign) the DataTable holds; absent: to be redone."""
        self.stale: set[str] = set()
        """Rows whose DataTable cells lag behind ``shown``: off screen when they changed."""
        self.order: list[str] = []
        """Row keys in the DataTable's order (kept here: DataTable rebuilds its ordered list
        after every cell update)."""
        self.by_key: dict[str, TableRow] = {}
        """The lines shown, by key."""
        self.widths = ColumnWidths()
        self._styles: tuple[Style, Style] | None = None
        """(foreign, missing) cell styles under the current theme."""

    @property
    def table(self) -> ProcessGrid:
        """The DataTable (the owner composes it first thing)."""
        grid = self.grid
        assert grid is not None, "the process table is not composed yet"
        return grid

    def clear(self, columns: tuple[int, ...], titles: Sequence[Text]) -> None:
        """Empty the table and give it ``columns`` titled ``titles``."""
        table = self.table
        # First: clearing the table scrolls it home, which would draw the stale rows.
        self.shown.clear()
        self.drawn.clear()
        self.stale.clear()
        self.order = []
        table.clear(columns=True)
        self.columns = columns
        self.widths = ColumnWidths(columns)
        for index, title in zip(columns, titles, strict=True):
            table.add_column(title, key=COLUMNS[index].key)

    def retitle(self, titles: Sequence[Text]) -> None:
        """New titles for the columns (a sort's arrow moved); the next sort repaints them."""
        table = self.table
        for index, title in zip(self.columns, titles, strict=True):
            table.columns[ColumnKey(COLUMNS[index].key)].label = title

    def restyle(self) -> None:
        """The theme changed: cells carry colours resolved from the theme they were made
        under, so the styles are looked up again."""
        self._styles = None

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        return self.table.cursor_row_key()

    # Cells.

    def _cell_styles(self) -> tuple[Style, Style]:
        if self._styles is None:
            owner = self._owner
            self._styles = (
                foreground(owner.get_component_rich_style("process-table--foreign")),
                foreground(owner.get_component_rich_style("process-table--missing")),
            )
        return self._styles

    def _cell(self, index: int, text: str, foreign: bool) -> Text:
        """The DataTable cell of column ``index`` showing ``text``."""
        foreign_style, missing = self._cell_styles()
        style = foreign_style if foreign else missing if text == NA else _PLAIN
        return Text(pad(text), style=style, justify=_JUSTIFY[index])

    def _cells(self, row: TableRow) -> list[Text]:
        return [self._cell(index, row.cells[index], row.foreign) for index in self.columns]

    # The diff.

    def sync(
        self,
        ordered: list[TableRow],
        wanted: dict[str, TableRow],
        restyle: bool,
        resort: bool,
        cursor_key: str | None,
    ) -> None:
        """Make the table hold ``ordered`` (``wanted``: the same by key), in one repaint.

        Args:
            ordered: the lines to show, in order.
            wanted: ``ordered`` by key.
            restyle: redo every cell, not only changed ones.
            resort: sort the table even when its row order is already right (new titles).
            cursor_key: the row to put the cursor on, if shown.
        """
        table = self.table
        with table.repaint_batch() as touched:
            touched.whole = restyle
            self.by_key = wanted
            order = [row.key_text for row in ordered]
            self._update_rows(ordered, order, wanted, restyle, touched)
            rows_changed = touched.whole
            if self._fit_columns(touched):
                touched.whole = True
            # Sorting makes the table drop every cached row render, so only sort when the
            # order on screen is wrong (changed values, added rows) or the header needs
            # repainting.
            if resort or rows_changed or order != self.order:
                touched.whole = True
                table.order_rows(order)
            self.order = order
            if cursor_key in wanted:
                place = table.get_row_index(cursor_key)
                if place != table.cursor_row:
                    table.move_cursor(row=place)
            self.draw_visible(touched)

    def widen_columns_for(self, rows: list[TableRow]) -> None:
        """Make each column at least as wide as its widest cell among ``rows``."""
        table = self.table
        for index in self.columns:
            column = table.columns[ColumnKey(COLUMNS[index].key)]
            widest = max((cell_width(row.cells[index]) for row in rows), default=0)
            column.content_width = max(column.content_width, widest)

    def _update_rows(
        self,
        ordered: list[TableRow],
        keys: list[str],
        wanted: dict[str, TableRow],
        restyle: bool,
        touched: RepaintBatch,
    ) -> None:
        """Remove, add and update rows (``ordered``, with their ``keys``); note in ``touched``
        what a repaint must cover."""
        table = self.table
        widths = self.widths
        shown = self.shown
        columns = {index: table.columns[ColumnKey(COLUMNS[index].key)] for index in widths.counts}
        # Where the rows will stand once sorted: only new rows there get their cells now.
        likely_on_screen = set(self.keys_on_screen(keys))
        unmade: list[TableRow] = []
        for key in [key for key in shown if key not in wanted]:
            table.remove_row(key)
            widths.count(shown.pop(key)[0], -1)
            self.drawn.pop(key, None)
            self.stale.discard(key)
            touched.whole = True
        if restyle:
            # Every cell is redone, the visible ones now and the rest as they come into view.
            self.drawn.clear()
            self.stale.update(shown)
        for row in ordered:
            key = row.key_text
            state = (row.cells, row.foreign)
            before = shown.get(key)
            if before is None:
                if key in likely_on_screen:
                    table.add_row(*self._cells(row), key=key)
                    self.drawn[key] = state
                else:
                    # Off screen: empty cells, made when it comes into view.
                    unmade.append(row)
                    table.add_row(key=key)
                    self.stale.add(key)
                widths.count(row.cells, 1)
                touched.whole = True
            elif before != state:
                # Only the width counts follow every row; the cells themselves are made
                # when the row is on screen (``draw_visible``).
                widths.change(before[0], row.cells, columns)
                self.stale.add(key)
            shown[key] = state
        if unmade:
            # The columns are as wide as those rows' cells will be, as DataTable would
            # have measured them.
            self.widen_columns_for(unmade)

    # Drawing what is on screen.

    def rows_on_screen(self) -> tuple[int, int]:
        """The position of the first row the table's height shows from its scroll position,
        and of the row after its last."""
        table = self.table
        header = table.header_height if table.show_header else 0
        height = table.size.height - header if table.size.height else self._owner.app.size.height
        top = table.scroll_offset.y
        return top, top + max(height, 0)

    def keys_on_screen(self, order: list[str] | None = None) -> list[str]:
        """The keys of the rows on screen, in the table's order (or in ``order``)."""
        start, end = self.rows_on_screen()
        return (self.order if order is None else order)[start:end]

    def draw_rows(self, start: int, end: int) -> None:
        """Bring up to date the cells of the rows at positions ``start`` to ``end`` that lag
        behind (changed or restyled while off screen, or added empty): the DataTable is about
        to draw them (``ProcessGrid.before_render``). Scrolls and resizes are drawn before
        the table hears of them; this way no frame shows such a row as it was."""
        keys = self.order[start:end]
        if self.stale and not self.stale.isdisjoint(keys):
            with self.table.repaint_batch() as touched:
                self._draw_lagging(keys, touched)

    def draw_visible(self, touched: RepaintBatch) -> None:
        """Bring the DataTable cells of the rows on screen up to date."""
        if self.stale:
            self._draw_lagging(self.keys_on_screen(), touched)

    def _draw_lagging(self, keys: list[str], touched: RepaintBatch) -> None:
        for key in keys:
            if key in self.stale:
                self._draw(key, touched)

    def _draw(self, key: str, touched: RepaintBatch, only: int | None = None) -> None:
        """Update the DataTable cells of row ``key`` that differ from its latest text (only
        column ``only``'s, if given)."""
        cells, foreign = self.shown[key]
        drawn = self.drawn.get(key)
        table = self.table
        done = list(cells) if drawn is None else list(drawn[0])
        for position, index in enumerate(self.columns):
            if only is not None and index != only:
                continue
            if drawn is None or drawn[1] != foreign or drawn[0][index] != cells[index]:
                cell = self._cell(index, cells[index], foreign)
                table.update_cell(key, COLUMNS[index].key, cell, update_width=False)
                done[index] = cells[index]
                touched.changed(key, position)
        if only is None or (drawn is not None and drawn[1] == foreign and tuple(done) == cells):
            self.drawn[key] = (cells, foreign)
            self.stale.discard(key)
        elif drawn is not None:
            self.drawn[key] = (tuple(done), drawn[1])

    # Column widths.

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
        table = self.table
        refit = self.widths.refit
        resized = False
        for index in sorted(refit):
            widest = self.widths.widest(index)
            if widest is None:
                continue
            column = table.columns[ColumnKey(COLUMNS[index].key)]
            if not widest or max(widest, cell_len(column.label.plain)) == column.content_width:
                continue
            # DataTable measures the cells it holds: those of this column are made current
            # first, in rows off screen too (a column is refitted only when its widest
            # cell changes width). Rows added off screen hold none to measure.
            for key in [key for key in self.stale if table.get_cell(key, column.key) is not None]:
                self._draw(key, touched, only=index)
            row_key = next(
                key for key, (cells, _) in self.shown.items() if cell_width(cells[index]) == widest
            )
            if row_key in self.stale:
                self._draw(row_key, touched)
            cell = table.get_cell(row_key, column.key)
            table.update_cell(row_key, column.key, cell, update_width=True)
            resized = True
        if refit:
            # DataTable measures when it next goes idle, over the rows it has then: a column
            # stays due for fitting until then, should rows go away before.
            self._owner.call_later(self._refitted)
        return resized

    def _refitted(self) -> None:
        self.widths.refit.clear()
