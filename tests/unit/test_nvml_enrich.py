"""Host facts merged into the NVML source's process rows: once per row, reused when unchanged."""

from __future__ import annotations

import contextlib
import getpass
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from fakes.nvml_fake import FakeNvml
from fakes.nvml_harness import nvml_source
from fakes.nvml_scenarios import MIB, gpu_sample, mig_gpu, snapshot
from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.sources.host.procinfo import CPU_MIN_GAP, HostFields, ProcessEnricher
from gputop.sources.nvml.source import HostLookup


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


class Rss:
    def __init__(self, rss: int) -> None:
        self.rss = rss


class Worker:
    """A ProcessLike double whose CPU % climbs by 25 a reading."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.readings = 0

    @contextlib.contextmanager
    def oneshot(self) -> Iterator[None]:
        yield

    def is_running(self) -> bool:
        return True

    def name(self) -> str:
        return "worker"

    def username(self) -> str:
        return "ada"

    def cmdline(self) -> list[str]:
        return ["train", str(self.pid)]

    def cpu_percent(self, interval: float | None = None) -> float:
        self.readings += 1
        return 25.0 * (self.readings - 1)

    def memory_info(self) -> Rss:
        return Rss(self.pid * 1024)

    def create_time(self) -> float:
        return 1_700_000_000.0


def _enricher(proc_root: Path, clock: Clock) -> ProcessEnricher:
    return ProcessEnricher(proc_root=proc_root, process_factory=Worker, clock=clock)


def _box() -> Snapshot:
    """A MIG GPU with 14 processes and a plain GPU with 3 (one shared with... nothing)."""
    return snapshot(mig_gpu(0, processes_per_instance=2), gpu_sample(1))


def _local(proc_root: Path, pids: Iterable[int]) -> None:
    for pid in pids:
        (proc_root / str(pid)).mkdir()


def _rows(gpu: GpuSample) -> dict[int, ProcessSample]:
    return {p.pid: p for p in gpu.processes}


def _poll_twice(fake: FakeNvml, enrich: object, clock: Clock) -> tuple[Snapshot, Snapshot]:
    with nvml_source(fake, enrich=enrich) as source:  # type: ignore[arg-type]
        first = source.poll()
        clock.now += 1.0
        second = source.poll()
    return first, second


def test_a_per_pid_enricher_is_asked_by_pid() -> None:
    assert isinstance(ProcessEnricher(), HostLookup)
    assert not isinstance(lambda processes: processes, HostLookup)


def test_per_pid_and_per_row_enrichers_give_the_same_rows(tmp_path: Path) -> None:
    box = _box()
    local = [p.pid for p in box.gpus[0].processes[::2]] + [4243]
    roots = []
    for name in ("lookup", "plain"):
        root = tmp_path / name
        root.mkdir()
        _local(root, local)
        roots.append(root)
    clocks = (Clock(), Clock())
    by_pid = _enricher(roots[0], clocks[0])
    by_row = _enricher(roots[1], clocks[1])

    def plain(processes: tuple[ProcessSample, ...]) -> tuple[ProcessSample, ...]:
        return by_row(processes)

    got = _poll_twice(FakeNvml(box), by_pid, clocks[0])
    want = _poll_twice(FakeNvml(box), plain, clocks[1])

    for have, expected in zip(got, want, strict=True):
        assert have.gpus == expected.gpus
    second = got[1]
    rows = {**_rows(second.gpus[0]), **_rows(second.gpus[1])}
    for pid in local:
        assert rows[pid].user == "ada" and rows[pid].command == f"train {pid}"
        assert rows[pid].cpu_percent == 25.0 and rows[pid].foreign is False
    assert rows[1717].foreign and rows[1717].user is None


def test_a_mig_device_lists_its_gpus_very_rows(tmp_path: Path) -> None:
    clock = Clock()
    fake = FakeNvml(_box())
    _, second = _poll_twice(fake, _enricher(tmp_path, clock), clock)
    gpu = second.gpus[0]
    ids = {id(p) for p in gpu.processes}
    listed = [p for device in gpu.mig_devices for p in device.processes]
    assert len(listed) == 14
    assert all(id(p) in ids for p in listed)
    assert all(p.foreign for p in listed)


def test_unchanged_rows_are_reused_and_changed_ones_rebuilt(tmp_path: Path) -> None:
    before = gpu_sample(0)
    moved = replace(before.processes[1], memory_used=500 * MIB)  # 1717, foreign
    after = replace(before, processes=(before.processes[0], moved, before.processes[2]))
    _local(tmp_path, [4242])
    clock = Clock()
    first, second = _poll_twice(
        FakeNvml([snapshot(before), snapshot(after)]), _enricher(tmp_path, clock), clock
    )
    old, new = _rows(first.gpus[0]), _rows(second.gpus[0])
    assert new[1818] is old[1818]  # foreign, and the driver says the same
    assert new[1717] is not old[1717] and new[1717].memory_used == 500 * MIB
    assert new[1717].foreign
    # Local: the host's CPU reading moved.
    assert (old[4242].cpu_percent, new[4242].cpu_percent) == (None, 25.0)


def test_the_enricher_hears_about_idle_ticks_too() -> None:
    asked: list[list[int]] = []

    class Spy:
        def host_fields(self, pids: Iterable[int]) -> dict[int, HostFields]:
            asked.append(sorted(pids))
            return {pid: HostFields(pid=pid, user="spy") for pid in asked[-1]}

    idle = gpu_sample(0, processes=())
    busy = gpu_sample(0)
    fake = FakeNvml([snapshot(busy), snapshot(idle)])
    with nvml_source(fake, enrich=Spy()) as source:
        first = source.poll()
        second = source.poll()
    assert asked == [[1717, 1818, 4242], []]
    assert {p.user for p in first.gpus[0].processes} == {"spy"}
    assert second.gpus[0].processes == ()


def test_this_process_through_nvml_with_the_real_proc() -> None:
    me = os.getpid()
    mine = ProcessSample(pid=me, type="C", name=None, memory_used=MIB)
    fake = FakeNvml(snapshot(gpu_sample(0, processes=(mine,))))
    with nvml_source(fake, enrich=ProcessEnricher()) as source:
        first = source.poll().gpus[0].processes[0]
        time.sleep(CPU_MIN_GAP * 1.5)
        second = source.poll().gpus[0].processes[0]
    assert first.user == second.user == getpass.getuser()
    assert first.name  # NVML had none: the host's fills it
    assert first.cpu_percent is None  # baseline only
    assert second.cpu_percent is not None and second.cpu_percent >= 0.0
    assert second.host_memory is not None and second.host_memory > 1_000_000
    assert second.local_pid is None and second.foreign is False
