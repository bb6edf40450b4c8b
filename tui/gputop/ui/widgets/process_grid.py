"""The process table's DataTable, able to repaint only the rows a tick changed.

DataTable repaints all of itself on every ``update_cell``: the column header, every visible
row and the empty space below, all sent to the terminal again. On a training box most ticks
change a few numbers in a few rows (GPU memory, SM %, CPU %), so the table batches a tick's
updates and repaints just those rows, unless rows came, went or moved.

DataTable also forgets every cell it rendered on every ``update_cell`` (its caches are keyed
by one update counter), so a tick that changes the TIME cells re-renders every visible cell
through Rich. Here a cell's render is keyed by the table's structure (rows, order, widths)
and that cell's own last update, so only the cells that changed are rendered again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Self

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.widgets.data_table import ColumnKey, RowKey

from gputop.ui.compat import RemeasuredDataTable


@dataclass
class RepaintBatch:
    """What a batch of updates touched."""

    rows: dict[str, int] = field(default_factory=dict)
    """Row key -> how many columns, from the left, hold every cell of the row that changed."""
    whole: bool = False
    """Rows were added, removed or reordered, or columns changed: repaint everything."""


class ProcessGrid(RemeasuredDataTable[Text]):
    """A DataTable whose whole-table repaints are held back during a :meth:`repaint_batch`."""

    # Class-level: DataTable's constructor already repaints (setting reactives).
    _holding = False
    _held = False
    whole_repaints = 0
    """Whole-table repaints that went through (tests read it)."""
    _value_updates = 0
    """``update_cell`` calls that changed a value only (no widths): not structural."""
    _stamps: dict[tuple[RowKey | None, ColumnKey | None], int] | None = None
    cell_renders = 0
    """Cells rendered through Rich, not from the cache (tests read it)."""

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: Text,
        *,
        update_width: bool = False,
    ) -> None:
        """As DataTable's, noting which cell changed so that only its render is redone."""
        super().update_cell(row_key, column_key, value, update_width=update_width)
        if update_width:
            return
        self._value_updates += 1
        if self._stamps is None:
            self._stamps = {}
        row = RowKey(row_key) if isinstance(row_key, str) else row_key
        column = ColumnKey(column_key) if isinstance(column_key, str) else column_key
        # A stamp is never reused, so no render made before this update can match it.
        self._stamps[(row, column)] = self._update_count

    def remove_row(self, row_key: RowKey | str) -> None:
        """As DataTable's, forgetting the row's cell stamps."""
        super().remove_row(row_key)
        if self._stamps:
            row = RowKey(row_key) if isinstance(row_key, str) else row_key
            for column in self.columns:
                self._stamps.pop((row, column), None)

    def clear(self, columns: bool = False) -> Self:
        """As DataTable's, forgetting every cell stamp."""
        self._stamps = None
        return super().clear(columns)

    def order_rows(self, keys: Sequence[str]) -> None:
        """Put the rows in the order of ``keys`` (each row's key, once): what ``sort`` does,
        by row key rather than by a key function of cell values, which need not tell rows
        apart (the process table's pod lines have no PID)."""
        locations = type(self._row_locations)
        self._row_locations = locations({RowKey(key): place for place, key in enumerate(keys)})
        self._update_count += 1
        self.refresh()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        structure = self._update_count - self._value_updates
        stamp = 0
        if self._stamps and row_index >= 0 and column_index >= 0:
            row = self._row_locations.get_key(row_index)
            column = self._column_locations.get_key(column_index)
            stamp = self._stamps.get((row, column), 0)
        saved = self._update_count
        # DataTable keys a cell's render (and the row's renderables it is made from) by
        # ``_update_count``: for this one call it is (structure, this cell's last update).
        self._update_count = (structure, stamp)  # type: ignore[assignment]
        try:
            before = len(self._cell_render_cache)
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            if len(self._cell_render_cache) != before:
                self.cell_renders += 1
            return lines
        finally:
            self._update_count = saved

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        """Repaint, except for whole-table repaints asked for inside a batch."""
        if self._holding and not regions and repaint and not layout and not recompose:
            self._held = True
            return self
        if not regions and repaint:
            self.whole_repaints += 1
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    @contextmanager
    def repaint_batch(self) -> Iterator[RepaintBatch]:
        """Update cells inside the block; at its end only the rows it names are repainted,
        or the whole table when it says so (or fails half way)."""
        touched = RepaintBatch()
        self._holding = True
        self._held = False
        try:
            yield touched
        except BaseException:
            touched.whole = True
            raise
        finally:
            self._holding = False
            if self._held:
                self._repaint(touched)

    def _repaint(self, touched: RepaintBatch) -> None:
        if touched.whole:
            self.refresh()
            return
        for key, columns in touched.rows.items():
            self._refresh_row_start(self.get_row_index(key), columns)

    def _refresh_row_start(self, row_index: int, columns: int) -> None:
        """Repaint a row from its left edge through its first ``columns`` columns: the
        cells right of the last change (the command line, the blank rest) are not resent."""
        width = sum(column.get_render_width(self) for column in self.ordered_columns[:columns])
        # Every row is one line high (rows are added with the default height).
        y = row_index + (self.header_height if self.show_header else 0)
        region = Region(0, y, width, 1)
        if self.window_region.overlaps(region):
            self.refresh(region.translate(-self.scroll_offset))
