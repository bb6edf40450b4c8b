"""Feed + history -> immutable ticks.

``Pipeline`` is the one core of the TUI and of every headless mode: it takes what its feed
brings (a live source, a replay player, a recording's documents: ``gputop.pipeline.feed``),
writes it to the sinks, files it into the history, remembers a short window of recent
snapshots and returns a :class:`Tick` holding everything a view needs. What a view needs
(its series, a diagnosis) is its builder's to say (``gputop.cli``). Nothing here imports
Textual.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from gputop.history import HistoryStore, Metric
from gputop.insight.diagnosis import Finding
from gputop.model import GpuSample, Snapshot
from gputop.model.gpu_state import GpuState, sample_state
from gputop.model.machine import same_machine
from gputop.pipeline.feed import Arrival, Feed, Move
from gputop.pipeline.health_alarm import Alarms
from gputop.pipeline.in_view import InView
from gputop.pipeline.interval import clamp_interval, step_interval
from gputop.pipeline.tick import SinkStatus, Tick, ViewSpec

if TYPE_CHECKING:
    from gputop.pipeline.commands import Command
    from gputop.pipeline.gpu_select import GpuSelection


DEFAULT_WINDOW = 45
"""Recent snapshots kept whole, for the history screen's diagnosis (its rules read 30 s).

Whole snapshots are big (an 8-GPU, 200-process box: about 145 KB each), so only these are
kept; the history keeps a day of numbers (``gputop.history.store``)."""

Diagnose = Callable[[Sequence[Snapshot], int], tuple[Finding, ...]]
"""(recent snapshots of one machine, GPU index) -> findings worst first
(``gputop.insight.diagnosis.diagnose``)."""


NO_VIEW = ViewSpec()
"""No series in the ticks (a headless run prints snapshots, not sparklines)."""


def _same_machine_tail(snapshots: Sequence[Snapshot]) -> Sequence[Snapshot]:
    """The last snapshots that are of the same machine as the very last one."""
    start = len(snapshots) - 1
    while start > 0 and same_machine(snapshots[start - 1], snapshots[-1]):
        start -= 1
    return snapshots[max(start, 0) :]


def throttled(gpu: GpuSample) -> bool | None:
    """Whether the GPU is throttled as every view says it (``model.gpu_state``: a busy GPU
    at its power cap is not), for history; None where the reasons are not reported."""
    if gpu.throttle_reasons is None:
        return None
    return sample_state(gpu) is GpuState.THROTTLED


def new_history() -> HistoryStore:
    """The store a pipeline fills by default: every metric, for a day, with throttling."""
    return HistoryStore(readers={Metric.THROTTLED: throttled})


class SinkStateLike(Protocol):
    """One sink of a recorder (``gputop.sinks.fanout.SinkState``)."""

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


class Recorder(Protocol):
    """The sinks snapshots are written to (``gputop.sinks.fanout.SnapshotSinks``: a sink
    whose write fails stops alone and says so in ``states``; writing never raises)."""

    def write(self, snapshot: Snapshot) -> object:
        """Write one snapshot to every sink still writing."""
        ...

    def states(self) -> Sequence[SinkStateLike]:
        """Each sink and its failure, if any."""
        ...


class Pipeline:
    """Turns a feed into ticks. Single-threaded: only the poller thread (or a hand) calls it.

    Whatever the feed, each snapshot that arrives takes the same way: to the sinks
    (``--record``, ``--log``: a sink whose write fails stops alone, said once in the tick's
    notes and kept in ``Tick.sinks``), through ``--gpu``, into the history and the window,
    and out in a tick with the diagnosis and the view's series the builder asked for.
    """

    def __init__(
        self,
        feed: Feed,
        *,
        interval: float = 1.0,
        history: HistoryStore | None = None,
        window_size: int = DEFAULT_WINDOW,
        rebuild_size: int | None = None,
        selection: GpuSelection | None = None,
        strict: bool = False,
        recorder: Recorder | None = None,
        record_selected: bool = False,
        view: ViewSpec = NO_VIEW,
        diagnose: Diagnose | None = None,
        in_view: InView | None = None,
    ) -> None:
        """Wrap a feed.

        Args:
            feed: where snapshots come from (``gputop.pipeline.feed``).
            interval: live seconds between polls.
            history: the store to fill (``new_history()`` by default).
            window_size: recent snapshots each tick carries.
            rebuild_size: documents re-read into history after a replay seek (default:
                ``max(window_size, view.width)``, enough to refill every sparkline).
            selection: ``--gpu``, applied to every snapshot that arrives.
            strict: every snapshot must have every GPU ``selection`` names (a converted
                recording); otherwise a GPU that falls off the bus just goes from view.
            recorder: the sinks each arriving snapshot is written to.
            record_selected: the sinks get the ``--gpu`` selection, not the whole snapshot
                (live ``--record`` keeps every GPU: replay numbers GPUs by document order).
            view: the series copied into each tick.
            diagnose: the diagnosis each tick carries for every GPU (none without it).
            in_view: carried in every tick, for a view to say which processes it shows
                (read by the live source's host lookup, ``gputop.pipeline.in_view``).
        """
        self._feed = feed
        self._interval = clamp_interval(interval)
        self._history = history if history is not None else new_history()
        self._window: deque[Snapshot] = deque(maxlen=window_size)
        self._rebuild_size = rebuild_size or max(window_size, view.width)
        self._selection = selection
        self._strict = strict
        self._recorder = recorder
        self._record_selected = record_selected
        self._view = view
        self._diagnose = diagnose
        self._in_view = in_view
        self._seq = 0
        self._arrived = 0
        self._current = Snapshot(timestamp=None)
        self._diagnosed_for: Snapshot | None = None
        self._diagnosed: tuple[tuple[int, tuple[Finding, ...]], ...] = ()
        self._notes: list[str] = []
        self._sinks: tuple[SinkStatus, ...] = self._sink_status()
        self._alarms = Alarms()

    @property
    def history(self) -> HistoryStore:
        """The history store this pipeline fills."""
        return self._history

    @property
    def feed(self) -> Feed:
        """Where the snapshots come from."""
        return self._feed

    @property
    def replaying(self) -> bool:
        """True for a replay (the feed has a replay bar), False for a live source."""
        return self._feed.status() is not None

    @property
    def interval(self) -> float:
        """Live seconds between polls."""
        return self._interval

    @property
    def arrived(self) -> int:
        """Snapshots that have arrived so far (a hand-driven loop tells a new one by it)."""
        return self._arrived

    def start(self) -> Tick:
        """The first tick: poll once (live) or load the first document (replay)."""
        self._take(self._feed.start())
        return self.tick()

    def next_delay(self) -> float | None:
        """Seconds until ``advance`` is due; None to wait for a command (or the end)."""
        return self._feed.next_delay(self._interval)

    def advance(self) -> Tick:
        """The scheduled step: poll the live source, or play the replay forward."""
        self._take(self._feed.advance())
        return self.tick()

    def apply(self, command: Command) -> None:
        """Carry out a user command; call ``tick()`` afterwards for the new state."""
        # Deferred: no command exists before the first key press (issue 17: 21 M).
        from gputop.pipeline.commands import Acknowledge, Refresh, SetInterval, StepInterval

        if isinstance(command, Acknowledge):
            events = self._history.events
            self._alarms.acknowledge(self._current, events.total, command.gpu)
        elif isinstance(command, SetInterval):
            self._interval = clamp_interval(command.seconds)
        elif isinstance(command, StepInterval):
            self._interval = step_interval(self._interval, command.steps)
        elif not isinstance(command, Refresh):
            self._take(self._feed.apply(command))

    def tick(self) -> Tick:
        """The current state as an immutable tick."""
        self._seq += 1
        notes, self._notes = tuple(self._notes), []
        window = tuple(self._window)
        feed = self._feed
        view = self._view
        return Tick(
            seq=self._seq,
            snapshot=self._current,
            history=self._history.view(view.width, view.metrics),
            archive=self._history.reader,
            replay=feed.status(),
            window=window,
            interval=self._interval,
            paused=feed.paused,
            error=feed.error,
            notes=notes,
            findings=self._diagnosis(window),
            sinks=self._sinks,
            waiting=feed.waiting,
            events=self._history.events.kept,
            alarms=self._alarms.alarms(
                self._current, self._history.events.kept, self._history.events.total
            ),
            in_view=self._in_view,
        )

    def _diagnosis(
        self, window: tuple[Snapshot, ...]
    ) -> tuple[tuple[int, tuple[Finding, ...]], ...]:
        """Findings for the current snapshot, worked out once per new snapshot.

        Runs here, in the poll thread, so that the UI thread only draws the result.
        """
        diagnose = self._diagnose
        if diagnose is None:
            return ()
        if self._diagnosed_for is not self._current:
            self._diagnosed = tuple(
                (gpu.index, diagnose(window, gpu.index)) for gpu in self._current.gpus
            )
            self._diagnosed_for = self._current
        return self._diagnosed

    def close(self) -> None:
        """Close the feed."""
        self._feed.close()

    # -- internals -------------------------------------------------------------------

    def _take(self, arrival: Arrival) -> None:
        self._notes += arrival.notes
        if arrival.move is Move.REBUILD or (arrival.move is Move.BACK and len(self._window) <= 1):
            self._load_window()
            return
        if arrival.move is Move.BACK:
            # One step back: drop the newest sample instead of re-reading the window.
            (snapshot,) = arrival.snapshots
            self._history.drop_last()
            self._window.pop()
            if snapshot is not None:
                self._current = self._select(snapshot)
            self._window[-1] = self._current
            return
        for snapshot in arrival.snapshots:
            if snapshot is None:
                self._push(self._current)  # unreadable: the last good one stands
                continue
            selected = self._select(snapshot)
            if self._recorder is not None:
                self._record(selected if self._record_selected else snapshot)
            self._push(selected)

    def _record(self, snapshot: Snapshot) -> None:
        assert self._recorder is not None
        before = self._sinks
        self._recorder.write(snapshot)
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
        if recorder is None:
            return ()
        return tuple(
            SinkStatus(state.option, str(state.path), state.error) for state in recorder.states()
        )

    def _select(self, snapshot: Snapshot) -> Snapshot:
        if self._selection is None:
            return snapshot
        return self._selection.apply(snapshot, strict=self._strict)

    def _push(self, snapshot: Snapshot) -> None:
        window = self._window
        if window and not same_machine(window[-1], snapshot):
            # Another machine's snapshots (a directory of captures): its GPUs did not go,
            # and the diagnosis must not read them as this machine's past.
            window.clear()
        self._current = snapshot
        self._arrived += 1
        self._history.append(snapshot)
        window.append(snapshot)

    def _load_window(self) -> None:
        """Rebuild history and window from the snapshots before the feed's position."""
        snapshots = [self._select(s) for s in self._feed.window(self._rebuild_size)]
        self._history.rebuild(snapshots)
        self._window.clear()
        self._window.extend(_same_machine_tail(snapshots))
        if snapshots:
            self._current = snapshots[-1]
            self._arrived += 1
