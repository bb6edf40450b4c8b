"""The process table's DataTable, able to repaint only the rows a tick changed.

DataTable repaints all of itself on every ``update_cell``: the column header, every visible
row and the empty space below, all sent to the terminal again. On a training box most ticks
change a few numbers in a few rows (GPU memory, SM %, CPU %), so the table batches a tick's
updates and repaints just those rows, unless rows came, went or moved.

Its cells are rendered again only when they change (``compat.CellCachedDataTable``, a patch
of DataTable that ``GPUTOP_STOCK_TEXTUAL`` can turn off); this module uses DataTable's public
API only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Self

from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets.data_table import CellDoesNotExist, RowKey

from gputop.ui.compat import CellCachedDataTable


def foreground(style: Style) -> Style:
    """A component's text colour and emphasis without its background, which would paint over
    the cursor and zebra stripes."""
    return Style(color=style.color, bold=style.bold, italic=style.italic)


@dataclass
class RepaintBatch:
    """What a batch of updates touched."""

    rows: dict[str, int] = field(default_factory=dict)
    """Row key -> how many columns, from the left, hold every cell of the row that changed."""
    first: dict[str, int] = field(default_factory=dict)
    """Row key -> the leftmost column of the row that changed."""
    whole: bool = False
    """Rows were added, removed or reordered, or columns changed: repaint everything."""

    def changed(self, key: str, column: int) -> None:
        """Note that column ``column`` (position on screen) of row ``key`` changed."""
        self.rows[key] = max(self.rows.get(key, 0), column + 1)
        self.first[key] = min(self.first.get(key, column), column)


class ProcessGrid(CellCachedDataTable[Text]):
    """A DataTable whose whole-table repaints are held back during a :meth:`repaint_batch`."""

    # Class-level: DataTable's constructor already repaints (setting reactives).
    _holding = False
    _held = False
    whole_repaints = 0
    """Whole-table repaints that went through (tests read it)."""
    before_render: Callable[[int, int], None] | None = None
    """Called with the first row a render draws and the row after its last, before it draws
    them: the owner brings up to date the cells it let lag behind (rows off screen when they
    changed or were added), whatever brought them into view."""

    def render_lines(self, crop: Region) -> list[Strip]:
        """Render, first handing the rows the crop shows to ``before_render``."""
        if self.before_render is not None:
            # Every row is one line high and none is fixed (as in ``_refresh_row_span``).
            header = self.header_height if self.show_header else 0
            top = self.scroll_offset.y + max(crop.y - header, 0)
            self.before_render(top, self.scroll_offset.y + max(crop.bottom - header, 0))
        return super().render_lines(crop)

    def cursor_row_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        if self.row_count == 0:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:
            return None
        return None if key.value is None else str(key.value)

    def order_rows(self, keys: Sequence[str]) -> None:
        """Put the rows in the order of ``keys`` (each row's key, once): what ``sort`` does,
        by row key rather than by a key function of cell values, which need not tell rows
        apart (the process table's pod lines have no PID)."""
        place = {RowKey(key): index for index, key in enumerate(keys)}
        # ``sort`` hands its key function each row's cells, in the order the rows were added
        # (the order of ``rows``), once each (``sorted``): the places are handed out so.
        places = iter([place[row] for row in self.rows])
        self.sort(key=lambda _cells: next(places))

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
            self._refresh_row_span(self.get_row_index(key), touched.first.get(key, 0), columns)

    def _refresh_row_span(self, row_index: int, first: int, end: int) -> None:
        """Repaint the cells of a row from column ``first`` up to (not including) ``end``:
        only what changed is resent, not the cells left of it (GPU, PID, user...) nor those
        right of it (the command line, the blank rest). Over ssh that is what a tick costs."""
        widths = [column.get_render_width(self) for column in self.ordered_columns[:end]]
        x = sum(widths[:first])
        # Every row is one line high (rows are added with the default height).
        y = row_index + (self.header_height if self.show_header else 0)
        region = Region(x, y, sum(widths[first:]), 1)
        if self.window_region.overlaps(region):
            self.refresh(region.translate(-self.scroll_offset))
