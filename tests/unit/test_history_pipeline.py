"""Pipeline (source -> history -> ticks) and the poller thread that runs it."""

from __future__ import annotations

import math
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from gputop.errors import GputopError
from gputop.history import HistoryStore, Metric
from gputop.insight.diagnosis import diagnose
from gputop.model import GpuSample, Snapshot, Utilization
from gputop.pipeline.commands import (
    ChangeSpeed,
    Refresh,
    Seek,
    SeekTime,
    SetInterval,
    Step,
    TogglePause,
)
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import LiveFeed, ReplayFeed
from gputop.pipeline.gpu_select import GpuSelection
from gputop.pipeline.loop import ManualLoop, PollLoop
from gputop.pipeline.tick import Tick, ViewSpec
from gputop.sinks.fanout import SnapshotSinks
from gputop.sources.playback.replay import ReplayPlayer

T0 = datetime(2024, 9, 18, 21, 34, 12)


def snapshot(n: int, gpus: int = 1) -> Snapshot:
    return Snapshot(
        timestamp=T0 + timedelta(seconds=n),
        gpus=tuple(
            GpuSample(index=i, uuid=f"GPU-{i}", utilization=Utilization(gpu=float(n)))
            for i in range(gpus)
        ),
    )


class CountingSource:
    """A live source whose n-th poll reports n% utilization."""

    def __init__(self, gpus: int = 1, fail_on: frozenset[int] = frozenset()) -> None:
        self.polls = 0
        self.gpus = gpus
        self.fail_on = fail_on
        self.closed = False

    def poll(self) -> Snapshot:
        self.polls += 1
        if self.polls in self.fail_on:
            raise GputopError("driver went away")
        return snapshot(self.polls, self.gpus)

    def close(self) -> None:
        self.closed = True


class Timeline:
    def __init__(self, count: int) -> None:
        self.count = count
        self.warnings: list[str] = []
        self.reads = 0

    def __len__(self) -> int:
        return self.count

    def snapshot(self, index: int) -> Snapshot:
        self.reads += 1
        return snapshot(index)

    def timestamp(self, index: int) -> datetime | None:
        return T0 + timedelta(seconds=index)

    def index_at(self, moment: datetime) -> int:
        return max(0, min(self.count - 1, int((moment - T0).total_seconds())))

    def close(self) -> None:
        pass


VIEW = ViewSpec((Metric.GPU_UTIL, Metric.MEM_USED, Metric.POWER, Metric.TEMP), 160)
"""The series the TUI's panels ask for."""


class ListSink:
    option = "--record"
    path = Path("r.xml")

    def __init__(self, fail_after: int | None = None) -> None:
        self.written: list[Snapshot] = []
        self.fail_after = fail_after

    def write(self, snapshot: Snapshot) -> None:
        if self.fail_after is not None and len(self.written) >= self.fail_after:
            raise GputopError("--record r.xml: disk full")
        self.written.append(snapshot)

    def close(self) -> None:
        pass


def utils(tick: Tick, key: str = "GPU-0") -> list[float | None]:
    return [None if math.isnan(v) else v for v in tick.history.series(key, Metric.GPU_UTIL)]


def test_live_ticks_poll_file_history_and_keep_a_bounded_window() -> None:
    source = CountingSource()
    pipeline = Pipeline(LiveFeed(source), window_size=3, view=VIEW, diagnose=diagnose)
    first = pipeline.start()
    assert first.seq == 1 and first.live and first.replay is None
    assert first.snapshot.gpus[0].utilization.gpu == 1.0
    for _ in range(4):
        tick = pipeline.advance()
    assert source.polls == 5
    assert utils(tick) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert [s.gpus[0].utilization.gpu for s in tick.window] == [3.0, 4.0, 5.0]
    assert tick.seq == 5 and tick.window[-1] is tick.snapshot


def test_live_pause_interval_and_refresh() -> None:
    pipeline = Pipeline(LiveFeed(CountingSource()), interval=2.0, view=VIEW, diagnose=diagnose)
    pipeline.start()
    assert pipeline.next_delay() == 2.0
    pipeline.apply(TogglePause())
    assert pipeline.next_delay() is None and pipeline.tick().paused
    pipeline.apply(TogglePause())
    pipeline.apply(SetInterval(0.01))
    assert pipeline.next_delay() == 0.25
    pipeline.apply(SetInterval(1e6))
    assert pipeline.tick().interval == 60.0
    pipeline.apply(Refresh())
    pipeline.apply(Step(1))  # a replay command does nothing live
    assert pipeline.tick().snapshot.gpus[0].utilization.gpu == 1.0


def test_a_failed_poll_keeps_the_last_snapshot_and_says_why() -> None:
    pipeline = Pipeline(
        LiveFeed(CountingSource(fail_on=frozenset({2}))), view=VIEW, diagnose=diagnose
    )
    pipeline.start()
    failed = pipeline.advance()
    assert failed.error == "driver went away"
    assert failed.snapshot.gpus[0].utilization.gpu == 1.0
    recovered = pipeline.advance()
    assert recovered.error is None and recovered.snapshot.gpus[0].utilization.gpu == 3.0


def test_recorder_gets_every_live_snapshot_and_a_failure_stops_only_recording() -> None:
    recorder = ListSink(fail_after=2)
    pipeline = Pipeline(
        LiveFeed(CountingSource()), recorder=SnapshotSinks([recorder]), view=VIEW, diagnose=diagnose
    )
    pipeline.start()
    pipeline.advance()
    tick = pipeline.advance()
    assert len(recorder.written) == 2
    assert tick.notes == ("--record r.xml: disk full (stopped)",)
    assert pipeline.advance().notes == ()
    assert tick.error is None


def test_gpu_selection_applies_to_every_snapshot() -> None:
    pipeline = Pipeline(
        LiveFeed(CountingSource(gpus=3)),
        selection=GpuSelection.parse("0,2"),
        view=VIEW,
        diagnose=diagnose,
    )
    tick = pipeline.start()
    assert [g.index for g in tick.snapshot.gpus] == [0, 2]
    assert "GPU-1" not in {key for key, _ in tick.history.series_by_key}


def test_replay_plays_into_history_and_steps_both_ways() -> None:
    timeline = Timeline(50)
    pipeline = Pipeline(
        ReplayFeed(ReplayPlayer(timeline)), window_size=10, view=VIEW, diagnose=diagnose
    )
    start = pipeline.start()
    assert start.replay is not None and start.replay.position == 0 and not start.live
    pipeline.advance()
    tick = pipeline.advance()
    assert tick.replay is not None and tick.replay.position == 2
    assert utils(tick) == [0.0, 1.0, 2.0]
    pipeline.apply(Step(1))
    tick = pipeline.tick()
    assert tick.replay is not None and tick.replay.paused and tick.replay.position == 3
    assert utils(tick) == [0.0, 1.0, 2.0, 3.0]
    reads = timeline.reads
    pipeline.apply(Step(-1))
    tick = pipeline.tick()
    assert utils(tick) == [0.0, 1.0, 2.0]
    assert tick.snapshot.gpus[0].utilization.gpu == 2.0
    assert timeline.reads - reads <= 1  # stepping back does not re-read the window


def test_replay_seeks_rebuild_history_from_the_preceding_window() -> None:
    pipeline = Pipeline(
        ReplayFeed(ReplayPlayer(Timeline(100))),
        window_size=5,
        rebuild_size=8,
        view=VIEW,
        diagnose=diagnose,
    )
    pipeline.start()
    pipeline.apply(Seek(40))
    tick = pipeline.tick()
    assert tick.replay is not None and tick.replay.position == 40
    assert utils(tick) == [33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0]
    rebuilt = tick.archive.window("GPU-0", None)  # what the history screen reads
    assert rebuilt.samples == 8 and rebuilt.span == 7.0
    assert [s.gpus[0].utilization.gpu for s in tick.window] == [36.0, 37.0, 38.0, 39.0, 40.0]
    pipeline.apply(SeekTime(T0 + timedelta(seconds=3)))
    tick = pipeline.tick()
    assert tick.snapshot.gpus[0].utilization.gpu == 3.0
    assert utils(tick) == [0.0, 1.0, 2.0, 3.0]
    pipeline.apply(Seek(-1))
    pipeline.apply(ChangeSpeed(2))
    tick = pipeline.tick()
    assert tick.replay is not None and tick.replay.at_end and tick.replay.speed == 4.0
    pipeline.apply(TogglePause())  # at the end: starts over
    tick = pipeline.tick()
    assert tick.replay is not None and tick.replay.position == 0 and utils(tick) == [0.0]


def test_manual_loop_emits_on_start_commands_and_advance() -> None:
    ticks: list[Tick] = []
    loop = ManualLoop(Pipeline(LiveFeed(CountingSource()), view=VIEW, diagnose=diagnose))
    loop.start(ticks.append)
    loop.submit(TogglePause())
    loop.advance(2)
    assert [t.seq for t in ticks] == [1, 2, 3, 4]
    assert ticks[1].paused
    assert loop.commands == [TogglePause()]
    assert loop.stop() and loop.stopped


def test_poll_loop_ticks_on_schedule_on_its_own_thread() -> None:
    source = CountingSource()
    threads: set[str] = set()
    got = threading.Event()
    ticks: list[Tick] = []

    def on_tick(tick: Tick) -> None:
        threads.add(threading.current_thread().name)
        ticks.append(tick)
        if len(ticks) >= 3:
            got.set()

    loop = PollLoop(Pipeline(LiveFeed(source), interval=0.25, view=VIEW, diagnose=diagnose))
    loop.start(on_tick)
    assert got.wait(3.0)
    assert loop.stop() and not loop.alive
    assert threads == {"gputop-poller"}
    assert [t.seq for t in ticks][:3] == [1, 2, 3]


def test_poll_loop_answers_commands_at_once_and_never_overlaps_polls() -> None:
    class SlowSource(CountingSource):
        def __init__(self) -> None:
            super().__init__()
            self.active = 0
            self.overlapped = False

        def poll(self) -> Snapshot:
            self.active += 1
            self.overlapped |= self.active > 1
            time.sleep(0.3)
            self.active -= 1
            return super().poll()

    source = SlowSource()
    ticks: list[Tick] = []
    paused = threading.Event()

    def on_tick(tick: Tick) -> None:
        ticks.append(tick)
        if tick.paused:
            paused.set()

    loop = PollLoop(Pipeline(LiveFeed(source), interval=0.25, view=VIEW, diagnose=diagnose))
    loop.start(on_tick)
    loop.submit(TogglePause())
    assert paused.wait(2.0)
    polls = source.polls
    time.sleep(0.6)
    assert source.polls == polls  # paused: no more polls
    assert loop.stop(2.0)
    assert not source.overlapped and loop.failure is None


def test_poll_loop_stop_returns_even_if_the_source_hangs() -> None:
    release = threading.Event()

    class HangingSource(CountingSource):
        def poll(self) -> Snapshot:
            release.wait(30.0)
            return super().poll()

    loop = PollLoop(Pipeline(LiveFeed(HangingSource()), view=VIEW, diagnose=diagnose))
    loop.start(lambda tick: None)
    started = time.monotonic()
    assert loop.stop(0.2) is False
    # The source hangs for 30 s: returning well before that proves stop did not wait on it.
    assert time.monotonic() - started < 10.0
    release.set()
    assert loop.stop(2.0)


def test_the_headless_core_of_the_tui_does_not_load_textual() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gputop.pipeline.core, gputop.pipeline.loop, gputop.history\n"
        "import gputop.sources.playback.replay\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'rich') or m.startswith('gputop.ui'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_an_unexpected_error_ends_the_loop_and_is_reported() -> None:
    class Broken(HistoryStore):
        def append(self, snapshot: Snapshot) -> None:
            raise RuntimeError("ring on fire")

    failures: list[BaseException] = []
    reported = threading.Event()

    def on_failure(error: BaseException) -> None:
        failures.append(error)
        reported.set()

    loop = PollLoop(
        Pipeline(LiveFeed(CountingSource()), history=Broken(), view=VIEW, diagnose=diagnose)
    )
    loop.start(lambda tick: None, on_failure)
    assert reported.wait(2.0)
    assert loop.stop() and isinstance(loop.failure, RuntimeError)
    assert [str(error) for error in failures] == ["ring on fire"]


def test_ticks_carry_a_reader_of_the_pipelines_own_history_with_throttling() -> None:
    class Throttling(CountingSource):
        def poll(self) -> Snapshot:
            base = super().poll()
            reasons = ("sw_thermal_slowdown",) if self.polls % 2 else ("gpu_idle",)
            gpu = GpuSample(index=0, uuid="GPU-0", throttle_reasons=reasons)
            return Snapshot(timestamp=base.timestamp, gpus=(gpu,))

    pipeline = Pipeline(LiveFeed(Throttling()), view=VIEW, diagnose=diagnose)
    first = pipeline.start()
    for _ in range(3):
        tick = pipeline.advance()
    assert tick.archive is first.archive is pipeline.history.reader
    window = tick.archive.window("GPU-0", None)
    # Idling is not a limit (the diagnosis's rule); thermal slowdown is.
    assert window.flags(Metric.THROTTLED) == [True, False, True, False]
    assert window.samples == 4 and window.span == 3.0
