"""Source + history -> immutable ticks.

``Pipeline`` is the whole headless core of the TUI: it polls a live source (or moves a replay
player), files each snapshot into the history, remembers a short window of recent snapshots
and returns a :class:`Tick` holding everything a screen needs. Nothing here imports Textual.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gputop.errors import Fatal, GputopError, Waiting
from gputop.history import HistoryStore, Metric
from gputop.insight.diagnosis import Finding, diagnose, limiting_reasons
from gputop.model import GpuSample, Snapshot
from gputop.model.machine import same_machine
from gputop.pipeline.interval import clamp_interval, step_interval
from gputop.pipeline.tick import (
    ChangeSpeed,
    Command,
    Refresh,
    Seek,
    SeekTime,
    SetInterval,
    SinkStatus,
    Step,
    StepInterval,
    Tick,
    TogglePause,
)
from gputop.sources.base import Source
from gputop.sources.replay import ReplayPlayer

if TYPE_CHECKING:
    from gputop.sources.gpu_select import GpuSelection


DEFAULT_WINDOW = 45
"""Recent snapshots kept whole, for the history screen's diagnosis (its rules read 30 s).

Whole snapshots are big (an 8-GPU, 200-process box: about 145 KB each), so only these are
kept; the history keeps a day of numbers (``gputop.history.store``)."""

WAITING_POLL = 1.0
"""Seconds between polls of a source that is not ready yet (``Waiting``)."""

VIEW_METRICS: tuple[Metric, ...] = (Metric.GPU_UTIL, Metric.MEM_USED, Metric.POWER, Metric.TEMP)
"""The series each tick carries: the ones the GPU panels draw."""

VIEW_WIDTH = 160
"""Samples per series in each tick: more than the widest sparkline a panel draws."""


def _same_machine_tail(snapshots: Sequence[Snapshot]) -> Sequence[Snapshot]:
    """The last snapshots that are of the same machine as the very last one."""
    start = len(snapshots) - 1
    while start > 0 and same_machine(snapshots[start - 1], snapshots[-1]):
        start -= 1
    return snapshots[max(start, 0) :]


def throttled(gpu: GpuSample) -> bool | None:
    """Whether a reason that limits the clocks is active (the diagnosis's rule), for history."""
    if gpu.throttle_reasons is None:
        return None
    return bool(limiting_reasons(gpu.throttle_reasons))


def new_history() -> HistoryStore:
    """The store a pipeline fills by default: every metric, for a day, with throttling."""
    return HistoryStore(readers={Metric.THROTTLED: throttled})


class Recorder(Protocol):
    """Where live snapshots are appended (``gputop.sinks.fanout.SnapshotSinks``)."""

    def write(self, snapshot: Snapshot) -> object:
        """Append one snapshot; raises GputopError when it cannot."""
        ...


class SinkStateLike(Protocol):
    """One sink of a recorder, as ``SinkReporting.states`` describes it."""

    @property
    def option(self) -> str:
        """``--record`` or ``--log``."""
        ...

    @property
    def path(self) -> object:
        """The file."""
        ...

    @property
    def error(self) -> str | None:
        """Why it stopped, if it did."""
        ...


@runtime_checkable
class SinkReporting(Protocol):
    """A recorder of several sinks that keeps going when one fails, and says which."""

    def states(self) -> Sequence[SinkStateLike]:
        """Each sink and its failure, if any."""
        ...


class Pipeline:
    """Turns a source into ticks. Single-threaded: only the poller thread calls it."""

    def __init__(
        self,
        source: Source | ReplayPlayer,
        *,
        interval: float = 1.0,
        history: HistoryStore | None = None,
        window_size: int = DEFAULT_WINDOW,
        rebuild_size: int | None = None,
        selection: GpuSelection | None = None,
        recorder: Recorder | None = None,
        view_metrics: Sequence[Metric] = VIEW_METRICS,
        view_width: int = VIEW_WIDTH,
    ) -> None:
        """Wrap a source.

        Args:
            source: a live ``Source`` (polled each interval) or a ``ReplayPlayer``.
            interval: live seconds between polls.
            history: the store to fill (``new_history()`` by default).
            window_size: recent snapshots each tick carries.
            rebuild_size: documents re-read into history after a replay seek (default:
                ``max(window_size, view_width)``, enough to refill every sparkline).
            selection: ``--gpu``: applied (leniently) to every snapshot.
            recorder: live snapshots are also written here (``--record``).
            view_metrics: series copied into each tick.
            view_width: samples per series copied into each tick.
        """
        self._source = source
        self._player = source if isinstance(source, ReplayPlayer) else None
        self._live = None if isinstance(source, ReplayPlayer) else source
        self._interval = clamp_interval(interval)
        self._history = history if history is not None else new_history()
        self._window: deque[Snapshot] = deque(maxlen=window_size)
        self._rebuild_size = rebuild_size or max(window_size, view_width)
        self._selection = selection
        self._recorder = recorder
        self._view_metrics = tuple(view_metrics)
        self._view_width = view_width
        self._seq = 0
        self._paused = False
        self._current = Snapshot(timestamp=None)
        self._diagnosed_for: Snapshot | None = None
        self._diagnosed: tuple[tuple[int, tuple[Finding, ...]], ...] = ()
        self._error: str | None = None
        self._waiting: str | None = None
        self._notes: list[str] = []
        self._sinks: tuple[SinkStatus, ...] = self._sink_status()

    @property
    def history(self) -> HistoryStore:
        """The history store this pipeline fills."""
        return self._history

    @property
    def replaying(self) -> bool:
        """True for a replay, False for a live source."""
        return self._player is not None

    @property
    def interval(self) -> float:
        """Live seconds between polls."""
        return self._interval

    def start(self) -> Tick:
        """The first tick: poll once (live) or load the first document (replay)."""
        if self._player is not None:
            self._load_window()
        else:
            self._poll()
        return self.tick()

    def next_delay(self) -> float | None:
        """Seconds until ``advance`` is due; None to wait for a command."""
        if self._player is not None:
            return self._player.next_delay()
        if self._waiting is not None:
            return min(self._interval, WAITING_POLL)  # the header counts seconds
        return None if self._paused else self._interval

    def advance(self) -> Tick:
        """The scheduled step: poll the live source, or play the replay forward."""
        if self._player is not None:
            for index in self._player.advance():
                self._push(self._read(index))
        else:
            self._poll()
        return self.tick()

    def apply(self, command: Command) -> None:
        """Carry out a user command; call ``tick()`` afterwards for the new state."""
        player = self._player
        if isinstance(command, TogglePause):
            if player is None:
                self._paused = not self._paused
            elif player.toggle_pause():
                self._load_window()
        elif isinstance(command, SetInterval):
            self._interval = clamp_interval(command.seconds)
        elif isinstance(command, StepInterval):
            self._interval = step_interval(self._interval, command.steps)
        elif isinstance(command, Refresh) or player is None:
            return
        elif isinstance(command, Step):
            before = player.position
            after = player.step(command.delta)
            self._moved(before, after)
        elif isinstance(command, Seek):
            before = player.position
            self._moved(before, player.seek(command.index))
        elif isinstance(command, SeekTime):
            before = player.position
            after, _exact = player.seek_time(command.moment)
            self._moved(before, after)
        elif isinstance(command, ChangeSpeed):
            player.change_speed(command.steps)

    def tick(self) -> Tick:
        """The current state as an immutable tick."""
        self._seq += 1
        notes, self._notes = tuple(self._notes), []
        window = tuple(self._window)
        return Tick(
            seq=self._seq,
            snapshot=self._current,
            history=self._history.view(self._view_width, self._view_metrics),
            archive=self._history.reader,
            replay=None if self._player is None else self._player.status(),
            window=window,
            interval=self._interval,
            paused=self._paused,
            error=self._error,
            notes=notes,
            findings=self._diagnosis(window),
            sinks=self._sinks,
            waiting=self._waiting,
        )

    def _diagnosis(
        self, window: tuple[Snapshot, ...]
    ) -> tuple[tuple[int, tuple[Finding, ...]], ...]:
        """Findings for the current snapshot, worked out once per new snapshot.

        Runs here, in the poll thread, so that the UI thread only draws the result.
        """
        if self._diagnosed_for is not self._current:
            self._diagnosed = tuple(
                (gpu.index, diagnose(window, gpu.index)) for gpu in self._current.gpus
            )
            self._diagnosed_for = self._current
        return self._diagnosed

    def close(self) -> None:
        """Close the source."""
        self._source.close()

    # -- internals -------------------------------------------------------------------

    def _poll(self) -> None:
        assert self._live is not None
        try:
            snapshot = self._live.poll()
        except Waiting as waiting:
            self._waiting = str(waiting)
            return
        except Fatal:
            raise  # nothing can be shown: the loop ends and the app says why
        except GputopError as error:
            self._error = str(error)
            return
        except Exception as error:  # a driver hiccup must not end monitoring
            self._error = f"{type(error).__name__}: {error}"
            return
        self._error = self._waiting = None
        self._push(self._select(snapshot))
        if self._recorder is not None:
            self._record(snapshot)

    def _record(self, snapshot: Snapshot) -> None:
        assert self._recorder is not None
        try:
            self._recorder.write(snapshot)
        except GputopError as error:
            self._notes.append(f"recording stopped: {error}")
            self._recorder = None
            return
        before = self._sinks
        self._sinks = self._sink_status()
        # A sink that fails stops alone: its error is said once here, and stays in the
        # header (``sinks``) for as long as gputop runs.
        self._notes += [
            f"{sink.error} (stopped)"
            for old, sink in zip(before, self._sinks, strict=False)
            if sink.error is not None and old.error is None
        ]

    def _sink_status(self) -> tuple[SinkStatus, ...]:
        recorder = self._recorder
        if not isinstance(recorder, SinkReporting):
            return ()
        return tuple(
            SinkStatus(state.option, str(state.path), state.error) for state in recorder.states()
        )

    def _read(self, index: int) -> Snapshot:
        assert self._player is not None
        try:
            snapshot = self._player.timeline.snapshot(index)
        except GputopError as error:
            self._error = f"document {index}: {error}"
            return self._current
        self._error = None
        return self._select(snapshot)

    def _select(self, snapshot: Snapshot) -> Snapshot:
        if self._selection is None:
            return snapshot
        return self._selection.apply(snapshot, strict=False)

    def _push(self, snapshot: Snapshot) -> None:
        window = self._window
        if window and not same_machine(window[-1], snapshot):
            # Another machine's snapshots (a directory of captures): its GPUs did not go,
            # and the diagnosis must not read them as this machine's past.
            window.clear()
        self._current = snapshot
        self._history.append(snapshot)
        window.append(snapshot)

    def _moved(self, before: int, after: int) -> None:
        if after == before:
            return
        if after == before + 1:
            self._push(self._read(after))
        elif after == before - 1 and len(self._window) > 1:
            # One step back: drop the newest sample instead of re-reading the window.
            self._history.drop_last()
            self._window.pop()
            self._current = self._read(after)
            self._window[-1] = self._current
        else:
            self._load_window()

    def _load_window(self) -> None:
        """Rebuild history and window from the documents before the player's position."""
        assert self._player is not None
        snapshots = [self._select(s) for s in self._player.window(self._rebuild_size)]
        self._history.rebuild(snapshots)
        self._window.clear()
        self._window.extend(_same_machine_tail(snapshots))
        if snapshots:
            self._current = snapshots[-1]
            self._error = None
        else:
            self._current = self._read(self._player.position)
