"""What a steady tick asks NVML for, per GPU: each value once, each list in one call.

pynvml's wrappers read a process list or the per-process utilization in two calls (the count,
then a new array); the source keeps the array from the last tick and fills it at once, and
reads a list that outgrew it again, in the same tick, into a bigger one.
"""

from __future__ import annotations

from fakes.nvml_fake import FakeNvml
from fakes.nvml_harness import nvml_source
from fakes.nvml_scenarios import MIB, gpu_sample, snapshot
from gputop.model import ProcessSample, Snapshot

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
