"""The main screen's keys: Tab between areas, pause and replay moves, the poll interval,
alarms, and signal keys that say why they do nothing where they cannot act.

Which keys the footer offers follows the tick shown (``check_action``): replay keys in
replays, the interval keys live, none of the priority keys while a text input has focus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from gputop.pipeline.tick import Tick
from gputop.ui.settings import UiSettings
from gputop.ui.toasts import toast
from gputop.ui.widgets.gpu_grid import GpuGrid
from gputop.ui.widgets.process_table import ProcessTable

if TYPE_CHECKING:
    from gputop.pipeline.commands import Command
    from gputop.sources.playback.seek import TimeTarget

REPLAY_ACTIONS = frozenset({"step", "speed", "goto", "seek"})
LIVE_ACTIONS = frozenset({"interval"})
PRIORITY_ACTIONS = frozenset({"toggle_pause", "resume", "step", "speed", "seek"})
"""Bound with priority (so the process table does not take the arrows and Home/End), and
therefore switched off while a text input has focus."""


_STEP = Binding.Group("Step", compact=True)
_SPEED = Binding.Group("Speed", compact=True)


class MainKeys(Screen[None]):
    """The bindings and actions of the main screen, which mixes this in; the screen holds
    ``settings`` and the ``tick`` shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Tab moves between the areas (GPU panels, processes, MIG tree when shown), not
        # through every panel: the arrows move within an area. One binding per target, so
        # the footer names where Tab goes from where the focus is.
        Binding("tab", "area('gpus')", "GPUs", key_display="Tab"),
        Binding("tab", "area('processes')", "Processes", key_display="Tab"),
        Binding("tab", "area('mig')", "MIG tree", key_display="Tab"),
        Binding("shift+tab", "area_back", "Previous area", show=False),
        Binding("m", "toggle_mig", "MIG"),
        Binding("slash", "filter", "Filter", show=False),
        Binding("space", "toggle_pause", "Pause", priority=True),
        Binding("space", "resume", "Resume", priority=True),
        Binding("left", "step(-1)", "Step back", key_display="←", priority=True, group=_STEP),
        Binding("right", "step(1)", "Step forward", key_display="→", priority=True, group=_STEP),
        Binding(
            "left_square_bracket",
            "speed(-1)",
            "Slower",
            key_display="[",
            priority=True,
            group=_SPEED,
        ),
        Binding(
            "right_square_bracket",
            "speed(1)",
            "Faster",
            key_display="]",
            priority=True,
            group=_SPEED,
        ),
        Binding("g", "goto", "Go to"),
        Binding("home", "seek(0)", "Start", show=False, priority=True),
        Binding("end", "seek(-1)", "End", show=False, priority=True),
        # Offered (in the footer too) while some GPU has a health alarm: see check_action.
        Binding("a", "acknowledge", "Ack alarms"),
        Binding("plus", "interval(-1)", "Poll faster", show=False),
        Binding("minus", "interval(1)", "Poll slower", show=False),
        # Reached when the process table does not take the signal keys (read-only, or the
        # focus is elsewhere): a key that does nothing says why.
        Binding("k", "signal_refused('TERM')", show=False),
        Binding("K", "signal_refused('KILL')", show=False),
        Binding("i", "signal_refused('INT')", show=False),
    ]

    settings: UiSettings
    tick: Tick | None

    @property
    def newest(self) -> Tick | None:
        """The newest tick (``MainScreen``: the one shown, or one waiting while covered);
        keys and the command palette act on it."""
        return self.tick

    @property
    def replaying(self) -> bool:
        """The newest tick comes from a recording."""
        tick = self.newest
        return tick is not None and tick.replay is not None

    @staticmethod
    def _paused(tick: Tick | None) -> bool:
        if tick is None:
            return False
        return tick.replay.paused if tick.replay is not None else tick.paused

    # -- areas: GPU panels, processes, MIG tree ----------------------------------------

    def _areas(self) -> list[str]:
        """The areas focus can go to, in Tab order."""
        areas = ["gpus"] if self.query_one(GpuGrid).panels else []
        areas.append("processes")
        if self.has_class("-mig") and self.query("MigTree"):
            areas.append("mig")
        return areas

    def _area_of_focus(self) -> str:
        focused = self.focused
        if focused is not None:
            for node in focused.ancestors_with_self:
                if isinstance(node, GpuGrid):
                    return "gpus"
                if node.id == "mig":
                    return "mig"
        return "processes"

    def _area_after(self, steps: int) -> str:
        areas = self._areas()
        current = self._area_of_focus()
        place = areas.index(current) if current in areas else 0
        return areas[(place + steps) % len(areas)]

    def action_area(self, name: str) -> None:
        """Focus the area ``name``: the GPU selected last, the processes, or the MIG tree."""
        if name == "gpus" and self.query_one(GpuGrid).focus_panel():
            return
        # Focus is set now, not after the queue as ``Widget.focus`` does: keys that came in
        # the same read (``Tab Enter`` over a slow ssh link) must reach the new area.
        if name == "mig":
            found = self.query("#mig")
            if found:
                self.set_focus(found.first())
                return
        self.set_focus(self.query_one("#process-data"))

    def action_area_back(self) -> None:
        """Shift+Tab: the area before this one."""
        self.action_area(self._area_after(-1))

    def on_gpu_grid_left_below(self, event: GpuGrid.LeftBelow) -> None:
        """Down from the last row of GPUs goes on to the processes."""
        event.stop()
        self.action_area("processes")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Replay keys only in replays, interval keys only live, none while typing."""
        if action == "area":
            return parameters[:1] == (self._area_after(1),)
        if action == "acknowledge":
            tick = self.newest
            return tick is not None and bool(tick.alarms)
        if self.settings.served and (action == "signal_refused" or action in LIVE_ACTIONS):
            # A browser viewer has no signal keys at all, and the interval is the server's.
            return False
        if action in PRIORITY_ACTIONS and isinstance(self.app.focused, Input):
            return False
        replaying = self.replaying
        if action in REPLAY_ACTIONS:
            # A single-document capture is a still: there is nowhere to move.
            tick = self.newest
            return replaying and not (
                tick is not None and tick.replay is not None and tick.replay.still
            )
        if action in LIVE_ACTIONS:
            return not replaying
        if action == "signal_refused":
            read_only = replaying or self.settings.readonly
            return read_only or self._area_of_focus() != "processes"
        if action in ("toggle_pause", "resume"):
            tick = self.newest
            if tick is not None and tick.replay is not None and tick.replay.still:
                return False
            paused = self._paused(tick)
            return paused if action == "resume" else not paused
        return True

    async def action_filter(self) -> None:
        """Filter the process table (its own ``/``, reachable from anywhere)."""
        await self.query_one(ProcessTable).action_open_filter()

    def _submit(self, command: Command) -> None:
        submit = getattr(self.app, "submit", None)
        if submit is not None:
            submit(command)

    def action_toggle_pause(self) -> None:
        """Pause (live polling or replay playback)."""
        # Deferred: commands are defined at the first key press (issue 17: 21 M of the first frame).
        from gputop.pipeline.commands import TogglePause

        self._submit(TogglePause())

    def action_acknowledge(self) -> None:
        """Acknowledge every GPU's health alarm: their red lines go until the next one."""
        # Deferred: commands are defined at the first key press (issue 17: 21 M of the first frame).
        from gputop.pipeline.commands import Acknowledge

        self._submit(Acknowledge())

    def action_resume(self) -> None:
        """Resume after a pause."""
        # Deferred: commands are defined at the first key press (issue 17: 21 M of the first frame).
        from gputop.pipeline.commands import TogglePause

        self._submit(TogglePause())

    def action_signal_refused(self, name: str) -> None:
        """Say why a signal key does nothing here."""
        if self.replaying:
            why = "a replay's PIDs name no process on this machine"
        elif self.settings.readonly:
            why = "signals are off (gputop was started with --readonly)"
        else:
            why = "select a process first (Tab goes to the processes)"
        toast(self.app, "signal", f"SIG{name}: {why}", title="Signal not sent")

    def action_step(self, delta: int) -> None:
        """Replay: pause and move ``delta`` documents."""
        # Deferred: commands are defined at the first key press (issue 17: 21 M of the first frame).
        from gputop.pipeline.commands import Step

        self._submit(Step(delta))

    def action_speed(self, steps: int) -> None:
        """Replay: faster or slower."""
        # Deferred: commands are defined at the first key press (issue 17: 21 M of the first frame).
        from gputop.pipeline.commands import ChangeSpeed

        self._submit(ChangeSpeed(steps))

    def action_seek(self, index: int) -> None:
        """Replay: go to a document (``-1`` is the last)."""
        # Deferred: commands are defined at the first key press (issue 17: 21 M of the first frame).
        from gputop.pipeline.commands import Seek

        self._submit(Seek(index))

    def action_interval(self, steps: int) -> None:
        """Live: poll more or less often (the tick that answers says how often, in a toast)."""
        # Deferred: commands are defined at the first key press (issue 17: 21 M of the first frame).
        from gputop.pipeline.commands import StepInterval

        self._submit(StepInterval(steps))

    def action_goto(self) -> None:
        """Replay: ask for an index or a time and go there."""
        tick = self.newest
        if tick is None or tick.replay is None:
            return
        # Deferred: commands, and the dialog (19 ms), at the key press that opens it.
        from gputop.pipeline.commands import Seek, SeekTime
        from gputop.ui.screens.goto import GotoDialog

        def answered(target: int | TimeTarget | None) -> None:
            if isinstance(target, int):
                self._submit(Seek(target))
            elif target is not None:
                self._submit(SeekTime(target.start, target.within))

        self.app.push_screen(GotoDialog(tick.replay), answered)
