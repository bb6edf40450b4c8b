"""The Python half of the C library ``fake_nvml_c/fake_nvml.c`` that nvtop loads as
``libnvidia-ml.so.1`` in the side-by-side benchmark.

Importing this module builds the run's ``FakeNvml`` from the environment, exactly as
``bench_tui``'s child does for gputop, nvitop and gpustat (``GPUTOP_BENCH_BOX``,
``GPUTOP_BENCH_PROCESSES``, ``GPUTOP_BENCH_PIDS``, ``GPUTOP_BENCH_TICKS``), so nvtop sees the
same GPUs with the same moving values. The C library calls :func:`call` with the function's
name and its arguments as integers (pointers as addresses); each is turned into the ctypes
object pynvml would have passed (``byref`` of a ``c_uint`` over the caller's memory, pynvml's
structs over the caller's buffers), and the fake's C function is called through its library,
so the fake counts the call and moves its ticks as it does under pynvml.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pynvml  # noqa: TID251 -- pynvml's structs are the fake's argument types

import bench_tui

NVML_ERROR_FUNCTION_NOT_FOUND = 13

FAKE = bench_tui.bench_fake()
_LIBRARY = FAKE.library


class ProcessInfoV1(ctypes.Structure):
    """``nvmlProcessInfo_t`` as nvtop 3.0 declares it (the v1 layout: no MIG instance ids,
    16 bytes an entry, where pynvml's v2/v3 are 24)."""

    _fields_ = (("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong))


_handles: dict[int, Any] = {}


def _handle(address: int) -> Any:
    """The device handle as pynvml holds it (a pointer: the fake keys its calls by its value)."""
    handle = _handles.get(address)
    if handle is None:
        handle = ctypes.cast(ctypes.c_void_p(address), pynvml.c_nvmlDevice_t)
        _handles[address] = handle
    return handle


def _uint(address: int) -> Any:
    return ctypes.byref(ctypes.c_uint.from_address(address))


def _struct(kind: type[ctypes.Structure], address: int) -> Any:
    return ctypes.byref(kind.from_address(address))


def _array(kind: type[ctypes.Structure], address: int, count: int) -> Any:
    """``count`` entries of ``kind`` at ``address``, or None for a null pointer (a size query)."""
    return None if not address else (kind * count).from_address(address)


def _c(name: str, *args: Any) -> int:
    try:
        function = getattr(_LIBRARY, name)
    except AttributeError:
        return NVML_ERROR_FUNCTION_NOT_FOUND
    return int(function(*args))


def _processes(name: str) -> Callable[[int, int, int], int]:
    def listed(device: int, count: int, infos: int) -> int:
        counter = ctypes.c_uint.from_address(count)
        array = _array(ProcessInfoV1, infos, counter.value)
        return _c(name, _handle(device), ctypes.byref(counter), array)

    return listed


def _process_utilization(device: int, samples: int, count: int, since: int) -> int:
    counter = ctypes.c_uint.from_address(count)
    array = _array(pynvml.c_nvmlProcessUtilizationSample_t, samples, counter.value)
    return _c(
        "nvmlDeviceGetProcessUtilization",
        _handle(device),
        array,
        ctypes.byref(counter),
        ctypes.c_ulonglong(since),
    )


def _init() -> int:
    return _c("nvmlInitWithFlags", ctypes.c_uint(0))


def _handle_by_index(index: int, out: int) -> int:
    return _c(
        "nvmlDeviceGetHandleByIndex_v2",
        ctypes.c_uint(index),
        ctypes.byref(pynvml.c_nvmlDevice_t.from_address(out)),
    )


def _pci_info(device: int, info: int) -> int:
    # The v1-v3 structs share their layout up to busId; the fake answers v3.
    return _c("nvmlDeviceGetPciInfo_v3", _handle(device), _struct(pynvml.nvmlPciInfo_t, info))


def _uint_out(name: str) -> Callable[[int, int], int]:
    return lambda device, out: _c(name, _handle(device), _uint(out))


def _enum_uint_out(name: str) -> Callable[[int, int, int], int]:
    return lambda device, which, out: _c(name, _handle(device), ctypes.c_uint(which), _uint(out))


def _engine(name: str) -> Callable[[int, int, int], int]:
    return lambda device, rate, period: _c(name, _handle(device), _uint(rate), _uint(period))


FUNCTIONS: dict[str, Callable[..., int]] = {
    "nvmlInit": _init,
    "nvmlInit_v2": _init,
    "nvmlShutdown": lambda: _c("nvmlShutdown"),
    "nvmlDeviceGetCount": lambda out: _c("nvmlDeviceGetCount_v2", _uint(out)),
    "nvmlDeviceGetCount_v2": lambda out: _c("nvmlDeviceGetCount_v2", _uint(out)),
    "nvmlDeviceGetHandleByIndex": _handle_by_index,
    "nvmlDeviceGetHandleByIndex_v2": _handle_by_index,
    "nvmlDeviceGetName": lambda device, name, length: _c(
        "nvmlDeviceGetName",
        _handle(device),
        (ctypes.c_char * length).from_address(name),
        ctypes.c_uint(length),
    ),
    "nvmlDeviceGetPciInfo": _pci_info,
    "nvmlDeviceGetPciInfo_v2": _pci_info,
    "nvmlDeviceGetPciInfo_v3": _pci_info,
    "nvmlDeviceGetUtilizationRates": lambda device, out: _c(
        "nvmlDeviceGetUtilizationRates", _handle(device), _struct(pynvml.c_nvmlUtilization_t, out)
    ),
    "nvmlDeviceGetMemoryInfo": lambda device, out: _c(
        "nvmlDeviceGetMemoryInfo", _handle(device), _struct(pynvml.c_nvmlMemory_t, out)
    ),
    "nvmlDeviceGetEncoderUtilization": _engine("nvmlDeviceGetEncoderUtilization"),
    "nvmlDeviceGetDecoderUtilization": _engine("nvmlDeviceGetDecoderUtilization"),
    "nvmlDeviceGetGraphicsRunningProcesses": _processes("nvmlDeviceGetGraphicsRunningProcesses"),
    "nvmlDeviceGetComputeRunningProcesses": _processes("nvmlDeviceGetComputeRunningProcesses"),
    "nvmlDeviceGetProcessUtilization": _process_utilization,
}
for _name in (
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetFanSpeed",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
):
    FUNCTIONS[_name] = _uint_out(_name)
for _name in (
    "nvmlDeviceGetTemperatureThreshold",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetPcieThroughput",
):
    FUNCTIONS[_name] = _enum_uint_out(_name)


def call(name: str, *args: int) -> int:
    """Run the fake's ``name`` on the C caller's arguments; the NVML return code."""
    return FUNCTIONS[name](*args)


def error_string(code: int) -> bytes:
    """What ``nvmlErrorString`` says for ``code``."""
    text = _LIBRARY.nvmlErrorString(ctypes.c_int(code))
    return text if isinstance(text, bytes) else str(text).encode()
