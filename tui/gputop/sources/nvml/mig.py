"""MIG devices of one GPU: identity, memory, profile name and (Hopper+) activity through GPM.

Under MIG, NVML reports no utilization for the GPU or its instances; such values are None with
``Reason.UNDER_MIG``, never 0. On GPUs that support GPU Performance Monitoring, each GPU
instance's graphics activity and DRAM bandwidth are measured between two GPM samples taken a
tick apart.

The profile name (``3g.40gb``) comes from NVML where it can: the GPU instance's profile id, looked
up in the GPU's profile table. Those calls need privileges on most systems; without them the
name is read from the MIG device's name, which the driver ends in it (``… MIG 3g.20gb``, as
nvitop shows it; ``profile_from_name=True``), and failing that worked out from the SM count and
memory, exactly as the smi XML reader does (both ``profile_derived=True``).

The layout (which MIG devices exist: their handles and UUIDs) is enumerated on the GPU's
refresh ticks (see :data:`gputop.sources.nvml.device.SLOW_REFRESH`) and reused in between, when
each tick reads only what moves: memory and GPM activity. The cached layout is dropped, and
the devices enumerated again in the same tick, as soon as anything says it changed: a call on a
cached handle fails with a code that means "no such device" (INVALID_ARGUMENT, NOT_FOUND), a
device's memory size changes (another instance behind the handle), or a process runs on an
instance the layout does not have; a GPM sample that finds no instance has the next tick
enumerate. An instance created with no process on it shows up at the next refresh.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from gputop.model import Memory, MigDeviceSample, ProcessSample, Reason, Unavailable, Utilization
from gputop.model.mig_profiles import derive_profile, profile_from_name
from gputop.sources.nvml.api import DeviceAttributes, GpmMetric, GpmMetricsGet, Handle, NvmlApi
from gputop.sources.nvml.calls import (
    CallFailed,
    CallMemo,
    DeviceCalls,
    ErrorCodes,
    read_number,
    same_objects,
)
from gputop.sources.nvml.codes import text
from gputop.sources.nvml.memory import read_bar1, read_memory

_MIG_PREFIX = "MIG "
_ACTIVITY_PATHS = ("utilization.gpu", "utilization.memory")
_ENGINE_PATHS = ("utilization.encoder", "utilization.decoder")
_ACTIVITY_UNDER_MIG = tuple((path, Reason.UNDER_MIG) for path in _ACTIVITY_PATHS)
_ENGINE_UNDER_MIG = tuple((path, Reason.UNDER_MIG) for path in _ENGINE_PATHS)


@dataclass(slots=True)
class _GpmPair:
    """Two GPM sample buffers for one GPU instance: each tick overwrites the older one."""

    buffers: tuple[Handle, Handle]
    sample_key: str
    metrics_key: str
    older: int = 0
    """Which buffer holds the older sample (the one the next sample overwrites)."""
    primed: bool = False
    taken_at: float = 0.0
    """When the newer sample was taken (the sampler's clock)."""
    last: tuple[Utilization, Unavailable] | None = None
    """The activity last measured, held until the window ends."""

    def start_over(self) -> None:
        """Not read for a while: the next sample starts a new rate."""
        self.primed = False
        self.last = None


@dataclass(frozen=True, slots=True)
class _DeviceSlow:
    """What a MIG device reports that does not move: read when the layout is (re)read."""

    uuid: str | None
    gpu_instance_id: int | None
    compute_instance_id: int | None
    sm_count: int | None
    bar1: Memory
    profile: str | None
    profile_derived: bool
    profile_from_name: bool
    notes: Unavailable
    """What these reads could not get, noted again on every tick the part is reused."""


@dataclass(slots=True)
class _MigMemo:
    uuid: str | None
    memo: CallMemo = field(default_factory=CallMemo)
    memory_total: int | None = None
    """The size last read: a different one means another instance sits behind the handle."""
    slow: _DeviceSlow | None = None
    """None: read it (again) on the next tick."""


@dataclass(frozen=True, slots=True)
class _Found:
    """A MIG device found by enumeration: its index on the GPU and its handle."""

    index: int
    handle: Handle
    address: int


class _InstanceRows:
    """A GPU's process rows split by MIG instance, kept while the GPU's rows are the same
    tuple (nothing changed, see ``nvml_processes.ProcessRows``). A device whose rows are the
    very rows it listed last tick lists last tick's tuple."""

    __slots__ = ("_before", "_by_instance", "_split", "processes")

    def __init__(
        self, processes: tuple[ProcessSample, ...], before: _InstanceRows | None = None
    ) -> None:
        self.processes = processes
        self._before = {} if before is None else before._split
        self._by_instance: dict[int, list[ProcessSample]] = {}
        for process in processes:
            if process.gpu_instance_id is not None:
                self._by_instance.setdefault(process.gpu_instance_id, []).append(process)
        self._split: dict[tuple[int, int | None], tuple[ProcessSample, ...]] = {}

    def of(self, gi: int | None, ci: int | None) -> tuple[ProcessSample, ...]:
        """The rows on GPU instance ``gi``, compute instance ``ci``."""
        if gi is None:
            return ()
        mine = self._split.get((gi, ci))
        if mine is None:
            mine = tuple(
                p
                for p in self._by_instance.get(gi, ())
                if p.compute_instance_id is None or p.compute_instance_id == ci
            )
            old = self._before.get((gi, ci))
            if old is not None and same_objects(mine, old):
                mine = old
            self._split[gi, ci] = mine
        return mine


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
    request: _GpmRequest | None = None
    """The one metrics request of this GPU's instances (made on first need)."""
    layout: tuple[tuple[int, str | None], ...] = ()
    found: tuple[_Found, ...] | None = None
    """The devices of the last enumeration; None: enumerate on the next tick."""
    found_notes: tuple[tuple[str, Reason], ...] = ()
    """What that enumeration could not read (memoized refusals), repeated on reuse."""
    instances: frozenset[tuple[int, int | None]] = frozenset()
    """(GPU instance id, compute instance id) of every device sampled last tick."""
    gpu_instances: frozenset[int] = frozenset()
    rows: _InstanceRows | None = None
    """Last tick's process rows by instance."""
    placed: tuple[ProcessSample, ...] | None = None
    """Process rows found to run on known instances only (same tuple: same answer)."""

    def gpm_samples(self) -> list[Handle]:
        """Every GPM sample buffer allocated, for freeing."""
        return [h for pair in self.gpm.values() for h in pair.buffers]


@dataclass(frozen=True, slots=True)
class _GpmRequest:
    """A metrics request (graphics activity, DRAM bandwidth), shared by a GPU's instances.

    NVML's request struct holds room for every GPM metric (about 9 KiB); one per instance
    and direction was 2 MiB on 8 GPUs of 7 instances. A GPU's instances are sampled one after
    another on one thread (``MigState`` is used by one thread at a time), so each call sets the
    two samples it compares and reads the answer before the next instance's call.
    """

    request: GpmMetricsGet
    slots: tuple[GpmMetric, GpmMetric]
    """Its two metric entries (views into it, which NVML fills), looked up once."""


_Activity = tuple[Utilization, Unavailable]
"""A GPU instance's activity, and what of it could not be read."""


def _no_activity(reason: Reason) -> _Activity:
    return Utilization(), tuple((path, reason) for path in _ACTIVITY_PATHS)


def sample_mig_devices(
    nvml: NvmlApi,
    codes: ErrorCodes,
    parent: DeviceCalls,
    handle: Handle,
    state: MigState,
    gpu_name: str | None,
    gpu_memory_total: int | None,
    processes: tuple[ProcessSample, ...],
    *,
    activity: bool = True,
    now: float = 0.0,
    window: float = 0.0,
) -> tuple[MigDeviceSample, ...]:
    """Every MIG device of the GPU at ``handle`` (which is in MIG mode).

    Args:
        activity: read each instance's activity through GPM (1-2 ms of CPU an instance on an
            H200), which is done only while something shows or writes it.
        now: the sampler's clock, for ``window``.
        window: seconds between GPM samples once a first rate is in: the activity is the
            mean over that window, held between (0: every tick, for a view that shows it
            live; a sink scraped every 15 s needs it every few seconds only).
    """
    count = parent.call(
        "mig_max_count",
        ("mig_devices",),
        nvml.nvmlDeviceGetMaxMigDeviceCount,
        handle,
        static=True,
    )
    if not count:
        return ()
    supported = _gpm_supported(nvml, parent, handle)
    gpm = activity and supported
    if not gpm:
        for pair in state.gpm.values():
            # Read again later, a rate starts over: not an average since it was last shown.
            pair.start_over()
    measured: dict[int, tuple[DeviceCalls, Memory]] = {}
    found = state.found
    if found is not None and not parent.refresh and not _strangers(processes, state):
        if not _measure_cached(nvml, codes, found, state, measured):
            found = None
    else:
        found = None
    enumerating = found is None
    identified: list[tuple[_Found, _MigMemo, DeviceCalls | None]]
    if found is None:
        found = _enumerate(nvml, parent, handle, count, state)
        identified = _identify_all(nvml, codes, found, state)
    else:
        parent.missing.extend(state.found_notes)
        identified = [(device, state.devices[device.address], None) for device in found]

    rows = state.rows
    if rows is None or rows.processes is not processes:
        rows = state.rows = _InstanceRows(processes, rows)
    measures: dict[int, _Activity] = {}
    devices: list[MigDeviceSample] = []
    reread = enumerating
    for device, known, block in identified:
        early = measured.get(device.address)
        if early is not None:
            calls, memory = early
        else:
            calls = DeviceCalls(codes, known.memo, refresh=False)
            memory = read_memory(calls, nvml, device.handle, "memory")
        known.memory_total = memory.total
        slow = known.slow
        if slow is None:
            reread = True
            if block is None:
                # Not an enumerating tick: the UUID comes from the cache unless it failed.
                block = DeviceCalls(codes, known.memo, refresh=False)
                _identify(nvml, block, known, device)
            slow = _read_device_slow(
                nvml,
                parent,
                handle,
                state,
                known,
                block,
                device,
                memory,
                gpu_name,
                gpu_memory_total,
            )
        gi = slow.gpu_instance_id
        ci = slow.compute_instance_id
        if gi is not None and gpm:
            if gi not in measures:
                measures[gi] = _gpm_activity(nvml, codes, parent, handle, state, gi, now, window)
            utilization, missing = measures[gi]
            calls.missing.extend(missing)
        elif supported and gi is not None:
            utilization = Utilization()  # not read: nothing of this run shows or writes it
        else:
            calls.missing.extend(_ACTIVITY_UNDER_MIG)
            utilization = Utilization()
        calls.missing.extend(_ENGINE_UNDER_MIG)
        mine = rows.of(gi, ci)
        devices.append(
            MigDeviceSample(
                index=device.index,
                gpu_instance_id=gi,
                compute_instance_id=ci,
                profile=slow.profile,
                profile_derived=slow.profile_derived,
                profile_from_name=slow.profile_from_name,
                sm_count=slow.sm_count,
                memory=memory,
                bar1=slow.bar1,
                uuid=slow.uuid,
                utilization=utilization,
                processes=mine,
                unavailable=slow.notes + tuple(calls.missing),
            )
        )
    if reread:
        instances = {
            (d.gpu_instance_id, d.compute_instance_id)
            for d in devices
            if d.gpu_instance_id is not None
        }
        state.instances = frozenset(instances)
        state.gpu_instances = frozenset(gi for gi, _ in instances)
        state.placed = None
    return tuple(devices)


def _identify(nvml: NvmlApi, block: DeviceCalls, known: _MigMemo, device: _Found) -> None:
    """Read the UUID behind a handle; another one than before means another instance."""
    uuid = text(block.call("uuid", ("uuid",), nvml.nvmlDeviceGetUUID, device.handle, slow=True))
    if uuid != known.uuid:
        # Another instance now sits behind this handle: forget the old one's answers.
        if known.uuid is not None:
            known.memo.clear(keep="uuid")
        known.uuid = uuid


def _read_device_slow(
    nvml: NvmlApi,
    parent: DeviceCalls,
    handle: Handle,
    state: MigState,
    known: _MigMemo,
    block: DeviceCalls,
    device: _Found,
    memory: Memory,
    gpu_name: str | None,
    gpu_memory_total: int | None,
) -> _DeviceSlow:
    """Identity, SM count, profile and BAR1 of one MIG device; kept while the layout holds,
    unless a read failed in a way that may pass (then the next tick reads again)."""
    mig_handle = device.handle
    gi = block.call(
        "gpu_instance_id",
        ("gpu_instance_id",),
        nvml.nvmlDeviceGetGpuInstanceId,
        mig_handle,
        static=True,
    )
    ci = block.call(
        "compute_instance_id",
        ("compute_instance_id",),
        nvml.nvmlDeviceGetComputeInstanceId,
        mig_handle,
        static=True,
    )
    attributes = block.call(
        "attributes",
        ("sm_count",),
        nvml.nvmlDeviceGetAttributes_v2,
        mig_handle,
        static=True,
    )
    bar1 = read_bar1(block, nvml, mig_handle, "bar1")
    sm_count = None if attributes is None else int(attributes.multiprocessorCount)
    profile = _reported_profile(nvml, parent, handle, state, gi, attributes)
    derived = from_name = False
    if profile is None:
        # The name needs no privileges and names compute-instance profiles ("1c.3g.40gb")
        # too, which SM count and memory cannot tell apart.
        name = block.call("name", (), nvml.nvmlDeviceGetName, mig_handle, static=True)
        profile = profile_from_name(text(name))
        from_name = profile is not None
        if profile is None:
            profile = derive_profile(gpu_name, gpu_memory_total, sm_count, memory.total)
        derived = profile is not None
    part = _DeviceSlow(
        uuid=known.uuid,
        gpu_instance_id=gi,
        compute_instance_id=ci,
        sm_count=sm_count,
        bar1=bar1,
        profile=profile,
        profile_derived=derived,
        profile_from_name=from_name,
        notes=block.unavailable(),
    )
    transient = any(reason is Reason.ERROR for _, reason in part.notes)
    known.slow = None if transient else part
    return part


def _measure_cached(
    nvml: NvmlApi,
    codes: ErrorCodes,
    found: tuple[_Found, ...],
    state: MigState,
    measured: dict[int, tuple[DeviceCalls, Memory]],
) -> bool:
    """Read each cached device's memory into ``measured``; False as soon as one says the
    layout changed (its handle is gone, or its size changed), which the caller then re-reads.

    What was read is kept (by handle address) for the re-read, so no call is made twice.
    """
    for device in found:
        known = state.devices[device.address]
        calls = DeviceCalls(codes, known.memo, refresh=False)
        memory = read_memory(calls, nvml, device.handle, "memory")
        measured[device.address] = (calls, memory)
        if calls.gone or memory.total != known.memory_total:
            return False
    return True


def _identify_all(
    nvml: NvmlApi, codes: ErrorCodes, found: tuple[_Found, ...], state: MigState
) -> list[tuple[_Found, _MigMemo, DeviceCalls | None]]:
    """Read the UUID behind every handle just enumerated; forget what a new layout voids."""
    identified: list[tuple[_Found, _MigMemo, DeviceCalls | None]] = []
    for device in found:
        known = state.devices.get(device.address)
        if known is None:
            known = state.devices[device.address] = _MigMemo(uuid=None)
        block = DeviceCalls(codes, known.memo, refresh=True)
        _identify(nvml, block, known, device)
        known.slow = None
        identified.append((device, known, block))
    layout = tuple((device.address, known.uuid) for device, known, _ in identified)
    if layout != state.layout:
        state.layout = layout
        state.instance_profiles.clear()
        for pair in state.gpm.values():
            pair.primed = False  # a sample of a destroyed instance is no baseline
        live = {address for address, _ in layout}
        for address in [a for a in state.devices if a not in live]:
            del state.devices[address]
    return identified


def _enumerate(
    nvml: NvmlApi, parent: DeviceCalls, handle: Handle, count: int, state: MigState
) -> tuple[_Found, ...]:
    """Every MIG device handle of the GPU now; the layout is cached unless a call failed."""
    found: list[_Found] = []
    notes: list[tuple[str, Reason]] = []
    transient = False
    for index in range(count):
        got = parent.attempt(
            f"mig_handle:{index}", nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, index
        )
        if isinstance(got, CallFailed):
            if got.code != nvml.NVML_ERROR_NOT_FOUND:
                notes.append((f"mig_devices.{index}", got.reason))
                # An error that may pass: enumerate again next tick rather than cache a gap.
                transient = transient or got.reason is Reason.ERROR
            continue
        found.append(_Found(index, got, ctypes.cast(got, ctypes.c_void_p).value or 0))
    parent.missing.extend(notes)
    result = tuple(found)
    state.found = None if transient else result
    state.found_notes = tuple(notes)
    return result


def _strangers(processes: tuple[ProcessSample, ...], state: MigState) -> bool:
    """True when a process runs on a MIG instance the cached layout does not have."""
    if processes is state.placed:
        return False
    instances = state.instances
    gis = state.gpu_instances
    for process in processes:
        gi = process.gpu_instance_id
        if gi is None:
            continue
        ci = process.compute_instance_id
        if (gi not in gis) if ci is None else ((gi, ci) not in instances):
            return True
    state.placed = processes
    return False


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
    nvml: NvmlApi,
    codes: ErrorCodes,
    parent: DeviceCalls,
    handle: Handle,
    state: MigState,
    gi: int,
    now: float,
    window: float,
) -> _Activity:
    """Graphics activity and DRAM bandwidth of GPU instance ``gi`` since its last sample:
    the last tick's, or ``window`` seconds ago (held in between) once a first rate is in."""
    pair = state.gpm.get(gi)
    if pair is None:
        first = parent.attempt(f"gpm_alloc:{gi}:0", nvml.nvmlGpmSampleAlloc)
        second = parent.attempt(f"gpm_alloc:{gi}:1", nvml.nvmlGpmSampleAlloc)
        for buffer in (first, second):
            if isinstance(buffer, CallFailed):
                return _no_activity(buffer.reason)
        pair = state.gpm[gi] = _GpmPair((first, second), f"gpm_sample:{gi}", f"gpm_metrics:{gi}")
    if pair.last is not None and now < pair.taken_at + window:
        return pair.last
    older = pair.older
    taken = parent.attempt(
        pair.sample_key, nvml.nvmlGpmMigSampleGet, handle, gi, pair.buffers[older]
    )
    if isinstance(taken, CallFailed):
        if taken.code in codes.gone:
            state.found = None  # the instance is gone: enumerate next tick
        return _no_activity(taken.reason)
    pair.older = 1 - older
    pair.taken_at = now
    if not pair.primed:
        # One sample is not a rate; the next tick has two.
        pair.primed = True
        return _no_activity(Reason.NOT_AVAILABLE)
    # The buffer just written is the newer sample: from the other one to it.
    shared = state.request
    if shared is None:
        request = _metrics_request(nvml)
        shared = state.request = _GpmRequest(request, _slots(request))
    shared.request.sample1 = pair.buffers[1 - older]
    shared.request.sample2 = pair.buffers[older]
    result = parent.attempt(pair.metrics_key, nvml.nvmlGpmMetricsGet, shared.request)
    if isinstance(result, CallFailed):
        return _no_activity(result.reason)
    success = nvml.NVML_SUCCESS
    graphics, dram = shared.slots
    gpu = _metric(graphics, success)
    memory = _metric(dram, success)
    missing = tuple(
        (path, Reason.NOT_SUPPORTED)
        for path, value in zip(_ACTIVITY_PATHS, (gpu, memory), strict=True)
        if value is None
    )
    pair.last = Utilization(gpu=gpu, memory=memory), missing
    return pair.last


def _slots(request: GpmMetricsGet) -> tuple[GpmMetric, GpmMetric]:
    """The request's two metric entries: views into it, which NVML fills on each call."""
    return request.metrics[0], request.metrics[1]


def _metric(metric: GpmMetric, success: int) -> float | None:
    if read_number(metric, "nvmlReturn") != success:
        return None
    return float(read_number(metric, "value"))


def _metrics_request(nvml: NvmlApi) -> GpmMetricsGet:
    """A request for graphics activity and DRAM bandwidth (its two samples set per call)."""
    request = nvml.c_nvmlGpmMetricsGet_t()
    request.version = nvml.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = len(_ACTIVITY_PATHS)
    metric_ids = (nvml.NVML_GPM_METRIC_GRAPHICS_UTIL, nvml.NVML_GPM_METRIC_DRAM_BW_UTIL)
    for slot, metric_id in enumerate(metric_ids):
        request.metrics[slot].metricId = metric_id
        request.metrics[slot].nvmlReturn = 0
        request.metrics[slot].value = 0.0
    return request
