"""The keys an nvitop, htop or top user presses first: the process table reached at once,
Ctrl+C and ``h``, keys that say why they do nothing, and key presses faster than ticks."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.widgets import DataTable, Input

from gputop.cli.tui import tui_pipeline
from gputop.model import Snapshot
from gputop.pipeline.commands import Command
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.screens.help import HelpScreen
from gputop.ui.screens.history import HistoryScreen
from gputop.ui.screens.main import MainScreen
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.mig_tree import MigTree
from gputop.ui.widgets.process_table import ProcessTable
from support.apps import (
    FIXED_SETTINGS,
    CyclingSource,
    live_app,
    load,
    replay_app,
    varied_stream,
)
from support.shortcuts import highlighted_process

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
SIZE = (120, 40)


def four_gpus() -> Snapshot:
    return load(CAPTURES / "rtx3090x4-procs-v12.xml")


def footer_text(app: GputopApp) -> str:
    """The bottom line as drawn."""
    return app.screen._compositor.render_strips()[-1].text


def toasts(app: GputopApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


def panels(app: GputopApp) -> list[GpuPanel]:
    return list(app.main_screen.query(GpuPanel))


# -- item 19: the process table in one key ------------------------------------------------


async def test_the_arrows_select_a_process_at_once_and_the_footer_says_tab_for_gpus() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.main_screen.query_one(ProcessTable)
        assert isinstance(app.focused, DataTable)
        first = highlighted_process(table)
        await pilot.press("down")
        assert highlighted_process(table) is not None and highlighted_process(table) != first
        assert highlighted_process(table) == table.rows[1]
        # Said first, where even an 80-column footer has room.
        assert footer_text(app).startswith(" Tab GPUs ")


async def test_tab_goes_between_gpus_and_processes_and_the_arrows_move_within() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("tab")
        assert app.focused is panels(app)[0]
        assert " Tab Processes " in footer_text(app)
        await pilot.press("down", "down")
        assert app.focused is panels(app)[2]
        await pilot.press("tab")
        assert isinstance(app.focused, DataTable)
        # Back to the GPU the user left.
        await pilot.press("tab")
        assert app.focused is panels(app)[2]
        await pilot.press("up", "up", "up")
        assert app.focused is panels(app)[0]
        # Down from the last GPU row goes on to the processes.
        await pilot.press("down", "down", "down", "down")
        assert isinstance(app.focused, DataTable)
        await pilot.press("shift+tab")
        assert app.focused is panels(app)[3]


async def test_keys_read_together_with_tab_go_to_the_area_tab_reached() -> None:
    """`Tab Enter` in one read, as a slow ssh link delivers them: Enter is the GPU panel's
    (its history), not the process table's (a process's details)."""
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.focused, DataTable)
        # Both keys queued before either is handled, as the driver posts one read's keys.
        app.post_message(events.Key("tab", "\t"))
        app.post_message(events.Key("enter", "\r"))
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen), type(app.screen).__name__


async def test_down_moves_a_row_of_panels_in_two_columns_and_tab_reaches_the_mig_tree() -> None:
    app = replay_app(varied_stream(four_gpus(), 3))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        assert app.main_screen.wide
        await pilot.press("tab", "down")
        assert app.focused is panels(app)[2]
        await pilot.press("down")
        assert isinstance(app.focused, DataTable)
        await pilot.press("m", "tab")
        assert isinstance(app.focused, MigTree)
        await pilot.press("tab")
        assert isinstance(app.focused, GpuPanel)


async def test_the_help_says_how_to_reach_processes_and_gpus() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = dict(row for _, section in app.screen.sections for row in section)
        assert rows["↑ ↓"] == "Select a process"
        assert rows["↓"] == "Next GPU, then the processes"
        assert rows["Tab"].startswith("GPU panels, processes")


# -- item 20: Ctrl+C, h, and keys that say why they do nothing ----------------------------


async def test_ctrl_c_quits_with_status_zero_even_while_typing_a_filter() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value == 0
    typing = live_app([four_gpus()])
    async with typing.run_test(size=SIZE) as pilot:
        await pilot.press("slash", "x")
        assert isinstance(typing.focused, Input)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert typing.return_value == 0
    assert not any("quit" in text for text in toasts(typing))


async def test_h_opens_the_help_and_closes_it() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("h")
        assert isinstance(app.screen, MainScreen)


@pytest.mark.patch("withdraw_toast")
async def test_signal_keys_in_a_replay_say_why_nothing_is_sent() -> None:
    app = replay_app(varied_stream(four_gpus(), 3))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("k")
        await pilot.pause()
        assert toasts(app) == [
            "Signal not sent: SIGTERM: a replay's PIDs name no process on this machine"
        ]
        # From a GPU panel too, and each press replaces the last toast.
        await pilot.press("tab", "K", "i")
        await pilot.pause()
        assert len(toasts(app)) == 1 and "SIGINT: a replay's" in toasts(app)[0]


async def test_signal_keys_with_readonly_say_so() -> None:
    app = live_app([four_gpus()], readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await pilot.pause()
        assert toasts(app) == [
            "Signal not sent: SIGKILL: signals are off (gputop was started with --readonly)"
        ]


async def test_a_signal_key_away_from_the_processes_says_where_to_go() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("tab", "k")
        await pilot.pause()
        assert isinstance(app.focused, GpuPanel)
        assert toasts(app) == [
            "Signal not sent: SIGTERM: select a process first (Tab goes to the processes)"
        ]


# -- item 24: every press counts; one toast per kind --------------------------------------


class LaggingLoop(ManualLoop):
    """A loop whose answers come late, as a poller thread's do: commands wait for ``flush``."""

    def __init__(self, pipeline: Pipeline) -> None:
        super().__init__(pipeline)
        self.waiting: list[Command] = []

    def submit(self, command: Command) -> None:
        self.commands.append(command)
        self.waiting.append(command)

    def flush(self) -> None:
        for command in self.waiting:
            self.pipeline.apply(command)
        self.waiting.clear()
        self._on_tick(self.pipeline.tick())


async def test_interval_presses_faster_than_the_answers_all_count() -> None:
    loop = LaggingLoop(tui_pipeline(LiveFeed(CyclingSource([four_gpus()])), interval=0.25))
    app = GputopApp(loop, FIXED_SETTINGS)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*["minus"] * 12)
        loop.flush()
        await pilot.pause()
        assert app.last_tick is not None and app.last_tick.interval == 60.0
        await pilot.press(*["plus"] * 3)
        loop.flush()
        await pilot.pause()
        assert app.last_tick.interval == 5.0


@pytest.mark.patch("withdraw_toast")
async def test_interval_toasts_replace_each_other() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for _ in range(5):
            await pilot.press("minus")
            await pilot.pause()
        assert toasts(app) == [": polling every 60s"]
        assert len(app.main_screen.query("Toast")) <= 1
