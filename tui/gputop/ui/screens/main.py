"""The main screen: header, GPU panels, processes (and MIG tree), replay bar, footer.

Layout is chosen from the terminal size and the number of GPUs and expressed as classes on
the screen (``-compact``: one line per GPU; ``-wide``: two columns of panels; ``-charts``:
full panels grow and chart their history), so the ``.tcss`` decides how things look and
Python only decides which case applies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.events import Resize
from textual.widget import Widget
from textual.widgets import Input

from gputop.model import Snapshot
from gputop.pipeline.tick import Tick
from gputop.ui.compat import Footer, StyledOnceScreen
from gputop.ui.render.panel_charts import MIN_CHART_ROWS, fits
from gputop.ui.render.panel_lines import FULL_HEIGHT, mig_rows
from gputop.ui.settings import UiSettings
from gputop.ui.toasts import toast
from gputop.ui.widgets.gpu_grid import Entry, GpuGrid, panel_entries, panel_keys
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.process_table import ProcessTable
from gputop.ui.widgets.status_line import ReplayBar, StatusHeader

if TYPE_CHECKING:
    from gputop.pipeline.commands import Command
    from gputop.sources.playback.seek import TimeTarget
    from gputop.ui.widgets.mig_tree import MigTree

PartType = TypeVar("PartType", bound=Widget)

FULL_PANEL_ROWS = 5
"""A full panel: three lines and its border."""
MIN_LOWER_ROWS = 10
"""Rows the process table keeps at least before panels go compact."""
MAX_PANEL_SHARE = 0.62
"""Full panels may take at most this share of the rows below the header."""
WIDE_COLUMNS = 160
"""From this width panels sit in two columns."""
MIN_FULL_WIDTH = 70
"""Below this width panels are always one line each."""
CHART_GPUS = 4
"""Full panels chart their history for this many GPUs at most (most boxes have one to
four); more keep their three lines whatever the terminal's height."""
TABLE_SHARE = 0.5
"""With charts, the process table's share of the rows below the header, at most (and at
least ``MIN_LOWER_ROWS``): what its lines need, up to this."""
LOWER_MIN = 4
"""Rows the processes' area never goes under (``#lower``'s min-height)."""
PANEL_FRAME = (2, 4)
"""Rows and columns a full panel's border and padding take."""
TABLE_HOLD_TICKS = 10
"""Ticks the process table keeps rows it no longer needs before the charts take them back,
so a process that comes and goes does not make the charts jump every tick."""

REPLAY_ACTIONS = frozenset({"step", "speed", "goto", "seek"})
LIVE_ACTIONS = frozenset({"interval"})
PRIORITY_ACTIONS = frozenset({"toggle_pause", "resume", "step", "speed", "seek"})
"""Bound with priority (so the process table does not take the arrows and Home/End), and
therefore switched off while a text input has focus."""


_STEP = Binding.Group("Step", compact=True)
_SPEED = Binding.Group("Speed", compact=True)


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


def choose_layout(width: int, height: int, gpus: int, replaying: bool) -> tuple[bool, bool]:
    """(compact, wide) for a terminal of ``width`` x ``height`` showing ``gpus`` panels."""
    wide = width >= WIDE_COLUMNS and gpus >= 2
    rows = math.ceil(max(gpus, 1) / (2 if wide else 1))
    chrome = 2 + (1 if replaying else 0)
    panel_rows = rows * FULL_PANEL_ROWS
    fits = panel_rows + chrome + MIN_LOWER_ROWS <= height and panel_rows <= MAX_PANEL_SHARE * (
        height - chrome
    )
    compact = width < MIN_FULL_WIDTH or not fits
    return compact, wide and not compact


def details_fit(height: int, gpus: int, replaying: bool) -> bool:
    """In the compact layout, whether every GPU can have its detail line (fan, P-state,
    clocks, throttling) beneath its line, as nvitop shows them, leaving the process table
    its rows."""
    chrome = 2 + (1 if replaying else 0)
    rows = 1 + 2 * max(gpus, 1)  # the column titles, then two lines per GPU
    return rows + chrome + MIN_LOWER_ROWS <= height and rows <= MAX_PANEL_SHARE * (height - chrome)


def mig_rows_fit(height: int, extra: Sequence[int], wide: bool, replaying: bool) -> bool:
    """In the panel layout, whether the panels can list their MIG devices (``extra`` lines
    per panel, in display order) within the rules that chose full panels."""
    columns = 2 if wide else 1
    rows = [extra[start : start + columns] for start in range(0, len(extra), columns)]
    panel_rows = sum(FULL_PANEL_ROWS + max(row) for row in rows)
    chrome = 2 + (1 if replaying else 0)
    return panel_rows + chrome + MIN_LOWER_ROWS <= height and panel_rows <= MAX_PANEL_SHARE * (
        height - chrome
    )


def chart_rows(
    width: int,
    height: int,
    extra: Sequence[int],
    wide: bool,
    replaying: bool,
    table_rows: int,
) -> int:
    """Content rows of each full panel when the panels chart their history, 0 when they
    keep their lines alone; ``extra`` lines per panel (MIG devices) in display order,
    ``table_rows`` what the process table needs to show every line.

    The rule for the rows below the header: the process table gets what its lines need (a
    box with a few processes leaves no blank rows under them), but at most ``TABLE_SHARE``
    of the rows, and never less than ``MIN_LOWER_ROWS`` of them while it has the lines to
    fill them: a box with many processes keeps a table it can scroll in. The panels share
    the rest, row by row of panels, and chart when every chart gets its least size;
    otherwise (and past ``CHART_GPUS`` GPUs) the layout is the one without charts.
    """
    gpus = len(extra)
    if not 0 < gpus <= CHART_GPUS:
        return 0
    chrome = 2 + (1 if replaying else 0)
    body = height - chrome
    table = min(table_rows, max(MIN_LOWER_ROWS, math.floor(body * TABLE_SHARE)))
    table = max(table, LOWER_MIN)
    columns = 2 if wide else 1
    bands = math.ceil(gpus / columns)
    rows = (body - table) // bands - PANEL_FRAME[0]
    # Each column of panels: its share of the width, less the gutter between columns.
    panel_width = (width - (columns - 1)) // columns - PANEL_FRAME[1]
    chart_area = rows - FULL_HEIGHT - max(extra)
    if chart_area < MIN_CHART_ROWS or not fits(panel_width, chart_area):
        return 0
    return rows


MAIN_SCREEN_CSS = Path(__file__).parent / "main.tcss"


def _table_estimate(tick: Tick) -> int:
    """The process table's rows before it has shown a tick (the first frame's layout is
    chosen while the screen composes): its status line, titles and a row per process."""
    return 2 + sum(len(gpu.processes) for gpu in tick.snapshot.gpus)


def _never_signal(pid: int, number: int) -> None:
    """A served view's ``kill``: a browser never signals a process of the server's box."""
    raise PermissionError("a served view sends no signals")


class MainScreen(StyledOnceScreen):
    """Everything about the current tick."""

    CSS_PATH = MAIN_SCREEN_CSS

    AUTO_FOCUS = "#process-data"
    """The process table has the keys at start, as in nvitop and htop: the arrows select a
    process at once; Tab goes to the GPU panels."""

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

    def __init__(self, settings: UiSettings, first_tick: Tick | None = None) -> None:
        """Create the screen, composed for ``first_tick`` when one is already known."""
        super().__init__()
        self.settings = settings
        self.tick: Tick | None = None
        """The tick shown."""
        self._first_tick = first_tick
        self.compact = False
        self.wide = False
        self.details = False
        """Compact layout with a detail line under each GPU."""
        self.mig_rows = False
        """Full panels list their MIG devices."""
        self.chart_rows = 0
        """Content rows of each full panel with charts; 0: no charts."""
        self._table_rows = 0
        """Rows the process table is given room for (what it needs, held a while)."""
        self._table_hold = 0
        self._mig_dirty = True
        self._processes_shown: object = None
        self._on_screen: frozenset[int] | None = None
        """The PIDs the process table shows (``ProcessTable.OnScreen``)."""
        self._binding_state: tuple[bool, bool, bool, bool] | None = None
        self._warned = False
        self._parts: dict[type[Widget], Widget] = {}

    def compose(self) -> ComposeResult:
        """Header, panels, processes beside the (hidden) MIG tree, replay bar, footer."""
        yield StatusHeader(
            id="header", show_host=self.settings.show_host, show_clock=self.settings.show_clock
        )
        first = self._first_tick
        if first is not None:
            # Classes and binding state settled before the children exist: each class
            # change later restyles the whole screen, and a binding change recomposes the
            # footer, which would cost the first frame two more passes.
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
        from gputop.ui.widgets.mig_tree import MigTree

        found = self.query(MigTree)
        if found:
            return found.first()
        tree = MigTree(id="mig")
        self.query_one("#lower", Horizontal).mount(tree)
        return tree

    # -- showing ticks ------------------------------------------------------------------

    @property
    def replaying(self) -> bool:
        """The tick shown comes from a recording."""
        return self.tick is not None and self.tick.replay is not None

    def show_tick(self, tick: Tick) -> None:
        """Display ``tick``: only widgets whose input changed do any work."""
        if self.is_mounted:
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
        self._hold_table_rows(self._lower_rows_wanted())
        if self.has_class("-mig") and self._mig_dirty:
            self._mig_tree().show(tick.snapshot)
            self._mig_dirty = False
        for note in tick.notes:
            toast(self.app, "note", note, severity="warning")
        if tick.replay is not None and tick.replay.warnings and not self._warned:
            self._warned = True
            toast(
                self.app,
                "recording",
                "\n".join(tick.replay.warnings),
                title="Recording",
                severity="warning",
            )
        if previous is not None and tick.live and tick.interval != previous.interval:
            toast(self.app, "interval", f"polling every {tick.interval:g}s", timeout=2)
        state = self._bindings_for(tick)
        if state != self._binding_state:
            self._binding_state = state
            self.refresh_bindings()

    def on_screen_resume(self) -> None:
        """Back from a dialog: show the newest tick (it kept arriving underneath)."""
        if self.tick is not None:
            self.show_tick(self.tick)

    @classmethod
    def _bindings_for(cls, tick: Tick) -> tuple[bool, bool, bool, bool]:
        """What decides which keys the footer offers for ``tick``."""
        replay = tick.replay
        still = replay is not None and replay.still
        return (replay is not None, cls._paused(tick), still, bool(tick.alarms))

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
        compact, wide = choose_layout(width, height, gpus, replaying)
        details = compact and details_fit(height, gpus, replaying)
        mig_listed = self.mig_rows
        self.mig_rows = False
        charts = 0
        if not compact and tick is not None:
            shown = panel_entries(tick) if entries is None else entries
            extra = [0 if gone else mig_rows(gpu) for _, gpu, gone in shown]
            self.mig_rows = any(extra) and mig_rows_fit(height, extra, wide, replaying)
            listed = extra if self.mig_rows else [0] * len(extra)
            table = self._table_rows or _table_estimate(tick)
            if self.has_class("-mig"):
                # The MIG tree beside the table lists every instance: the lower part keeps
                # its whole share for it.
                table = height
            charts = chart_rows(width, height, listed, wide, replaying, table)
        self.chart_rows = charts
        if self.mig_rows != mig_listed:
            self._say_in_view()
        if (compact, wide, details) != (self.compact, self.wide, self.details):
            self.compact, self.wide, self.details = compact, wide, details
            self.set_class(compact, "-compact")
            self.set_class(wide, "-wide")
            self.set_class(details, "-details")
        self.set_class(charts > 0, "-charts")

    def _lower_rows_wanted(self) -> int:
        """Rows the table under the panels needs to show all its lines."""
        return self._part(ProcessTable).rows_wanted

    def _hold_table_rows(self, wanted: int) -> None:
        """Room for the table's ``wanted`` rows at once; rows it no longer needs go back to
        the charts after ``TABLE_HOLD_TICKS`` ticks of not needing them."""
        if wanted >= self._table_rows:
            self._table_rows = wanted
            self._table_hold = TABLE_HOLD_TICKS
        elif self._table_hold > 0:
            self._table_hold -= 1
        else:
            self._table_rows = wanted

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

    # -- actions ----------------------------------------------------------------------

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
            return self.tick is not None and bool(self.tick.alarms)
        if self.settings.served and (action == "signal_refused" or action in LIVE_ACTIONS):
            # A browser viewer has no signal keys at all, and the interval is the server's.
            return False
        if action in PRIORITY_ACTIONS and isinstance(self.app.focused, Input):
            return False
        replaying = self.replaying
        if action in REPLAY_ACTIONS:
            # A single-document capture is a still: there is nowhere to move.
            tick = self.tick
            return replaying and not (
                tick is not None and tick.replay is not None and tick.replay.still
            )
        if action in LIVE_ACTIONS:
            return not replaying
        if action == "signal_refused":
            read_only = replaying or self.settings.readonly
            return read_only or self._area_of_focus() != "processes"
        if action in ("toggle_pause", "resume"):
            tick = self.tick
            if tick is not None and tick.replay is not None and tick.replay.still:
                return False
            paused = self._paused(tick)
            return paused if action == "resume" else not paused
        return True

    def action_toggle_mig(self) -> None:
        """Show or hide the MIG tree beside the processes."""
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

    async def action_filter(self) -> None:
        """Filter the process table (its own ``/``, reachable from anywhere)."""
        await self.query_one(ProcessTable).action_open_filter()

    def _submit(self, command: Command) -> None:
        submit = getattr(self.app, "submit", None)
        if submit is not None:
            submit(command)

    def action_toggle_pause(self) -> None:
        """Pause (live polling or replay playback)."""
        from gputop.pipeline.commands import TogglePause

        self._submit(TogglePause())

    def action_acknowledge(self) -> None:
        """Acknowledge every GPU's health alarm: their red lines go until the next one."""
        from gputop.pipeline.commands import Acknowledge

        self._submit(Acknowledge())

    def action_resume(self) -> None:
        """Resume after a pause."""
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
        from gputop.pipeline.commands import Step

        self._submit(Step(delta))

    def action_speed(self, steps: int) -> None:
        """Replay: faster or slower."""
        from gputop.pipeline.commands import ChangeSpeed

        self._submit(ChangeSpeed(steps))

    def action_seek(self, index: int) -> None:
        """Replay: go to a document (``-1`` is the last)."""
        from gputop.pipeline.commands import Seek

        self._submit(Seek(index))

    def action_interval(self, steps: int) -> None:
        """Live: poll more or less often (the tick that answers says how often, in a toast)."""
        from gputop.pipeline.commands import StepInterval

        self._submit(StepInterval(steps))

    def action_goto(self) -> None:
        """Replay: ask for an index or a time and go there."""
        tick = self.tick
        if tick is None or tick.replay is None:
            return
        from gputop.pipeline.commands import Seek, SeekTime
        from gputop.ui.screens.goto import GotoDialog

        def answered(target: int | TimeTarget | None) -> None:
            if isinstance(target, int):
                self._submit(Seek(target))
            elif target is not None:
                self._submit(SeekTime(target.start, target.within))

        self.app.push_screen(GotoDialog(tick.replay), answered)

    def on_gpu_panel_history_requested(self, message: GpuPanel.HistoryRequested) -> None:
        """Enter on a panel: that GPU's history, as the poller's store holds it."""
        tick = self.tick
        if tick is None:
            return
        # Imported here: the charts pull in plotext, which the main screen does not need.
        from gputop.ui.screens.history import HistoryScreen

        now = self._now() if tick.live else None
        screen = HistoryScreen(message.gpu_index, message.key, tick.archive, tick.window, now=now)
        self.app.push_screen(screen)

    def _now(self) -> datetime:
        now = getattr(self.app, "now", None)
        return now() if callable(now) else datetime.now()
