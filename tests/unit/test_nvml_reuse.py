"""What did not move between ticks is last tick's object; what moved is read afresh."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pynvml  # noqa: TID251 -- the NVML return code of the injected failure
import pytest

from fakes.nvml_fake import FakeNvml, Faults
from fakes.nvml_harness import nvml_source
from fakes.nvml_scenarios import GIB, MIB, gpu_sample, mig_gpu, snapshot
from gputop.model import GpuSample, Memory, ProcessSample, Reason, Snapshot
from gputop.sources.host.procinfo import ProcessEnricher
from gputop.sources.nvml.processes import ProcessRows, RunningProcess
from gputop.sources.nvml.source import _rebuilder


def _polls(
    snapshots: list[Snapshot],
    count: int,
    *,
    deadline: float | None = None,
    enrich: ProcessEnricher | None = None,
    faults: Faults | None = None,
    slow_refresh: float = 3600.0,
) -> list[Snapshot]:
    fake = FakeNvml(snapshots, faults)
    with nvml_source(fake, deadline=deadline, enrich=enrich, slow_refresh=slow_refresh) as source:
        return [source.poll() for _ in range(count)]


def _box() -> list[Snapshot]:
    return [snapshot(gpu_sample(0), mig_gpu(1, processes_per_instance=2))]


@pytest.mark.parametrize("newest", ["_v3", "_v2", ""])
def test_each_list_version_reads_unreported_memory_as_none(newest: str) -> None:
    """The lists are read from NVML's arrays without pynvml's wrappers: the same rows."""
    versions = ["_v3", "_v2", ""]
    missing = {
        f"nvmlDevice{kind}RunningProcesses{version}"
        for kind in ("GetCompute", "GetGraphics", "GetMPSCompute")
        for version in versions[: versions.index(newest)]
    }
    unreported = replace(gpu_sample(0).processes[0], pid=77, memory_used=None)
    want = gpu_sample(0, processes=(*gpu_sample(0).processes, unreported))
    (got,) = _polls([snapshot(want)], 1, faults=Faults(missing=missing))
    by_pid = {p.pid: p for p in got.gpus[0].processes}
    assert {pid: (p.type, p.memory_used) for pid, p in by_pid.items()} == {
        4242: ("C", 20 * GIB),
        77: ("C", None),
        1717: ("G", 120 * MIB),
        1818: ("C+G", by_pid[1818].memory_used),
    }
    assert by_pid[1818].memory_used is not None
    assert all(p.gpu_instance_id is None and p.compute_instance_id is None for p in by_pid.values())


@pytest.mark.parametrize("deadline", [None, 5.0], ids=["inline", "threaded"])
def test_unchanged_processes_and_memory_are_last_ticks_objects(deadline: float | None) -> None:
    _, second, third = _polls(_box(), 3, deadline=deadline)
    for before, after in zip(second.gpus, third.gpus, strict=True):
        assert after.processes is before.processes
        assert after.memory is before.memory
        assert after.processes  # something to compare
    for old, new in zip(second.gpus[1].mig_devices, third.gpus[1].mig_devices, strict=True):
        assert new.processes is old.processes and len(new.processes) == 2
        assert new.memory is old.memory


@pytest.mark.parametrize("slow_refresh", [3600.0, 0.0], ids=["tick", "refresh-tick"])
@pytest.mark.parametrize("deadline", [None, 5.0], ids=["inline", "threaded"])
def test_the_same_missing_values_are_last_ticks_tuple(
    deadline: float | None, slow_refresh: float
) -> None:
    # The recent snapshots each tick carries then hold one tuple of notes per device, also
    # across the ticks that read the slow values again (and note what of them is missing).
    _, second, third = _polls(_box(), 3, deadline=deadline, slow_refresh=slow_refresh)
    for before, after in zip(second.gpus, third.gpus, strict=True):
        assert after.unavailable is before.unavailable
    # Under MIG the GPU's own utilization and every instance's engines are not read.
    assert ("utilization.gpu", Reason.UNDER_MIG) in third.gpus[1].unavailable
    for old, new in zip(second.gpus[1].mig_devices, third.gpus[1].mig_devices, strict=True):
        assert new.unavailable is old.unavailable
        assert ("utilization.encoder", Reason.UNDER_MIG) in new.unavailable


def test_a_value_that_goes_missing_is_noted_in_a_new_tuple() -> None:
    fake = FakeNvml(_box())
    with nvml_source(fake, slow_refresh=3600.0) as source:
        first, second = source.poll(), source.poll()
        fake.faults.errors[(0, "nvmlDeviceGetFanSpeed")] = pynvml.NVML_ERROR_NOT_SUPPORTED
        third = source.poll()
    assert second.gpus[0].unavailable is first.gpus[0].unavailable
    assert third.gpus[0].unavailable is not second.gpus[0].unavailable
    assert third.gpus[0].fan_speed is None and second.gpus[0].fan_speed is not None
    added = set(third.gpus[0].unavailable) - set(second.gpus[0].unavailable)
    assert added == {("fan_speed", Reason.NOT_SUPPORTED)}
    assert set(second.gpus[0].unavailable) <= set(third.gpus[0].unavailable)
    assert third.gpus[1].unavailable is second.gpus[1].unavailable


def test_a_process_whose_memory_moved_gets_a_new_row_the_others_stay() -> None:
    before = mig_gpu(0, processes_per_instance=2)
    held = before.processes[3].memory_used
    assert held is not None
    moved = replace(before.processes[3], memory_used=held + GIB)
    after = replace(before, processes=(*before.processes[:3], moved, *before.processes[4:]))
    devices = tuple(
        replace(d, processes=tuple(moved if p.pid == moved.pid else p for p in d.processes))
        for d in before.mig_devices
    )
    after = replace(after, mig_devices=devices)
    first, second = _polls([snapshot(before), snapshot(after)], 2)
    old, new = first.gpus[0], second.gpus[0]
    assert new.processes is not old.processes
    for position, (was, now) in enumerate(zip(old.processes, new.processes, strict=True)):
        if position == 3:
            assert now is not was and now.memory_used == moved.memory_used
        else:
            assert now is was
    # The instance that runs it lists the new row; the others keep their tuples.
    changed = [
        d.processes is not e.processes
        for d, e in zip(old.mig_devices, new.mig_devices, strict=True)
    ]
    assert changed.count(True) == 1
    holder = new.mig_devices[changed.index(True)]
    assert any(p is new.processes[3] for p in holder.processes)


def test_memory_that_moved_is_read_afresh() -> None:
    before = gpu_sample(0)
    after = replace(
        before, memory=Memory(total=48 * GIB, used=31 * GIB, free=16 * GIB, reserved=GIB)
    )
    first, second, third = _polls([snapshot(before), snapshot(after)], 3)
    assert first.gpus[0].memory.used == 30 * GIB
    assert second.gpus[0].memory.used == 31 * GIB and second.gpus[0].memory.free == 16 * GIB
    assert third.gpus[0].memory is second.gpus[0].memory


def test_gpm_activity_that_moved_is_read_afresh() -> None:
    before = mig_gpu(0, instances=2, processes_per_instance=0)
    busier = tuple(
        replace(d, utilization=replace(d.utilization, gpu=55.0 + i, memory=20.0 + i))
        for i, d in enumerate(before.mig_devices)
    )
    after = replace(before, mig_devices=busier)
    polled = _polls([snapshot(before), snapshot(before), snapshot(after)], 3)
    assert [d.utilization.gpu for d in polled[1].gpus[0].mig_devices] == [0.0, 10.0]
    assert [d.utilization.gpu for d in polled[2].gpus[0].mig_devices] == [55.0, 56.0]
    assert [d.utilization.memory for d in polled[2].gpus[0].mig_devices] == [20.0, 21.0]


def test_enriched_rows_that_did_not_move_are_last_ticks_tuples(tmp_path: Path) -> None:
    # No PID of the box lives in tmp_path: every process is foreign and holds still.
    enricher = ProcessEnricher(proc_root=tmp_path)
    _, second, third = _polls(_box(), 3, enrich=enricher)
    for before, after in zip(second.gpus, third.gpus, strict=True):
        assert after.processes is before.processes
        assert all(p.foreign for p in after.processes)
    mig = third.gpus[1]
    ids = {id(p) for p in mig.processes}
    for old, new in zip(second.gpus[1].mig_devices, mig.mig_devices, strict=True):
        assert new.processes is old.processes
        assert all(id(p) in ids for p in new.processes)


class Names:
    """A name lookup with a version, as ``ProcessNames`` has."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {7: "train"}
        self.version = 0
        self.asked = 0

    def __call__(self, pid: int) -> str | None:
        self.asked += 1
        return self.names.get(pid)


def _running(pids: Iterable[int]) -> list[RunningProcess]:
    return [RunningProcess(pid, True, False, MIB, None, None) for pid in pids]


def test_rows_are_not_rebuilt_nor_names_asked_while_nothing_moved() -> None:
    rows = ProcessRows()
    names = Names()
    running = _running([7, 8])
    first = rows(running, names, {})
    asked = names.asked
    assert rows(running, names, {}) is first
    assert names.asked == asked
    names.names[8] = "eval"
    names.version += 1
    third = rows(running, names, {})
    assert [p.name for p in third] == ["train", "eval"]
    assert third[0] is first[0]  # its row did not change
    # A new process list, or other SM figures, are looked at row by row.
    assert rows(_running([7, 8]), names, {}) == third
    assert rows(running, names, {7: 50.0})[0].sm_utilization == 50.0


def test_a_plain_name_lookup_is_asked_every_tick() -> None:
    rows = ProcessRows()
    table = {7: "train"}
    running = _running([7])
    first = rows(running, table.get, {})
    table[7] = "renamed"
    assert rows(running, table.get, {})[0].name == "renamed"
    assert first[0].name == "train"


def test_the_rebuilder_matches_replace_and_refuses_keyword_only_fields() -> None:
    rebuild = _rebuilder(GpuSample, "processes", "fan_speed")
    gpu = gpu_sample(0)
    rows = (ProcessSample(pid=1),)
    assert rebuild(gpu, rows, 12.0) == replace(gpu, processes=rows, fan_speed=12.0)

    @dataclasses.dataclass(frozen=True)
    class KeywordOnly:
        a: int
        b: int = dataclasses.field(default=0, kw_only=True)

    with pytest.raises(TypeError):
        _rebuilder(KeywordOnly, "a")
