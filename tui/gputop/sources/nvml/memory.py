"""Frame-buffer and BAR1 memory of a GPU or MIG device, with the v2 -> v1 fallback."""

from __future__ import annotations

from gputop.model import Memory, Reason
from gputop.sources.nvml.api import Handle, MemoryInfoV2, NvmlApi
from gputop.sources.nvml.calls import CallFailed, DeviceCalls, read_number


def read_memory(calls: DeviceCalls, nvml: NvmlApi, handle: Handle, prefix: str) -> Memory:
    """``nvmlDeviceGetMemoryInfo_v2`` (which splits out reserved memory), else v1.

    With v1 (drivers before r510) ``used`` includes what the driver reserves and ``reserved``
    is unknown.
    """
    v2 = calls.attempt("memory_v2", nvml.nvmlDeviceGetMemoryInfo, handle, nvml.nvmlMemory_v2)
    if not isinstance(v2, CallFailed):
        return calls.decode("memory_v2", v2, _memory_v2)
    reserved = (f"{prefix}.reserved",)
    basic = (f"{prefix}.total", f"{prefix}.used", f"{prefix}.free")
    if v2.reason is not Reason.NOT_SUPPORTED:
        calls.note((*basic, *reserved), v2.reason)
        return Memory()
    v1 = calls.call("memory_v1", basic, nvml.nvmlDeviceGetMemoryInfo, handle)
    calls.note(reserved, Reason.NOT_SUPPORTED)
    if v1 is None:
        return Memory()
    return Memory(total=v1.total, used=v1.used, free=v1.free)


def _memory_v2(v2: MemoryInfoV2) -> Memory:
    return Memory(
        total=read_number(v2, "total"),
        used=read_number(v2, "used"),
        free=read_number(v2, "free"),
        reserved=read_number(v2, "reserved"),
    )


def read_bar1(calls: DeviceCalls, nvml: NvmlApi, handle: Handle, prefix: str) -> Memory:
    """The BAR1 aperture (CPU-mapped GPU memory).

    A slow value (see :mod:`gputop.sources.nvml.calls`): its size never changes and its use
    moves only when a program maps or unmaps memory for the CPU, so it is re-read on refresh
    ticks only.
    """
    paths = (f"{prefix}.total", f"{prefix}.used", f"{prefix}.free")
    bar1 = calls.call("bar1", paths, nvml.nvmlDeviceGetBAR1MemoryInfo, handle, slow=True)
    if bar1 is None:
        return Memory()
    return Memory(total=bar1.bar1Total, used=bar1.bar1Used, free=bar1.bar1Free)
