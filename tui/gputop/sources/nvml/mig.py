"""MIG devices of one GPU: identity, memory, profile name and (Hopper+) activity through GPM.

Under MIG, NVML reports no utilization for the GPU or its instances; such values are None with
``Reason.UNDER_MIG``, never 0. On GPUs that support GPU Performance Monitoring, each GPU
instance's graphics activity and DRAM bandwidth are measured between two GPM samples
(:mod:`gputop.sources.nvml.gpm`, which a whole GPU's activity shares), a tick apart or
as ``MigState.cadence`` says.

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
from gputop.sources.nvml.api import DeviceAttributes, Handle, NvmlApi
from gputop.sources.nvml.calls import (
    CallFailed,
    CallMemo,
    DeviceCalls,
    ErrorCodes,
    same_objects,
)
from gputop.sources.nvml.codes import text
from gputop.sources.nvml.gpm import EVERY_TICK, GpmCadence, GpmRequest, GpmWindow
from gputop.sources.nvml.gpm import allocate as gpm_allocate
from gputop.sources.nvml.gpm import missing as gpm_missing
from gputop.sources.nvml.gpm import support as gpm_support
from gputop.sources.nvml.memory import read_bar1, read_memory

_MIG_PREFIX = "MIG "
_ACTIVITY_PATHS = ("utilization.gpu", "utilization.memory")
_ENGINE_PATHS = ("utilization.encoder", "utilization.decoder")
_ACTIVITY_UNDER_MIG = tuple((path, Reason.UNDER_MIG) for path in _ACTIVITY_PATHS)
_ENGINE_UNDER_MIG = tuple((path, Reason.UNDER_MIG) for path in _ENGINE_PATHS)


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
    gpm: dict[int, GpmWindow] = field(default_factory=dict)
    """Per GPU instance id: its GPM window."""
    request: GpmRequest | None = None
    """The one metrics request of this GPU's instances (made on first need): NVML's struct
    holds room for every GPM metric (about 9 KiB); one per instance was 2 MiB on 8 GPUs of 7
    instances."""
    cadence: GpmCadence = EVERY_TICK
    """How often an instance's GPM metrics are worked out."""
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

    def release(self) -> None:
        """The windows no longer measure (their buffers are being freed)."""
        self.cadence.closed(sum(window.counted for window in self.gpm.values()))
        self.gpm.clear()


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
    now: float = 0.0,
    *,
    activity: bool = True,
) -> tuple[MigDeviceSample, ...]:
    """Every MIG device of the GPU at ``handle`` (which is in MIG mode).

    Args:
        now: monotonic seconds, for the GPM windows' cadence (``MigState.cadence``).
        activity: read each instance's activity through GPM (1-2 ms of CPU an instance on an
            H200), which is done only while something shows or writes it.
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
    supported = gpm_support(nvml, parent, handle) is None
    gpm = activity and supported
    if not gpm:
        for window in state.gpm.values():
            # Read again later, a rate starts over: not an average since it was last shown.
            window.idle(state.cadence)
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
                measures[gi] = _gpm_activity(nvml, codes, parent, handle, state, gi, now)
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
                unavailable=calls.tick_notes(slow.notes),
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
        for window in state.gpm.values():
            # A sample of a destroyed instance is no baseline, and a window whose instance
            # is gone no longer shares the budget (one that lives on is counted again when
            # it next measures).
            window.idle(state.cadence)
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


def _gpm_activity(
    nvml: NvmlApi,
    codes: ErrorCodes,
    parent: DeviceCalls,
    handle: Handle,
    state: MigState,
    gi: int,
    now: float,
) -> _Activity:
    """Graphics activity and DRAM bandwidth of GPU instance ``gi`` over its GPM window."""
    window = state.gpm.get(gi)
    if window is None:
        buffers = gpm_allocate(nvml, parent, f"gpm_alloc:{gi}")
        if isinstance(buffers, CallFailed):
            return _no_activity(buffers.reason)
        window = state.gpm[gi] = GpmWindow(buffers, f"gpm_sample:{gi}", f"gpm_metrics:{gi}")
        state.cadence.opened()
    request = state.request
    if request is None:
        request = state.request = GpmRequest(
            nvml,
            ((nvml.NVML_GPM_METRIC_GRAPHICS_UTIL, 1.0), (nvml.NVML_GPM_METRIC_DRAM_BW_UTIL, 1.0)),
        )
    take = (nvml.nvmlGpmMigSampleGet, (handle, gi))
    measured = window.measure(parent, request, nvml, take, now, state.cadence)
    failed = window.sample_failed
    if failed is not None and failed.code in codes.gone:
        state.found = None  # the instance is gone: enumerate next tick
    (gpu, memory), missing = gpm_missing(_ACTIVITY_PATHS, measured, codes)
    return Utilization(gpu=gpu, memory=memory), missing
