"""What the process table shows, as plain values: its columns for a width, its sort order,
its filter and its grouping by pod, and the lines and the status line that follow.

Nothing here imports Textual: the widget (``ui/widgets/process_table.py``) keeps the keys,
the DataTable and the messages and asks this which lines to show, so each rule of the view
is tested without running an app.
"""

from __future__ import annotations

from collections.abc import Iterable

from gputop.ui.render.process_rows import (
    COLUMN_INDEX,
    COLUMNS,
    OWNER_COLUMNS,
    GroupCache,
    GroupRow,
    ProcessRow,
    TableRow,
    TypeFilter,
    group_rows,
    sort_rows,
    visible_rows,
)

NARROW_WIDTH = 100
"""Below this many columns the table drops its host-side columns to leave room for commands."""

NARROW_HIDDEN = frozenset({"cpu", "host_memory"})

CONTAINER_WIDTH = 120
"""Below this many columns CONTAINER is left out too (it is in the details and the filter):
beside POD it would leave COMMAND a few cells. POD and JOB stay: they say whose work it is."""

ARROWS = {False: "▲", True: "▼"}
"""The sort column's arrow in its title: ascending, descending."""

_GPU_MEMORY = COLUMN_INDEX["gpu_memory"]


class ProcessView:
    """The processes of the latest snapshot and how the user asked to see them."""

    def __init__(self) -> None:
        self.rows: list[ProcessRow] = []
        """Every process of the latest snapshot, filtered or not."""
        self.owners: frozenset[str] = frozenset()
        """The owner columns some process of the latest snapshot has a value in."""
        self.columns: tuple[int, ...] = self.columns_for(None)
        """Indices into ``COLUMNS`` of the columns on screen, in order."""
        self.sort_column = _GPU_MEMORY
        """Index into ``COLUMNS`` of the column rows are sorted by."""
        self.sort_reverse = COLUMNS[self.sort_column].descending
        """Largest (or last) first."""
        self.hidden_sort: tuple[int, bool] | None = None
        """The user's sort while a narrow terminal hides its column, to go back to."""
        self.filter_text = ""
        """Words every shown row must contain (user, command, PID, GPU, pod, container, job)."""
        self.type_filter = TypeFilter.ALL
        """Which process types are shown."""
        self.grouped = False
        """One line per pod (job, container), its processes under it when expanded."""
        self.expanded: set[str] = set()
        """Key texts of the groups whose processes are shown."""
        self._group_cache: GroupCache = {}

    # Columns and sort.

    def columns_for(self, width: int | None) -> tuple[int, ...]:
        """The columns for a table ``width`` cells wide (None: any width) and the owners
        the latest processes have."""
        hidden = set(OWNER_COLUMNS) - self.owners
        if width is not None and width < NARROW_WIDTH:
            hidden |= NARROW_HIDDEN
        if width is not None and width < CONTAINER_WIDTH:
            hidden.add("container")
        return tuple(index for index, column in enumerate(COLUMNS) if column.key not in hidden)

    def set_columns(self, columns: tuple[int, ...]) -> bool:
        """Show ``columns`` (indices into ``COLUMNS``); False when they already are."""
        if columns == self.columns:
            return False
        self.columns = columns
        self._sort_on_screen()
        return True

    def _sort_on_screen(self) -> None:
        """Never sort by a hidden column: GPU memory stands in while the user's is hidden,
        and the user's comes back with its column."""
        hidden = self.hidden_sort
        if hidden is not None and hidden[0] in self.columns:
            self.hidden_sort = None
            self.sort_column, self.sort_reverse = hidden
        elif self.sort_column not in self.columns:
            self.hidden_sort = (self.sort_column, self.sort_reverse)
            self.sort_column = _GPU_MEMORY
            self.sort_reverse = COLUMNS[self.sort_column].descending

    def sort_by(self, index: int, reverse: bool | None = None) -> None:
        """Sort by column ``index``; ``reverse`` defaults to that column's natural order."""
        self.hidden_sort = None
        self.sort_column = index % len(COLUMNS)
        self.sort_reverse = COLUMNS[self.sort_column].descending if reverse is None else reverse

    def title(self, index: int) -> str:
        """Column ``index``'s title, with room for the arrow whether or not it sorts, so that
        sorting never changes column widths."""
        arrow = ARROWS[self.sort_reverse] if index == self.sort_column else " "
        return f"{COLUMNS[index].label}{arrow}"

    # Pods.

    def toggle_group(self, key_text: str) -> None:
        """Show the processes of the group ``key_text`` under its line, or hide them."""
        if key_text in self.expanded:
            self.expanded.discard(key_text)
        else:
            self.expanded.add(key_text)

    # The lines.

    def lines(self) -> tuple[int, list[TableRow]]:
        """(processes that pass the filters, the lines to show in order): a process's
        each, or with ``grouped`` a pod's (job's, container's) and, when it is expanded,
        its processes under it."""
        visible = visible_rows(self.rows, self.filter_text, self.type_filter)
        if self.grouped:
            lines = group_rows(
                visible, self.sort_column, self.sort_reverse, self.expanded, self._group_cache
            )
        else:
            lines = list(sort_rows(visible, self.sort_column, self.sort_reverse))
        return len(visible), lines

    def status(self, shown: int, lines: Iterable[TableRow], readonly: bool) -> str:
        """The line above the table: ``shown`` of all processes, the sort, the filters, the
        groups among ``lines``, those of another PID namespace, and whether read-only."""
        column = COLUMNS[self.sort_column]
        parts = [
            f"{shown} of {len(self.rows)} processes",
            f"sort {column.label} {ARROWS[self.sort_reverse]}",
            f"type {self.type_filter.value}",
        ]
        if self.grouped:
            groups = sum(isinstance(row, GroupRow) for row in lines)
            parts.append(f"{groups} group{'' if groups == 1 else 's'}")
        if self.filter_text:
            parts.append(f"filter “{self.filter_text}”")
        foreign = sum(row.foreign for row in self.rows)
        if foreign:
            parts.append(f"{foreign} not in this PID namespace")
        if readonly:
            parts.append("read-only")
        return "  ·  ".join(parts)
