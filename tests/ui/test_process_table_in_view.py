"""The process table tells the sampler which processes are on screen (``Tick.in_view``):
the rows its height shows, following scrolling and sorting; every process while the MIG tree
(which lists them all) is open."""

from __future__ import annotations

import dataclasses

from textual.widgets import DataTable

from gputop.cli.tui import tui_pipeline
from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.in_view import InView
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.widgets.process_table import ProcessTable
from support.apps import FIXED_SETTINGS, CyclingSource

MIB = 1024**2
PROCESSES = 120


def _box() -> Snapshot:
    # Sorted by GPU memory (the default): PID 1000 first, 1119 last.
    processes = tuple(
        ProcessSample(pid=1000 + i, type="C", name="python3", memory_used=(PROCESSES - i) * MIB)
        for i in range(PROCESSES)
    )
    gpu = GpuSample(index=0, name="NVIDIA H100", processes=processes)
    return Snapshot(timestamp=None, gpus=(gpu,))


def _app(in_view: InView) -> GputopApp:
    loop = ManualLoop(tui_pipeline(LiveFeed(CyclingSource([_box()])), in_view=in_view))
    return GputopApp(loop, dataclasses.replace(FIXED_SETTINGS, readonly=True))


async def test_the_rows_on_screen_are_what_the_sampler_reads_every_tick() -> None:
    in_view = InView()
    app = _app(in_view)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(ProcessTable)
        # The table says what it shows after a refresh, and the first layouts may still
        # change its height: wait until what it said is what it shows (a loaded machine
        # takes more than one pause), rather than read the first answer.
        for _ in range(50):
            if in_view.pids() == table.pids_on_screen():
                break
            await pilot.pause(0.02)
        shown = in_view.pids()
        assert shown is not None
        lines = len(shown)
        # The first rows by memory, as many as the table's height holds.
        assert 10 < lines < PROCESSES
        assert shown == frozenset(range(1000, 1000 + lines))
        assert shown == table.pids_on_screen()

        grid = table.query_one("#process-data", DataTable)
        grid.move_cursor(row=PROCESSES - 1, animate=False)  # scrolls the last row into view
        await pilot.pause()
        assert in_view.pids() == frozenset(range(1000 + PROCESSES - lines, 1000 + PROCESSES))

        table.sort_by(table.sort_column, reverse=False)  # smallest first: the same rows
        await pilot.pause()
        assert 1119 in (in_view.pids() or ())

        await pilot.press("m")  # the MIG tree lists every process
        await pilot.pause()
        assert in_view.pids() is None
        await pilot.press("m")
        await pilot.pause()
        assert in_view.pids() == table.pids_on_screen()
