"""Process enrichment: resolution across PID namespaces, reader caching, CPU % between ticks;
the facts read from ``/proc`` held equal to psutil's (the reference) on real processes."""

from __future__ import annotations

import contextlib
import getpass
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psutil
import pytest

from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.sources.host.procinfo import (
    FOREIGN_HINT,
    FOREIGN_RECHECK,
    IDENTITY_REFRESH,
    AccessDenied,
    NoSuchProcess,
    ProcessEnricher,
    StatProcess,
    find_host_proc_root,
    foreign_hint,
    read_nspid,
    read_start_ticks,
)


def _stat_line(pid: int, comm: str, start_ticks: int) -> str:
    # Fields 3..21 are filler; field 22 is the start time.
    filler = " ".join(["S"] + ["0"] * 18)
    return f"{pid} ({comm}) {filler} {start_ticks} 0 0\n"


def make_proc(root: Path, pid: int | str, nspid: tuple[int, ...] | None, start: int = 1000) -> None:
    """A /proc/<pid> directory with the status and stat lines the enricher reads."""
    folder = root / str(pid)
    folder.mkdir(parents=True)
    lines = ["Name:\tpython3", "State:\tS (sleeping)"]
    if nspid is not None:
        lines.append("NSpid:\t" + "\t".join(str(n) for n in nspid))
    (folder / "status").write_text("\n".join(lines) + "\n")
    (folder / "stat").write_text(_stat_line(nspid[-1] if nspid else 1, "python3", start))


@dataclass
class FakeMemory:
    rss: int


@dataclass
class FakeProcess:
    """Stands in for StatProcess (psutil.Process's methods); counts the calls that matter."""

    pid: int
    user: str = "alice"
    argv: list[str] = field(default_factory=lambda: ["python3", "train.py", "--epochs", "3"])
    cpu_values: list[float] = field(default_factory=lambda: [0.0, 87.5, 42.0, 10.0])
    rss: int = 3 * 2**30
    created: float = 1_700_000_000.0
    proc_name: str = "python3"
    running: bool = True
    deny: tuple[str, ...] = ()
    cpu_calls: int = 0

    @contextlib.contextmanager
    def oneshot(self) -> Iterator[None]:
        yield

    def is_running(self) -> bool:
        return self.running

    def _check(self, what: str) -> None:
        if what in self.deny:
            raise AccessDenied(self.pid)

    def name(self) -> str:
        self._check("name")
        return self.proc_name

    def username(self) -> str:
        self._check("username")
        return self.user

    def cmdline(self) -> list[str]:
        self._check("cmdline")
        return self.argv

    def cpu_percent(self, interval: float | None = None) -> float:
        value = self.cpu_values[min(self.cpu_calls, len(self.cpu_values) - 1)]
        self.cpu_calls += 1
        return value

    def memory_info(self) -> FakeMemory:
        return FakeMemory(self.rss)

    def create_time(self) -> float:
        return self.created


class Factory:
    """process_factory double: hands out FakeProcess objects and records each creation."""

    def __init__(self, **overrides: FakeProcess) -> None:
        self.overrides = {int(pid): process for pid, process in overrides.items()}
        self.created: list[int] = []
        self.processes: dict[int, FakeProcess] = {}
        self.gone: set[int] = set()

    def __call__(self, pid: int) -> FakeProcess:
        if pid in self.gone:
            raise NoSuchProcess(pid)
        self.created.append(pid)
        process = self.overrides.pop(pid, None) or FakeProcess(pid)
        self.processes[pid] = process
        return process


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def gpu_process(pid: int, name: str | None = "python3") -> ProcessSample:
    return ProcessSample(pid=pid, type="C", name=name, memory_used=512 * 2**20)


@pytest.fixture
def proc_root(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    root.mkdir()
    return root


def test_a_process_of_this_namespace_gets_user_command_memory_and_start(proc_root: Path) -> None:
    make_proc(proc_root, 4242, (4242,))
    factory = Factory()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=Clock())

    (row,) = enrich((gpu_process(4242),))

    assert row.foreign is False
    assert row.local_pid is None
    assert row.user == "alice"
    assert row.command == "python3 train.py --epochs 3"
    assert row.host_memory == 3 * 2**30
    assert row.start_time == 1_700_000_000.0
    # Driver fields survive untouched.
    assert (row.pid, row.type, row.name, row.memory_used) == (4242, "C", "python3", 512 * 2**20)


def test_cpu_percent_is_measured_between_ticks_on_one_cached_process(proc_root: Path) -> None:
    make_proc(proc_root, 4242, (4242,))
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=clock)

    first = enrich((gpu_process(4242),))[0]
    clock.now += 1.0
    second = enrich((gpu_process(4242),))[0]
    clock.now += 1.0
    third = enrich((gpu_process(4242),))[0]

    # The first call only sets psutil's baseline: unknown, not 0.
    assert first.cpu_percent is None
    assert second.cpu_percent == 87.5
    assert third.cpu_percent == 42.0
    assert factory.created == [4242]


def test_a_pid_on_several_gpus_is_read_once_per_tick(proc_root: Path) -> None:
    make_proc(proc_root, 7, (7,))
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=clock)
    enrich((gpu_process(7),))
    clock.now += 1.0

    rows = enrich((gpu_process(7), gpu_process(7), gpu_process(7)))
    # A source that calls once per GPU within the same tick must not reset the baseline.
    again = enrich((gpu_process(7),))

    assert [row.cpu_percent for row in rows] == [87.5, 87.5, 87.5]
    assert again[0].cpu_percent == 87.5
    assert factory.processes[7].cpu_calls == 2


def test_pids_that_leave_are_forgotten_and_a_reused_pid_gets_a_new_process(
    proc_root: Path,
) -> None:
    make_proc(proc_root, 10, (10,))
    make_proc(proc_root, 11, (11,))
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=clock)

    enrich((gpu_process(10), gpu_process(11)))
    clock.now += 1
    enrich((gpu_process(11),))  # 10 left the GPU
    factory.processes[11].running = False  # 11 exited and its PID now names a new process
    clock.now += 1
    enrich((gpu_process(10), gpu_process(11)))

    assert factory.created == [10, 11, 10, 11]


def test_a_pid_that_does_not_resolve_is_kept_and_marked_foreign(proc_root: Path) -> None:
    make_proc(proc_root, 1, (1,))
    factory = Factory()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=Clock())

    rows = enrich((gpu_process(642928), gpu_process(1)))

    assert [row.pid for row in rows] == [642928, 1]
    assert rows[0].foreign is True
    assert rows[0].user is None and rows[0].command is None
    assert rows[0].memory_used == 512 * 2**20  # what the driver said stays
    assert rows[1].foreign is False
    assert factory.created == [1]


def test_the_hint_names_host_pid_options_only_when_a_process_is_foreign() -> None:
    local = ProcessSample(pid=1)
    foreign = ProcessSample(pid=2, foreign=True)
    snapshot = Snapshot(
        timestamp=datetime(2024, 1, 1),
        gpus=(GpuSample(index=0, processes=(local,)), GpuSample(index=1, processes=(foreign,))),
    )

    assert foreign_hint([local]) is None
    assert foreign_hint(Snapshot(timestamp=None)) is None
    hint = foreign_hint(snapshot)
    assert hint == FOREIGN_HINT
    assert "--pid=host" in hint and "hostPID: true" in hint


def test_a_host_procfs_maps_host_pids_to_pids_here(tmp_path: Path, proc_root: Path) -> None:
    host = tmp_path / "host-proc"
    # We are PID 7 here and 5000 on the host: one namespace below the host's.
    make_proc(host, "self", (5000, 7))
    make_proc(host, 4242, (4242, 17), start=555)  # in our namespace, PID 17 here
    make_proc(host, 4343, (4343, 17), start=999)  # a sibling container's PID 17
    make_proc(host, 4444, (4444,), start=777)  # a host process, above our namespace
    make_proc(proc_root, 17, (17,), start=555)
    factory = Factory()

    enrich = ProcessEnricher(
        proc_root=proc_root, host_proc_root=host, process_factory=factory, clock=Clock()
    )
    ours, sibling, above, gone = enrich(
        (gpu_process(4242), gpu_process(4343), gpu_process(4444), gpu_process(4545))
    )

    assert (ours.foreign, ours.local_pid, ours.pid, ours.user) == (False, 17, 4242, "alice")
    assert sibling.foreign and sibling.local_pid is None
    assert above.foreign
    assert gone.foreign
    assert factory.created == [17]


def test_a_procfs_of_our_own_namespace_is_not_taken_for_the_hosts(
    tmp_path: Path, proc_root: Path
) -> None:
    same = tmp_path / "same"
    make_proc(same, "self", (7,))
    make_proc(proc_root, 7, (7,))

    enrich = ProcessEnricher(
        proc_root=proc_root, host_proc_root=same, process_factory=Factory(), clock=Clock()
    )

    assert enrich._host_root is None  # our own namespace's procfs translates nothing
    assert enrich((gpu_process(7),))[0].foreign is False
    assert find_host_proc_root([same, tmp_path / "missing"]) is None


def test_find_host_proc_root_accepts_an_ancestor_procfs(tmp_path: Path) -> None:
    host = tmp_path / "host"
    make_proc(host, "self", (5000, 7))
    assert find_host_proc_root([tmp_path / "missing", host]) == host


def test_a_process_that_exits_keeps_its_driver_row(proc_root: Path) -> None:
    make_proc(proc_root, 9, (9,))
    factory = Factory()
    factory.gone.add(9)
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=Clock())

    (row,) = enrich((gpu_process(9),))

    assert row.foreign is False
    assert row.user is None and row.cpu_percent is None
    assert row.memory_used == 512 * 2**20


def test_denied_fields_are_none_and_the_rest_still_read(proc_root: Path) -> None:
    make_proc(proc_root, 9, (9,))
    factory = Factory(**{"9": FakeProcess(9, deny=("cmdline",))})
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=Clock())

    (row,) = enrich((gpu_process(9),))

    assert row.command is None
    assert row.user == "alice"


def test_a_name_the_driver_could_not_give_comes_from_the_process(proc_root: Path) -> None:
    make_proc(proc_root, 9, (9,))
    make_proc(proc_root, 10, (10,))
    factory = Factory(**{"9": FakeProcess(9, proc_name="torchrun")})
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=Clock())

    unnamed, named = enrich((gpu_process(9, name=None), gpu_process(10, name="/usr/bin/x")))

    assert unnamed.name == "torchrun"
    assert named.name == "/usr/bin/x"


def test_proc_file_parsing(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(_stat_line(31, "weird) (name", 123456))
    status = tmp_path / "31" / "status"
    status.parent.mkdir()
    status.write_text("Name:\tx\nPid:\t31\n")  # a kernel before 4.1: no NSpid line

    assert read_start_ticks(stat) == 123456
    assert read_start_ticks(tmp_path / "missing") is None
    assert read_nspid(status) == (31,)
    assert read_nspid(tmp_path / "nope" / "status") is None


def test_the_default_enricher_on_this_process_agrees_with_psutil() -> None:
    enrich = ProcessEnricher()
    me = os.getpid()

    (row,) = enrich((ProcessSample(pid=me),))

    assert row.foreign is False
    assert row.user == getpass.getuser()
    assert row.command and ("python" in row.command.lower() or "pytest" in row.command)
    assert row.host_memory is not None and row.host_memory > 1_000_000
    assert row.start_time == pytest.approx(psutil.Process(me).create_time(), abs=1)


def test_memory_is_read_every_tick_and_the_command_line_now_and_then(proc_root: Path) -> None:
    make_proc(proc_root, 5, (5,))
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=clock)
    enrich((gpu_process(5),))
    fake = factory.processes[5]
    fake.argv = ["ray::Worker"]  # setproctitle
    fake.rss = 5 * 2**30

    clock.now += 1.0
    soon = enrich((gpu_process(5),))[0]
    clock.now += IDENTITY_REFRESH
    later = enrich((gpu_process(5),))[0]

    assert soon.host_memory == 5 * 2**30
    assert soon.command == "python3 train.py --epochs 3"
    assert later.command == "ray::Worker"


# ----- the per-tick reader and the placement caches ------------------------------------------


def _stat_with(pid: int, start: int, utime: int, stime: int, rss_pages: int) -> str:
    fields = ["S"] + ["0"] * 18 + [str(start), "0", str(rss_pages)]
    fields[11], fields[12] = str(utime), str(stime)
    return f"{pid} (python3) {' '.join(fields)}\n"


def test_stat_process_reads_this_process_like_psutil() -> None:
    me = os.getpid()
    reader = StatProcess(me)
    real = psutil.Process(me)

    with reader.oneshot():
        assert reader.is_running()
        rss = reader.memory_info().rss
        assert reader.cpu_percent(None) == 0.0  # the baseline, as psutil
    assert abs(rss - real.memory_info().rss) < 64 * 2**20
    assert reader.create_time() == real.create_time()
    assert reader.cmdline() == real.cmdline()
    assert reader.username() == getpass.getuser()
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    assert reader.cpu_percent(None) > 0.0


def test_stat_process_cpu_and_memory_come_from_one_stat_line(tmp_path: Path) -> None:
    me = os.getpid()
    folder = tmp_path / str(me)
    folder.mkdir()
    stat = folder / "stat"
    ticks = os.sysconf("SC_CLK_TCK")
    stat.write_text(_stat_with(me, 777, utime=ticks, stime=ticks, rss_pages=10))
    clock = Clock()
    reader = StatProcess(me, tmp_path, clock=clock)

    with reader.oneshot():
        assert reader.cpu_percent(None) == 0.0
        assert reader.memory_info().rss == 10 * os.sysconf("SC_PAGE_SIZE")
    # One second later: half a second of user time and a quarter of system time more.
    stat.write_text(
        _stat_with(me, 777, utime=ticks + ticks // 2, stime=ticks + ticks // 4, rss_pages=12)
    )
    clock.now += 1.0
    with reader.oneshot():
        assert reader.is_running()
        assert reader.cpu_percent(None) == 75.0
        assert reader.memory_info().rss == 12 * os.sysconf("SC_PAGE_SIZE")
        stat.write_text(_stat_with(me, 777, utime=0, stime=0, rss_pages=99))
        # Inside one block the line is read once.
        assert reader.memory_info().rss == 12 * os.sysconf("SC_PAGE_SIZE")


def test_stat_process_tells_a_reused_pid_and_an_exited_process(tmp_path: Path) -> None:
    me = os.getpid()
    folder = tmp_path / str(me)
    folder.mkdir()
    (folder / "stat").write_text(_stat_with(me, 777, utime=0, stime=0, rss_pages=1))
    reader = StatProcess(me, tmp_path)
    (folder / "stat").write_text(_stat_with(me, 778, utime=0, stime=0, rss_pages=1))

    assert not reader.is_running()
    with pytest.raises(NoSuchProcess):
        reader.memory_info()
    (folder / "stat").unlink()
    assert not reader.is_running()
    with pytest.raises(NoSuchProcess):
        StatProcess(me, tmp_path)


def test_stat_process_of_a_child_that_exits() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        reader = StatProcess(child.pid)
        assert reader.is_running()
    finally:
        child.kill()
        child.wait()
    assert not reader.is_running()
    with pytest.raises(NoSuchProcess):
        StatProcess(child.pid)


def test_the_default_enricher_reads_through_stat_process() -> None:
    enrich = ProcessEnricher()
    me = os.getpid()
    fields = enrich.host_fields([me, me])

    assert list(fields) == [me]
    assert fields[me].user == getpass.getuser() and fields[me].foreign is False
    host_memory = fields[me].host_memory
    assert host_memory is not None and host_memory > 1_000_000


def test_a_foreign_pid_is_looked_for_again_only_after_a_while(proc_root: Path) -> None:
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=clock)

    assert enrich.host_fields([31]) == {31: ProcessSample(pid=31, foreign=True)}
    make_proc(proc_root, 31, (31,))
    clock.now += FOREIGN_RECHECK / 2
    assert enrich.host_fields([31])[31].foreign
    clock.now += FOREIGN_RECHECK / 2
    assert enrich.host_fields([31])[31].foreign is False
    assert factory.created == [31]


def test_a_pid_that_leaves_and_comes_back_is_placed_afresh(proc_root: Path) -> None:
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(proc_root=proc_root, process_factory=factory, clock=clock)

    assert enrich.host_fields([31])[31].foreign
    enrich.host_fields([])  # 31 left the GPUs
    make_proc(proc_root, 31, (31,))
    clock.now += 1.0
    assert enrich.host_fields([31])[31].foreign is False


def test_a_host_placement_holds_while_the_host_start_time_does(
    tmp_path: Path, proc_root: Path
) -> None:
    host = tmp_path / "host-proc"
    make_proc(host, "self", (5000, 7))
    make_proc(host, 4242, (4242, 17), start=555)
    make_proc(proc_root, 17, (17,), start=555)
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(
        proc_root=proc_root, host_proc_root=host, process_factory=factory, clock=clock
    )

    assert enrich.host_fields([4242])[4242].local_pid == 17
    # Same host start time: the placement is not worked out again (status is not read).
    (host / "4242" / "status").unlink()
    clock.now += 1.0
    assert enrich.host_fields([4242])[4242].local_pid == 17
    # The host PID now names another process (a host one, above our namespace).
    (host / "4242" / "status").write_text("Name:\tx\nNSpid:\t4242\n")
    (host / "4242" / "stat").write_text(_stat_line(4242, "x", 999))
    clock.now += 1.0
    assert enrich.host_fields([4242])[4242].foreign


def _node(root: Path, proc: Path, pid: int, cgroup: str, start: int = 1000) -> None:
    make_proc(proc, pid, (pid,), start=start)
    (proc / str(pid) / "cgroup").write_text(cgroup)


def test_processes_get_their_pod_once_and_again_when_the_pid_is_reused(
    tmp_path: Path, proc_root: Path
) -> None:
    from gputop.sources.host.owners import OwnerLookup
    from support.fake_node import REAL, FakeNode

    node = FakeNode(tmp_path)
    real = REAL["containerd-systemd-v2"]
    assert real.pod_uid is not None
    _node(tmp_path, proc_root, 4242, real.text)
    _node(tmp_path, proc_root, 4343, REAL["host-service"].text)
    node.pod_logs("ml", "trainer-0", real.pod_uid, "trainer")
    factory = Factory()
    clock = Clock()
    enrich = ProcessEnricher(
        proc_root=proc_root,
        process_factory=factory,
        clock=clock,
        owners=OwnerLookup(proc_root=proc_root, root=tmp_path),
    )

    pod, plain = enrich((gpu_process(4242), gpu_process(4343)))
    assert pod.owner is not None and plain.owner is None
    assert (pod.owner.namespace, pod.owner.pod, pod.owner.container) == (
        "ml",
        "trainer-0",
        "trainer",
    )
    clock.now += 1.0
    (again,) = enrich((gpu_process(4242),))
    assert again.owner is pod.owner

    # The PID now names another process (a Slurm job's), started later.
    factory.processes[4242].running = False
    (proc_root / "4242" / "stat").write_text(_stat_line(4242, "python3", 2000))
    (proc_root / "4242" / "cgroup").write_text(REAL["slurm-v2"].text)
    clock.now += 1.0
    (reused,) = enrich((gpu_process(4242),))
    assert reused.owner is not None and reused.owner.slurm_job == "1392969"


def test_other_containers_processes_are_named_through_a_host_procfs(
    tmp_path: Path, proc_root: Path
) -> None:
    from gputop.sources.host.owners import OwnerLookup
    from support.fake_node import REAL, FakeNode

    host = tmp_path / "host-proc"
    make_proc(host, "self", (5000, 7))
    make_proc(host, 4343, (4343, 17), start=999)  # a sibling container's process
    (host / "4343" / "cgroup").write_text(REAL["crio-v1"].text)
    real = REAL["crio-v1"]
    assert real.pod_uid is not None
    FakeNode(tmp_path).pod_logs("research", "llama-0", real.pod_uid, "llama")
    enrich = ProcessEnricher(
        proc_root=proc_root,
        host_proc_root=host,
        process_factory=Factory(),
        clock=Clock(),
        owners=OwnerLookup(proc_root=host, root=tmp_path),
    )

    (sibling,) = enrich((gpu_process(4343),))
    (again,) = enrich((gpu_process(4343),))

    assert sibling.foreign and sibling.owner is not None
    assert (sibling.owner.pod, sibling.owner.container, sibling.owner.runtime) == (
        "llama-0",
        "llama",
        "cri-o",
    )
    assert again.owner is sibling.owner


# ----- the facts from /proc against psutil's, on real processes ------------------------------


RSS_SLACK = 2**20
"""Bytes: ``/proc/<pid>/stat``'s resident set is the kernel's per-thread cached count, up to
64 pages from ``statm``'s."""


@contextlib.contextmanager
def _sleeper(program: str = "sleep") -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([program, "300"])
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def _wait_for_exec(pid: int, name: str) -> None:
    """Until the forked child has become ``name`` and sleeps (its exec and loading done, so
    that its memory holds still)."""
    deadline = time.monotonic() + 10
    process = psutil.Process(pid)
    while process.name() != name or process.status() != psutil.STATUS_SLEEPING:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_real_sleep_process_reads_as_psutil_reads_it() -> None:
    with _sleeper() as child:
        _wait_for_exec(child.pid, "sleep")
        reader = StatProcess(child.pid)
        real = psutil.Process(child.pid)
        with reader.oneshot():
            assert reader.is_running()
            # stat's resident count is the kernel's cached one (psutil reads statm's).
            assert abs(reader.memory_info().rss - real.memory_info().rss) < RSS_SLACK
        assert reader.name() == real.name() == "sleep"
        assert reader.username() == real.username()
        assert reader.cmdline() == real.cmdline() == ["sleep", "300"]
        assert reader.create_time() == real.create_time()


def test_a_name_cut_at_15_characters_is_the_command_lines_first_word_as_psutil(
    tmp_path: Path,
) -> None:
    sleep = subprocess.run(["which", "sleep"], capture_output=True, text=True, check=True)
    long_name = tmp_path / "a-sleeper-with-a-long-name"
    long_name.symlink_to(sleep.stdout.strip())
    with _sleeper(str(long_name)) as child:
        _wait_for_exec(child.pid, long_name.name)
        reader = StatProcess(child.pid)
        assert reader.name() == psutil.Process(child.pid).name() == long_name.name


def test_the_enricher_fills_real_sleep_processes_mapped_from_the_driver() -> None:
    with _sleeper() as first, _sleeper() as second:
        for child in (first, second):
            _wait_for_exec(child.pid, "sleep")
        clock = Clock()
        enrich = ProcessEnricher(clock=clock)
        rows = enrich((gpu_process(first.pid, name=None), gpu_process(second.pid)))
        clock.now += 1.0
        again = enrich((gpu_process(first.pid, name=None), gpu_process(second.pid)))
        for row, child in zip(rows, (first, second), strict=True):
            real = psutil.Process(child.pid)
            assert row.foreign is False
            assert row.user == real.username()
            assert row.command == "sleep 300"
            assert row.start_time == real.create_time()
            assert row.host_memory is not None
            assert abs(row.host_memory - real.memory_info().rss) < RSS_SLACK
            assert row.cpu_percent is None  # the baseline
        assert rows[0].name == "sleep"  # the driver had none
        assert rows[1].name == "python3"  # the driver's wins
        assert [row.cpu_percent for row in again] == [0.0, 0.0]  # asleep


def test_a_zombie_keeps_its_name_and_user_and_has_no_command_as_with_psutil() -> None:
    with _sleeper() as child:
        _wait_for_exec(child.pid, "sleep")
        enrich = ProcessEnricher()
        (alive,) = enrich((gpu_process(child.pid, name=None),))
        os.kill(child.pid, 9)
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        reader = StatProcess(child.pid)
        with pytest.raises(NoSuchProcess):
            reader.cmdline()
        with pytest.raises(psutil.ZombieProcess):
            psutil.Process(child.pid).cmdline()
        assert reader.name() == psutil.Process(child.pid).name() == "sleep"

        zombie = StatProcess(child.pid)
        enrich = ProcessEnricher(process_factory=lambda pid: zombie)
        (row,) = enrich((gpu_process(child.pid, name=None),))
    assert alive.command == "sleep 300"
    assert row.foreign is False
    assert (row.name, row.user) == ("sleep", alive.user)
    assert (row.command, row.start_time, row.host_memory) == (None, None, None)


def test_a_kernel_thread_has_no_command_line(tmp_path: Path) -> None:
    make_proc(tmp_path, 2, (2,))
    (tmp_path / "2" / "stat").write_text(_stat_line(2, "kthreadd", 5))
    (tmp_path / "2" / "cmdline").write_bytes(b"")

    reader = StatProcess(2, tmp_path)

    assert reader.cmdline() == []
    assert reader.name() == "kthreadd"


def test_a_process_gone_or_unreadable_is_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_proc(tmp_path, 7, (7,))
    (tmp_path / "7" / "cmdline").write_bytes(b"python3\0train.py\0")
    (tmp_path / "stat").write_text("cpu 1 2 3\nbtime 1700000000\n")
    with (tmp_path / "7" / "status").open("a") as status:
        status.write("Uid:\t54321\t0\t0\t0\n")  # the real uid, which no user has here
    reader = StatProcess(7, tmp_path)
    assert reader.cmdline() == ["python3", "train.py"]
    assert reader.create_time() == 1000 / os.sysconf("SC_CLK_TCK") + 1_700_000_000
    assert reader.username() == "54321"  # as psutil, for a uid without a name

    # Running as root, no file is denied: hidepid or an LSM would deny it as this does.
    real_open = os.open

    def denied(path: str, flags: int, *args: int) -> int:
        if path.endswith("/cmdline"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(AccessDenied):
        reader.cmdline()
    enrich = ProcessEnricher(proc_root=tmp_path, process_factory=lambda pid: reader)
    (row,) = enrich((gpu_process(7),))
    assert row.command is None and row.start_time is not None
    monkeypatch.undo()

    (tmp_path / "7" / "cmdline").unlink()
    with pytest.raises(NoSuchProcess):
        reader.cmdline()
