"""Pilot tests of the process table: every key, the diff across ticks, and signals."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Callable
from dataclasses import replace

import pytest
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.message import Message
from textual.notifications import Notification, Notify
from textual.widgets import DataTable, Input
from textual.widgets.data_table import ColumnKey

from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.ui.render.process_rows import COLUMN_INDEX, COLUMNS, OWNER_COLUMNS
from gputop.ui.widgets.process_details import ProcessDetails
from gputop.ui.widgets.process_table import ProcessTable
from gputop.ui.widgets.signal_dialog import SignalDialog
from support.shortcuts import highlighted_process

NOW = 1_700_000_000.0
MIB = 1024**2
GIB = 1024**3

ALICE = ProcessSample(
    pid=2314, type="C", name="python", memory_used=18 * GIB, sm_utilization=87.0,
    user="alice", command="python train.py --epochs 90", cpu_percent=101.0,
    host_memory=6 * GIB, start_time=NOW - 7300,
)  # fmt: skip
XORG = ProcessSample(
    pid=1893, type="G", name="/usr/lib/xorg/Xorg", memory_used=112 * MIB, sm_utilization=0.0,
    user="root", command="/usr/lib/xorg/Xorg vt1", cpu_percent=1.0, host_memory=95 * MIB,
    start_time=NOW - 3 * 86400,
)  # fmt: skip
BOB = ProcessSample(
    pid=4410, type="C+G", name="blender", memory_used=3 * GIB, sm_utilization=12.0,
    user="bob", command="blender -b scene.blend", cpu_percent=30.0, host_memory=2 * GIB,
    start_time=NOW - 600, local_pid=44,
)  # fmt: skip
FOREIGN = ProcessSample(pid=51234, type="C", name="python3", memory_used=7 * GIB, foreign=True)


def snap(gpu0: tuple[ProcessSample, ...], gpu1: tuple[ProcessSample, ...] = ()) -> Snapshot:
    return Snapshot(
        timestamp=None,
        gpus=(GpuSample(index=0, processes=gpu0), GpuSample(index=1, processes=gpu1)),
    )


BASE = snap((ALICE, XORG), (BOB, FOREIGN))


class FakeKill:
    """Records signals instead of sending them; optionally fails like os.kill."""

    def __init__(self, error: OSError | None = None) -> None:
        self.calls: list[tuple[int, int]] = []
        self.error = error

    def __call__(self, pid: int, sig: int) -> None:
        self.calls.append((pid, sig))
        if self.error is not None:
            raise self.error


class TableApp(App[None]):
    def __init__(
        self, snapshot: Snapshot = BASE, readonly: bool = False, kill: FakeKill | None = None
    ) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.readonly = readonly
        self.kill = kill or FakeKill()

    def compose(self) -> ComposeResult:
        yield ProcessTable(readonly=self.readonly, kill=self.kill, clock=lambda: NOW)

    def on_mount(self) -> None:
        self.query_one(ProcessTable).show(self.snapshot)
        self.query_one(DataTable).focus()


def pids(app: App[None]) -> list[int]:
    return [row.process.pid for row in app.query_one(ProcessTable).rows]


def displayed_pids(app: App[None]) -> list[str]:
    """PIDs as the DataTable itself orders them (not the widget's bookkeeping)."""
    table = app.query_one(DataTable)
    return [table.get_row_at(i)[COLUMN_INDEX["pid"]].plain.strip() for i in range(table.row_count)]


def labels(app: App[None]) -> dict[str, str]:
    """Header text per column key, without the padding."""
    columns = app.query_one(DataTable).columns
    return {str(key.value): column.label.plain.strip() for key, column in columns.items()}


def status(app: App[None]) -> str:
    return str(app.query_one("#process-status").render())


def results_hook(sink: list[ProcessTable.SignalResult]) -> Callable[[Message], None]:
    def hook(message: Message) -> None:
        # A bubbling message reaches the hook once per node it passes through.
        if isinstance(message, ProcessTable.SignalResult) and all(m is not message for m in sink):
            sink.append(message)

    return hook


async def test_default_sort_is_gpu_memory_largest_first() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert pids(app) == [2314, 51234, 4410, 1893]
        assert displayed_pids(app) == ["2314", "51234", "4410", "1893"]
        assert "4 of 4 processes" in status(app)
        assert "1 not in this PID namespace" in status(app)
        assert "sort GPU MEM ▼" in status(app)
        assert labels(app)["gpu_memory"] == "GPU MEM▼"


async def test_a_status_line_too_long_for_the_terminal_ends_in_an_ellipsis() -> None:
    app = TableApp(readonly=True)
    async with app.run_test(size=(60, 24)) as pilot:
        await pilot.pause()
        line = app.query_one("#process-status").render_line(0).text.rstrip()
        whole = status(app)
    assert len(whole) > 60 and whole.endswith("read-only")
    assert line.endswith("…") and len(line) <= 60
    assert line.startswith("4 of 4 processes")


async def test_sort_keys_move_the_column() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(ProcessTable)
        await pilot.press(">")
        assert table.sort_column == COLUMN_INDEX["sm"]
        assert table.sort_reverse
        assert pids(app) == [2314, 4410, 1893, 51234]  # unknown SM% last
        assert displayed_pids(app) == ["2314", "4410", "1893", "51234"]
        await pilot.press("<", "<")
        assert table.sort_column == COLUMN_INDEX["type"]
        assert not table.sort_reverse
        assert pids(app)[:2] == [2314, 51234]  # C, C, then C+G, G
        assert pids(app)[2:] == [4410, 1893]
        assert labels(app)["type"] == "TYPE▲"
        assert labels(app)["gpu_memory"] == "GPU MEM"
        await pilot.press("<", "<", "<", "<")
        assert table.sort_column == len(COLUMNS) - 1  # wraps round to COMMAND


async def test_reverse() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        await pilot.press("r")
        assert not app.query_one(ProcessTable).sort_reverse
        assert pids(app) == [1893, 4410, 51234, 2314]
        assert "sort GPU MEM ▲" in status(app)
        await pilot.press("r")
        assert pids(app) == [2314, 51234, 4410, 1893]


async def header_offset(app: App[None], column: str) -> tuple[int, int]:
    table = app.query_one(DataTable)
    x = 0
    for key, spec in table.columns.items():
        if key.value == column:
            return (x + 1, 0)
        x += spec.get_render_width(table)
    raise AssertionError(column)


async def test_header_click_sorts_and_reverses() -> None:
    app = TableApp()
    async with app.run_test(size=(140, 20)) as pilot:
        table = app.query_one(ProcessTable)
        await pilot.click(DataTable, offset=await header_offset(app, "pid"))
        await pilot.pause()
        assert table.sort_column == COLUMN_INDEX["pid"]
        assert pids(app) == [1893, 2314, 4410, 51234]
        await pilot.click(DataTable, offset=await header_offset(app, "pid"))
        await pilot.pause()
        assert pids(app) == [51234, 4410, 2314, 1893]
        await pilot.click(DataTable, offset=await header_offset(app, "user"))
        await pilot.pause()
        assert table.sort_column == COLUMN_INDEX["user"]
        assert pids(app) == [2314, 4410, 1893, 51234]  # alice bob root, then no user


async def test_filter_typing_enter_and_escape() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(ProcessTable)
        # The filter input exists only once asked for (it costs the first frame time).
        assert not app.query("#process-filter-bar")
        await pilot.press("/")
        field = app.query_one("#process-filter", Input)
        bar = app.query_one("#process-filter-bar")
        assert bar.display
        assert field.has_focus
        await pilot.press(*"python")
        await pilot.pause()
        assert table.filter_text == "python"
        assert pids(app) == [2314, 51234]
        assert "2 of 4 processes" in status(app)
        assert "filter “python”" in status(app)
        await pilot.press("enter")
        assert app.query_one(DataTable).has_focus
        assert bar.display  # the filter stays visible while it applies
        assert pids(app) == [2314, 51234]
        await pilot.press("escape")
        await pilot.pause()
        assert table.filter_text == ""
        assert not bar.display
        assert pids(app) == [2314, 51234, 4410, 1893]


async def test_filter_matches_pid_gpu_and_user_and_escape_in_input() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        await pilot.press("/", *"4410")
        await pilot.pause()
        assert pids(app) == [4410]
        await pilot.press("escape")
        await pilot.pause()
        assert pids(app) == [2314, 51234, 4410, 1893]
        assert app.query_one(DataTable).has_focus
        await pilot.press("/", *"other ns")
        await pilot.pause()
        assert pids(app) == [51234]
        await pilot.press("escape", "/", *"root")
        await pilot.pause()
        assert pids(app) == [1893]


async def test_escape_passes_through_without_a_filter() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        assert "escape" not in app.screen.active_bindings
        await pilot.press("/")
        assert "escape" in app.screen.active_bindings


async def test_toggle_type() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(ProcessTable)
        await pilot.press("t")
        assert table.type_filter.value == "compute"
        assert pids(app) == [2314, 51234, 4410]
        assert "type compute" in status(app)
        await pilot.press("t")
        assert pids(app) == [4410, 1893]
        await pilot.press("t")
        assert table.type_filter.value == "all"
        assert len(pids(app)) == 4


async def test_enter_shows_details_of_the_highlighted_process() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetails)
        fields = dict(app.screen.fields)
        assert fields["PID (driver)"] == "4410"
        assert fields["PID here"] == "44"
        assert fields["Command"] == "blender -b scene.blend"
        assert fields["Running for"] == "10:00"
        assert fields["GPU"] == "1"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ProcessDetails)


async def test_signal_confirmed_goes_to_the_fake_kill() -> None:
    kill = FakeKill()
    results: list[ProcessTable.SignalResult] = []
    app = TableApp(kill=kill)
    async with app.run_test(message_hook=results_hook(results)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, SignalDialog)
        assert app.screen.pid == 2314
        assert app.screen.sig is signal.SIGTERM
        await pilot.press("y")
        await pilot.pause()
        assert kill.calls == [(2314, signal.SIGTERM)]
        assert [(r.pid, r.sig, r.error) for r in results] == [(2314, signal.SIGTERM, None)]


async def test_kill_and_int_and_the_local_pid() -> None:
    kill = FakeKill()
    app = TableApp(kill=kill)
    async with app.run_test() as pilot:
        await pilot.press("K")
        await pilot.pause()
        assert isinstance(app.screen, SignalDialog)
        await pilot.click("#signal-send")
        await pilot.pause()
        await pilot.press("down", "down", "i")  # BOB: driver PID 4410, 44 here
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert kill.calls == [(2314, signal.SIGKILL), (44, signal.SIGINT)]


async def test_signal_cancelled() -> None:
    kill = FakeKill()
    app = TableApp(kill=kill)
    async with app.run_test() as pilot:
        await pilot.press("k")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, SignalDialog)
        await pilot.press("k")
        await pilot.pause()
        await pilot.press("enter")  # Cancel has the focus
        await pilot.pause()
        await pilot.press("k")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert kill.calls == []
        assert highlighted_process(app.query_one(ProcessTable)) is not None


async def signal_error(error: OSError) -> tuple[FakeKill, list[ProcessTable.SignalResult]]:
    kill = FakeKill(error)
    results: list[ProcessTable.SignalResult] = []
    notes: list[Notification] = []
    record_result = results_hook(results)

    def hook(message: Message) -> None:
        record_result(message)
        if isinstance(message, Notify):
            notes.append(message.notification)

    app = TableApp(kill=kill)
    async with app.run_test(message_hook=hook) as pilot:
        await pilot.press("k")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    error_text = results[-1].error
    assert error_text is not None
    assert [(n.severity, n.message) for n in notes] == [
        ("error", f"SIGTERM to PID 2314: {error_text}")
    ]
    return kill, results


async def test_permission_denied_is_said_plainly() -> None:
    kill, results = await signal_error(PermissionError(1, "Operation not permitted"))
    assert kill.calls == [(2314, signal.SIGTERM)]
    assert results[-1].error == "not permitted to signal PID 2314 (it belongs to alice)"


async def test_process_gone_at_kill_time() -> None:
    _, results = await signal_error(ProcessLookupError(3, "No such process"))
    assert results[-1].error == "process has exited"


async def test_process_gone_from_the_snapshot_while_asking() -> None:
    kill = FakeKill()
    results: list[ProcessTable.SignalResult] = []
    app = TableApp(kill=kill)
    async with app.run_test(message_hook=results_hook(results)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        app.query_one(ProcessTable).show(snap((XORG,), (BOB, FOREIGN)))
        await pilot.press("y")
        await pilot.pause()
        assert kill.calls == []
        assert results[-1].error == "process has exited"


async def test_pid_reused_by_a_new_process_while_asking() -> None:
    kill = FakeKill()
    results: list[ProcessTable.SignalResult] = []
    app = TableApp(kill=kill)
    async with app.run_test(message_hook=results_hook(results)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        newborn = replace(ALICE, start_time=NOW - 1, command="something else")
        app.query_one(ProcessTable).show(snap((newborn, XORG), (BOB, FOREIGN)))
        await pilot.press("y")
        await pilot.pause()
        assert kill.calls == []
        assert results[-1].error == "process has exited"


async def test_foreign_process_is_not_signalled() -> None:
    kill = FakeKill()
    results: list[ProcessTable.SignalResult] = []
    app = TableApp(kill=kill)
    async with app.run_test(message_hook=results_hook(results)) as pilot:
        await pilot.press("down", "k")
        await pilot.pause()
        assert not isinstance(app.screen, SignalDialog)
        assert kill.calls == []
        assert results[-1].pid == 51234
        assert results[-1].error == "not in this PID namespace"


async def test_readonly_hides_and_refuses_the_signal_keys() -> None:
    kill = FakeKill()
    app = TableApp(readonly=True, kill=kill)
    async with app.run_test() as pilot:
        active = app.screen.active_bindings
        assert not {"k", "K", "i"} & set(active)
        assert {"slash", "r", "t"} <= set(active)
        await pilot.press("k", "K", "i")
        await pilot.pause()
        assert not isinstance(app.screen, SignalDialog)
        assert kill.calls == []
        assert "read-only" in status(app)


async def test_signal_keys_shown_when_not_readonly_and_hidden_when_it_turns_readonly() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        assert {"k", "K", "i"} <= set(app.screen.active_bindings)
        assert "read-only" not in status(app)
        app.query_one(ProcessTable).readonly = True
        await pilot.pause()
        assert not {"k", "K", "i"} & set(app.screen.active_bindings)
        assert "read-only" in status(app)


async def test_refresh_keeps_the_cursor_on_the_same_process() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        widget = app.query_one(ProcessTable)
        table = app.query_one(DataTable)
        await pilot.press("down", "down")
        highlighted = highlighted_process(widget)
        assert highlighted is not None
        assert highlighted.process.pid == 4410
        # BOB grows to the top, ALICE leaves, a new process arrives.
        bigger = replace(BOB, memory_used=40 * GIB)
        newcomer = ProcessSample(pid=9999, type="C", memory_used=1 * GIB, user="zoe")
        widget.show(snap((XORG, newcomer), (bigger, FOREIGN)))
        await pilot.pause()
        assert pids(app) == [4410, 51234, 9999, 1893]
        assert displayed_pids(app) == ["4410", "51234", "9999", "1893"]
        highlighted = highlighted_process(widget)
        assert highlighted is not None
        assert highlighted.process.pid == 4410
        assert table.cursor_coordinate == Coordinate(0, 0)
        cell = table.get_cell("1:4410", "gpu_memory")
        assert cell.plain.strip() == "40.0GiB"


async def test_refresh_updates_changed_cells_in_place() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        widget = app.query_one(ProcessTable)
        table = app.query_one(DataTable)
        untouched = table.get_cell("0:1893", "command")
        hotter = replace(ALICE, sm_utilization=99.0)
        widget.show(snap((hotter, XORG), (BOB, FOREIGN)))
        await pilot.pause()
        assert table.get_cell("0:2314", "sm").plain.strip() == "99%"
        assert table.get_cell("0:1893", "command") is untouched


async def test_refresh_keeps_the_scroll_position() -> None:
    many = tuple(
        ProcessSample(pid=1000 + i, type="C", memory_used=(100 - i) * MIB, user="u")
        for i in range(60)
    )
    app = TableApp(snap(many))
    async with app.run_test(size=(100, 15)) as pilot:
        widget = app.query_one(ProcessTable)
        table = app.query_one(DataTable)
        for _ in range(30):
            await pilot.press("down")
        await pilot.pause()
        scrolled = table.scroll_y
        assert scrolled > 0
        grown = tuple(replace(p, memory_used=(p.memory_used or 0) + MIB) for p in many)
        widget.show(snap(grown))
        await pilot.pause()
        assert table.scroll_y == scrolled
        highlighted = highlighted_process(widget)
        assert highlighted is not None
        assert highlighted.process.pid == 1030


async def test_show_before_mount_and_empty_snapshot() -> None:
    class Early(App[None]):
        def compose(self) -> ComposeResult:
            table = ProcessTable(clock=lambda: NOW)
            table.show(BASE)
            yield table

    app = Early()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert len(pids(app)) == 4
        app.query_one(ProcessTable).show(Snapshot(timestamp=None))
        await pilot.pause()
        assert pids(app) == []
        assert app.query_one(DataTable).row_count == 0
        assert highlighted_process(app.query_one(ProcessTable)) is None


async def test_signal_with_no_rows_says_so() -> None:
    results: list[ProcessTable.SignalResult] = []
    app = TableApp(snap(()))
    async with app.run_test(message_hook=results_hook(results)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        assert results[-1].error == "no process selected"


async def test_theme_change_restyles_cells() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(DataTable)
        app.theme = "textual-dark"
        await pilot.pause()
        before = table.get_cell("1:51234", "user").style
        app.theme = "textual-light"
        await pilot.pause()
        after = table.get_cell("1:51234", "user").style
        assert before != after


async def test_narrow_terminal_drops_host_columns_and_sort_keys_skip_them() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        widget = app.query_one(ProcessTable)
        table = app.query_one(DataTable)
        assert widget.columns == [
            "gpu", "pid", "user", "type", "gpu_memory", "sm", "time", "command"
        ]  # fmt: skip
        assert widget.has_class("-narrow")
        await pilot.press(">", ">")
        assert widget.sort_column == COLUMN_INDEX["time"]
        await pilot.press("down")
        highlighted = highlighted_process(widget)
        assert highlighted is not None
        await pilot.resize_terminal(140, 24)
        await pilot.pause()
        # No process has a pod, container or job: their columns stay away.
        assert widget.columns == [c.key for c in COLUMNS if c.key not in OWNER_COLUMNS]
        assert not widget.has_class("-narrow")
        still = highlighted_process(widget)
        assert still is not None and still.key == highlighted.key
        assert labels(app)["time"] == "TIME▼"
        assert table.get_cell("0:2314", "cpu").plain.strip() == "101%"
        await pilot.press("<")
        assert widget.sort_column == COLUMN_INDEX["host_memory"]


async def test_a_tick_that_changes_numbers_repaints_only_the_cells_that_changed() -> None:
    from textual.geometry import Region

    from gputop.ui.widgets.process_grid import ProcessGrid

    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        widget = app.query_one(ProcessTable)
        grid = app.query_one(ProcessGrid)
        await pilot.pause()
        asked: list[tuple[Region, ...]] = []
        refresh = grid.refresh

        def spy(*regions: Region, **options: bool) -> ProcessGrid:
            if regions:
                asked.append(regions)
            return refresh(*regions, **options)

        grid.refresh = spy  # type: ignore[method-assign]
        wholes = grid.whole_repaints
        heavier = dataclasses.replace(BOB, memory_used=(BOB.memory_used or 0) + 2**20)
        widget.show(snap((ALICE, XORG), (heavier, FOREIGN)))
        await pilot.pause()
        # One region: BOB's GPU memory cell, not the cells left of it (resent for nothing
        # over ssh) nor right of it.
        memory = widget.columns.index("gpu_memory")
        widths = [column.get_render_width(grid) for column in grid.ordered_columns]
        row = displayed_pids(app).index(str(BOB.pid))
        region = Region(sum(widths[:memory]), row + grid.header_height, widths[memory], 1)
        assert asked == [(region,)]
        assert grid.whole_repaints == wholes
        # A new process moves rows: the whole table is repainted.
        newcomer = dataclasses.replace(BOB, pid=777, memory_used=1)
        widget.show(snap((ALICE, XORG), (heavier, FOREIGN, newcomer)))
        await pilot.pause()
        assert grid.whole_repaints > wholes
        assert "777" in displayed_pids(app)


async def test_an_empty_table_takes_a_screenful_first_and_the_rest_after_the_frame() -> None:
    import dataclasses

    from gputop.ui.widgets.process_table import MIN_FIRST_FILL

    many = tuple(
        dataclasses.replace(ALICE, pid=10_000 + n, memory_used=(200 - n) * MIB, command="python")
        for n in range(100)
    )
    # The widest command belongs to the row that sorts last, far below the first screenful.
    many = (*many[:-1], dataclasses.replace(many[-1], command="python " + "x" * 60))
    app = TableApp(snap(()))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        widget, table = app.query_one(ProcessTable), app.query_one(DataTable)
        widget.show(snap(many))
        # Synchronously: a screenful of rows (the terminal's height, at least the minimum)...
        assert table.row_count == max(30, MIN_FIRST_FILL) < 100
        assert "100 of 100 processes" in status(app)
        command = table.columns[ColumnKey("command")]
        # ...with every column already as wide as all the rows need.
        assert command.content_width == len(" python " + "x" * 60)
        await pilot.pause()
        assert table.row_count == 100
        assert pids(app) == [10_000 + n for n in range(100)]
        assert command.content_width == len(" python " + "x" * 60)
        # A table that already has rows takes a new tick's rows in one go.
        widget.show(snap((*many, dataclasses.replace(ALICE, pid=99, memory_used=1))))
        assert table.row_count == 101


WINDOWS_PYTHON = r"C:\Users\alice\AppData\Local\Programs\Python\Python311-64\python.exe"
TORCHRUN = "python -m torch.distributed.run --nproc_per_node 8 train.py --config llama.yaml"


def table_lines(app: App[None]) -> list[str]:
    """The table's rows as drawn (header first), without trailing blanks."""
    grid = app.query_one(DataTable)
    return [grid.render_line(y).text.rstrip() for y in range(grid.row_count + 1)]


def drawn_row(app: App[None], pid: int) -> str:
    return next(line for line in table_lines(app) if f" {pid} " in line)


@pytest.mark.patch("remeasured_table")
async def test_shrinking_and_growing_back_redraws_every_column_at_its_width() -> None:
    windows = replace(BOB, pid=5555, type="C", command=f"{WINDOWS_PYTHON} train.py")
    torchrun = replace(ALICE, pid=6666, command=TORCHRUN)
    app = TableApp(snap((ALICE, XORG, torchrun), (BOB, FOREIGN, windows)))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for size in [(80, 24), (120, 40), (80, 24)]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
            # Every column drawn at the header's width: COMMAND starts under its label.
            start = table_lines(app)[0].index("COMMAND")
            row = drawn_row(app, ALICE.pid)
            assert row[start:] == "python train.py --epochs 90"
            assert row[: start - 1].endswith(" 2h01m")
            narrow = size[0] == 80
            # COMMAND takes what the other columns leave, up to the last cell (the table is
            # short enough to need no scrollbar), and says where it was cut.
            long = drawn_row(app, torchrun.pid)
            assert len(long) == size[0]
            assert long[start:].startswith("python -m torch.distributed")
            assert long.endswith("…")
            # A Windows program is cut from the left: its name and arguments stay.
            shown = drawn_row(app, windows.pid)[start:]
            assert shown.endswith(r"\python.exe train.py")
            assert shown.startswith("…\\")
            assert ("Python311" in shown) != narrow


async def test_a_sort_column_hidden_by_a_narrow_terminal_gives_way_and_comes_back() -> None:
    app = TableApp()
    async with app.run_test(size=(140, 24)) as pilot:
        widget = app.query_one(ProcessTable)
        widget.sort_by(COLUMN_INDEX["cpu"])
        await pilot.pause()
        assert "sort CPU% ▼" in status(app)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert "cpu" not in widget.columns
        assert "sort GPU MEM ▼" in status(app)
        assert labels(app)["gpu_memory"] == "GPU MEM▼"
        assert pids(app) == [2314, 51234, 4410, 1893]
        await pilot.resize_terminal(140, 24)
        await pilot.pause()
        assert "sort CPU% ▼" in status(app)
        assert labels(app)["cpu"] == "CPU%▼"
        assert pids(app) == [2314, 4410, 1893, 51234]
