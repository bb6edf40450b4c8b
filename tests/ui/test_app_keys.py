"""Every key of the main screen, pressed through Pilot, with its effect asserted."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from gputop.model import Snapshot
from gputop.pipeline.commands import ChangeSpeed, Seek, Step, StepInterval, TogglePause
from gputop.pipeline.loop import ManualLoop
from gputop.ui.app import GputopApp
from gputop.ui.screens import main as main_screen_module
from gputop.ui.screens.goto import GotoDialog
from gputop.ui.screens.help import HelpScreen, balanced_split
from gputop.ui.screens.history import HistoryScreen
from gputop.ui.screens.main import MainScreen
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.mig_tree import MigTree
from gputop.ui.widgets.process_table import ProcessTable
from support.apps import (
    FIXED_SETTINGS,
    live_app,
    load,
    open_history,
    replay_app,
    varied_stream,
)
from support.handed import regions_handed_to
from support.shortcuts import mig_node

CAPTURES = Path(__file__).resolve().parents[2] / "snapshots"
SIZE = (120, 40)


def four_gpus() -> Snapshot:
    return load(CAPTURES / "rtx3090x4-procs-v12.xml")


def stream(count: int = 40) -> list[Snapshot]:
    return varied_stream(four_gpus(), count)


def manual(app: GputopApp) -> ManualLoop:
    assert isinstance(app.loop, ManualLoop)
    return app.loop


def main(app: GputopApp) -> MainScreen:
    return app.main_screen


def position(app: GputopApp) -> int:
    tick = app.last_tick
    assert tick is not None and tick.replay is not None
    return tick.replay.position


async def test_q_quits_with_status_zero_and_stops_the_loop() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value == 0
    assert manual(app).stopped


async def test_question_mark_opens_the_help_and_escape_closes_it() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = {row for _, section in app.screen.sections for row in section}
        assert ("Space", "Pause / Resume") in rows and ("←", "Step back") in rows
        assert ("/", "Filter") in rows and ("q, Ctrl+C", "Quit") in rows
        assert ("?, h", "Help") in rows
        assert ("Enter", "Details (a pod's line: expand)") in rows and ("3", "1 h") in rows
        # Two columns of near equal height: General, Live, GPU panels, History | the rest.
        assert [title for title, _ in app.screen.sections][4:] == ["Replay", "Processes"]
        assert balanced_split([len(rows) + 2 for _, rows in app.screen.sections]) == 4
        assert balanced_split([3, 1, 1, 1]) == 1 and balanced_split([]) == 0
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("question_mark", "question_mark")
        assert isinstance(app.screen, MainScreen)


async def test_m_toggles_the_mig_tree() -> None:
    app = replay_app(varied_stream(load(CAPTURES / "a100-sxm4-80gb-mig-v12.xml"), 5))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not app.screen.query(MigTree)  # built on first use
        await pilot.press("m")
        await pilot.pause()
        tree = app.screen.query_one(MigTree)
        assert tree.display and main(app).has_class("-mig")
        assert mig_node(tree, ("gi", 0, 3)) is not None
        await pilot.press("m")
        assert not tree.display


async def test_the_mig_tree_asked_for_under_the_history_is_drawn_when_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command palette reaches the main screen's actions over the history: the tree is
    built when the main screen is back, not drawn under the history (handed to it whole)."""
    app = replay_app(varied_stream(load(CAPTURES / "a100-sxm4-80gb-mig-v12.xml"), 5))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        history = await open_history(pilot)
        handed = regions_handed_to(history, monkeypatch)
        main(app).action_toggle_mig()
        await pilot.pause()
        assert handed == [] and not main(app).query(MigTree)
        await pilot.press("escape")
        await pilot.pause()
        tree = main(app).query_one(MigTree)
        assert tree.display and mig_node(tree, ("gi", 0, 3)) is not None


async def test_slash_opens_the_process_filter_even_from_a_gpu_panel() -> None:
    app = live_app([load(CAPTURES / "gtx1070x6-v9.xml")])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query(GpuPanel).first().focus()
        await pilot.press("slash")
        table = app.screen.query_one(ProcessTable)
        assert table.has_class("-filtering")
        assert isinstance(app.focused, Input)
        # While typing, Space and the arrows belong to the input, not to pause and step.
        await pilot.press(*"eth", "space", "m", "left", "right", "enter")
        assert table.filter_text == "eth m"
        assert manual(app).commands == []
        assert not main(app).has_class("-mig")
        assert len(table.rows) == 6


async def test_space_pauses_and_resumes_live_polling() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "toggle_pause" in {b.binding.action for b in app.screen.active_bindings.values()}
        await pilot.press("space")
        await pilot.pause()
        assert app.last_tick is not None and app.last_tick.paused
        active = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        assert "resume" in active
        await pilot.press("space")
        await pilot.pause()
        assert not app.last_tick.paused
        assert manual(app).commands == [TogglePause(), TogglePause()]


async def test_replay_keys_step_speed_and_jump() -> None:
    app = replay_app(stream(40), position=10)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("right", "right")
        await pilot.pause()
        assert position(app) == 12
        await pilot.press("left")
        await pilot.pause()
        assert position(app) == 11
        await pilot.press("right_square_bracket", "right_square_bracket", "left_square_bracket")
        await pilot.pause()
        assert app.last_tick is not None and app.last_tick.replay is not None
        assert app.last_tick.replay.speed == 2.0
        await pilot.press("end")
        await pilot.pause()
        assert position(app) == 39
        await pilot.press("home")
        await pilot.pause()
        assert position(app) == 0
        assert manual(app).commands == [
            Step(1),
            Step(1),
            Step(-1),
            ChangeSpeed(1),
            ChangeSpeed(1),
            ChangeSpeed(-1),
            Seek(-1),
            Seek(0),
        ]


async def test_space_plays_a_paused_replay_and_pauses_it_again() -> None:
    app = replay_app(stream(10), position=3, paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("space")
        await pilot.pause()
        assert app.last_tick is not None and app.last_tick.replay is not None
        assert not app.last_tick.replay.paused
        manual(app).advance(2)
        await pilot.pause()
        assert position(app) == 5
        await pilot.press("space")
        await pilot.pause()
        assert app.last_tick.replay.paused


async def test_replay_keys_are_inert_while_live_and_live_keys_while_replaying() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("left", "right", "left_square_bracket", "right_square_bracket", "g")
        await pilot.press("home", "end")
        await pilot.pause()
        assert manual(app).commands == []
        assert isinstance(app.screen, MainScreen)
    replay = replay_app(stream(5))
    async with replay.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("plus", "minus")
        await pilot.pause()
        assert manual(replay).commands == []


async def test_plus_and_minus_change_the_live_interval() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("minus")
        await pilot.pause()
        assert app.last_tick is not None and app.last_tick.interval == 2.0
        await pilot.press("plus", "plus", "plus", "plus")
        await pilot.pause()
        assert app.last_tick.interval == 0.25
        await pilot.press("plus")
        await pilot.pause()
        assert app.last_tick.interval == 0.25
        assert manual(app).commands == [StepInterval(1), *[StepInterval(-1)] * 5]


async def test_g_goes_to_an_index_or_a_time_and_rejects_nonsense() -> None:
    app = replay_app(stream(40), position=0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("g")
        assert isinstance(app.screen, GotoDialog)
        await pilot.press(*"25", "enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and position(app) == 25
        await pilot.press("g")
        # The example times are the shown document's, in both forms the dialog takes.
        hint = str(app.screen.query_one(".dialog-hint", Static).render())
        assert "21:34:37 or 2024-09-18 21:34:37" in hint and "0..39" in hint
        await pilot.press(*"21:34:20", "enter")
        await pilot.pause()
        assert position(app) == 8  # the stream starts at 21:34:12, one document a second
        await pilot.press("g", *"soon", "enter")
        await pilot.pause()
        assert isinstance(app.screen, GotoDialog)
        error = app.screen.query_one("#goto-error", Static)
        assert "not an index or a time" in str(error.render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and position(app) == 8


async def test_enter_on_a_gpu_panel_opens_its_history_which_follows_new_ticks() -> None:
    app = live_app(stream(30), ticks=30)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panels = list(app.screen.query(GpuPanel))
        panels[2].focus()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen) and screen.gpu_index == 2
        before = len(screen._recent)
        manual(app).advance()
        await pilot.pause()
        assert len(screen._recent) == before + 1
        # Under the key help too: what arrives meanwhile is in its diagnosis after.
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        manual(app).advance()
        await pilot.pause()
        assert len(screen._recent) == before + 2
        await pilot.press("escape")
        await pilot.pause()
        assert pilot.app.screen is screen
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_under_the_history_the_main_screen_waits_then_shows_the_newest_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual hands what a covered screen repaints to the screen on top: every tick drawn on
    the main screen under the history repainted the whole terminal. The main screen now
    keeps the newest tick (its notes said at once, once) and shows it when it is back."""
    app = live_app(stream(30), ticks=30)
    said: list[str] = []
    monkeypatch.setattr(
        main_screen_module, "toast", lambda _app, _kind, text, **_: said.append(text)
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        history = await open_history(pilot)
        main = app.main_screen
        shown = main.tick
        handed = regions_handed_to(history, monkeypatch)
        for _ in range(3):
            manual(app).advance()
            await pilot.pause()
        assert handed == []
        assert main.tick is shown and main.newest is app.last_tick is not shown
        assert app.last_tick is not None
        with_note = dataclasses.replace(app.last_tick, notes=("--log: disk full",))
        main.show_tick(with_note)
        assert said == ["--log: disk full"]  # said at once, under the history
        slower = dataclasses.replace(with_note, interval=2 * with_note.interval, notes=())
        main.show_tick(slower)
        assert said[1:] == [f"polling every {slower.interval:g}s"]
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and main.tick is slower
        assert len(said) == 2  # neither said again as the tick is shown


async def test_tab_then_the_arrows_reach_every_gpu_panel() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("tab")
        focused: set[str] = set()
        for _ in range(4):
            assert isinstance(app.focused, GpuPanel)
            focused.add(app.focused.key)
            await pilot.press("down")
        assert len(focused) == 4


async def test_clicking_a_panel_focuses_it() -> None:
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel = list(app.screen.query(GpuPanel))[1]
        await pilot.click(panel)
        assert app.focused is panel


async def test_command_palette_offers_gputop_actions_that_work() -> None:
    app = replay_app(stream(5))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title in ("Help", "Toggle MIG tree", "Filter processes", "Pause / resume", "Go to…"):
            assert title in commands
        commands["Toggle MIG tree"].callback()
        assert main(app).has_class("-mig")
        commands["Light theme"].callback()
        assert app.theme == "textual-light"
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "CommandPalette"


async def test_theme_setting_and_no_color() -> None:
    light = live_app([four_gpus()], settings=dataclasses.replace(FIXED_SETTINGS, theme="light"))
    async with light.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert light.theme == "textual-light"


async def test_no_color_environment_is_respected(monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("NO_COLOR", "1")
    app = live_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.no_color
        assert main(app).query_one(GpuPanel).has_pseudo_class("nocolor")


async def test_replays_never_offer_to_signal_processes() -> None:
    app = replay_app(stream(3))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.screen.query_one(ProcessTable).readonly
        offered = app.screen.active_bindings.values()
        actions = {b.binding.action for b in offered if b.enabled and b.binding.show}
        assert not any(action.startswith("signal") for action in actions)


async def test_a_still_capture_offers_no_playback_keys() -> None:
    app = replay_app([four_gpus()])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("space", "right", "g")
        await pilot.pause()
        assert manual(app).commands == []
        assert isinstance(app.screen, MainScreen)
        tick = app.last_tick
        assert tick is not None and tick.replay is not None and tick.replay.still


async def test_history_screen_gets_no_clock_in_replays(monkeypatch: object) -> None:
    seen: list[datetime | None] = []
    original = HistoryScreen.__init__

    def spy(self: HistoryScreen, *args: object, **kwargs: object) -> None:
        seen.append(kwargs.get("now"))  # type: ignore[arg-type]
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(HistoryScreen, "__init__", spy)
    app = replay_app(stream(5))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query(GpuPanel).first().focus()
        await pilot.press("enter")
        await pilot.pause()
    assert seen == [None]


async def test_dialogs_over_the_main_screen_keep_it_in_sight() -> None:
    from textual.widgets import DataTable

    from gputop.ui.widgets.process_details import ProcessDetails
    from gputop.ui.widgets.signal_dialog import SignalDialog

    app = live_app([four_gpus()], readonly=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query_one(DataTable).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessDetails)
        # The app's opaque Screen rule must not reach the dialogs: the table shows behind.
        assert app.screen.styles.background.a < 1
        await pilot.press("escape")
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, SignalDialog)
        assert app.screen.styles.background.a < 1
        await pilot.press("escape")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.styles.background.a < 1
