"""Who drives a pipeline: a thread of its own (``PollLoop``, the TUI), a headless run's hand
(``CountedLoop``: ``--once``, ``--json``, ``--count``, ``--pick``) or a test's (``ManualLoop``).

``PollLoop`` sleeps until the next tick is due or a command arrives, so polls never overlap
and never run on the UI thread.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from gputop.pipeline.clock import Clock
from gputop.pipeline.core import Pipeline
from gputop.pipeline.loop_thread import LoopThread
from gputop.pipeline.tick import Tick

if TYPE_CHECKING:
    from gputop.pipeline.commands import Command


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


class CountedLoop:
    """A pipeline driven on the caller's thread until ``count`` snapshots have arrived or
    its feed ends: the headless modes.

    Steps keep a fixed rate (the feed's delay after each, summed from the start), so a slow
    poll does not push every later one back.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        count: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Drive ``pipeline``; ``count`` None: until the feed ends."""
        self.pipeline = pipeline
        self._count = count
        self._sleep = sleep
        self._clock = clock

    def run(self, on_snapshot: Callable[[Tick], None]) -> None:
        """Step the pipeline; ``on_snapshot`` gets each tick that brought a new snapshot.

        Errors (a headless feed raises instead of showing stale data) propagate.
        """
        pipeline = self.pipeline
        due = self._clock()
        tick = pipeline.start()
        seen = 0
        while True:
            if pipeline.arrived > seen:
                seen = pipeline.arrived
                on_snapshot(tick)
            if self._count is not None and seen >= self._count:
                return
            delay = pipeline.next_delay()
            if delay is None:
                return
            due += delay
            wait = due - self._clock()
            if wait > 0:
                self._sleep(wait)
            tick = pipeline.advance()


class PollLoop(LoopThread):
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
        super().__init__(clock=clock, name=name)
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self.ticks = 0
        """Ticks handed out so far (read by tests and benchmarks)."""

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline this loop runs."""
        return self._pipeline

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
        self._start_thread(on_failure)

    def submit(self, command: Command) -> None:
        """Queue a command (thread-safe); the loop answers it with a tick."""
        self._commands.put(command)
        self._wake.set()

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
