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

Resolved processes are enriched from their ``/proc/<pid>`` files for who they are (name, user,
command line, start time: re-read every ``IDENTITY_REFRESH`` seconds) and from one read of
``/proc/<pid>/stat`` per tick for what moves (CPU %, resident memory, and the start time that
tells a reused PID from the process we knew): the facts psutil gives, from the same files,
without importing it. The per-PID objects are cached so that CPU % measures between ticks.
A view may say which processes it shows (``in_view``): then only those are read every tick,
and the others every ``HIDDEN_REFRESH`` seconds (their name, user and command line every
``HIDDEN_IDENTITY_REFRESH``), so a tick costs what is on screen, not what runs on the GPUs.
Where a PID was placed is remembered too: a foreign PID is looked at again every
``FOREIGN_RECHECK`` seconds, and with a host procfs a placement holds while the host's start
time for that PID stays the same. The cost per tick is one or two small file reads per GPU
process and nothing per other process on the host: no scan, no subprocess. Without a procfs
(macOS, where there is no live GPU to monitor anyway) no PID is placed: every process is
foreign, as it was when psutil was used (its Process objects were only made for placed PIDs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pwd
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

from gputop.model import Owner, ProcessSample, Snapshot
from gputop.model.fields import host_facts

FOREIGN_HINT = (
    "some GPU processes are not in this PID namespace (is gputop in a container?): run it "
    "with `docker run --pid=host`, or `hostPID: true` in the Kubernetes pod spec (or mount "
    "the host's /proc at /host/proc), to see their users and command lines"
)

HOST_PROC_CANDIDATES = (Path("/host/proc"),)
"""Where monitoring containers conventionally mount the host's procfs."""

HOST_PROC_VARIABLE = "GPUTOP_HOST_PROC"
"""Where the host's procfs is mounted, when not at one of ``HOST_PROC_CANDIDATES``."""


def host_proc_candidates(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """``$GPUTOP_HOST_PROC`` first when set, then the conventional places."""
    given = environ.get(HOST_PROC_VARIABLE)
    return (Path(given), *HOST_PROC_CANDIDATES) if given else HOST_PROC_CANDIDATES


CPU_MIN_GAP = 0.1
"""Seconds; a cpu_percent over a shorter span is noise (and resets its baseline)."""

IDENTITY_REFRESH = 10.0
"""Seconds between re-reads of name, user and command line, which rarely change (a
``setproctitle`` call, a ``setuid``); CPU and memory are read every tick."""

HIDDEN_REFRESH = 5.0
"""Seconds between reads of a process no view shows (see ``ProcessEnricher``'s ``in_view``):
its CPU % and memory are at most this old when it is sorted by, filtered or scrolled to
(then it is read on the next tick), and a PID reused meanwhile by another GPU process is told
from the one we knew at most this late. The reads are spread over the ticks by PID."""

HIDDEN_IDENTITY_REFRESH = 60.0
"""Seconds between re-reads of name, user and command line of a process no view shows."""

FOREIGN_RECHECK = IDENTITY_REFRESH
"""Seconds a PID found foreign (no host procfs to check a start time against) stays foreign
before it is looked for again: a bound on how long a reused PID could be taken for the old
process."""

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def foreign_hint(processes: Iterable[ProcessSample] | Snapshot) -> str | None:
    """The advice to show (once) when any process is foreign; None when all resolve."""
    if isinstance(processes, Snapshot):
        processes = (process for gpu in processes.gpus for process in gpu.processes)
    return FOREIGN_HINT if any(process.foreign for process in processes) else None


class NoSuchProcess(Exception):
    """The process is gone (or a zombie, for what only a live process has), or its PID now
    names another process. The same meaning as psutil's exception of that name."""


class AccessDenied(Exception):
    """This user may not read that fact of the process (as psutil's ``AccessDenied``)."""


class ProcessLike(Protocol):
    """What the enricher asks of a process (:class:`StatProcess`; tests pass fakes). The
    methods are psutil.Process's, with the two exceptions above."""

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


class OwnerSource(Protocol):
    """Who a process belongs to (``owners.OwnerLookup``): a container, pod or Slurm job."""

    def owner(self, pid: int, start: int | None = None) -> Owner | None: ...
    def keep_only(self, pids: Iterable[int]) -> None: ...


def _read_file(path: str) -> bytes:
    """The whole of a small ``/proc`` file.

    Raises:
        FileNotFoundError, ProcessLookupError: the process is gone.
        PermissionError: not ours to read.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        # procfs hands out a long command line a page at a time.
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _stat_data(path: str) -> bytes | None:
    """A ``/proc/<pid>/stat`` line; None if unreadable."""
    try:
        # Without waiting: a FIFO in a mounted procfs's place would block an open for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat_fields(path: str) -> list[bytes] | None:
    """The fields of a ``/proc/<pid>/stat`` line from field 3 (state) on; None if unreadable."""
    data = _stat_data(path)
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return None if data is None else data[data.rfind(b")") + 2 :].split()


class _Stat(NamedTuple):
    start_ticks: int
    cpu_ticks: int
    """utime + stime."""
    rss_pages: int


def _read_stat(path: str) -> _Stat | None:
    fields = _stat_fields(path)
    try:
        return (
            None
            if fields is None
            else _Stat(int(fields[19]), int(fields[11]) + int(fields[12]), int(fields[21]))
        )
    except (IndexError, ValueError):
        return None


class _Rss(NamedTuple):
    rss: int


_boot_times: dict[str, float] = {}
"""procfs root -> its ``btime`` (seconds since the epoch): fixed while the system runs."""


def boot_time(proc_root: Path | str = "/proc") -> float:
    """When the system booted, in seconds since the epoch (``btime`` of ``/proc/stat``).

    Raises:
        AccessDenied: no ``btime`` there (not a procfs): no start time can be worked out.
    """
    key = os.fspath(proc_root)
    known = _boot_times.get(key)
    if known is not None:
        return known
    try:
        data = _read_file(os.path.join(key, "stat"))
    except OSError as error:
        raise AccessDenied(key) from error
    for line in data.splitlines():
        if line.startswith(b"btime"):
            value = _boot_times[key] = float(line.split()[1])
            return value
    raise AccessDenied(key)


class StatProcess:
    """A :class:`ProcessLike` over ``/proc/<pid>``: what psutil.Process tells on Linux, read
    from the same files, without psutil (46 M instructions to import, and a second Process
    object per process).

    What moves (running, CPU %, resident set) comes from the one stat line, read once per
    ``oneshot`` block (about 13 µs a process, against psutil's 60); what rarely changes is
    read when asked: the name (stat's command name, or the command line's first word when
    that is longer and starts with it, as psutil), the user of the real uid (``status``), the
    command line (``cmdline``) and the start time (stat's start ticks after ``btime``).

    Args:
        pid: the process, as this PID namespace numbers it.
        proc_root: the procfs of this PID namespace.
        clock: monotonic seconds, for CPU %.

    Raises:
        NoSuchProcess: no process ``pid`` (from the constructor), or, from any method but
            ``is_running``, it is gone or ``pid`` names another process by now; from
            ``cmdline``, also a zombie (which has no command line left).
        AccessDenied: from ``name``, ``username`` and ``cmdline`` when the file is not ours
            to read, and from ``create_time`` when the procfs tells no boot time.
    """

    def __init__(
        self,
        pid: int,
        proc_root: Path = Path("/proc"),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pid = pid
        self._clock = clock
        self._root = os.fspath(proc_root)
        self._base = os.path.join(self._root, str(pid), "")
        self._path = self._base + "stat"
        first = _read_stat(self._path)
        if first is None:
            raise NoSuchProcess(pid)
        self._start = first.start_ticks
        self._line: _Stat | None = None
        self._in_block = False
        self._last_cpu: tuple[float, float] | None = None
        """(monotonic seconds, CPU seconds) at the last cpu_percent call."""

    @contextlib.contextmanager
    def oneshot(self) -> Iterator[None]:
        """Read the stat line once for everything asked inside the block."""
        self._line = _read_stat(self._path)
        self._in_block = True
        try:
            yield
        finally:
            self._in_block = False
            self._line = None

    def _stat(self) -> _Stat | None:
        return self._line if self._in_block else _read_stat(self._path)

    def _current(self) -> _Stat:
        line = self._stat()
        if line is None or line.start_ticks != self._start:
            raise NoSuchProcess(self.pid)
        return line

    def _read(self, name: str) -> bytes:
        """One of the process's files, once it is known to be this process still."""
        try:
            data = _read_file(self._base + name)
        except PermissionError as error:
            raise AccessDenied(self.pid) from error
        except OSError as error:
            raise NoSuchProcess(self.pid) from error
        if not self.is_running():
            raise NoSuchProcess(self.pid)
        return data

    def is_running(self) -> bool:
        """The PID still names the process this object was made for."""
        line = self._stat()
        return line is not None and line.start_ticks == self._start

    def name(self) -> str:
        """The process name as psutil gives it: the kernel's command name, cut at 15
        characters, unless the command line's first word is that name in full."""
        data = self._read("stat")
        name = os.fsdecode(data[data.find(b"(") + 1 : data.rfind(b")")])
        if len(name) >= 15:
            try:
                argv = self.cmdline()
            except (AccessDenied, NoSuchProcess):
                return name  # better than nothing, as psutil (a zombie keeps its name)
            if argv:
                full = os.path.basename(argv[0])
                if full.startswith(name):
                    return full
        return name

    def username(self) -> str:
        """The name of the real uid's user; the uid in digits when it has none."""
        for line in self._read("status").splitlines():
            if line.startswith(b"Uid:"):
                uid = int(line.split()[1])
                try:
                    return pwd.getpwuid(uid).pw_name
                except KeyError:
                    return str(uid)
        raise AccessDenied(self.pid)  # a status file without its Uid line: not a procfs

    def cmdline(self) -> list[str]:
        """The command line, split as psutil splits it (a process that rewrote it with
        spaces, as ``setproctitle`` may, is split at the spaces); [] for a kernel thread."""
        data = os.fsdecode(self._read("cmdline"))
        if not data:
            state = _stat_fields(self._path)
            if state is not None and state[:1] == [b"Z"]:
                raise NoSuchProcess(self.pid)  # a zombie: psutil's ZombieProcess
            return []
        sep = "\x00" if data.endswith("\x00") else " "
        if data.endswith(sep):
            data = data[:-1]
        argv = data.split(sep)
        if sep == "\x00" and len(argv) == 1 and " " in data:
            argv = data.split(" ")
        return argv

    def create_time(self) -> float:
        """Seconds since the epoch, as psutil works it out (start ticks after boot)."""
        return float(self._start) / _CLOCK_TICKS + boot_time(self._root)

    def memory_info(self) -> _Rss:
        """The resident set size in bytes (the same figure as psutil's ``rss``)."""
        return _Rss(self._current().rss_pages * _PAGE_SIZE)

    def cpu_percent(self, interval: float | None = None) -> float:
        """Percent of one CPU used since the last call, as psutil's non-blocking form: the
        first call sets the baseline and returns 0.0."""
        now = self._clock()
        cpu = self._current().cpu_ticks / _CLOCK_TICKS
        last, self._last_cpu = self._last_cpu, (now, cpu)
        if last is None or now <= last[0]:
            return 0.0
        return round((cpu - last[1]) / (now - last[0]) * 100, 1)


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


def read_start_ticks(stat_path: Path | str) -> int | None:
    """Field 22 of ``/proc/<pid>/stat``: start time in clock ticks since boot."""
    fields = _stat_fields(os.fspath(stat_path))
    try:
        return None if fields is None else int(fields[19])
    except (IndexError, ValueError):
        return None


def find_host_proc_root(candidates: Iterable[Path] = HOST_PROC_CANDIDATES) -> Path | None:
    """A mounted procfs of an ancestor PID namespace, if one is at a conventional place."""
    for root in candidates:
        nspid = read_nspid(root / "self" / "status")
        if nspid is not None and len(nspid) > 1:
            return root
    return None


HostFields = ProcessSample
"""What the host tells about one GPU process (by the driver's PID) at one tick: a
``ProcessSample`` with only ``name`` and the host facts (the field table's ``host`` fields,
``HOST_FIELDS``) set; ``foreign`` when the PID does not resolve in this PID namespace, the
others then None."""


def foreign(pid: int) -> ProcessSample:
    """The host's answer for a PID that does not resolve here (another container)."""
    return ProcessSample(pid=pid, foreign=True)


@dataclass(slots=True)
class _Known:
    """What we hold about one resolved process between ticks."""

    process: ProcessLike
    fields: HostFields
    read_at: float | None = None
    """When cpu_percent was last called; None before its first (baseline) call."""
    identity_at: float | None = None
    """When name, user and command line were last read."""
    owner: Owner | None = None
    """Its container, pod or job: read once, when the process is first seen."""
    hidden_due: float = 0.0
    """When it is read next while no view shows it (``HIDDEN_REFRESH``)."""
    spread: bool = False
    """Its hidden reads were given their point in the period."""


def with_host_fields(process: ProcessSample, host: HostFields) -> ProcessSample:
    """``process`` with the host's fields; the driver's name wins over the host's."""
    changes = host_facts(host)
    if not host.foreign:
        changes["name"] = process.name or host.name
    return dataclasses.replace(process, **changes)


class ProcessEnricher:
    """Fill the host-side fields of GPU processes; usable as ``NvmlSource(enrich=...)``.

    Call it once per tick with the tick's processes (a PID listed on several GPUs is read
    once), or :meth:`host_fields` with their PIDs. Calls closer together than ``CPU_MIN_GAP``
    reuse the last reading, so calling it once per GPU within a tick is also fine. Not
    thread-safe: one source calls it from its one polling thread.
    """

    def __init__(
        self,
        *,
        proc_root: Path = Path("/proc"),
        host_proc_root: Path | None = None,
        process_factory: ProcessFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
        owners: OwnerSource | None = None,
        in_view: Callable[[], Collection[int] | None] | None = None,
    ) -> None:
        """Set up an enricher.

        Args:
            proc_root: the procfs of our own PID namespace.
            host_proc_root: a procfs of an ancestor namespace, to map host PIDs to ours;
                ignored unless it really is an ancestor's (NSpid of ``self`` has 2+ entries).
            process_factory: makes the per-PID reader: a :class:`StatProcess` over
                ``proc_root`` when None, or a test double.
            clock: monotonic seconds, for the spacing of CPU measurements.
            owners: finds each process's container, pod or Slurm job (``owner``), by the
                driver's PID: over the host procfs when there is one (``host_proc_root``),
                which also names the owners of other containers' (foreign) processes.
            in_view: the driver PIDs a view shows now, asked once per tick (None from it,
                or no ``in_view``: every process is shown). The others are read every
                ``HIDDEN_REFRESH`` seconds, their last facts handed out in between.
        """
        self._owners = owners
        self._in_view = in_view
        self._foreign_rows: dict[int, ProcessSample] = {}
        """Host PID -> last answer for a foreign PID: the same object while it holds."""
        self._proc_root = proc_root
        self._proc_prefix = os.path.join(proc_root, "")
        self._process_factory: ProcessFactory = (
            process_factory
            if process_factory is not None
            else lambda pid: StatProcess(pid, proc_root)
        )
        self._clock = clock
        self._known: dict[int, _Known] = {}
        self._foreign_until: dict[int, float] = {}
        """Host PID -> until when it is taken as foreign without looking (no host procfs)."""
        self._placed: dict[int, tuple[int, int | None]] = {}
        """Host PID -> (its start ticks on the host, its PID here or None): with a host procfs."""
        self._depth = 1
        self._host_root: Path | None = None
        self._host_prefix = ""
        if host_proc_root is not None:
            own = read_nspid(host_proc_root / "self" / "status")
            if own is not None and len(own) > 1:
                self._host_root = host_proc_root
                self._host_prefix = os.path.join(host_proc_root, "")
                self._depth = len(own)

    def __call__(self, processes: tuple[ProcessSample, ...]) -> tuple[ProcessSample, ...]:
        """Return the processes with host fields filled in, in the same order."""
        host = self.host_fields([process.pid for process in processes])
        return tuple(with_host_fields(process, host[process.pid]) for process in processes)

    def host_fields(self, pids: Iterable[int]) -> dict[int, HostFields]:
        """The host's fields for each distinct driver PID (the hot path of a live source).

        Also forgets what was cached for PIDs not among ``pids``: call it on idle ticks too.
        """
        now = self._clock()
        out: dict[int, HostFields] = {}
        keep: set[int] = set()
        shown = None if self._in_view is None else self._in_view()
        for pid in pids:
            if pid in out:
                continue
            visible = shown is None or pid in shown
            if not visible:
                held = self._held(pid, now)
                if held is not None:
                    keep.add(held[0])
                    out[pid] = held[1]
                    continue
            if self._host_root is None and pid in self._known:
                # Known here: the stat read below tells whether it still is.
                local: int | None = pid
            else:
                local = self._place(pid, now)
            if local is None:
                out[pid] = self._foreign(pid)
                continue
            fields = self._fields(pid, local, now, visible)
            if fields is None:
                out[pid] = self._foreign(pid)
                continue
            keep.add(local)
            out[pid] = fields
        known = self._known
        if not known.keys() <= keep:
            for pid in [pid for pid in known if pid not in keep]:
                del known[pid]
        for cache in (self._foreign_until, self._placed, self._foreign_rows):
            if not cache.keys() <= out.keys():
                for pid in [pid for pid in cache if pid not in out]:
                    del cache[pid]
        if self._owners is not None:
            self._owners.keep_only(out)
        return out

    def _held(self, pid: int, now: float) -> tuple[int, HostFields] | None:
        """(PID here, last facts) of a known process no view shows and not yet due for its
        next read: handed out again without touching ``/proc``. None: read it now."""
        if self._host_root is None:
            local = pid
        else:
            placed = self._placed.get(pid)
            if placed is None or placed[1] is None:
                return None
            local = placed[1]
        known = self._known.get(local)
        if known is None or known.read_at is None or now >= known.hidden_due:
            return None
        return local, known.fields

    def _foreign(self, pid: int) -> HostFields:
        """The answer for a PID of another PID namespace: with its owner when a host procfs
        shows its cgroup (a sibling container's process in a pod without hostPID)."""
        owner = None
        if self._owners is not None and self._host_root is not None:
            placed = self._placed.get(pid)
            owner = self._owners.owner(pid, placed[0] if placed is not None else None)
        last = self._foreign_rows.get(pid)
        if last is not None and last.owner == owner:
            return last
        row = self._foreign_rows[pid] = ProcessSample(pid=pid, foreign=True, owner=owner)
        return row

    def _owner(self, pid: int) -> Owner | None:
        """The owner of driver PID ``pid`` (a new process: read once, kept in ``_Known``)."""
        if self._owners is None:
            return None
        placed = self._placed.get(pid) if self._host_root is not None else None
        return self._owners.owner(pid, placed[0] if placed is not None else None)

    def _place(self, pid: int, now: float) -> int | None:
        """The PID here of the process with host PID ``pid``; None when it is foreign."""
        if self._host_root is None:
            until = self._foreign_until.get(pid)
            if until is not None and now < until:
                return None
            if os.path.isdir(self._proc_prefix + str(pid)):
                if until is not None:
                    del self._foreign_until[pid]
                return pid
            self._foreign_until[pid] = now + FOREIGN_RECHECK
            return None
        base = f"{self._host_prefix}{pid}"
        host_start = read_start_ticks(base + "/stat")
        placed = self._placed.get(pid)
        if placed is not None and host_start is not None and placed[0] == host_start:
            # The same process as when it was placed (a reused PID starts at another time).
            return placed[1]
        local = self._place_by_nspid(base, host_start)
        if host_start is not None:
            self._placed[pid] = (host_start, local)
        else:
            self._placed.pop(pid, None)
        return local

    def _place_by_nspid(self, base: str, host_start: int | None) -> int | None:
        nspid = read_nspid(Path(base, "status"))
        if nspid is None or len(nspid) < self._depth:
            # Gone, or living in a namespace above ours: nothing of it is visible here.
            return None
        local = nspid[self._depth - 1]
        local_start = read_start_ticks(f"{self._proc_prefix}{local}/stat")
        if host_start is None or host_start != local_start:
            return None  # same depth but another namespace: a sibling container
        return local

    def _fields(self, pid: int, local: int, now: float, visible: bool = True) -> HostFields | None:
        """Host fields of the process that is ``local`` here (driver PID ``pid``); ``visible``:
        a view shows it (its identity is re-read at the shorter cadence). None when a known
        process has left this PID namespace's ``/proc`` (looked for as a new PID would be,
        and not found: foreign)."""
        shown = local if local != pid else None
        known = self._known.get(local)
        try:
            if known is not None:
                process = known.process
                due = known.read_at is None or now - known.read_at >= CPU_MIN_GAP
                # One oneshot block: the liveness check and the readings share one stat read.
                with process.oneshot():
                    if process.is_running():
                        if due:
                            self._read(known, now, visible)
                        return known.fields
                # The PID now names another process.
            known = self._known[local] = _Known(
                self._process_factory(local), HostFields(pid=pid, local_pid=shown)
            )
            known.owner = self._owner(pid)
            with known.process.oneshot():
                self._read(known, now, visible)
        except (NoSuchProcess, AccessDenied):
            known_until_now = self._known.pop(local, None) is not None
            # Known until now, so not placed this tick: placed as any new PID is.
            if known_until_now and self._host_root is None and self._place(pid, now) is None:
                return None
            return HostFields(pid=pid, local_pid=shown)
        return known.fields

    def _read(self, known: _Known, now: float, visible: bool = True) -> None:
        process = known.process
        old = known.fields
        name, user, command, start = old.name, old.user, old.command, old.start_time
        cpu = rss = None
        every = IDENTITY_REFRESH if visible else HIDDEN_IDENTITY_REFRESH
        fresh = known.identity_at is None or now - known.identity_at >= every
        # A process that exits mid-read keeps what was read before it went.
        with contextlib.suppress(NoSuchProcess):
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
            # The first call only sets the baseline and returns a meaningless 0.0.
            cpu = measured if known.read_at is not None else None
        fields = HostFields(
            pid=old.pid,
            name=name,
            user=user,
            command=command,
            cpu_percent=cpu,
            host_memory=rss,
            start_time=start,
            local_pid=old.local_pid,
            owner=known.owner,
        )
        # Unchanged facts stay the same object: the merge then keeps every row it built.
        if fields != old:
            known.fields = fields
        if known.read_at is None:
            # The first read is CPU's baseline: the next tick reads its first CPU %.
            known.hidden_due = now
        elif not known.spread:
            # Then a point of the period its PID picks (Knuth's multiplicative hash), so
            # that 200 processes that appeared together are not all read on one tick.
            known.spread = True
            known.hidden_due = now + HIDDEN_REFRESH * ((old.pid * 2654435761) % 2**32) / 2**32
        else:
            known.hidden_due = now + HIDDEN_REFRESH
        known.read_at = now


_T = TypeVar("_T")


def _attempt(read: Callable[[], _T]) -> _T | None:
    try:
        return read()
    except AccessDenied:
        return None
