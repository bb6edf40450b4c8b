"""Who the processes on a GPU are: user, command line, CPU %, host memory, start time.

NVML reports PIDs as the host (initial PID namespace) sees them. Inside a container that has
its own PID namespace (docker without ``--pid=host``, Kubernetes without ``hostPID: true``)
those PIDs name nothing, or worse, some unrelated local process. Every process row is kept
whatever happens; one that cannot be placed here is marked ``foreign``.

Two ways to place a host PID:

* our own procfs (``/proc``) when we share the host's PID namespace: ``/proc/<pid>`` exists;
* a procfs of an ancestor namespace mounted into the container (``-v /proc:/host/proc:ro``).
  Its ``/<pid>/status`` line ``NSpid`` lists that process's PID in every namespace from the
  procfs's (outermost, the host PID we were given) inwards, so the entry at our own depth is
  its PID here. A sibling container's process has an entry at that depth too, so the match is
  confirmed by comparing the start time both procfs views report.

Resolved processes are enriched with psutil; the ``psutil.Process`` objects are cached per
PID so that ``cpu_percent`` measures between ticks. The cost per tick is a handful of small
file reads per GPU process and nothing per other process on the host: no scan, no subprocess.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import psutil

from gputop.model import ProcessSample, Snapshot

FOREIGN_HINT = (
    "some GPU processes are not in this PID namespace (is gputop in a container?): run it "
    "with `docker run --pid=host`, or `hostPID: true` in the Kubernetes pod spec (or mount "
    "the host's /proc at /host/proc), to see their users and command lines"
)

HOST_PROC_CANDIDATES = (Path("/host/proc"),)
"""Where monitoring containers conventionally mount the host's procfs."""

CPU_MIN_GAP = 0.1
"""Seconds; a cpu_percent over a shorter span is noise (and resets psutil's baseline)."""

IDENTITY_REFRESH = 10.0
"""Seconds between re-reads of name, user and command line, which rarely change (a
``setproctitle`` call, a ``setuid``); CPU and memory are read every tick."""


def foreign_hint(processes: Iterable[ProcessSample] | Snapshot) -> str | None:
    """The advice to show (once) when any process is foreign; None when all resolve."""
    if isinstance(processes, Snapshot):
        processes = (process for gpu in processes.gpus for process in gpu.processes)
    return FOREIGN_HINT if any(process.foreign for process in processes) else None


class ProcessLike(Protocol):
    """The part of ``psutil.Process`` used here (tests pass fakes)."""

    def oneshot(self) -> contextlib.AbstractContextManager[None]: ...
    def is_running(self) -> bool: ...
    def name(self) -> str: ...
    def username(self) -> str: ...
    def cmdline(self) -> list[str]: ...
    def cpu_percent(self, interval: float | None = None) -> float: ...
    def memory_info(self) -> _HasRss: ...
    def create_time(self) -> float: ...


class _HasRss(Protocol):
    @property
    def rss(self) -> int: ...


ProcessFactory = Callable[[int], ProcessLike]


def _psutil_process(pid: int) -> ProcessLike:
    return psutil.Process(pid)


def read_nspid(status_path: Path) -> tuple[int, ...] | None:
    """The ``NSpid`` of a ``/proc/<pid>/status`` file; None if it cannot be read.

    Kernels before 4.1 have no NSpid line; then the process's only PID is the directory name.
    """
    try:
        text = status_path.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("NSpid:"):
            try:
                return tuple(int(field) for field in line.split()[1:])
            except ValueError:
                return None
    name = status_path.parent.name
    return (int(name),) if name.isdigit() else None


def read_start_ticks(stat_path: Path) -> int | None:
    """Field 22 of ``/proc/<pid>/stat``: start time in clock ticks since boot."""
    try:
        text = stat_path.read_text(errors="replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def find_host_proc_root(candidates: Iterable[Path] = HOST_PROC_CANDIDATES) -> Path | None:
    """A mounted procfs of an ancestor PID namespace, if one is at a conventional place."""
    for root in candidates:
        nspid = read_nspid(root / "self" / "status")
        if nspid is not None and len(nspid) > 1:
            return root
    return None


@dataclass(frozen=True, slots=True)
class _HostFields:
    """What psutil told us about one process at its last reading."""

    name: str | None = None
    user: str | None = None
    command: str | None = None
    cpu_percent: float | None = None
    host_memory: int | None = None
    start_time: float | None = None


@dataclass(slots=True)
class _Known:
    """What we hold about one resolved process between ticks."""

    process: ProcessLike
    fields: _HostFields = _HostFields()
    read_at: float | None = None
    """When cpu_percent was last called; None before its first (baseline) call."""
    identity_at: float | None = None
    """When name, user and command line were last read."""


class ProcessEnricher:
    """Fill the host-side fields of GPU processes; usable as ``NvmlSource(enrich=...)``.

    Call it once per tick with the tick's processes (a PID listed on several GPUs is read
    once). Calls closer together than ``CPU_MIN_GAP`` reuse the last reading, so calling it
    once per GPU within a tick is also fine. Not thread-safe: one source calls it from its
    one polling thread.
    """

    def __init__(
        self,
        *,
        proc_root: Path = Path("/proc"),
        host_proc_root: Path | None = None,
        process_factory: ProcessFactory = _psutil_process,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Set up an enricher.

        Args:
            proc_root: the procfs of our own PID namespace (psutil reads the same one).
            host_proc_root: a procfs of an ancestor namespace, to map host PIDs to ours;
                ignored unless it really is an ancestor's (NSpid of ``self`` has 2+ entries).
            process_factory: ``psutil.Process`` or a test double.
            clock: monotonic seconds, for the spacing of CPU measurements.
        """
        self._proc_root = proc_root
        self._process_factory = process_factory
        self._clock = clock
        self._known: dict[int, _Known] = {}
        self._depth = 1
        self._host_root: Path | None = None
        if host_proc_root is not None:
            own = read_nspid(host_proc_root / "self" / "status")
            if own is not None and len(own) > 1:
                self._host_root = host_proc_root
                self._depth = len(own)

    @property
    def maps_host_pids(self) -> bool:
        """True when a host procfs is used to translate host PIDs into ours."""
        return self._host_root is not None

    def __call__(self, processes: tuple[ProcessSample, ...]) -> tuple[ProcessSample, ...]:
        """Return the processes with host fields filled in, in the same order."""
        now = self._clock()
        local_pids: dict[int, int | None] = {}
        result: list[ProcessSample] = []
        for process in processes:
            if process.pid not in local_pids:
                local_pids[process.pid] = self._place(process.pid)
            result.append(self._enrich(process, local_pids[process.pid], now))
        keep = {pid for pid in local_pids.values() if pid is not None}
        for pid in [pid for pid in self._known if pid not in keep]:
            del self._known[pid]
        return tuple(result)

    def forget_all(self) -> None:
        """Drop every cached psutil.Process (e.g. when the source closes)."""
        self._known.clear()

    def _place(self, pid: int) -> int | None:
        """The PID here of the process with host PID ``pid``; None when it is foreign."""
        if self._host_root is None:
            return pid if (self._proc_root / str(pid)).is_dir() else None
        nspid = read_nspid(self._host_root / str(pid) / "status")
        if nspid is None or len(nspid) < self._depth:
            # Gone, or living in a namespace above ours: nothing of it is visible here.
            return None
        local = nspid[self._depth - 1]
        host_start = read_start_ticks(self._host_root / str(pid) / "stat")
        local_start = read_start_ticks(self._proc_root / str(local) / "stat")
        if host_start is None or host_start != local_start:
            return None  # same depth but another namespace: a sibling container
        return local

    def _enrich(self, process: ProcessSample, local: int | None, now: float) -> ProcessSample:
        if local is None:
            return dataclasses.replace(process, foreign=True, local_pid=None)
        fields = _HostFields()
        known = self._lookup(local)
        if known is not None:
            if known.read_at is None or now - known.read_at >= CPU_MIN_GAP:
                self._read(known, now)
            fields = known.fields
        return dataclasses.replace(
            process,
            name=process.name or fields.name,
            user=fields.user,
            command=fields.command,
            cpu_percent=fields.cpu_percent,
            host_memory=fields.host_memory,
            start_time=fields.start_time,
            foreign=False,
            local_pid=local if local != process.pid else None,
        )

    def _lookup(self, pid: int) -> _Known | None:
        known = self._known.get(pid)
        try:
            if known is not None and not known.process.is_running():
                known = None  # the PID now names another process
            if known is None:
                known = self._known[pid] = _Known(self._process_factory(pid))
        except psutil.Error:
            self._known.pop(pid, None)
            return None
        return known

    def _read(self, known: _Known, now: float) -> None:
        process = known.process
        old = known.fields
        name, user, command, start = old.name, old.user, old.command, old.start_time
        cpu = rss = None
        fresh = known.identity_at is None or now - known.identity_at >= IDENTITY_REFRESH
        # A process that exits mid-read keeps what was read before it went.
        with contextlib.suppress(psutil.NoSuchProcess), process.oneshot():
            if fresh:
                name = _attempt(process.name) or None
                user = _attempt(process.username) or None
                argv = _attempt(process.cmdline)
                command = " ".join(argv) if argv else None
                start = _attempt(process.create_time)
                known.identity_at = now
            memory = _attempt(process.memory_info)
            rss = None if memory is None else memory.rss
            measured = _attempt(lambda: process.cpu_percent(None))
            # psutil's first call only sets the baseline and returns a meaningless 0.0.
            cpu = measured if known.read_at is not None else None
        known.fields = _HostFields(
            name=name,
            user=user,
            command=command,
            cpu_percent=cpu,
            host_memory=rss,
            start_time=start,
        )
        known.read_at = now


_T = TypeVar("_T")


def _attempt(read: Callable[[], _T]) -> _T | None:
    try:
        return read()
    except psutil.AccessDenied:
        return None
