"""A slow driver start is waited for in plain sight: the TUI says so and keeps its keys, a
headless run says so on stderr after a second, and a start that fails ends either cleanly."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from gputop.cli.driver_start import DriverStart, WaitingFeed
from gputop.errors import Fatal, NoDriver, Waiting
from gputop.model import GpuSample, Snapshot
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.gpu_select import GpuSelection
from gputop.sources.base import Source

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"


class Box:
    def __init__(self) -> None:
        self.polls = 0
        self.closed = 0

    def poll(self) -> Snapshot:
        self.polls += 1
        return Snapshot(timestamp=None, gpus=(GpuSample(index=0, uuid="GPU-0"),))

    def close(self) -> None:
        self.closed += 1


class Gate:
    """An opener that returns (or raises) only when the test says so."""

    def __init__(self, error: Exception | None = None) -> None:
        self.go = threading.Event()
        self.error = error
        self.box = Box()

    def __call__(self) -> Source:
        self.go.wait(10)
        if self.error is not None:
            raise self.error
        return self.box


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_polls_wait_counting_seconds_then_the_first_snapshot_comes() -> None:
    gate, clock = Gate(), Clock()
    feed = WaitingFeed(DriverStart(gate, clock=clock))
    pipeline = Pipeline(LiveFeed(feed), interval=5.0)
    first = pipeline.start()
    assert first.waiting == "waiting for the NVIDIA driver (0 s)"
    assert first.snapshot.gpus == () and first.error is None
    assert pipeline.next_delay() == 1.0  # the count moves each second, whatever --interval
    clock.now += 12.2
    assert pipeline.advance().waiting == "waiting for the NVIDIA driver (12 s)"
    gate.go.set()
    deadline = time.monotonic() + 5
    tick = pipeline.advance()
    while tick.waiting is not None and time.monotonic() < deadline:
        tick = pipeline.advance()
    assert tick.waiting is None and [g.uuid for g in tick.snapshot.gpus] == ["GPU-0"]
    assert pipeline.next_delay() == 5.0
    feed.close()
    assert gate.box.closed == 1


def test_a_driver_that_fails_to_start_is_fatal_with_its_exit_code() -> None:
    gate = Gate(NoDriver("NVIDIA driver not loaded"))
    pipeline = Pipeline(LiveFeed(WaitingFeed(DriverStart(gate))))
    pipeline.start()
    gate.go.set()
    time.sleep(0.2)
    with pytest.raises(Fatal, match="NVIDIA driver not loaded") as ended:
        pipeline.advance()
    assert ended.value.exit_code == 1


def test_a_gpu_selection_that_names_nothing_is_fatal_once_the_driver_is_up() -> None:
    gate = Gate()
    gate.go.set()
    feed = WaitingFeed(DriverStart(gate), GpuSelection.parse("3").apply)
    time.sleep(0.2)
    with pytest.raises(Fatal, match="nothing matches '3'") as ended:
        feed.poll()
    assert ended.value.exit_code == 2


def test_quitting_before_the_driver_is_up_closes_it_when_it_comes() -> None:
    gate = Gate()
    feed = WaitingFeed(DriverStart(gate))
    with pytest.raises(Waiting):
        feed.poll()
    started = time.monotonic()
    feed.close()  # does not wait for the driver
    assert time.monotonic() - started < 0.5
    gate.go.set()
    deadline = time.monotonic() + 5
    while not gate.box.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.box.closed == 1 and gate.box.polls == 0


def test_headless_says_it_waits_after_a_second_only() -> None:
    gate, err = Gate(), io.StringIO()
    threading.Timer(1.4, gate.go.set).start()
    assert DriverStart(gate).wait_saying_so(err) is gate.box
    assert err.getvalue() == "gputop: waiting for the NVIDIA driver to start…\n"
    quick, err = Gate(), io.StringIO()
    quick.go.set()
    assert DriverStart(quick).wait_saying_so(err) is quick.box
    assert err.getvalue() == ""


def test_the_check_waits_for_the_first_snapshot_even_when_the_first_poll_fails() -> None:
    class Flaky(Box):
        def poll(self) -> Snapshot:
            self.polls += 1
            if self.polls == 1:
                raise NoDriver("GPU timed out")
            return super().poll()

    gate = Gate()
    gate.box = Flaky()
    gate.go.set()
    pipeline = Pipeline(LiveFeed(WaitingFeed(DriverStart(gate), GpuSelection.parse("3").apply)))
    time.sleep(0.2)
    assert pipeline.start().error == "GPU timed out"
    with pytest.raises(Fatal, match="nothing matches '3'"):
        pipeline.advance()
