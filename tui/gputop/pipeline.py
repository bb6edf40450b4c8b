"""Source + history -> immutable ticks, and the one thread that produces them.

``Pipeline`` is the whole headless core of the TUI: it polls a live source (or moves a replay
player), files each snapshot into the history, remembers a short window of recent snapshots
and returns a :class:`Tick` holding everything a screen needs. ``PollLoop`` runs a pipeline on
a dedicated thread: it sleeps until the next tick is due or a command arrives, so polls never
overlap and never run on the UI thread. Nothing here imports Textual.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from gputop.errors import GputopError
from gputop.history import EMPTY_VIEW, HistoryStore, HistoryView, Metric
from gputop.insight.diagnosis import Finding, diagnose
from gputop.model import Snapshot
from gputop.options import MIN_INTERVAL
from gputop.sources.base import Source
from gputop.sources.replay import ReplayPlayer, ReplayStatus

if TYPE_CHECKING:
    from gputop.sources.gpu_select import GpuSelection

DEFAULT_WINDOW = 45
"""Recent snapshots kept whole, for the history screen's diagnosis (its rules read 30 s).

Whole snapshots are big (an 8-GPU, 200-process box: about 145 KB each), so only these are
kept; the rings keep an hour of numbers at 4 bytes a sample."""

MAX_INTERVAL = 60.0

VIEW_METRICS: tuple[Metric, ...] = (Metric.GPU_UTIL, Metric.MEM_USED, Metric.POWER, Metric.TEMP)
"""The series each tick carries: the ones the GPU panels draw."""

VIEW_WIDTH = 160
"""Samples per series in each tick: more than the widest sparkline a panel draws."""


class Clock(Protocol):
    """Time as the pipeline sees it; tests inject a fixed one."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    def now(self) -> datetime:
        """Local wall-clock time."""
        ...


class SystemClock:
    """The real clocks."""

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def now(self) -> datetime:
        """``datetime.now()``."""
        return datetime.now()


class Recorder(Protocol):
    """Where live snapshots are appended (``gputop.sources.smi_writer.SmiXmlWriter``)."""

    def write(self, snapshot: Snapshot) -> None:
        """Append one snapshot; raises GputopError when it cannot."""
        ...


@dataclass(frozen=True, slots=True)
class Tick:
    """Everything a screen shows at one moment; immutable, so it may cross threads."""

    seq: int
    """Counts ticks from 1; a screen can skip a tick it has already drawn."""
    snapshot: Snapshot
    history: HistoryView = EMPTY_VIEW
    replay: ReplayStatus | None = None
    """Set when replaying: position, speed, paused."""
    window: tuple[Snapshot, ...] = ()
    """Recent snapshots, oldest first, ending with ``snapshot``."""
    interval: float = 1.0
    paused: bool = False
    """Live polling is paused (replay keeps its own flag in ``replay``)."""
    error: str | None = None
    """The last poll or recording failed: shown, and the data is stale."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """One-off messages for the user (recording stopped, GPU selection changed)."""
    findings: tuple[tuple[int, tuple[Finding, ...]], ...] = ()
    """(GPU index, findings worst first) from the diagnosis of ``window``."""

    def findings_for(self, gpu_index: int) -> tuple[Finding, ...]:
        """What the diagnosis says of GPU ``gpu_index`` (empty when all is well)."""
        for index, findings in self.findings:
            if index == gpu_index:
                return findings
        return ()

    @property
    def live(self) -> bool:
        """True unless replaying."""
        return self.replay is None


@dataclass(frozen=True, slots=True)
class TogglePause:
    """Pause or resume polling / playback."""


@dataclass(frozen=True, slots=True)
class Step:
    """Replay: pause and move by ``delta`` documents."""

    delta: int


@dataclass(frozen=True, slots=True)
class Seek:
    """Replay: go to a document index (negative from the end)."""

    index: int


@dataclass(frozen=True, slots=True)
class SeekTime:
    """Replay: go to the last document taken at or before ``moment``."""

    moment: datetime


@dataclass(frozen=True, slots=True)
class ChangeSpeed:
    """Replay: move along the speed ladder by ``steps``."""

    steps: int


@dataclass(frozen=True, slots=True)
class SetInterval:
    """Live: poll every ``seconds`` (clamped to the allowed range)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Refresh:
    """Produce a tick of the current state now (no new poll)."""


Command = TogglePause | Step | Seek | SeekTime | ChangeSpeed | SetInterval | Refresh


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
            history: the store to fill (a new one-hour store by default).
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
        self._interval = _clamp_interval(interval)
        self._history = history if history is not None else HistoryStore()
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
        self._notes: list[str] = []

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
            self._interval = _clamp_interval(command.seconds)
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
            replay=None if self._player is None else self._player.status(),
            window=window,
            interval=self._interval,
            paused=self._paused,
            error=self._error,
            notes=notes,
            findings=self._diagnosis(window),
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
        except GputopError as error:
            self._error = str(error)
            return
        except Exception as error:  # a driver hiccup must not end monitoring
            self._error = f"{type(error).__name__}: {error}"
            return
        self._error = None
        self._push(self._select(snapshot))
        if self._recorder is not None:
            try:
                self._recorder.write(snapshot)
            except GputopError as error:
                self._notes.append(f"recording stopped: {error}")
                self._recorder = None

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
        self._current = snapshot
        self._history.append(snapshot)
        self._window.append(snapshot)

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
        self._window.extend(snapshots)
        if snapshots:
            self._current = snapshots[-1]
            self._error = None
        else:
            self._current = self._read(self._player.position)


def _clamp_interval(seconds: float) -> float:
    return min(max(seconds, MIN_INTERVAL), MAX_INTERVAL)


class TickLoop(Protocol):
    """What the app drives: a threaded ``PollLoop`` live, a ``ManualLoop`` in tests."""

    def start(
        self,
        on_tick: Callable[[Tick], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Begin producing ticks; ``on_failure`` hears of an error that ends the loop."""
        ...

    def submit(self, command: Command) -> None:
        """Queue a user command."""
        ...

    def stop(self, timeout: float = 1.0) -> bool:
        """End; True when nothing runs any more."""
        ...


def _ignore(tick: Tick) -> None:
    """The tick sink before ``start``."""


class ManualLoop:
    """A pipeline driven by hand, on the caller's thread: for tests and snapshots.

    ``start`` and ``submit`` produce their tick immediately; scheduled ticks happen only when
    the test calls ``advance``, so nothing depends on timing.
    """

    def __init__(self, pipeline: Pipeline, *, warmup: int = 0) -> None:
        """Wrap ``pipeline``; nothing happens until ``start``.

        Args:
            pipeline: what to drive.
            warmup: scheduled ticks run inside ``start`` before the first emitted tick, so
                history is filled without the UI seeing each of them.
        """
        self.pipeline = pipeline
        self._warmup = warmup
        self._on_tick: Callable[[Tick], None] = _ignore
        self.commands: list[Command] = []
        """Every command submitted, in order (tests assert on it)."""
        self.stopped = False

    def start(
        self,
        on_tick: Callable[[Tick], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Emit the first tick (after the warm-up ticks); errors propagate to the caller."""
        self._on_tick = on_tick
        tick = self.pipeline.start()
        for _ in range(self._warmup):
            tick = self.pipeline.advance()
        on_tick(tick)

    def submit(self, command: Command) -> None:
        """Apply ``command`` and emit the resulting tick."""
        self.commands.append(command)
        self.pipeline.apply(command)
        self._on_tick(self.pipeline.tick())

    def advance(self, times: int = 1) -> None:
        """Run ``times`` scheduled ticks (polls, or replay play)."""
        for _ in range(times):
            self._on_tick(self.pipeline.advance())

    def stop(self, timeout: float = 1.0) -> bool:
        """Nothing runs; record that stop was asked."""
        self.stopped = True
        return True


class PollLoop:
    """Runs a pipeline on its own daemon thread and hands each tick to ``on_tick``.

    One thread means polls never overlap: a source that blocks for seconds delays the next
    tick, it never stacks them. ``on_tick`` is called on the poller thread; the TUI posts a
    message from it (thread-safe). Commands from the UI queue up and wake the thread at once.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        clock: Clock | None = None,
        name: str = "gputop-poller",
        started: bool = False,
    ) -> None:
        """Prepare (not start) the loop.

        Args:
            pipeline: what to run.
            clock: for scheduling (tests may inject one).
            name: the thread's name.
            started: the caller already took the first tick (``pipeline.start()``) to show
                it at once; the loop goes on from there.
        """
        self._pipeline = pipeline
        self._started = started
        self._on_tick: Callable[[Tick], None] = _ignore
        self._clock: Clock = clock or SystemClock()
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.ticks = 0
        """Ticks handed out so far (read by tests and benchmarks)."""
        self.failure: BaseException | None = None
        """An unexpected exception that ended the loop, if any."""

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline this loop runs."""
        return self._pipeline

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def start(
        self,
        on_tick: Callable[[Tick], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Start the thread; the first tick follows at once, handed to ``on_tick``.

        ``on_failure`` is called (on the poller thread) with an unexpected error that ended
        the loop, so the UI can say that updates have stopped.
        """
        self._on_tick = on_tick
        self._on_failure = on_failure
        self._thread.start()

    def submit(self, command: Command) -> None:
        """Queue a command (thread-safe); the loop answers it with a tick."""
        self._commands.put(command)
        self._wake.set()

    def stop(self, timeout: float = 1.0) -> bool:
        """Ask the thread to end and wait up to ``timeout`` s; True when it has ended.

        A source stuck in a driver call cannot be interrupted; the thread is a daemon, so
        it does not keep the process alive.
        """
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as error:
            self.failure = error
            if self._on_failure is not None and not self._stopping.is_set():
                self._on_failure(error)

    def _loop(self) -> None:
        pipeline = self._pipeline
        if not self._started:
            self._emit(pipeline.start())
        due = self._due_after(self._clock.monotonic())
        while not self._stopping.is_set():
            if due is None:
                self._wake.wait()
            else:
                self._wake.wait(max(0.0, due - self._clock.monotonic()))
            if self._stopping.is_set():
                break
            self._wake.clear()
            commands = self._drain()
            now = self._clock.monotonic()
            if commands:
                for command in commands:
                    pipeline.apply(command)
                # A command is answered at once, and the schedule restarts from now.
                self._emit(pipeline.tick())
                due = self._due_after(now)
            elif due is not None and now >= due:
                self._emit(pipeline.advance())
                delay = pipeline.next_delay()
                if delay is None:
                    due = None
                else:
                    # Fixed rate, so a 1 s interval does not drift; a poll that overran
                    # skips the missed slots instead of firing a burst of catch-up polls.
                    due += delay
                    after = self._clock.monotonic()
                    if due <= after:
                        due = after + delay

    def _due_after(self, now: float) -> float | None:
        delay = self._pipeline.next_delay()
        return None if delay is None else now + delay

    def _drain(self) -> list[Command]:
        commands: list[Command] = []
        while True:
            try:
                commands.append(self._commands.get_nowait())
            except queue.Empty:
                return commands

    def _emit(self, tick: Tick) -> None:
        if self._stopping.is_set():
            return
        self.ticks += 1
        self._on_tick(tick)
