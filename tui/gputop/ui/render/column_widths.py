"""The process table's column widths, counted rather than measured: a tick costs what
changed, not every cell of every row.

DataTable measures a column by going over every cell it holds; at a few hundred rows that
costs more than the rest of a tick. Here each column keeps how many of its cells have each
width, and the room left for COMMAND is measured again only when some row changed.
"""

from __future__ import annotations

import dataclasses
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from rich.cells import cell_len

from gputop.ui.render.process_rows import COLUMN_INDEX, COLUMNS, TableRow, fit_command

COMMAND = COLUMN_INDEX["command"]

MIN_COMMAND = 12
"""Fewest cells COMMAND is cut to; with less room than that the table scrolls sideways."""


def pad(text: str) -> str:
    """``text`` as a cell shows it."""
    # The DataTable runs with no cell padding; one leading space per cell separates columns
    # with one space instead of two, which leaves an 80-column terminal room for commands.
    return f" {text}"


def cell_width(text: str) -> int:
    """Terminal cells a padded cell of ``text`` takes, as DataTable measures it."""
    return max(cell_len(line) for line in pad(text).split("\n"))


def column_width(texts: list[str]) -> int:
    """Cells the widest padded cell of ``texts`` takes; plain ASCII is measured by length
    (this runs every tick over every row: 0.1 ms for 200 processes instead of 1 ms)."""
    if "".join(texts).isascii():
        return max(map(len, texts), default=-1) + 1
    return max(map(cell_width, texts), default=0)


class Measured(Protocol):
    """A table column as far as fitting goes: the width its cells were last measured at."""

    @property
    def content_width(self) -> int:
        """Cells its widest cell took when the table last measured it."""
        ...


class ColumnWidths:
    """How many shown cells of each column (index into ``COLUMNS``) have each width, so the
    widest is known without measuring, and which columns are due for fitting."""

    def __init__(self, columns: Iterable[int] = ()) -> None:
        self.counts: dict[int, Counter[int]] = {index: Counter() for index in columns}
        self.refit: set[int] = set()
        """Columns a cell of which changed to a width other than the column's."""

    def count(self, cells: Sequence[str], step: int) -> None:
        """Count a row of ``cells`` in (``step`` 1) or out (-1)."""
        for index, counter in self.counts.items():
            counter[cell_width(cells[index])] += step

    def change(
        self, before: Sequence[str], after: Sequence[str], columns: Mapping[int, Measured]
    ) -> None:
        """A row's cells went from ``before`` to ``after``; ``columns`` as the table holds
        them (read as they are now: rows added in the same tick may have widened them)."""
        counts = self.counts
        for index in counts:
            old, new = before[index], after[index]
            if old != new:
                old_width, new_width = cell_width(old), cell_width(new)
                if old_width != new_width:
                    counts[index][old_width] -= 1
                    counts[index][new_width] += 1
                if new_width != columns[index].content_width:
                    self.refit.add(index)

    def widest(self, index: int) -> int | None:
        """The widest shown cell of column ``index``: 0 with none, None when not counted."""
        counts = self.counts.get(index)
        if counts is None:
            return None
        return max((width for width, count in counts.items() if count > 0), default=0)


class OtherColumns:
    """Cells the columns other than COMMAND take: measured again only when a row changed
    (most ticks change none on screen or off: a TIME cell moves once a minute), not over
    every row of every tick."""

    def __init__(self) -> None:
        self._last: tuple[tuple[int, ...], Sequence[TableRow], int] = ((), [], 0)
        """(columns, rows, width) of the last measure."""

    def width(self, columns: tuple[int, ...], rows: Sequence[TableRow]) -> int:
        """Cells ``columns`` other than COMMAND take, as wide as ``rows`` need (and their
        titles with the arrow)."""
        last_columns, last_rows, last = self._last
        if (
            last_columns == columns
            and len(last_rows) == len(rows)
            and all(map(operator.is_, rows, last_rows))
        ):
            return last
        others = sum(
            max(len(COLUMNS[index].label) + 2, column_width([row.cells[index] for row in rows]))
            for index in columns
            if index != COMMAND
        )
        self._last = (columns, rows, others)
        return others


def fit_commands(rows: list[TableRow], room: int) -> list[TableRow]:
    """``rows`` with their commands cut to ``room`` cells."""
    fitted: list[TableRow] = []
    for row in rows:
        command = row.cells[COMMAND]
        if len(command) > room:
            cells = (*row.cells[:COMMAND], fit_command(row.command, room))
            row = dataclasses.replace(row, cells=cells + row.cells[COMMAND + 1 :])
        fitted.append(row)
    return fitted
