"""The main screen: header, GPU panels, processes (and MIG tree), replay bar, footer.

Layout is chosen from the terminal size and the number of GPUs and expressed as classes on
the screen (``-compact``: one line per GPU; ``-wide``: two columns of panels; ``-charts``:
full panels grow and chart their history), so the ``.tcss`` decides how things look and
Python only decides which case applies: the rules are in ``main_layout.py``, the keys and
their actions in ``main_keys.py``; this module composes the screen and feeds it each tick.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.events import Resize
from textual.widget import Widget

from gputop.model import Snapshot
from gputop.pipeline.tick import Tick
from gputop.ui.compat import StyledOnceScreen
from gputop.ui.render.panel_lines import mig_rows
from gputop.ui.screens.covered import covered
from gputop.ui.screens.main_keys import MainKeys
from gputop.ui.screens.main_layout import Arrangement, TableRoom, plan_layout, table_estimate
from gputop.ui.settings import UiSettings
from gputop.ui.toasts import toast
from gputop.ui.widgets.footer import Footer
from gputop.ui.widgets.gpu_grid import Entry, GpuGrid, panel_entries, panel_keys
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.process_table import ProcessTable
from gputop.ui.widgets.status_line import ReplayBar, StatusHeader

if TYPE_CHECKING:
    from gputop.ui.widgets.mig_tree import MigTree

PartType = TypeVar("PartType", bound=Widget)

MAIN_SCREEN_CSS = Path(__file__).parent / "main.tcss"


def process_key(snapshot: Snapshot) -> tuple[object, ...] | None:
    """What the process table shows of ``snapshot``, to skip redrawing an unchanged table.

    None when the table must be redrawn anyway: a process with a start time has a running
    time that changes every second.
    """
    key = tuple((gpu.index, gpu.processes) for gpu in snapshot.gpus)
    for _, processes in key:
        if any(process.start_time is not None for process in processes):
            return None
    return key


def _never_signal(pid: int, number: int) -> None:
    """A served view's ``kill``: a browser never signals a process of the server's box."""
    raise PermissionError("a served view sends no signals")


class MainScreen(MainKeys, StyledOnceScreen):
    """Everything about the current tick."""

    CSS_PATH = MAIN_SCREEN_CSS

    AUTO_FOCUS = "#process-data"
    """The process table has the keys at start, as in nvitop and htop: the arrows select a
    process at once; Tab goes to the GPU panels."""

    def __init__(self, settings: UiSettings, first_tick: Tick | None = None) -> None:
        """Create the screen, composed for ``first_tick`` when one is already known."""
        super().__init__()
        self.settings = settings
        self.tick: Tick | None = None
        """The tick shown."""
        self._waiting: Tick | None = None
        """The newest tick, arrived while a full screen covers this one (``covered``)."""
        self._noted: Tick | None = None
        """The tick whose notes were said last."""
        self._interval: float | None = None
        """The polling interval of the newest tick seen (a change is toasted once)."""
        self._toggle_mig_when_back = False
        """The MIG tree was toggled while a full screen covered this one."""
        self._first_tick = first_tick
        self.arrangement = Arrangement()
        """The layout chosen for the screen's size and the tick shown."""
        self._table_room = TableRoom()
        self._mig_dirty = True
        self._processes_shown: object = None
        self._on_screen: frozenset[int] | None = None
        """The PIDs the process table shows (``ProcessTable.OnScreen``)."""
        self._binding_state: tuple[bool, bool, bool, bool] | None = None
        self._warned = False
        self._parts: dict[type[Widget], Widget] = {}

    @property
    def compact(self) -> bool:
        """One line per GPU."""
        return self.arrangement.compact

    @property
    def wide(self) -> bool:
        """Two columns of panels."""
        return self.arrangement.wide

    @property
    def details(self) -> bool:
        """Compact layout with a detail line under each GPU."""
        return self.arrangement.details

    @property
    def mig_rows(self) -> bool:
        """Full panels list their MIG devices."""
        return self.arrangement.mig_rows

    @property
    def chart_rows(self) -> int:
        """Content rows of each full panel with charts; 0: no charts."""
        return self.arrangement.chart_rows

    def compose(self) -> ComposeResult:
        """Header, panels, processes beside the (hidden) MIG tree, replay bar, footer."""
        yield StatusHeader(
            id="header", show_host=self.settings.show_host, show_clock=self.settings.show_clock
        )
        first = self._first_tick
        if first is not None:
            # Classes and binding state settled before the children exist: each class
            # change later restyles the whole screen, and a binding change draws the footer
            # again, which would cost the first frame more passes.
            self.set_class(first.replay is not None, "-replay")
            self._apply_layout(self.app.size.width, self.app.size.height, len(panel_keys(first)))
            self._binding_state = self._bindings_for(first)
        yield GpuGrid(id="gpus", keys=[] if first is None else panel_keys(first))
        with Horizontal(id="lower"):
            if self.settings.served:
                # Belt and braces: even were the table's keys reached, nothing is sent.
                yield ProcessTable(readonly=True, kill=_never_signal, id="processes")
            else:
                yield ProcessTable(readonly=self.settings.readonly, id="processes")
        if first is None or first.replay is not None:
            # Live ticks never carry a replay: a live screen's bar, always hidden, would
            # only cost the first frame a node to compose, style and lay out.
            yield ReplayBar(id="replay-bar")
        yield Footer()

    def on_mount(self) -> None:
        """Show the first tick (before the first frame), follow theme changes."""
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        if self._first_tick is not None:
            # The children are mounted by now, but this screen's is_mounted turns true only
            # after this handler: draw the first tick here, into the very first frame (a
            # still replay repeats the same snapshot, so no later tick would fill the table).
            self._show(self._first_tick, previous=None)
            self._first_tick = None
            self._say_in_view()  # whether the layout shows MIG activity

    def _mig_tree(self) -> MigTree:
        """The MIG tree, created the first time it is wanted (most machines have no MIG)."""
        # Deferred: the MIG tree (11 ms), only on a box with MIG (most have none).
        from gputop.ui.widgets.mig_tree import MigTree

        found = self.query(MigTree)
        if found:
            return found.first()
        tree = MigTree(id="mig")
        self.query_one("#lower", Horizontal).mount(tree)
        return tree

    # -- showing ticks ------------------------------------------------------------------

    @property
    def newest(self) -> Tick | None:
        """The newest tick handed to this screen: shown, or waiting while it is covered."""
        return self._waiting or self.tick

    def show_tick(self, tick: Tick) -> None:
        """Display ``tick``: only widgets whose input changed do any work. Under a full
        screen (the history) it waits, its notes said at once, until this one is back."""
        if self.is_mounted and covered(self):
            self._waiting = tick
            self._say_notes(tick)
            self._say_interval(tick)
        elif self.is_mounted:
            self._show(tick, previous=self.tick)
        else:
            # As the app's default screen this one mounts alongside the app, so a tick
            # can arrive first: on_mount shows it.
            self.tick = tick
            self._first_tick = tick

    def _part(self, kind: type[PartType]) -> PartType:
        """The one ``kind`` widget of the screen (composed once, never replaced), found once
        rather than by a DOM query on every tick."""
        found = self._parts.get(kind)
        if not isinstance(found, kind):
            found = self._parts[kind] = self.query_one(kind)
        return found

    def _show(self, tick: Tick, previous: Tick | None) -> None:
        self.tick = tick
        self._waiting = None
        replaying = tick.replay is not None
        self.set_class(replaying, "-replay")
        if replaying and not self.query_one(ProcessTable).readonly:
            # Recorded PIDs name nothing on this machine: never offer to signal them.
            self.query_one(ProcessTable).readonly = True
        self._part(StatusHeader).show(tick, self.settings.source_label)
        if tick.replay is not None:
            self.query_one(ReplayBar).show(tick.replay)
        grid = self._part(GpuGrid)
        entries = grid.entries_for(tick)
        self._apply_layout(self.size.width, self.size.height, len(entries), tick, entries)
        self._show_grid(tick)
        if previous is None or previous.snapshot is not tick.snapshot:
            processes = process_key(tick.snapshot)
            if processes is None or processes != self._processes_shown:
                self._part(ProcessTable).show(tick.snapshot)
            self._processes_shown = processes
            self._mig_dirty = True
        # What the table needs now sizes the charts from the next tick on (or the next
        # resize): laid out again here, the charts of this tick would be drawn twice.
        self._table_room.hold(self._lower_rows_wanted())
        if self.has_class("-mig") and self._mig_dirty:
            self._mig_tree().show(tick.snapshot)
            self._mig_dirty = False
        if tick is not self._noted:
            self._say_notes(tick)
        if tick.replay is not None and tick.replay.warnings and not self._warned:
            self._warned = True
            toast(
                self.app,
                "recording",
                "\n".join(tick.replay.warnings),
                title="Recording",
                severity="warning",
            )
        self._say_interval(tick)
        state = self._bindings_for(tick)
        if state != self._binding_state:
            self._binding_state = state
            self.refresh_bindings()

    def _say_notes(self, tick: Tick) -> None:
        """Toast what ``tick`` notes (once a tick: shown later, it says nothing again)."""
        self._noted = tick
        for note in tick.notes:
            toast(self.app, "note", note, severity="warning")

    def _say_interval(self, tick: Tick) -> None:
        """Toast a new polling interval, once, when the tick that answers arrives."""
        known, self._interval = self._interval, tick.interval
        if known is not None and tick.live and tick.interval != known:
            toast(self.app, "interval", f"polling every {tick.interval:g}s", timeout=2)

    def on_screen_resume(self) -> None:
        """Back from a dialog or a full screen: show the newest tick (it kept arriving)."""
        if self._toggle_mig_when_back:
            self._toggle_mig_when_back = False
            self.action_toggle_mig()
        newest = self.newest
        if newest is not None:
            self.show_tick(newest)

    @classmethod
    def _bindings_for(cls, tick: Tick) -> tuple[bool, bool, bool, bool]:
        """What decides which keys the footer offers for ``tick``."""
        replay = tick.replay
        still = replay is not None and replay.still
        return (replay is not None, cls._paused(tick), still, bool(tick.alarms))

    # -- layout -------------------------------------------------------------------------

    def _apply_layout(
        self,
        width: int,
        height: int,
        gpus: int,
        tick: Tick | None = None,
        entries: list[Entry] | None = None,
    ) -> None:
        tick = tick or self.tick or self._first_tick
        replaying = tick is not None and tick.replay is not None
        extra: Callable[[], list[int]] | None = None
        table = 0
        if tick is not None:
            shown = tick

            def mig_lines() -> list[int]:
                panels = panel_entries(shown) if entries is None else entries
                return [0 if gone else mig_rows(gpu) for _, gpu, gone in panels]

            extra = mig_lines
            # The MIG tree beside the table lists every instance: the lower part keeps its
            # whole share for it.
            table = (
                height if self.has_class("-mig") else self._table_room.rows or table_estimate(tick)
            )
        before = self.arrangement
        layout = self.arrangement = plan_layout(width, height, gpus, replaying, extra, table)
        if layout.mig_rows != before.mig_rows:
            self._say_in_view()
        if (layout.compact, layout.wide, layout.details) != (
            before.compact,
            before.wide,
            before.details,
        ):
            self.set_class(layout.compact, "-compact")
            self.set_class(layout.wide, "-wide")
            self.set_class(layout.details, "-details")
        self.set_class(layout.chart_rows > 0, "-charts")

    def _lower_rows_wanted(self) -> int:
        """Rows the table under the panels needs to show all its lines."""
        return self._part(ProcessTable).rows_wanted

    def _show_grid(self, tick: Tick) -> None:
        self._part(GpuGrid).show(
            tick,
            compact=self.compact,
            details=self.details,
            mig=self.mig_rows,
            rows=self.chart_rows,
        )

    def on_resize(self, event: Resize) -> None:
        """Choose the layout again for the new size."""
        if self.tick is not None:
            count = len(self.query_one(GpuGrid).entries_for(self.tick))
            self._apply_layout(event.size.width, event.size.height, count)
            self._show_grid(self.tick)

    def _theme_changed(self, _theme: object) -> None:
        if self.tick is not None:
            grid = self.query_one(GpuGrid)
            grid.on_resize()

    def action_toggle_mig(self) -> None:
        """Show or hide the MIG tree beside the processes."""
        if covered(self):  # the command palette over the history: done when back
            self._toggle_mig_when_back = not self._toggle_mig_when_back
            return
        self.toggle_class("-mig")
        if self.has_class("-mig") and self.tick is not None:
            self._mig_tree().show(self.tick.snapshot)
            self._mig_dirty = False
        if self.tick is not None:
            # The tree takes rows from the charts, or gives them back.
            count = len(self._part(GpuGrid).entries_for(self.tick))
            self._apply_layout(self.size.width, self.size.height, count)
            self._show_grid(self.tick)
        self._say_in_view()

    def on_process_table_on_screen(self, message: ProcessTable.OnScreen) -> None:
        """Tell the sampler which processes are on screen (``Tick.in_view``)."""
        self._on_screen = message.pids
        self._say_in_view()

    def _say_in_view(self) -> None:
        # The MIG tree lists every process: then all are seen.
        in_view = None if self.tick is None else self.tick.in_view
        if in_view is not None:
            tree = self.has_class("-mig")
            in_view.show(None if tree else self._on_screen)
            # MIG activity (GPM, 1-2 ms an instance a tick) is read while it is shown.
            in_view.show_mig_activity(tree or self.mig_rows)

    def on_gpu_panel_history_requested(self, message: GpuPanel.HistoryRequested) -> None:
        """Enter on a panel: that GPU's history, as the poller's store holds it."""
        tick = self.tick
        if tick is None:
            return
        # Deferred: the charts pull in plotext (79 ms), which the main screen does not need.
        from gputop.ui.screens.history import HistoryScreen

        now = self._now() if tick.live else None
        screen = HistoryScreen(message.gpu_index, message.key, tick.archive, tick.window, now=now)
        self.app.push_screen(screen)

    def _now(self) -> datetime:
        now = getattr(self.app, "now", None)
        return now() if callable(now) else datetime.now()
