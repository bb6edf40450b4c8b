"""A GPU's processes from NVML: three lists, versioned entry points, one row per PID.

NVML lists compute, graphics and MPS-compute processes separately, each through ``_v3``, ``_v2``
or the original unversioned entry point depending on the driver; pynvml no longer wraps the
unversioned (v1) ones, so those are called through ctypes here. A PID in both the compute and
graphics lists is one ``C+G`` process. Per-process SM utilization comes from
``nvmlDeviceGetProcessUtilization``, asked for samples newer than the last tick's.

A row that says exactly what it said last tick is the same :class:`ProcessSample` object as last
tick (see :class:`ProcessRows`): most rows do not change from one second to the next, and what
consumes them can then tell so by identity.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from gputop.model import ProcessSample, Reason
from gputop.sources.nvml_api import Handle, NvmlApi
from gputop.sources.nvml_calls import CallFailed, DeviceCalls
from gputop.sources.nvml_codes import NOT_A_MIG_ID, instance_id, text

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


def _v1_list(nvml: NvmlApi, symbol: str, handle: Handle) -> list[RawProcess]:
    # NVML's two-step protocol: ask for the count, then fill an array with headroom for
    # processes that started in between.
    fn = nvml._nvmlGetFunctionPointer(symbol)
    count = ctypes.c_uint(0)
    ret = fn(handle, ctypes.byref(count), None)
    if ret == nvml.NVML_SUCCESS:
        return []
    if ret != nvml.NVML_ERROR_INSUFFICIENT_SIZE:
        raise nvml.NVMLError(ret)
    count.value = count.value * 2 + 5
    array = (_ProcessInfoV1 * count.value)()
    ret = fn(handle, ctypes.byref(count), array)
    if ret != nvml.NVML_SUCCESS:
        raise nvml.NVMLError(ret)
    return [
        RawProcess(
            pid=entry.pid,
            memory=None if entry.usedGpuMemory == _NOT_AVAILABLE_U64 else entry.usedGpuMemory,
            gpu_instance_id=None,
            compute_instance_id=None,
        )
        for entry in array[: count.value]
    ]


def _versioned_list(fn: Callable[[Handle], list[object]], handle: Handle) -> list[RawProcess]:
    return [
        RawProcess(
            int(getattr(info, "pid", 0)),
            getattr(info, "usedGpuMemory", None),
            instance_id(getattr(info, "gpuInstanceId", NOT_A_MIG_ID)),
            instance_id(getattr(info, "computeInstanceId", NOT_A_MIG_ID)),
        )
        for info in fn(handle)
    ]


def _one_list(
    calls: DeviceCalls, nvml: NvmlApi, handle: Handle, spec: _ProcessList
) -> list[RawProcess] | CallFailed:
    """The newest entry point the driver has: _v3, then _v2, then v1."""
    for name in spec.versioned:
        fn = getattr(nvml, name, None)
        result = calls.attempt(
            f"procs:{name}", None if fn is None else partial(_versioned_list, fn), handle
        )
        if not isinstance(result, CallFailed):
            return result
        if result.reason is not Reason.NOT_SUPPORTED:
            return result
    v1 = partial(_v1_list, nvml, spec.v1_symbol)
    return calls.attempt(f"procs:{spec.v1_symbol}", v1, handle)


@dataclass(slots=True)
class RunningProcess:
    """One PID on a device, its lists merged."""

    pid: int
    compute: bool
    graphics: bool
    memory: int | None
    gpu_instance_id: int | None
    compute_instance_id: int | None


def running_processes(
    calls: DeviceCalls, nvml: NvmlApi, handle: Handle
) -> list[RunningProcess] | None:
    """Every process on the device, one entry per PID (compute and graphics merged).

    Returns None (with the reason noted on ``processes``) when no list could be read.
    """
    merged: dict[int, RunningProcess] = {}
    first_failure: CallFailed | None = None
    any_read = False
    for spec in _LISTS:
        result = _one_list(calls, nvml, handle, spec)
        if isinstance(result, CallFailed):
            first_failure = first_failure or result
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
    if not any_read:
        assert first_failure is not None
        calls.note(("processes",), first_failure.reason)
        return None
    return list(merged.values())


_Row = tuple[int, str, str | None, int | None, int | None, int | None, float | None]
"""What a row says: pid, type, name, memory, GPU and compute instance, SM %."""


class ProcessRows:
    """The model's processes of one device, reusing last tick's object for an unchanged row.

    Holds only the rows of the last tick, so a process that leaves is let go of at once.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[_Row, ProcessSample] = {}

    def __call__(
        self,
        running: list[RunningProcess],
        names: Callable[[int], str | None],
        sm_percent: dict[int, float],
    ) -> tuple[ProcessSample, ...]:
        """Type ``C``, ``G`` or ``C+G``, with name and SM utilization, one row per entry."""
        last = self._last
        rows: dict[_Row, ProcessSample] = {}
        out: list[ProcessSample] = []
        for entry in running:
            pid = entry.pid
            key = (
                pid,
                "C+G" if entry.compute and entry.graphics else "C" if entry.compute else "G",
                names(pid),
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
                    name=key[2],
                    memory_used=entry.memory,
                    gpu_instance_id=entry.gpu_instance_id,
                    compute_instance_id=entry.compute_instance_id,
                    sm_utilization=key[6],
                )
            rows[key] = row
            out.append(row)
        self._last = rows
        return tuple(out)


def sm_utilization(
    calls: DeviceCalls, nvml: NvmlApi, handle: Handle, since: int
) -> tuple[dict[int, float], int]:
    """Per-PID SM utilization from samples newer than ``since`` (microseconds).

    Returns the latest sample's SM percent per PID and the timestamp to ask from next tick.
    NVML answers NotFound when no process ran since ``since``: that is no samples, not an error.
    """
    result = calls.attempt(
        "process_utilization", nvml.nvmlDeviceGetProcessUtilization, handle, since
    )
    if isinstance(result, CallFailed):
        if result.code != nvml.NVML_ERROR_NOT_FOUND:
            calls.note(("processes.sm_utilization",), result.reason)
        return {}, since
    latest: dict[int, tuple[int, float]] = {}
    newest = since
    for sample in result:
        stamp = int(sample.timeStamp)
        newest = max(newest, stamp)
        seen = latest.get(sample.pid)
        if seen is None or stamp >= seen[0]:
            latest[sample.pid] = (stamp, float(sample.smUtil))
    return {pid: value for pid, (_, value) in latest.items()}, newest


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

    def __call__(self, pid: int) -> str | None:
        """The process's name, or None when NVML will not (or not yet) say."""
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
                if not answered:
                    # Do not wait again next tick; the owner's answer replaces this.
                    self._names.setdefault(pid, None)
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
            event.set()
        return name

    def keep_only(self, pids: set[int]) -> None:
        """Forget PIDs no GPU runs any more (a new process may reuse the number)."""
        with self._lock:
            for pid in [p for p in self._names if p not in pids]:
                del self._names[pid]
