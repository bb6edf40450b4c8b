"""Pilot tests of the process table on boxes running pods and jobs: the owner columns, sort
and filter on them, one line per pod (``p``) that Enter expands, and the cursor staying on
what it was on across refreshes and grouping."""

from __future__ import annotations

import dataclasses
import signal

from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from gputop.model import Snapshot
from gputop.ui.render.process_rows import COLUMN_INDEX, GroupRow
from gputop.ui.screens.help import help_sections
from gputop.ui.widgets.process_details import ProcessDetails
from gputop.ui.widgets.process_table import ProcessTable
from support.pods import GIB, NOW, inside_pod, k8s_node, slurm_node

LLAMA_POD = "pod:ml/llama-70b-inference-6f7d9c8b5-x2kq9"
BERT_POD = "pod:research/bert-finetune-0"


class Kills:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, pid: int, sig: int) -> None:
        self.calls.append((pid, sig))


class TableApp(App[None]):
    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.kills = Kills()

    def compose(self) -> ComposeResult:
        yield ProcessTable(kill=self.kills, clock=lambda: NOW)

    def on_mount(self) -> None:
        self.query_one(ProcessTable).show(self.snapshot)
        self.query_one(DataTable).focus()


def table(app: App[None]) -> ProcessTable:
    return app.query_one(ProcessTable)


def shown(app: App[None]) -> list[str]:
    """Row keys in the order the DataTable itself draws them."""
    grid = app.query_one(DataTable)
    return [
        str(grid.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value)
        for i in range(grid.row_count)
    ]


def cursor(app: App[None]) -> str | None:
    line = table(app).highlighted_line
    return None if line is None else line.key_text


def status(app: App[None]) -> str:
    return str(app.query_one("#process-status").render())


def footer_keys(app: App[None]) -> set[str]:
    return {binding.key for (_, binding, enabled, _) in app.screen.active_bindings.values()
            if enabled and binding.show}  # fmt: skip


async def test_owner_columns_come_with_the_first_pod_and_go_with_the_last() -> None:
    plain = dataclasses.replace(
        k8s_node(),
        gpus=tuple(
            dataclasses.replace(
                gpu, processes=tuple(dataclasses.replace(p, owner=None) for p in gpu.processes)
            )
            for gpu in k8s_node().gpus
        ),
    )
    app = TableApp(plain)
    async with app.run_test(size=(140, 20)) as pilot:
        widget = table(app)
        assert "pod" not in widget.columns
        assert "p" not in footer_keys(app)
        widget.show(k8s_node())
        await pilot.pause()
        assert widget.columns[:6] == ["gpu", "pid", "user", "pod", "container", "type"]
        assert "job" not in widget.columns  # no process has a Slurm job
        assert "p" in footer_keys(app)
        grid = app.query_one(DataTable)
        assert grid.get_cell("1:52044", "pod").plain.strip() == "bert-finetune-0"
        assert grid.get_cell("1:52044", "container").plain.strip() == "profiler"
        assert grid.get_cell("0:1893", "pod").plain.strip() == "n/a"
        # Sorted by POD, the pods go away: GPU MEM stands in, POD comes back with them.
        widget.sort_by(COLUMN_INDEX["pod"])
        await pilot.pause()
        assert [r.process.pid for r in widget.rows] == [52010, 52044, 41001, 41002, 1893]
        widget.show(plain)
        await pilot.pause()
        assert "pod" not in widget.columns
        assert widget.sort_column == COLUMN_INDEX["gpu_memory"]
        widget.show(k8s_node())
        await pilot.pause()
        assert widget.sort_column == COLUMN_INDEX["pod"]


async def test_narrow_terminals_keep_pod_and_drop_container_first() -> None:
    app = TableApp(k8s_node())
    async with app.run_test(size=(110, 20)) as pilot:
        widget = table(app)
        assert "pod" in widget.columns and "container" not in widget.columns
        assert "cpu" in widget.columns
        await pilot.resize_terminal(80, 20)
        await pilot.pause()
        assert widget.columns == ["gpu", "pid", "user", "pod", "type", "gpu_memory", "sm",
                                  "time", "command"]  # fmt: skip
        # COMMAND keeps room: the table does not scroll sideways at 80 columns.
        grid = app.query_one(DataTable)
        assert grid.virtual_size.width <= 80
        await pilot.resize_terminal(140, 20)
        await pilot.pause()
        assert "container" in widget.columns


async def test_a_slurm_box_shows_the_job_column_and_groups_by_job() -> None:
    app = TableApp(slurm_node())
    async with app.run_test(size=(120, 20)) as pilot:
        widget = table(app)
        assert "job" in widget.columns and "pod" not in widget.columns
        await pilot.press("p")
        await pilot.pause()
        assert shown(app) == ["job:4242017", "0:8100"]
        line = widget.lines[0]
        assert isinstance(line, GroupRow)
        assert line.cell("command") == "2 processes in Slurm job 4242017"
        assert line.cell("user") == "dave"


async def test_p_groups_by_pod_and_enter_expands_and_collapses() -> None:
    app = TableApp(k8s_node())
    async with app.run_test(size=(140, 20)) as pilot:
        widget = table(app)
        assert shown(app) == ["0:41001", "1:41002", "1:52010", "1:52044", "0:1893"]
        await pilot.press("p")
        await pilot.pause()
        assert widget.grouped
        assert shown(app) == [LLAMA_POD, BERT_POD, "0:1893"]
        assert "5 of 5 processes" in status(app) and "2 groups" in status(app)
        grid = app.query_one(DataTable)
        assert grid.get_cell(LLAMA_POD, "gpu").plain.strip() == "▸ 0,1"
        assert grid.get_cell(LLAMA_POD, "gpu_memory").plain.strip() == "59.0GiB"
        assert [r.process.pid for r in widget.rows] == [1893]  # only process lines
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ProcessDetails)
        assert shown(app) == [LLAMA_POD, BERT_POD, "1:52010", "1:52044", "0:1893"]
        assert grid.get_cell(BERT_POD, "gpu").plain.strip() == "▾ 1"
        assert cursor(app) == BERT_POD
        # Enter on one of its processes shows that process's details.
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetails)
        assert dict(app.screen.fields)["Container, pod or job"].startswith(
            "pod research/bert-finetune-0 container trainer"
        )
        await pilot.press("escape", "up", "enter")
        await pilot.pause()
        assert shown(app) == [LLAMA_POD, BERT_POD, "0:1893"]
        await pilot.press("p")
        await pilot.pause()
        assert not widget.grouped
        assert len(shown(app)) == 5


async def test_sort_and_reverse_order_the_groups_and_their_processes() -> None:
    app = TableApp(k8s_node())
    async with app.run_test(size=(140, 20)) as pilot:
        widget = table(app)
        widget.expanded.add(BERT_POD)
        await pilot.press("p", "r")  # GPU MEM, smallest first
        await pilot.pause()
        assert shown(app) == ["0:1893", BERT_POD, "1:52044", "1:52010", LLAMA_POD]
        widget.sort_by(COLUMN_INDEX["time"])  # longest running first
        await pilot.pause()
        assert shown(app) == ["0:1893", LLAMA_POD, BERT_POD, "1:52010", "1:52044"]


async def test_the_filter_finds_pods_by_namespace_and_container_grouped_or_not() -> None:
    app = TableApp(k8s_node())
    async with app.run_test(size=(140, 20)) as pilot:
        await pilot.press("/", *"research")
        await pilot.pause()
        assert shown(app) == ["1:52010", "1:52044"]
        await pilot.press("enter", "p")
        await pilot.pause()
        assert shown(app) == [BERT_POD]
        assert "2 of 5 processes" in status(app)
        await pilot.press("/", *("backspace",) * len("research"), *"profiler", "enter")
        await pilot.pause()
        assert table(app).filter_text == "profiler"
        assert shown(app) == [BERT_POD]
        grid = app.query_one(DataTable)
        assert grid.get_cell(BERT_POD, "gpu_memory").plain.strip() == "300MiB"
        assert grid.get_cell(BERT_POD, "container").plain.strip() == "profiler"


async def test_the_cursor_follows_its_process_into_its_group_and_back() -> None:
    app = TableApp(k8s_node())
    async with app.run_test(size=(140, 20)) as pilot:
        widget = table(app)
        await pilot.press("down", "down", "down")
        assert cursor(app) == "1:52044"
        await pilot.press("p")
        await pilot.pause()
        assert cursor(app) == BERT_POD
        # A refresh that moves the group keeps the cursor on it.
        node = k8s_node()
        gpu1 = node.gpus[1]
        heavier = tuple(
            dataclasses.replace(p, memory_used=70 * GIB) if p.pid == 52010 else p
            for p in gpu1.processes
        )
        grown = dataclasses.replace(
            node, gpus=(node.gpus[0], dataclasses.replace(gpu1, processes=heavier))
        )
        widget.show(grown)
        await pilot.pause()
        assert shown(app)[0] == BERT_POD
        assert cursor(app) == BERT_POD
        assert app.query_one(DataTable).cursor_row == 0
        # One line per process again: the group's first process, in display order.
        await pilot.press("p")
        await pilot.pause()
        assert cursor(app) == "1:52010"
        # An expanded group keeps the cursor on its process when grouping comes back.
        widget.expanded.add(BERT_POD)
        await pilot.press("p")
        await pilot.pause()
        assert cursor(app) == "1:52010"
        assert shown(app)[:3] == [BERT_POD, "1:52010", "1:52044"]


async def test_a_group_is_not_signalled() -> None:
    app = TableApp(k8s_node())
    results: list[ProcessTable.SignalResult] = []

    def hook(message: object) -> None:
        if isinstance(message, ProcessTable.SignalResult) and all(
            m is not message for m in results
        ):
            results.append(message)

    async with app.run_test(size=(140, 20), message_hook=hook) as pilot:
        await pilot.press("p", "k")
        await pilot.pause()
        assert app.kills.calls == []
        assert [(r.pid, r.sig) for r in results] == [(None, signal.SIGTERM)]
        error = results[0].error
        assert error is not None and "not one process" in error and "Enter" in error


async def test_help_lists_the_grouping_key() -> None:
    rows = dict(dict(help_sections([]))["Processes"])
    assert rows["p"] == "Group by pod"
    assert "expand" in rows["Enter"]


async def test_pod_lines_draw_at_every_width() -> None:
    """Grouped, one pod expanded, down to one column: every width draws (a cut of a pod's
    line, its ▾ marker or the GPU list never indexes past its end)."""
    app = TableApp(k8s_node())
    async with app.run_test(size=(160, 12)) as pilot:
        widget = table(app)
        widget.expanded.add(BERT_POD)
        await pilot.press("p")
        for width in range(160, 0, -3):
            await pilot.resize_terminal(width, 12)
            await pilot.pause()
            assert shown(app) == [LLAMA_POD, BERT_POD, "1:52010", "1:52044", "0:1893"]
            lines = [strip.text for strip in app.screen._compositor.render_strips()]
            assert len(lines) == 12 and all(len(line) == width for line in lines)


async def test_inside_a_pod_a_line_says_which_and_what_the_others_hold() -> None:
    app = TableApp(k8s_node())
    async with app.run_test(size=(140, 20)) as pilot:
        # Not in a container: no line, not even a hidden one.
        assert not app.query("#process-container")
        table(app).show(inside_pod())
        await pilot.pause()
        line = app.query_one("#process-container")
        assert line.display
        text = str(line.render())
        assert text.startswith("Given GPU 0 · other containers: 3 processes, 32.5GiB · pod ")
        assert text.endswith("research/finetune-7c9f5d4b8-qk2lm, container trainer")
        # The table moves down a line for it, and back when it goes.
        assert app.query_one(DataTable).region.y == 2
        table(app).show(k8s_node())
        await pilot.pause()
        assert not line.display
        assert app.query_one(DataTable).region.y == 1
