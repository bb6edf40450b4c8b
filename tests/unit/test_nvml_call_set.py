"""What a steady tick asks NVML for, per GPU: each value once, each list in one call.

pynvml's wrappers read a process list or the per-process utilization in two calls (the count,
then a new array); the source keeps the array from the last tick and fills it at once, and
reads a list that outgrew it again, in the same tick, into a bigger one. Fields that nothing
shows (``seldom``: the graphics and video clocks under the TUI alone) are read with the slow
values, every few seconds, and hold their last reading in between; the energy counter (5 ms
a call on an H200) is read on its own cadence (every 10 s, a minute where nothing writes it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pynvml  # noqa: TID251 -- the source under test is handed the real pynvml
import pytest

from fakes.nvml_fake import Call, FakeNvml
from fakes.nvml_harness import nvml_source
from fakes.nvml_install import installed
from fakes.nvml_scenarios import MIB, gpu_sample, snapshot
from gputop.model import Clocks, ProcessSample, Snapshot
from gputop.sources.nvml import device
from gputop.sources.nvml.source import NvmlSource

LISTS = (
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetMPSComputeRunningProcesses_v3",
)


def _crowd(count: int) -> tuple[ProcessSample, ...]:
    return tuple(
        ProcessSample(pid=6000 + n, type="C", name=f"job{n}", memory_used=MIB, sm_utilization=n)
        for n in range(count)
    )


@pytest.fixture
def utilization_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-process utilization read on every tick (its cadence is 2 s: these ticks are not
    seconds apart)."""
    monkeypatch.setattr(device, "PROCESS_UTILIZATION_REFRESH", 0.0)


@pytest.mark.usefixtures("utilization_every_tick")
def test_a_steady_tick_reads_each_list_and_the_utilization_in_one_call() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with nvml_source(fake) as source:
        source.poll()
        mark = fake.mark()
        got = source.poll().gpus[0]
    counts = fake.counts_since(mark)
    for name in (*LISTS, "nvmlDeviceGetProcessUtilization"):
        assert counts[name] == 1, name
    assert {p.pid: p.type for p in got.processes} == {4242: "C", 1717: "G", 1818: "C+G"}
    assert {p.pid: p.sm_utilization for p in got.processes}[4242] == 80.0


@pytest.mark.usefixtures("utilization_every_tick")
def test_lists_that_outgrow_the_kept_array_are_read_whole_the_same_tick() -> None:
    small = gpu_sample(0, processes=_crowd(1))
    crowded = gpu_sample(0, processes=_crowd(40))
    fake = FakeNvml([snapshot(small), snapshot(crowded), snapshot(small)])
    ticks: list[tuple[Snapshot, dict[str, int]]] = []
    with nvml_source(fake) as source:
        for _ in range(3):
            mark = fake.mark()
            ticks.append((source.poll(), dict(fake.counts_since(mark))))
    (_, _), (grown, grown_calls), (shrunk, shrunk_calls) = ticks
    got = grown.gpus[0].processes
    assert [p.pid for p in got] == [6000 + n for n in range(40)]
    assert [p.sm_utilization for p in got] == [float(n) for n in range(40)]
    # The array kept from the first tick was too small: read again, bigger, at once.
    assert grown_calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 2
    assert grown_calls["nvmlDeviceGetProcessUtilization"] == 2
    # The bigger array serves the shorter list in one call.
    assert [p.pid for p in shrunk.gpus[0].processes] == [6000]
    assert shrunk_calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 1
    assert shrunk_calls["nvmlDeviceGetProcessUtilization"] == 1


class Clock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


SELDOM = frozenset({"clocks.graphics", "clocks.video", "power.energy"})


def _clock_calls(calls: list[Call]) -> Counter[int]:
    """ClockInfo calls per clock type (NVML_CLOCK_*)."""
    return Counter(call.key[1] for call in calls if call.name == "nvmlDeviceGetClockInfo")


def _ticks(seldom: frozenset[str], values: list[Snapshot]) -> list[tuple[Snapshot, list[Call]]]:
    """Poll ``values`` one second apart (slow values re-read every 5 s)."""
    fake = FakeNvml(values)
    clock = Clock()
    out = []
    with installed(fake):
        pynvml.nvmlInit()
        source = NvmlSource(
            pynvml,
            deadline=None,
            host="testhost",
            shutdown_on_close=True,
            slow_refresh=5.0,
            clock=clock,
            seldom=seldom,
        )
        try:
            for _ in values:
                mark = fake.mark()
                out.append((source.poll(), fake.calls_since(mark)))
                clock.now += 1.0
        finally:
            source.close()
    return out


def _moving(count: int) -> list[Snapshot]:
    """Every clock and the energy counter different on every tick."""
    base = gpu_sample(0)
    return [
        snapshot(
            replace(
                base,
                clocks=Clocks(graphics=1000 + n, sm=1100 + n, memory=7000 + n, video=900 + n),
                power=replace(base.power, energy=5000.0 + n),
            )
        )
        for n in range(count)
    ]


def test_fields_nothing_shows_are_read_on_the_slow_cadence_and_never_left_empty() -> None:
    values = _moving(7)
    ticks = _ticks(SELDOM, values)
    graphics, sm, memory, video = (
        pynvml.NVML_CLOCK_GRAPHICS,
        pynvml.NVML_CLOCK_SM,
        pynvml.NVML_CLOCK_MEM,
        pynvml.NVML_CLOCK_VIDEO,
    )
    for number, (got, calls) in enumerate(ticks):
        gpu = got.gpus[0]
        asked = _clock_calls(calls)
        refresh = number in (0, 5)
        # What the panels show moves every tick...
        assert asked[sm] == 1 and asked[memory] == 1
        assert gpu.clocks.sm == 1100 + number and gpu.clocks.memory == 7000 + number
        # ... what nothing shows is read every five seconds, and holds its last reading
        # in between: never None, never 0.
        read_at = 5 if number >= 5 else 0
        assert asked[graphics] == asked[video] == (1 if refresh else 0), number
        # The energy counter has its own cadence (a minute, when nothing shows it).
        counted = Counter(call.name for call in calls)["nvmlDeviceGetTotalEnergyConsumption"]
        assert counted == (1 if number == 0 else 0), number
        assert gpu.clocks.graphics == 1000 + read_at
        assert gpu.clocks.video == 900 + read_at
        assert gpu.power.energy == 5000.0
        for path in SELDOM:
            assert gpu.reason(path) is None, path


def test_without_seldom_fields_every_clock_is_read_every_tick() -> None:
    for number, (got, calls) in enumerate(_ticks(frozenset(), _moving(3))):
        assert sum(_clock_calls(calls).values()) == 4
        assert got.gpus[0].clocks.graphics == 1000 + number
