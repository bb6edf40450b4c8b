"""A GPU's processes from NVML: three lists, versioned entry points, one row per PID.

NVML lists compute, graphics and MPS-compute processes separately, each through ``_v3``, ``_v2``
or the original unversioned entry point depending on the driver. All of them are called through
ctypes here, with pynvml's calls and structs: pynvml no longer wraps the unversioned (v1) ones,
and its wrappers for the others build an object per entry through a slow attribute hook, where
a list that holds the same bytes as last tick is simply last tick's entries. A PID in both the
compute and graphics lists is one ``C+G`` process. Per-process SM utilization comes from
``nvmlDeviceGetProcessUtilization``, asked for samples newer than the last tick's.

Each list and the utilization are read in one call a tick: into the array kept from the last
tick, sized with headroom, where pynvml's wrappers ask for the count first and then fill a new
array (two calls each, on every GPU that runs anything). Only a list that outgrew the array
costs a second call, into a bigger one.

A row that says exactly what it said last tick is the same :class:`ProcessSample` object as last
tick (see :class:`ProcessRows`), and a device whose rows all stayed has last tick's tuple: most
rows do not change from one second to the next, and what consumes them can then tell so by
identity.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from gputop.model import ProcessSample, Reason
from gputop.sources.nvml.api import Handle, NvmlApi
from gputop.sources.nvml.calls import CallFailed, DeviceCalls, read_number, same_objects
from gputop.sources.nvml.codes import instance_id, text

_NOT_AVAILABLE_U64 = 0xFFFFFFFFFFFFFFFF
"""What NVML puts in ``usedGpuMemory`` when it cannot tell (Windows WDDM)."""


class RawProcess(NamedTuple):
    """One entry of one NVML process list, whatever its version."""

    pid: int
    memory: int | None
    gpu_instance_id: int | None
    compute_instance_id: int | None


@dataclass(frozen=True, slots=True)
class _ProcessList:
    kind: str
    compute: bool
    versioned: tuple[str, ...]
    v1_symbol: str


_LISTS = (
    _ProcessList(
        "compute",
        True,
        ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"),
        "nvmlDeviceGetComputeRunningProcesses",
    ),
    _ProcessList(
        "graphics",
        False,
        ("nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"),
        "nvmlDeviceGetGraphicsRunningProcesses",
    ),
    _ProcessList(
        "mps",
        True,
        (
            "nvmlDeviceGetMPSComputeRunningProcesses_v3",
            "nvmlDeviceGetMPSComputeRunningProcesses_v2",
        ),
        "nvmlDeviceGetMPSComputeRunningProcesses",
    ),
)


class _ProcessInfoV1(ctypes.Structure):
    """``nvmlProcessInfo_v1_t``: what drivers before r470 fill."""

    _fields_ = (("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong))


def _memory(value: int) -> int | None:
    return None if value == _NOT_AVAILABLE_U64 else value


_TRIES = 3
"""Calls at most for one list in one tick: a list can grow between the count and the fill."""


def _headroom(count: int) -> int:
    """The size of a new array for a list of ``count``: room for processes starting soon."""
    return count * 2 + 5


_Filler = Callable[["ctypes.Array[ctypes.Structure] | None", ctypes.c_uint], int]
"""One NVML call that fills an array (None: only asks for the count) and sets the count;
returns NVML's code."""


class _KeptArray:
    """The array an NVML list call fills, kept from tick to tick: the first call only asks
    for the count (no array yet), later ones fill the kept array at once, and a list that
    outgrew it is read again, the same tick, into one with headroom."""

    __slots__ = ("_array", "_struct")

    def __init__(self, struct: type[ctypes.Structure]) -> None:
        self._struct = struct
        self._array: ctypes.Array[ctypes.Structure] | None = None

    def fill(
        self, nvml: NvmlApi, call: _Filler
    ) -> tuple[ctypes.Array[ctypes.Structure] | None, int]:
        """(the array filled, how many entries) after ``call``; the array is None when NVML
        answered the count call with success (nothing to list yet).

        Raises:
            NVMLError: what NVML answered, or InsufficientSize after ``_TRIES`` calls.
        """
        for _ in range(_TRIES):
            array = self._array
            count = ctypes.c_uint(0 if array is None else len(array))
            ret = call(array, count)
            if ret == nvml.NVML_SUCCESS:
                return array, count.value
            if ret != nvml.NVML_ERROR_INSUFFICIENT_SIZE:
                raise nvml.NVMLError(ret)
            self._array = (self._struct * _headroom(count.value))()
        raise nvml.NVMLError(nvml.NVML_ERROR_INSUFFICIENT_SIZE)


class _ListReader:
    """One NVML process-list entry point on one device, called through ctypes.

    pynvml's wrappers turn each entry into a "friendly object" through a slow attribute hook;
    here the filled array is compared with last tick's bytes and, as the list of a device
    rarely changes from one second to the next, last tick's entries are usually reused as
    they are. The calls and structs are pynvml's (the v1 struct, which pynvml dropped, is
    :class:`_ProcessInfoV1`). The array is kept from tick to tick (:class:`_KeptArray`).
    """

    __slots__ = ("_bytes", "_entries", "_kept", "_nvml", "_struct", "_symbol")

    def __init__(self, nvml: NvmlApi, symbol: str, struct: type[ctypes.Structure]) -> None:
        self._nvml = nvml
        self._symbol = symbol
        self._struct = struct
        self._kept = _KeptArray(struct)
        self._bytes = b""
        self._entries: list[RawProcess] = []

    def __call__(self, handle: Handle) -> list[RawProcess]:
        nvml = self._nvml
        fn = nvml._nvmlGetFunctionPointer(self._symbol)
        array, count = self._kept.fill(
            nvml, lambda out, count: fn(handle, ctypes.byref(count), out)
        )
        return self._read(array, count)

    def _read(self, array: ctypes.Array[ctypes.Structure] | None, count: int) -> list[RawProcess]:
        if array is None or count == 0:
            if self._bytes or self._entries:
                self._bytes = b""
                self._entries = []
            return self._entries
        filled = ctypes.string_at(array, count * ctypes.sizeof(self._struct))
        if filled != self._bytes:
            self._bytes = filled
            self._entries = self._parse(array, count)
        return self._entries

    def _parse(self, array: ctypes.Array[ctypes.Structure], count: int) -> list[RawProcess]:
        if self._struct is _ProcessInfoV1:
            return [
                RawProcess(entry.pid, _memory(entry.usedGpuMemory), None, None)
                for entry in array[:count]
            ]
        return [
            RawProcess(
                read_number(entry, "pid"),
                _memory(read_number(entry, "usedGpuMemory")),
                instance_id(read_number(entry, "gpuInstanceId")),
                instance_id(read_number(entry, "computeInstanceId")),
            )
            for entry in array[:count]
        ]


def _one_list(
    calls: DeviceCalls, readers: dict[str, _ListReader], spec: _ProcessList, handle: Handle
) -> list[RawProcess] | CallFailed:
    """The newest entry point the driver has: _v3, then _v2, then v1."""
    for symbol in spec.versioned:
        result = calls.attempt(f"procs:{symbol}", readers[symbol], handle)
        if not isinstance(result, CallFailed):
            return result
        if result.reason is not Reason.NOT_SUPPORTED:
            return result
    return calls.attempt(f"procs:{spec.v1_symbol}", readers[spec.v1_symbol], handle)


@dataclass(slots=True)
class RunningProcess:
    """One PID on a device, its lists merged."""

    pid: int
    compute: bool
    graphics: bool
    memory: int | None
    gpu_instance_id: int | None
    compute_instance_id: int | None


class ProcessLists:
    """Every process on one device, one entry per PID (compute and graphics merged).

    When every list reads as it did last tick, the merged list is last tick's object again,
    so what consumes it can tell nothing changed by identity.
    """

    __slots__ = ("_lists", "_merged", "_readers")

    def __init__(self, nvml: NvmlApi) -> None:
        structs = {"_v3": nvml.c_nvmlProcessInfo_v3_t, "_v2": nvml.c_nvmlProcessInfo_v2_t}
        self._readers = {
            symbol: _ListReader(nvml, symbol, structs[symbol[-3:]])
            for spec in _LISTS
            for symbol in spec.versioned
        }
        self._readers.update(
            {spec.v1_symbol: _ListReader(nvml, spec.v1_symbol, _ProcessInfoV1) for spec in _LISTS}
        )
        self._lists: list[list[RawProcess] | CallFailed] = []
        self._merged: list[RunningProcess] = []

    def read(self, calls: DeviceCalls, handle: Handle) -> list[RunningProcess] | None:
        """This tick's processes; None (with the reason noted on ``processes``) when no list
        could be read."""
        lists = [_one_list(calls, self._readers, spec, handle) for spec in _LISTS]
        last = self._lists
        if same_objects(lists, last):
            return self._merged
        self._lists = lists
        merged = _merge(lists)
        if merged is None:
            failure = next(item for item in lists if isinstance(item, CallFailed))
            calls.note(("processes",), failure.reason)
            self._lists = []
            return None
        self._merged = merged
        return merged


def _merge(lists: list[list[RawProcess] | CallFailed]) -> list[RunningProcess] | None:
    merged: dict[int, RunningProcess] = {}
    any_read = False
    for spec, result in zip(_LISTS, lists, strict=True):
        if isinstance(result, CallFailed):
            continue
        any_read = True
        for raw in result:
            entry = merged.get(raw.pid)
            if entry is None:
                merged[raw.pid] = RunningProcess(
                    raw.pid,
                    spec.compute,
                    not spec.compute,
                    raw.memory,
                    raw.gpu_instance_id,
                    raw.compute_instance_id,
                )
                continue
            entry.compute = entry.compute or spec.compute
            entry.graphics = entry.graphics or not spec.compute
            if entry.memory is None:
                entry.memory = raw.memory
            if entry.gpu_instance_id is None:
                entry.gpu_instance_id = raw.gpu_instance_id
                entry.compute_instance_id = raw.compute_instance_id
    return list(merged.values()) if any_read else None


_Row = tuple[int, str, str | None, int | None, int | None, int | None, float | None]
"""What a row says: pid, type, name, memory, GPU and compute instance, SM %."""


class ProcessRows:
    """The model's processes of one device, reusing last tick's object for an unchanged row.

    Holds only the rows of the last tick, so a process that leaves is let go of at once. When
    the device's process list is last tick's object (nothing changed, see
    :class:`ProcessLists`) and the names and SM figures are the same too, the whole tuple is
    last tick's again; a ``names`` with a ``version`` (:class:`ProcessNames`) that did not
    move is not even asked.
    """

    __slots__ = ("_last", "_names", "_out", "_running", "_sm", "_version")

    def __init__(self) -> None:
        self._last: dict[_Row, ProcessSample] = {}
        self._running: list[RunningProcess] | None = None
        self._sm: dict[int, float] = {}
        self._names: list[str | None] = []
        self._out: tuple[ProcessSample, ...] = ()
        self._version: int | None = None

    def __call__(
        self,
        running: list[RunningProcess],
        names: Callable[[int], str | None],
        sm_percent: dict[int, float],
    ) -> tuple[ProcessSample, ...]:
        """Type ``C``, ``G`` or ``C+G``, with name and SM utilization, one row per entry."""
        version = getattr(names, "version", None)
        if running is self._running and sm_percent == self._sm:
            if version is not None and version == self._version:
                return self._out
            named = [names(entry.pid) for entry in running]
            if named == self._names:
                self._version = version
                return self._out
        last = self._last
        rows: dict[_Row, ProcessSample] = {}
        out: list[ProcessSample] = []
        named = []
        for entry in running:
            pid = entry.pid
            name = names(pid)
            named.append(name)
            key = (
                pid,
                "C+G" if entry.compute and entry.graphics else "C" if entry.compute else "G",
                name,
                entry.memory,
                entry.gpu_instance_id,
                entry.compute_instance_id,
                sm_percent.get(pid),
            )
            row = last.get(key)
            if row is None:
                row = ProcessSample(
                    pid=pid,
                    type=key[1],
                    name=name,
                    memory_used=entry.memory,
                    gpu_instance_id=entry.gpu_instance_id,
                    compute_instance_id=entry.compute_instance_id,
                    sm_utilization=key[6],
                )
            rows[key] = row
            out.append(row)
        self._last = rows
        self._running = running
        self._sm = sm_percent
        self._names = named
        self._version = version
        self._out = tuple(out)
        return self._out


class UtilizationReader:
    """``nvmlDeviceGetProcessUtilization`` on one device, in one call a tick.

    pynvml's wrapper asks for the count, then fills a new array, and hands out one struct per
    sample; here the array is kept from tick to tick (as the process lists' are) and only the
    three numbers gputop uses are read from each sample.
    """

    __slots__ = ("_kept", "_nvml")

    def __init__(self, nvml: NvmlApi) -> None:
        self._nvml = nvml
        self._kept = _KeptArray(nvml.c_nvmlProcessUtilizationSample_t)

    def __call__(self, handle: Handle, since: int) -> list[tuple[int, int, int]]:
        """(pid, time stamp in microseconds, SM %) of each sample newer than ``since``.

        Raises:
            NVMLError: what NVML answered (NotFound: no process ran since ``since``).
        """
        nvml = self._nvml
        fn = nvml._nvmlGetFunctionPointer("nvmlDeviceGetProcessUtilization")
        stamp = ctypes.c_ulonglong(since)
        array, count = self._kept.fill(
            nvml, lambda out, count: fn(handle, out, ctypes.byref(count), stamp)
        )
        if array is None:
            return []
        return [
            (
                read_number(sample, "pid"),
                read_number(sample, "timeStamp"),
                read_number(sample, "smUtil"),
            )
            for sample in array[:count]
        ]


def sm_utilization(
    calls: DeviceCalls, nvml: NvmlApi, handle: Handle, since: int, read: UtilizationReader
) -> tuple[dict[int, float], int]:
    """Per-PID SM utilization from samples newer than ``since`` (microseconds).

    Returns the latest sample's SM percent per PID and the timestamp to ask from next tick.
    NVML answers NotFound when no process ran since ``since``: that is no samples, not an error.
    """
    result = calls.attempt("process_utilization", read, handle, since)
    if isinstance(result, CallFailed):
        if result.code != nvml.NVML_ERROR_NOT_FOUND:
            calls.note(("processes.sm_utilization",), result.reason)
        return {}, since
    latest: dict[int, tuple[int, float]] = {}
    newest = since
    for pid, stamp, sm in result:
        newest = max(newest, stamp)
        seen = latest.get(pid)
        if seen is None or stamp >= seen[0]:
            latest[pid] = (stamp, float(sm))
    return {pid: value for pid, (_, value) in latest.items()}, newest


_UNKNOWN = "<not asked yet>"


class ProcessNames:
    """NVML's name for each PID, asked once while the PID stays on some GPU.

    Shared by every GPU's sampling thread: a PID on several GPUs (one process driving them all)
    is asked about once. The other threads wait for that answer at most ``wait`` seconds, then
    go on without the name rather than share a hung call's fate.
    """

    def __init__(self, nvml: NvmlApi, wait: float | None = None) -> None:
        self._nvml = nvml
        self._wait = wait
        self._lock = threading.Lock()
        self._names: dict[int, str | None] = {}
        self._pending: dict[int, threading.Event] = {}
        self._refused = False
        self.version = 0
        """Changes whenever an answer may have: equal versions, equal answers for every PID."""

    def __call__(self, pid: int) -> str | None:
        """The process's name, or None when NVML will not (or not yet) say."""
        known = self._names.get(pid, _UNKNOWN)
        if known is not _UNKNOWN:  # the common case, read without the lock (dict reads are atomic)
            return known
        with self._lock:
            if pid in self._names:
                return self._names[pid]
            if self._refused:
                return None
            event = self._pending.get(pid)
            owner = event is None
            if event is None:
                event = self._pending[pid] = threading.Event()
        if not owner:
            answered = event.wait(self._wait)
            with self._lock:
                if not answered and pid not in self._names:
                    # Do not wait again next tick; the owner's answer replaces this.
                    self._names[pid] = None
                    self.version += 1
                return self._names.get(pid)
        name: str | None = None
        try:
            name = text(self._nvml.nvmlSystemGetProcessName(pid))
        except self._nvml.NVMLError as error:
            if getattr(error, "value", None) in (
                self._nvml.NVML_ERROR_NO_PERMISSION,
                self._nvml.NVML_ERROR_NOT_SUPPORTED,
                self._nvml.NVML_ERROR_FUNCTION_NOT_FOUND,
            ):
                self._refused = True
        finally:
            with self._lock:
                self._names[pid] = name
                del self._pending[pid]
                self.version += 1
            event.set()
        return name

    def keep_only(self, pids: set[int]) -> None:
        """Forget PIDs no GPU runs any more (a new process may reuse the number)."""
        with self._lock:
            gone = [p for p in self._names if p not in pids]
            for pid in gone:
                del self._names[pid]
            if gone:
                self.version += 1
