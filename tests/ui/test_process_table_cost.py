"""The process table's per-tick work grows with the rows on screen, not with the processes.

A TIME cell changes once a minute past a process's first minute (every second, before): when
a minute passes for every row, on a box with a thousand processes the table must not rebuild
a thousand rows when thirty are visible. Rows off screen are brought up to date when they come
into view.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.patches import enabled
from gputop.ui.compat import CACHE_MARGIN_LINES, CELL_CACHE, TABLE_CACHES, CellCachedDataTable
from gputop.ui.widgets.process_grid import ProcessGrid
from gputop.ui.widgets.process_table import ProcessTable

NOW = 1_700_000_000.0
MIB = 1024**2
PROCESSES = 1000


def processes() -> tuple[ProcessSample, ...]:
    """The box's processes, the most GPU memory first."""
    return tuple(
        ProcessSample(
            pid=10_000 + i,
            type="C",
            memory_used=(PROCESSES - i) * MIB,
            user="u",
            command=f"python job{i}.py",
            start_time=NOW - 100 - i,
        )
        for i in range(PROCESSES)
    )


def box(running: tuple[ProcessSample, ...] | None = None) -> Snapshot:
    """One GPU running ``running`` (by default ``processes()``)."""
    on_gpu = processes() if running is None else running
    return Snapshot(timestamp=None, gpus=(GpuSample(index=0, name="GPU", processes=on_gpu),))


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class BigApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()

    def compose(self) -> ComposeResult:
        yield ProcessTable(clock=self.clock)

    def on_mount(self) -> None:
        self.query_one(ProcessTable).show(box())
        self.query_one(DataTable).focus()


class Spy:
    """Counts the rows whose cells the table updates."""

    def __init__(self, table: DataTable[Any]) -> None:
        self.rows: set[str] = set()
        self.calls = 0
        original = table.update_cell

        def update_cell(row_key: Any, column_key: Any, value: Any, **kwargs: Any) -> None:
            self.rows.add(str(getattr(row_key, "value", row_key)))
            self.calls += 1
            original(row_key, column_key, value, **kwargs)

        table.update_cell = update_cell  # type: ignore[method-assign]


def visible_rows(table: DataTable[Any]) -> int:
    return table.size.height - table.header_height


def time_cell(table: DataTable[Any], row: int) -> str:
    key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key
    cell: Text = table.get_cell(key, "time")
    return cell.plain.strip()


@asynccontextmanager
async def started(
    height: int = 33,
) -> AsyncIterator[tuple[BigApp, Pilot[None], ProcessTable, ProcessGrid]]:
    """A ``BigApp`` 120 columns wide with its first table drawn: the app, its pilot, the
    process table and its DataTable."""
    app = BigApp()
    async with app.run_test(size=(120, height)) as pilot:
        await pilot.pause()
        await pilot.pause()
        yield app, pilot, app.query_one(ProcessTable), app.query_one(ProcessGrid)


async def test_a_tick_updates_only_the_rows_on_screen() -> None:
    async with started() as (app, pilot, widget, table):
        assert table.row_count == PROCESSES
        visible = visible_rows(table)
        assert 25 <= visible <= 31
        spy = Spy(table)
        app.clock.now = NOW + 60
        widget.show(box())
        await pilot.pause()
        # Every row's TIME changed; only the rows a person can see were redone.
        assert 0 < len(spy.rows) <= visible
        assert spy.calls <= visible
        assert time_cell(table, 0) == "2m"


async def test_a_second_passing_redraws_no_row_past_its_first_minute() -> None:
    async with started() as (app, pilot, widget, table):
        assert time_cell(table, 0) == "1m"
        on_screen = range(visible_rows(table))
        before = [time_cell(table, row) for row in on_screen]
        spy = Spy(table)
        renders = table.cell_renders
        repaints = table.whole_repaints
        # The top rows ran 100-129 s: one second later they read the same, save the one
        # that reaches two minutes.
        app.clock.now = NOW + 1
        widget.show(box())
        await pilot.pause()
        await pilot.pause()
        after = [time_cell(table, row) for row in on_screen]
        assert after == [row.cell("time") for row in widget.rows[: len(after)]]
        assert sum(old != new for old, new in zip(before, after, strict=True)) == 1
        assert spy.calls == 1
        if enabled(CELL_CACHE):  # stock DataTable renders every visible cell again
            assert table.cell_renders - renders == 1
        assert table.whole_repaints == repaints


async def test_rows_scrolled_into_view_are_current() -> None:
    async with started() as (app, pilot, widget, table):
        app.clock.now = NOW + 60
        widget.show(box())
        await pilot.pause()
        await pilot.press("ctrl+end")
        await pilot.pause()
        await pilot.pause()
        last = table.row_count - 1
        # The last row (smallest GPU memory) started 1,099 s before NOW.
        assert table.cursor_row == last
        assert time_cell(table, last) == "19m"
        top = table.scroll_offset.y
        assert top > 0
        for row in range(top, top + visible_rows(table)):
            assert time_cell(table, row) == widget.rows[row].cell("time")


async def test_a_taller_table_draws_the_rows_it_now_shows() -> None:
    async with started(20) as (app, pilot, widget, table):
        app.clock.now = NOW + 60
        widget.show(box())
        await pilot.pause()
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.pause()
        rows = visible_rows(table)
        assert rows > 30
        assert time_cell(table, rows - 1) == widget.rows[rows - 1].cell("time")


@pytest.mark.patch("cell_cache")
async def test_a_tick_renders_only_the_cells_that_changed() -> None:
    async with started() as (app, pilot, widget, table):
        before = table.cell_renders
        app.clock.now = NOW + 60
        widget.show(box())
        await pilot.pause()
        await pilot.pause()
        # Only TIME changed: one cell a visible row is rendered again, not the whole row.
        rendered = table.cell_renders - before
        assert 0 < rendered <= visible_rows(table)
        assert time_cell(table, 0) == "2m"


async def test_narrowing_while_scrolled_with_rows_behind() -> None:
    async with started() as (app, pilot, widget, table):
        await pilot.press("ctrl+end")
        await pilot.pause()
        await pilot.pause()
        assert table.scroll_offset.y > 0
        app.clock.now = NOW + 60
        widget.show(box())
        await pilot.pause()
        # The host-side columns go: the table is rebuilt (and scrolled home) with rows that
        # had not been drawn since the tick.
        await pilot.resize_terminal(90, 33)
        await pilot.pause()
        await pilot.pause()
        assert "cpu" not in widget.columns
        top = table.scroll_offset.y
        for row in range(top, top + visible_rows(table)):
            assert time_cell(table, row) == widget.rows[row].cell("time")


async def test_a_tick_that_changes_no_row_measures_no_column(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gputop.ui.render.column_widths as column_widths

    async with started() as (app, pilot, widget, _table):
        measured: list[int] = []
        original = column_widths.column_width

        def counting(texts: list[str]) -> int:
            measured.append(len(texts))
            return original(texts)

        monkeypatch.setattr(column_widths, "column_width", counting)
        # Half a second later every row reads the same (past its first minute TIME shows
        # minutes): the columns need no measuring over 1,000 rows.
        app.clock.now = NOW + 0.5
        widget.show(box())
        await pilot.pause()
        assert measured == []
        # A changed process is measured again.
        first, *rest = processes()
        bigger = replace(first, memory_used=(first.memory_used or 0) * 1000)
        widget.show(box((bigger, *rest)))
        await pilot.pause()
        assert measured


async def test_a_tick_with_every_row_unchanged_sorts_and_diffs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gputop.ui.render.process_rows import sort_rows

    async with started() as (app, pilot, widget, _table):
        shown = box()
        widget.show(shown)
        await pilot.pause()
        sorts: list[int] = []

        def counted(rows: Any, column: int, reverse: bool) -> Any:
            sorts.append(len(rows))
            return sort_rows(rows, column, reverse)

        monkeypatch.setattr("gputop.ui.render.process_view.sort_rows", counted)
        # The same processes half a second later: no TIME cell reads differently, so no
        # row is rebuilt and the table has nothing to do.
        app.clock.now = NOW + 0.5
        widget.show(shown)
        assert sorts == []
        # A process that changed: the table sorts and diffs again.
        first, *rest = processes()
        widget.show(box((replace(first, memory_used=1), *rest)))
        assert sorts == [PROCESSES]


async def test_what_the_table_keeps_drawn_is_about_a_screenful() -> None:
    """DataTable keys its rendered lines and rows by an update counter: what an update long
    past drew is never read again. ``TABLE_CACHES`` keeps a screenful and a margin of lines,
    rows and rows' renderables, and of cells (stock Textual: up to 1,000 lines and rows and
    10,000 cells and renderables)."""
    async with started() as (app, pilot, widget, table):
        for minute in range(1, 41):
            app.clock.now = NOW + 60 * minute
            widget.show(box())
            await pilot.pause()
        assert time_cell(table, 0) == "41m"
        lines = table.size.height + CACHE_MARGIN_LINES
        bound = 3 * lines + lines * (len(table.columns) + table.fixed_columns + 1)
        if enabled(TABLE_CACHES):
            assert table.cached_renders <= bound
        else:  # every minute's lines and rows are kept (the stock run checks the test)
            assert table.cached_renders > 40 * visible_rows(table)


class LateColumns(App[None]):
    """A table laid out before it has columns, as a table whose columns follow its data."""

    def __init__(self, fixed_columns: int = 0, labels: bool = False) -> None:
        super().__init__()
        self.fixed_columns = fixed_columns
        self.labels = labels

    def compose(self) -> ComposeResult:
        table = CellCachedDataTable[str](fixed_columns=self.fixed_columns)
        table.styles.height = "1fr"  # not as tall as its rows: no resize as they come
        yield table

    def fill(self, rows: int = 20, columns: int = 12) -> CellCachedDataTable[str]:
        table = self.query_one(CellCachedDataTable)
        for column in range(columns):
            table.add_column(f"c{column}", key=f"c{column}")
        for row in range(rows):
            table.add_row(
                *(f"{row:02}.{column}" for column in range(columns)),
                key=f"r{row}",
                label=f"#{row}" if self.labels else None,
            )
        return table


async def cells_rendered_by_one_change(
    pilot: Pilot[None], table: CellCachedDataTable[str], column: str = "c0"
) -> int:
    before = table.cell_renders
    table.update_cell("r0", column, "99.9")
    await pilot.pause()
    await pilot.pause()
    assert table.get_cell("r0", column) == "99.9"
    return table.cell_renders - before


async def change_every_cell(
    pilot: Pilot[None], table: CellCachedDataTable[str], rows: int, columns: int
) -> None:
    """Twice, each time drawn: what the cell cache holds then is more than it may keep."""
    for mark in ":;":
        for row in range(rows):
            for column in range(columns):
                table.update_cell(f"r{row}", f"c{column}", f"{row:02}{mark}{column}")
        await pilot.pause()
        await pilot.pause()


@pytest.mark.patch("cell_cache")
async def test_columns_added_after_the_layout_widen_what_the_table_keeps() -> None:
    """The cells' bound is the lines' times the columns: a table whose columns come after its
    first layout keeps every cell it shows, and a change renders that one cell again, also
    once the cache is full (each render through Rich is counted, not the cache's growth)."""
    app = LateColumns()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        # Rows that fit: no scroll bar comes, whose resize would render every cell anew.
        table = app.fill(rows=20)
        await pilot.pause()
        await pilot.pause()
        await change_every_cell(pilot, table, rows=20, columns=12)
        assert await cells_rendered_by_one_change(pilot, table) == 1


@pytest.mark.patch("cell_cache")
async def test_a_table_made_taller_keeps_every_cell_it_shows() -> None:
    """The caches are bound again at each size: a table made taller keeps the cells of all
    its rows on screen (a full cache of Textual's keeps the size it filled to)."""
    app = LateColumns()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.fill(rows=60)
        await pilot.pause()
        await pilot.pause()
        await change_every_cell(pilot, table, rows=20, columns=12)
        await pilot.resize_terminal(120, 50)
        await pilot.pause()
        await pilot.pause()
        # The first change after a resize renders every cell anew (DataTable's own resize
        # moves its update counter); the next renders the one cell that changed.
        await cells_rendered_by_one_change(pilot, table)
        assert await cells_rendered_by_one_change(pilot, table, "c1") == 1


@pytest.mark.patch("cell_cache")
async def test_fixed_columns_and_row_labels_keep_every_cell_they_show() -> None:
    """A frame renders a fixed column's cells twice and a label for each row: the bound
    counts them, or the least recently used cache loses what each frame reads."""
    app = LateColumns(fixed_columns=1, labels=True)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.fill(rows=60, columns=3)
        await pilot.pause()
        await pilot.pause()
        assert await cells_rendered_by_one_change(pilot, table, "c2") == 1


def rows_holding_cells(table: DataTable[Any]) -> int:
    return sum(any(cell is not None for cell in table.get_row_at(row)) for row in range(PROCESSES))


async def test_rows_added_off_screen_hold_no_cells_until_drawn() -> None:
    """A row's cells are a dozen Texts: the 1,000 rows hold only those a person has seen."""
    async with started() as (_app, pilot, widget, table):
        # The first fill's rows, at least a screenful; not the thousand.
        assert visible_rows(table) <= rows_holding_cells(table) <= 2 * 33
        assert set(table.get_row_at(PROCESSES - 1)) == {None}
        # A process that comes later and sorts last (the least memory) is off screen, yet
        # its columns are as wide as its cells, as DataTable would have measured them.
        running = processes()
        command = "python a_much_longer_job_name.py"
        late = replace(running[-1], pid=1, memory_used=0, command=command)
        widget.show(box((*running, late)))
        await pilot.pause()
        assert widget.rows[-1].cell("command") == command
        assert set(table.get_row_at(PROCESSES)) == {None}
        assert table.columns[ColumnKey("command")].content_width == len(f" {command}")


async def test_a_render_makes_the_cells_of_the_rows_it_draws_first() -> None:
    """Whatever brings rows into view, the render itself first hands them to the table's
    owner, which makes the cells they lack."""
    async with started() as (_app, pilot, widget, table):
        hook = table.before_render
        assert hook is not None
        asked: list[tuple[int, int]] = []

        def recording(start: int, end: int) -> None:
            asked.append((start, end))
            hook(start, end)

        table.before_render = recording
        table.render_lines(Region(0, 0, table.size.width, table.size.height))
        assert asked == [(0, visible_rows(table))]
        # Scrolled, a crop that starts below the header line: the rows those lines show.
        table.scroll_to(y=500, animate=False)
        await pilot.pause()
        top = table.scroll_offset.y
        assert top == 500
        asked.clear()
        table.render_lines(Region(0, 10, table.size.width, 5))
        assert asked == [(top + 9, top + 14)]
        # Rows 800-820 were never on screen: handed over, their cells are made.
        assert set(table.get_row_at(810)) == {None}
        hook(800, 820)
        for row in range(800, 820):
            assert time_cell(table, row) == widget.rows[row].cell("time")
        assert set(table.get_row_at(820)) == {None}


def drawn_text(strips: list[Strip]) -> list[str]:
    return [strip.text for strip in strips]


async def test_a_taller_terminal_never_shows_an_empty_row() -> None:
    """The first frame after a resize is drawn before the table hears of its new height:
    the rows it newly shows were never drawn, yet come with their cells."""
    async with started(20) as (_app, pilot, widget, table):
        frames: list[tuple[Region, list[str]]] = []
        render_lines = table.render_lines

        def recording(crop: Region) -> list[Strip]:
            strips = render_lines(crop)
            frames.append((crop, drawn_text(strips)))
            return strips

        table.render_lines = recording  # type: ignore[method-assign]
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.pause()
        rows = visible_rows(table)
        assert rows > 30
        # Every line a row stands on, in every frame drawn since the resize, shows its row.
        seen = set()
        for crop, texts in frames:
            for y, text in zip(range(crop.y, crop.bottom), texts, strict=True):
                if 1 <= y <= rows:
                    seen.add(y)
                    assert text.strip(), f"line {y} drawn empty"
        assert seen == set(range(1, rows + 1))
        assert (
            str(widget.rows[rows - 1].process.pid)
            in drawn_text(render_lines(Region(0, rows, 120, 1)))[0]
        )


def with_user(row: int, user: str) -> Snapshot:
    running = list(processes())
    running[row] = replace(running[row], user=user)
    return box(tuple(running))


async def test_a_column_shrinks_after_a_theme_change_too() -> None:
    """A theme change leaves every row's cells to be made again as it comes into view; a
    row off screen still holding a wide cell made before it must not keep its column wide
    once that cell's text is narrower."""
    async with started() as (app, pilot, widget, table):
        user = table.columns[ColumnKey("user")]
        widget.show(with_user(900, "averyveryverylongusername"))
        await pilot.pause()
        wide = user.content_width
        assert wide == len(" averyveryverylongusername")
        # Row 900 drawn (its cells made), then off screen again.
        await pilot.press("ctrl+end")
        await pilot.pause()
        await pilot.press("ctrl+home")
        await pilot.pause()
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        widget.show(with_user(900, "u"))
        await pilot.pause()
        await pilot.pause()
        assert user.content_width < wide
