"""MIG devices of one GPU: identity, memory, profile name and (Hopper+) activity through GPM.

Under MIG, NVML reports no utilization for the GPU or its instances; such values are None with
``Reason.UNDER_MIG``, never 0. On GPUs that support GPU Performance Monitoring, each GPU
instance's graphics activity and DRAM bandwidth are measured between two GPM samples taken a
tick apart.

The profile name (``3g.40gb``) comes from NVML where it can: the GPU instance's profile id, looked
up in the GPU's profile table. Those calls need privileges on most systems; without them the
name is worked out from the SM count and memory (``profile_derived=True``), exactly as the smi
XML reader does.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from gputop.model import MigDeviceSample, ProcessSample, Reason, Utilization
from gputop.model.mig_profiles import derive_profile
from gputop.sources.nvml_api import DeviceAttributes, GpmMetricsGet, Handle, NvmlApi
from gputop.sources.nvml_calls import CallFailed, CallMemo, DeviceCalls, ErrorCodes
from gputop.sources.nvml_codes import text
from gputop.sources.nvml_memory import read_bar1, read_memory

_MIG_PREFIX = "MIG "
_ACTIVITY_PATHS = ("utilization.gpu", "utilization.memory")
_ENGINE_PATHS = ("utilization.encoder", "utilization.decoder")


@dataclass(slots=True)
class _GpmPair:
    """Two GPM sample buffers for one GPU instance: each tick overwrites the older one."""

    older: Handle
    newer: Handle
    request: GpmMetricsGet
    primed: bool = False


@dataclass(slots=True)
class _MigMemo:
    uuid: str | None
    memo: CallMemo = field(default_factory=CallMemo)


@dataclass(slots=True)
class MigState:
    """What one GPU's MIG sampling keeps across ticks."""

    devices: dict[int, _MigMemo] = field(default_factory=dict)
    """Per MIG device handle address."""
    profile_names: dict[int, str] | None = None
    """GPU-instance profile id -> name, once read."""
    instance_profiles: dict[int, str | None] = field(default_factory=dict)
    """GPU instance id -> profile name, for the current layout."""
    gpm: dict[int, _GpmPair] = field(default_factory=dict)
    layout: tuple[tuple[int, str | None], ...] = ()

    def gpm_samples(self) -> list[Handle]:
        """Every GPM sample buffer allocated, for freeing."""
        return [h for pair in self.gpm.values() for h in (pair.older, pair.newer)]


@dataclass(slots=True)
class _Activity:
    gpu: float | None = None
    memory: float | None = None
    missing: list[tuple[str, Reason]] = field(default_factory=list)


def sample_mig_devices(
    nvml: NvmlApi,
    codes: ErrorCodes,
    parent: DeviceCalls,
    handle: Handle,
    state: MigState,
    gpu_name: str | None,
    gpu_memory_total: int | None,
    processes: tuple[ProcessSample, ...],
) -> tuple[MigDeviceSample, ...]:
    """Every MIG device of the GPU at ``handle`` (which is in MIG mode)."""
    count = parent.call(
        "mig_max_count",
        ("mig_devices",),
        nvml.nvmlDeviceGetMaxMigDeviceCount,
        handle,
        static=True,
    )
    if not count:
        return ()
    gpm = _gpm_supported(nvml, parent, handle)
    handles: list[tuple[int, Handle]] = []
    for index in range(count):
        found = parent.attempt(
            f"mig_handle:{index}", nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, index
        )
        if isinstance(found, CallFailed):
            if found.code != nvml.NVML_ERROR_NOT_FOUND:
                parent.note((f"mig_devices.{index}",), found.reason)
            continue
        handles.append((index, found))
    # Identify every instance first: a changed layout invalidates what was learnt per instance.
    found_devices: list[tuple[int, Handle, DeviceCalls, str | None]] = []
    addresses: list[int] = []
    for index, mig_handle in handles:
        address = ctypes.cast(mig_handle, ctypes.c_void_p).value or 0
        known = state.devices.get(address)
        if known is None:
            known = state.devices[address] = _MigMemo(uuid=None)
        calls = DeviceCalls(codes, known.memo)
        uuid = text(calls.call("uuid", ("uuid",), nvml.nvmlDeviceGetUUID, mig_handle))
        if uuid != known.uuid:
            # Another instance now sits behind this handle: forget the old one's answers.
            if known.uuid is not None:
                known.memo.clear()
            known.uuid = uuid
        found_devices.append((index, mig_handle, calls, uuid))
        addresses.append(address)
    layout = tuple(zip(addresses, (uuid for *_, uuid in found_devices), strict=True))
    if layout != state.layout:
        state.layout = layout
        state.instance_profiles.clear()
        for pair in state.gpm.values():
            pair.primed = False  # a sample of a destroyed instance is no baseline
        live = {address for address, _ in layout}
        for address in [a for a in state.devices if a not in live]:
            del state.devices[address]

    activity: dict[int, _Activity] = {}
    devices: list[MigDeviceSample] = []
    for index, mig_handle, calls, uuid in found_devices:
        gi = calls.call(
            "gpu_instance_id",
            ("gpu_instance_id",),
            nvml.nvmlDeviceGetGpuInstanceId,
            mig_handle,
            static=True,
        )
        ci = calls.call(
            "compute_instance_id",
            ("compute_instance_id",),
            nvml.nvmlDeviceGetComputeInstanceId,
            mig_handle,
            static=True,
        )
        attributes = calls.call(
            "attributes",
            ("sm_count",),
            nvml.nvmlDeviceGetAttributes_v2,
            mig_handle,
            static=True,
        )
        memory = read_memory(calls, nvml, mig_handle, "memory")
        bar1 = read_bar1(calls, nvml, mig_handle, "bar1")
        sm_count = None if attributes is None else int(attributes.multiprocessorCount)
        profile = _reported_profile(nvml, parent, handle, state, gi, attributes)
        derived = False
        if profile is None:
            profile = derive_profile(gpu_name, gpu_memory_total, sm_count, memory.total)
            derived = profile is not None
        if gi is not None and gpm:
            if gi not in activity:
                activity[gi] = _gpm_activity(nvml, parent, handle, state, gi)
            used = activity[gi]
            calls.missing.extend(used.missing)
            utilization = Utilization(gpu=used.gpu, memory=used.memory)
        else:
            calls.note(_ACTIVITY_PATHS, Reason.UNDER_MIG)
            utilization = Utilization()
        calls.note(_ENGINE_PATHS, Reason.UNDER_MIG)
        devices.append(
            MigDeviceSample(
                index=index,
                gpu_instance_id=gi,
                compute_instance_id=ci,
                profile=profile,
                profile_derived=derived,
                sm_count=sm_count,
                memory=memory,
                bar1=bar1,
                uuid=uuid,
                utilization=utilization,
                processes=tuple(
                    p
                    for p in processes
                    if gi is not None
                    and p.gpu_instance_id == gi
                    and (p.compute_instance_id is None or p.compute_instance_id == ci)
                ),
                unavailable=calls.unavailable(),
            )
        )
    return tuple(devices)


def _reported_profile(
    nvml: NvmlApi,
    parent: DeviceCalls,
    handle: Handle,
    state: MigState,
    gi: int | None,
    attributes: DeviceAttributes | None,
) -> str | None:
    """The profile name NVML reports for this instance, or None where it will not say."""
    if gi is None:
        return None
    if gi not in state.instance_profiles:
        state.instance_profiles[gi] = _instance_profile(nvml, parent, handle, state, gi)
    name = state.instance_profiles[gi]
    if name is None or attributes is None:
        return name
    compute = int(attributes.computeInstanceSliceCount)
    if 0 < compute < int(attributes.gpuInstanceSliceCount):
        # A compute instance smaller than its GPU instance: nvidia-smi's "1c.3g.40gb".
        return f"{compute}c.{name}"
    return name


def _instance_profile(
    nvml: NvmlApi, parent: DeviceCalls, handle: Handle, state: MigState, gi: int
) -> str | None:
    instance = parent.attempt(f"gpu_instance:{gi}", nvml.nvmlDeviceGetGpuInstanceById, handle, gi)
    if isinstance(instance, CallFailed):
        return None
    info = parent.attempt(f"gpu_instance_info:{gi}", nvml.nvmlGpuInstanceGetInfo, instance)
    if isinstance(info, CallFailed):
        return None
    if state.profile_names is None:
        state.profile_names = _profile_names(nvml, parent, handle)
    return state.profile_names.get(int(info.profileId))


def _profile_names(nvml: NvmlApi, parent: DeviceCalls, handle: Handle) -> dict[int, str]:
    names: dict[int, str] = {}
    for profile in range(nvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        info = parent.attempt(
            f"gpu_instance_profile:{profile}",
            nvml.nvmlDeviceGetGpuInstanceProfileInfo,
            handle,
            profile,
        )
        if isinstance(info, CallFailed):
            continue
        name = text(getattr(info, "name", None))
        if name:
            names[int(info.id)] = name.removeprefix(_MIG_PREFIX).strip()
    return names


def _gpm_supported(nvml: NvmlApi, parent: DeviceCalls, handle: Handle) -> bool:
    query = getattr(nvml, "nvmlGpmQueryDeviceSupport", None)
    support = parent.attempt("gpm_support", query, handle, static=True)
    return not isinstance(support, CallFailed) and bool(support.isSupportedDevice)


def _gpm_activity(
    nvml: NvmlApi, parent: DeviceCalls, handle: Handle, state: MigState, gi: int
) -> _Activity:
    """Graphics activity and DRAM bandwidth of GPU instance ``gi`` since the last tick."""
    pair = state.gpm.get(gi)
    if pair is None:
        first = parent.attempt(f"gpm_alloc:{gi}:0", nvml.nvmlGpmSampleAlloc)
        second = parent.attempt(f"gpm_alloc:{gi}:1", nvml.nvmlGpmSampleAlloc)
        for buffer in (first, second):
            if isinstance(buffer, CallFailed):
                return _Activity(missing=[(p, buffer.reason) for p in _ACTIVITY_PATHS])
        pair = state.gpm[gi] = _GpmPair(first, second, nvml.c_nvmlGpmMetricsGet_t())
    taken = parent.attempt(f"gpm_sample:{gi}", nvml.nvmlGpmMigSampleGet, handle, gi, pair.older)
    if isinstance(taken, CallFailed):
        return _Activity(missing=[(p, taken.reason) for p in _ACTIVITY_PATHS])
    pair.older, pair.newer = pair.newer, pair.older
    if not pair.primed:
        # One sample is not a rate; the next tick has two.
        pair.primed = True
        return _Activity(missing=[(p, Reason.NOT_AVAILABLE) for p in _ACTIVITY_PATHS])
    request = pair.request
    request.version = nvml.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = 2
    request.sample1 = pair.older
    request.sample2 = pair.newer
    metric_ids = (nvml.NVML_GPM_METRIC_GRAPHICS_UTIL, nvml.NVML_GPM_METRIC_DRAM_BW_UTIL)
    for slot, metric_id in enumerate(metric_ids):
        request.metrics[slot].metricId = metric_id
        request.metrics[slot].nvmlReturn = 0
        request.metrics[slot].value = 0.0
    result = parent.attempt(f"gpm_metrics:{gi}", nvml.nvmlGpmMetricsGet, request)
    if isinstance(result, CallFailed):
        return _Activity(missing=[(p, result.reason) for p in _ACTIVITY_PATHS])
    activity = _Activity()
    values: list[float | None] = []
    for slot, path in enumerate(_ACTIVITY_PATHS):
        metric = result.metrics[slot]
        if metric.nvmlReturn != nvml.NVML_SUCCESS:
            activity.missing.append((path, Reason.NOT_SUPPORTED))
            values.append(None)
        else:
            values.append(float(metric.value))
    activity.gpu, activity.memory = values
    return activity
