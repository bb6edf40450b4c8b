"""The sort keys the process table and the fleet table answer alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual.widgets import DataTable


class ColumnSortKeys:
    """``<``/``>`` sort by the next column on screen, ``r`` flips the order, and a header
    click sorts by its column (or flips the order when it already is the sort column).

    A table mixes this in before ``Widget`` and provides ``sort_by``, its columns on screen
    (``_columns``) and, as class attributes, how many columns it has and each one's index
    by key.
    """

    COLUMN_COUNT: ClassVar[int]
    COLUMN_BY_KEY: ClassVar[Mapping[str, int]]
    sort_column: int
    sort_reverse: bool
    _columns: tuple[int, ...]

    def sort_by(self, index: int, reverse: bool | None = None) -> None:
        """Sort by column ``index``; ``reverse`` defaults to that column's natural order."""
        raise NotImplementedError

    def action_sort_by(self, step: int) -> None:
        """Sort by the next column on screen to the right (``step`` 1) or left (-1)."""
        index = self.sort_column
        for _ in range(self.COLUMN_COUNT):
            index = (index + step) % self.COLUMN_COUNT
            if index in self._columns:
                break
        self.sort_by(index)

    def action_reverse_sort(self) -> None:
        """Flip the sort order."""
        self.sort_by(self.sort_column, not self.sort_reverse)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column's header."""
        event.stop()
        index = self.COLUMN_BY_KEY[str(event.column_key.value)]
        if index == self.sort_column:
            self.action_reverse_sort()
        else:
            self.sort_by(index)
