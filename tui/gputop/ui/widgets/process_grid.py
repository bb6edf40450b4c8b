"""The process table's DataTable, able to repaint only the rows a tick changed.

DataTable repaints all of itself on every ``update_cell``: the column header, every visible
row and the empty space below, all sent to the terminal again. On a training box most ticks
change a few numbers in a few rows (GPU memory, SM %, CPU %), so the table batches a tick's
updates and repaints just those rows, unless rows came, went or moved.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Self

from rich.text import Text
from textual.geometry import Region

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
