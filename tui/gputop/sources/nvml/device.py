"""One GPU's sample from NVML: every field read on its own, through one helper.

A :class:`GpuSampler` belongs to one GPU and is used by one thread at a time. It keeps the
device handle, what NVML refused (never asked again), values that never change, the last
process-utilization timestamp and MIG state across ticks. Within one tick no call is made twice.

How often each call is made follows its price (:mod:`gputop.sources.nvml.prices`). Values
that change rarely are *slow*: read on the first tick and then every ``slow_refresh`` seconds
(:data:`SLOW_REFRESH`), reused in between: MIG, persistence, compute and ECC modes, ECC error
counts, the enforced power limit, BAR1 and the MIG layout (instance handles, UUIDs). The
energy counter has a cadence of its own (``prices.ENERGY_REFRESH``, a minute where nothing
shows or writes it). What moves every tick and is cheap (load, memory, temperature, power
draw, clocks, processes) is read every tick. A MIG layout that changes is noticed at once
when a cached instance handle fails; see :mod:`gputop.sources.nvml.mig`; a MIG mode changed
by a GPU reset at the next slow read. GPM's activity (Hopper and later) is worked out on the
source's own cadence (:mod:`.gpm`).

What nothing of the run shows or writes (``seldom``) is read less: the graphics and video
clocks with the slow values; per-process utilization (``processes.sm_utilization``, 2 ms a
call) and MIG activity (``mig_devices.utilization``, GPM metrics, 1-2 ms an instance) not at
all. Per-process utilization is read every ``prices.PROCESS_UTILIZATION_REFRESH`` seconds,
and only for a GPU with a process on screen when the view says which are (``shown``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop.model import (
    Activity,
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    Power,
    ProcessSample,
    Reason,
    Temperature,
    Unavailable,
    Utilization,
)
from gputop.model.health import RemappedRows, RetiredPages
from gputop.sources.nvml.api import Handle, NvmlApi, field_number
from gputop.sources.nvml.calls import CallFailed, CallMemo, DeviceCalls, ErrorCodes, GpuLost
from gputop.sources.nvml.codes import (
    ARCHITECTURES,
    COMPUTE_MODES,
    performance_state,
    text,
    throttle_names,
)
from gputop.sources.nvml.gpm import ACTIVITY_PATHS, EVERY_TICK, GpmCadence, GpuActivity
from gputop.sources.nvml.health import read_remapped_rows, read_retired_pages
from gputop.sources.nvml.memory import read_bar1, read_memory
from gputop.sources.nvml.prices import (
    ENERGY_REFRESH,
    ENERGY_UNSHOWN_REFRESH,
    MIG_ACTIVITY,
    PROCESS_UTILIZATION_REFRESH,
    SM_UTILIZATION,
)
from gputop.sources.nvml.processes import (
    ProcessLists,
    ProcessRows,
    RunningProcess,
    UtilizationReader,
    sm_utilization,
)

if TYPE_CHECKING:
    from gputop.sources.nvml.mig import MigState

_UTILIZATION_PATHS = (
    "utilization.gpu",
    "utilization.memory",
    "utilization.encoder",
    "utilization.decoder",
)


_NO_ACTIVITY = Activity()

SLOW_REFRESH = 5.0
"""Seconds between re-reads of slow values (modes, ECC counters, power limit, BAR1, MIG layout)."""

Shown = Callable[[], "frozenset[int] | None"]
"""The PIDs a view shows now (None: every process may be seen)."""

_CLOCK_NAMES = ("graphics", "sm", "memory", "video")


def _watts(milliwatts: int | None) -> float | None:
    return None if milliwatts is None else milliwatts / 1000


@dataclass(frozen=True, slots=True)
class _SlowPart:
    """What a GPU reports that never or rarely changes: read on refresh ticks, reused between."""

    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    serial: str | None
    architecture: str | None
    bar1: Memory
    slowdown: float | None
    shutdown: float | None
    max_operating: float | None
    power_limit: float | None
    default_limit: float | None
    min_limit: float | None
    max_limit: float | None
    max_clocks: Clocks
    persistence_mode: bool | None
    compute_mode: str | None
    ecc_mode: bool | None
    ecc_errors: EccErrors
    remapped_rows: RemappedRows
    retired_pages: RetiredPages
    notes: Unavailable
    """What these reads could not get, noted again on every tick the part is reused."""


class GpuSampler:
    """Takes samples of the GPU with NVML index ``index``.

    Args:
        slow_refresh: seconds between re-reads of slow values; 0 re-reads them every tick.
        clock: monotonic seconds, for the slow values' and the energy counter's cadences.
        seldom: field paths nothing shows or writes: ``clocks.graphics`` and ``clocks.video``
            are read as slow values although they move; :data:`SM_UTILIZATION` and
            :data:`MIG_ACTIVITY` are not read.
        energy_refresh: seconds between reads of the total energy counter (at least
            ``ENERGY_UNSHOWN_REFRESH`` when ``power.energy`` is in ``seldom``).
        shown: the PIDs a view shows; per-process utilization is read only for a GPU that
            has one of them (None, or a None answer: every GPU).
        mig_shown: whether a view shows MIG activity now (None: always); read only then.
        gpm_cadence: how often GPM's metrics are worked out (the GPU's activity, its MIG
            instances'), shared by a source's samplers (see :mod:`gputop.sources.nvml.gpm`).
    """

    def __init__(
        self,
        nvml: NvmlApi,
        codes: ErrorCodes,
        index: int,
        names: Callable[[int], str | None],
        *,
        slow_refresh: float = SLOW_REFRESH,
        clock: Callable[[], float] = time.monotonic,
        seldom: frozenset[str] = frozenset(),
        energy_refresh: float = ENERGY_REFRESH,
        shown: Shown | None = None,
        mig_shown: Callable[[], bool] | None = None,
        gpm_cadence: GpmCadence = EVERY_TICK,
    ) -> None:
        self.index = index
        self._gpm_cadence = gpm_cadence
        self._activity: GpuActivity | None = None
        """GPM of the whole GPU, made on the first tick out of MIG mode."""
        self._mig_shown = mig_shown
        self._seldom = seldom
        self._sm_wanted = SM_UTILIZATION not in seldom
        self._mig_activity = MIG_ACTIVITY not in seldom
        self._shown = shown
        self._slow_refresh = slow_refresh
        # Nothing but `gputop export` writes the energy counter: elsewhere it is read seldom.
        self._energy_refresh = max(
            energy_refresh, ENERGY_UNSHOWN_REFRESH if "power.energy" in seldom else 0.0
        )
        self._clock = clock
        self._refresh_at: float | None = None
        """When slow values are next re-read; None: on the next tick."""
        self._energy_at: float | None = None
        """When the energy counter is next read; None: on the next tick."""
        self._energy_due = True
        self._now = 0.0
        self._utilization_at: float | None = None
        """When per-process utilization is next read (while wanted); None: next tick."""
        self._asked: frozenset[int] = frozenset()
        """The PIDs listed when it was last read: a new one is read at once."""
        self._recheck = False
        """Read the slow values (MIG mode first) on the next tick, whatever the cadence: what
        this tick saw says the MIG mode may have changed."""
        self._switched = False
        """What the last tick said of that."""
        self._slow: _SlowPart | None = None
        """The slow part of the last refresh; None: read it on the next tick."""
        self._nvml = nvml
        self._codes = codes
        self._names = names
        self._memo = CallMemo()
        self._mig: MigState | None = None
        """MIG sampling's state, made when the GPU is first seen in MIG mode (most GPUs never
        are, and the MIG module is then never imported)."""
        self._handle: Handle | None = None
        self._mig_mode: bool | None = None
        self._process_since = 0
        self._usage: dict[int, float] = {}
        """Per-PID SM utilization last read: held until the next read."""
        self._usage_notes: tuple[tuple[str, Reason], ...] = ()
        """What that read could not get, noted again while it is held."""
        self._rows = ProcessRows()
        self._lists: ProcessLists | None = None
        self._process_utilization = UtilizationReader(nvml)
        self._lost = False
        self._last = GpuSample(index=index)
        self.identity: GpuSample | None = None
        """Index, name, UUID and bus of this GPU once read: what a stale sample of it
        carries before its first whole sample is in, so it is known by its UUID from the
        first tick. Written by the sampling thread, read by the polling one (one assignment
        of an immutable value)."""
        # Clock call keys and field paths, built once rather than formatted every tick.
        self._clock_specs: dict[str, tuple[tuple[str, tuple[str, ...], int, bool], ...]] = {}

    @property
    def handle(self) -> Handle | None:
        """The device handle once acquired (the event watcher registers it)."""
        return self._handle

    @property
    def gpm_samples(self) -> list[Handle]:
        """GPM buffers this GPU allocated (freed when the source closes)."""
        mine = [] if self._activity is None else self._activity.buffers()
        return mine if self._mig is None else mine + self._mig.gpm_samples()

    def sample(self) -> GpuSample:
        """Read everything NVML tells about this GPU now."""
        if self._lost:
            return self._lost_sample()
        now = self._clock()
        refresh = self._recheck or self._refresh_at is None or now >= self._refresh_at
        self._recheck = False
        energy = self._energy_due = self._energy_at is None or now >= self._energy_at
        self._now = now
        calls = DeviceCalls(self._codes, self._memo, refresh)
        try:
            sample = self._sample(calls)
        except GpuLost:
            self._lost = True
            return self._lost_sample()
        if refresh:
            self._refresh_at = now + self._slow_refresh
        if energy:
            self._energy_at = now + self._energy_refresh
        return sample

    def free_gpm(self) -> None:
        """Free every GPM buffer (MIG mode changed, or the source closes)."""
        nvml = self._nvml
        for buffer in self.gpm_samples:
            try:
                nvml.nvmlGpmSampleFree(buffer)
            except nvml.NVMLError:
                continue
        if self._mig is not None:
            self._mig.release()
        if self._activity is not None:
            self._activity.release()
        self._mig = None
        self._activity = None

    def _lost_sample(self) -> GpuSample:
        last = self._last
        return GpuSample(
            index=self.index,
            name=last.name,
            uuid=last.uuid,
            pci_bus_id=last.pci_bus_id,
            serial=last.serial,
            architecture=last.architecture,
            lost=True,
            unavailable=(("lost", Reason.GPU_LOST),),
        )

    def _acquire(self, calls: DeviceCalls) -> Handle | CallFailed:
        if self._handle is not None:
            return self._handle
        nvml = self._nvml
        handle = calls.attempt("handle", nvml.nvmlDeviceGetHandleByIndex, self.index)
        if isinstance(handle, CallFailed):
            if handle.code == nvml.NVML_ERROR_UNKNOWN:
                # The driver cannot reach the device any more: the same as lost.
                raise GpuLost("unknown error getting the device handle")
            return handle
        self._handle = handle
        return handle

    def _sample(self, c: DeviceCalls) -> GpuSample:
        nvml = self._nvml
        h = self._acquire(c)
        if isinstance(h, CallFailed):
            return GpuSample(index=self.index, unavailable=(("name", h.reason),))

        # MIG mode first: a change of mode changes what the GPU supports. Slow: 0.1-0.4 ms a
        # call, and it changes only with a GPU reset.
        mig = c.call("mig_mode", ("mig_mode",), nvml.nvmlDeviceGetMigMode, h, slow=True)
        mig_mode = None if mig is None else mig[0] == nvml.NVML_DEVICE_MIG_ENABLE
        if mig_mode is not None and self._mig_mode is not None and mig_mode != self._mig_mode:
            self._memo.clear(keep="mig_mode")
            self._slow = None
            self.free_gpm()
        if mig_mode is not None:
            self._mig_mode = mig_mode

        slow = self._slow
        if slow is None or c.refresh:
            slow = self._read_slow(h, c.refresh)
            if slow.uuid is not None:
                self.identity = GpuSample(
                    index=self.index,
                    name=slow.name,
                    uuid=slow.uuid,
                    pci_bus_id=slow.pci_bus_id,
                    serial=slow.serial,
                    architecture=slow.architecture,
                )
        c.missing.extend(slow.notes)

        utilization = self._utilization(c, h, mig_mode)
        activity = self._gpm(c, h, mig_mode)
        memory = read_memory(c, nvml, h, "memory")
        temperature = self._temperature(c, h, slow)
        draw = c.call("power_usage", ("power.draw",), nvml.nvmlDeviceGetPowerUsage, h)
        energy = c.call(
            "energy",
            ("power.energy",),
            nvml.nvmlDeviceGetTotalEnergyConsumption,
            h,
            slow=True,
            due=self._energy_due,
        )
        fan = c.call("fan_speed", ("fan_speed",), nvml.nvmlDeviceGetFanSpeed, h)
        pstate = c.call(
            "performance_state", ("performance_state",), nvml.nvmlDeviceGetPerformanceState, h
        )
        pstate_name = None if pstate is None else performance_state(pstate)
        if pstate is not None and pstate_name is None:
            c.note(("performance_state",), Reason.NOT_AVAILABLE)
        clocks = self._clocks(c, h, "clocks", nvml.nvmlDeviceGetClockInfo, static=False)
        throttle = self._throttle_reasons(c, h)

        processes = self._processes(c, h)
        if mig_mode:
            c.relabel(("processes.sm_utilization",), Reason.UNDER_MIG)
        mig_devices = (
            self._mig_devices(c, h, slow.name, memory.total, processes) if mig_mode else ()
        )
        # On the change, not for as long as it lasts: a driver that lists instance ids
        # without MIG would otherwise have every tick read the slow values.
        switched = self._mig_switched(mig_mode, mig_devices, processes)
        if switched and not self._switched and not c.refresh:
            self._recheck = True
        self._switched = switched
        sample = GpuSample(
            index=self.index,
            name=slow.name,
            uuid=slow.uuid,
            pci_bus_id=slow.pci_bus_id,
            serial=slow.serial,
            architecture=slow.architecture,
            utilization=utilization,
            activity=activity,
            memory=memory,
            bar1=slow.bar1,
            temperature=temperature,
            power=Power(
                draw=_watts(draw),
                limit=slow.power_limit,
                default_limit=slow.default_limit,
                min_limit=slow.min_limit,
                max_limit=slow.max_limit,
                energy=None if energy is None else energy / 1000,  # mJ
            ),
            fan_speed=None if fan is None else float(fan),
            performance_state=pstate_name,
            clocks=clocks,
            max_clocks=slow.max_clocks,
            persistence_mode=slow.persistence_mode,
            compute_mode=slow.compute_mode,
            ecc_mode=slow.ecc_mode,
            ecc_errors=slow.ecc_errors,
            remapped_rows=slow.remapped_rows,
            retired_pages=slow.retired_pages,
            throttle_reasons=throttle,
            mig_mode=mig_mode,
            mig_devices=mig_devices,
            processes=processes,
            unavailable=c.tick_notes(),
        )
        self._last = sample
        return sample

    def _mig_switched(
        self,
        mig_mode: bool | None,
        devices: tuple[MigDeviceSample, ...],
        processes: tuple[ProcessSample, ...],
    ) -> bool:
        """Whether this tick says the MIG mode (read on the slow cadence) may have changed:
        every instance gone at once (MIG switched off, and the GPU reset), or a process in a
        GPU instance on a GPU not in MIG mode (switched on)."""
        if mig_mode:
            return bool(self._last.mig_devices) and not devices
        return any(process.gpu_instance_id is not None for process in processes)

    def _read_slow(self, h: Handle, refresh: bool) -> _SlowPart:
        """Identity (read once), thresholds and bounds (once) and the slow values (now).

        Kept for the following ticks unless a read failed in a way that may pass; then the
        next tick reads again (what did succeed comes from the per-call caches).
        """
        nvml = self._nvml
        c = DeviceCalls(self._codes, self._memo, refresh)
        name = text(c.call("name", ("name",), nvml.nvmlDeviceGetName, h, static=True))
        uuid = text(c.call("uuid", ("uuid",), nvml.nvmlDeviceGetUUID, h, static=True))
        pci = c.call("pci", ("pci_bus_id",), nvml.nvmlDeviceGetPciInfo_v3, h, static=True)
        serial = text(c.call("serial", ("serial",), nvml.nvmlDeviceGetSerial, h, static=True))
        architecture = self._architecture(c, h)
        bar1 = read_bar1(c, nvml, h, "bar1")
        slowdown, shutdown, max_operating = self._thresholds(c, h)
        # Changes only when someone sets a limit (nvidia-smi -pl, a data-centre power cap).
        limit = c.call(
            "power_limit", ("power.limit",), nvml.nvmlDeviceGetEnforcedPowerLimit, h, slow=True
        )
        default = c.call(
            "power_default_limit",
            ("power.default_limit",),
            nvml.nvmlDeviceGetPowerManagementDefaultLimit,
            h,
            static=True,
        )
        bounds = c.call(
            "power_limit_bounds",
            ("power.min_limit", "power.max_limit"),
            nvml.nvmlDeviceGetPowerManagementLimitConstraints,
            h,
            static=True,
        )
        max_clocks = self._clocks(c, h, "max_clocks", nvml.nvmlDeviceGetMaxClockInfo, static=True)
        persistence = c.call(
            "persistence_mode",
            ("persistence_mode",),
            nvml.nvmlDeviceGetPersistenceMode,
            h,
            slow=True,
        )
        compute = c.call(
            "compute_mode", ("compute_mode",), nvml.nvmlDeviceGetComputeMode, h, slow=True
        )
        ecc = c.call("ecc_mode", ("ecc_mode",), nvml.nvmlDeviceGetEccMode, h, slow=True)
        ecc_errors = self._ecc_errors(c, h)
        # Memory-repair counters: slow like the ECC counts (gputop.sources.nvml.health).
        remapped_rows = read_remapped_rows(c, nvml, h)
        retired_pages = read_retired_pages(c, nvml, h)
        part = _SlowPart(
            name=name,
            uuid=uuid,
            pci_bus_id=None if pci is None else text(pci.busId),
            serial=serial,
            architecture=architecture,
            bar1=bar1,
            slowdown=slowdown,
            shutdown=shutdown,
            max_operating=max_operating,
            power_limit=_watts(limit),
            default_limit=_watts(default),
            min_limit=None if bounds is None else _watts(bounds[0]),
            max_limit=None if bounds is None else _watts(bounds[1]),
            max_clocks=max_clocks,
            persistence_mode=None if persistence is None else persistence == 1,
            compute_mode=None if compute is None else COMPUTE_MODES.get(compute),
            ecc_mode=None if ecc is None else ecc[0] == 1,
            ecc_errors=ecc_errors,
            remapped_rows=remapped_rows,
            retired_pages=retired_pages,
            notes=c.unavailable(),
        )
        transient = any(reason is Reason.ERROR for _, reason in part.notes)
        self._slow = None if transient else part
        return part

    def _architecture(self, c: DeviceCalls, h: Handle) -> str | None:
        code = c.call(
            "architecture", ("architecture",), self._nvml.nvmlDeviceGetArchitecture, h, static=True
        )
        if code is None:
            return None
        name = ARCHITECTURES.get(code)
        if name is None:
            c.note(("architecture",), Reason.NOT_REPORTED)
        return name

    def _mig_devices(
        self,
        c: DeviceCalls,
        h: Handle,
        name: str | None,
        total: int | None,
        processes: tuple[ProcessSample, ...],
    ) -> tuple[MigDeviceSample, ...]:
        # Deferred: MIG sampling, once a GPU is seen in MIG mode (test_live_imports).
        from gputop.sources.nvml.mig import MigState, sample_mig_devices

        if self._mig is None:
            self._mig = MigState(cadence=self._gpm_cadence)
        return sample_mig_devices(
            self._nvml,
            self._codes,
            c,
            h,
            self._mig,
            name,
            total,
            processes,
            self._now,
            activity=self._mig_activity and (self._mig_shown is None or self._mig_shown()),
        )

    def _gpm(self, c: DeviceCalls, h: Handle, mig_mode: bool | None) -> Activity:
        if mig_mode:
            # Each GPU instance is measured on its own (its MIG device's utilization).
            c.note(ACTIVITY_PATHS, Reason.UNDER_MIG)
            return _NO_ACTIVITY
        reader = self._activity
        if reader is None:
            reader = self._activity = GpuActivity(self._nvml, self._codes, self._gpm_cadence)
        return reader.read(c, h, self._now)

    def _utilization(self, c: DeviceCalls, h: Handle, mig_mode: bool | None) -> Utilization:
        nvml = self._nvml
        rates = c.call(
            "utilization",
            ("utilization.gpu", "utilization.memory"),
            nvml.nvmlDeviceGetUtilizationRates,
            h,
        )
        encoder = c.call(
            "encoder_utilization",
            ("utilization.encoder",),
            nvml.nvmlDeviceGetEncoderUtilization,
            h,
        )
        decoder = c.call(
            "decoder_utilization",
            ("utilization.decoder",),
            nvml.nvmlDeviceGetDecoderUtilization,
            h,
        )
        if mig_mode:
            # NVML cannot attribute load to the whole GPU under MIG: not 0, not unsupported.
            c.relabel(_UTILIZATION_PATHS, Reason.UNDER_MIG)
        return Utilization(
            gpu=None if rates is None else float(rates.gpu),
            memory=None if rates is None else float(rates.memory),
            encoder=None if encoder is None else float(encoder[0]),
            decoder=None if decoder is None else float(decoder[0]),
        )

    def _temperature(self, c: DeviceCalls, h: Handle, slow: _SlowPart) -> Temperature:
        nvml = self._nvml
        gpu = c.call(
            "temperature",
            ("temperature.gpu",),
            nvml.nvmlDeviceGetTemperature,
            h,
            nvml.NVML_TEMPERATURE_GPU,
        )
        return Temperature(
            gpu=None if gpu is None else float(gpu),
            memory=self._memory_temperature(c, h),
            slowdown=slow.slowdown,
            shutdown=slow.shutdown,
            max_operating=slow.max_operating,
        )

    def _thresholds(
        self, c: DeviceCalls, h: Handle
    ) -> tuple[float | None, float | None, float | None]:
        """Slowdown, shutdown and maximum operating temperatures (static)."""
        nvml = self._nvml
        slowdown, shutdown, max_operating = (
            c.call(
                f"temperature_threshold:{threshold}",
                (path,),
                nvml.nvmlDeviceGetTemperatureThreshold,
                h,
                threshold,
                static=True,
            )
            for path, threshold in (
                ("temperature.slowdown", nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
                ("temperature.shutdown", nvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
                ("temperature.max_operating", nvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
            )
        )
        return (
            None if slowdown is None else float(slowdown),
            None if shutdown is None else float(shutdown),
            None if max_operating is None else float(max_operating),
        )

    def _memory_temperature(self, c: DeviceCalls, h: Handle) -> float | None:
        # Only HBM parts report it, and only through the field-values API.
        nvml = self._nvml
        key = "field:memory_temperature"
        values = c.call(
            key,
            ("temperature.memory",),
            nvml.nvmlDeviceGetFieldValues,
            h,
            [nvml.NVML_FI_DEV_MEMORY_TEMP],
        )
        if values is None:
            return None
        field = values[0]
        if field.nvmlReturn != nvml.NVML_SUCCESS:
            c.refuse(key, ("temperature.memory",), field.nvmlReturn)
            return None
        return float(field_number(nvml, field.valueType, field.value))

    def _clocks(
        self,
        c: DeviceCalls,
        h: Handle,
        prefix: str,
        fn: Callable[[Handle, int], int],
        *,
        static: bool,
    ) -> Clocks:
        specs = self._clock_specs.get(prefix)
        if specs is None:
            nvml = self._nvml
            kinds = (nvml.NVML_CLOCK_GRAPHICS, nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM)
            specs = self._clock_specs[prefix] = tuple(
                (
                    f"{prefix}:{kind}",
                    (f"{prefix}.{name}",),
                    kind,
                    not static and f"{prefix}.{name}" in self._seldom,
                )
                for name, kind in zip(_CLOCK_NAMES, (*kinds, nvml.NVML_CLOCK_VIDEO), strict=True)
            )
        values = [
            c.call(key, paths, fn, h, kind, static=static, slow=slow)
            for key, paths, kind, slow in specs
        ]
        return Clocks(*values)

    def _ecc_errors(self, c: DeviceCalls, h: Handle) -> EccErrors:
        nvml = self._nvml
        corrected = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED
        uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        # Slow: counts of rare events (the aggregate ones the driver only updates now and then).
        values = [
            c.call(
                f"ecc:{kind}:{counter}",
                (f"ecc_errors.{name}",),
                nvml.nvmlDeviceGetTotalEccErrors,
                h,
                kind,
                counter,
                slow=True,
            )
            for name, kind, counter in (
                ("volatile_corrected", corrected, nvml.NVML_VOLATILE_ECC),
                ("volatile_uncorrected", uncorrected, nvml.NVML_VOLATILE_ECC),
                ("aggregate_corrected", corrected, nvml.NVML_AGGREGATE_ECC),
                ("aggregate_uncorrected", uncorrected, nvml.NVML_AGGREGATE_ECC),
            )
        ]
        return EccErrors(*values)

    def _throttle_reasons(self, c: DeviceCalls, h: Handle) -> tuple[str, ...] | None:
        nvml = self._nvml
        # "Clock event reasons" is the r535+ name of the same bits; older drivers and older
        # pynvml only have the throttle-named entry point.
        newer = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        mask = c.attempt("clocks_event_reasons", newer, h)
        if isinstance(mask, CallFailed):
            if mask.reason is not Reason.NOT_SUPPORTED:
                c.note(("throttle_reasons",), mask.reason)
                return None
            older = c.call(
                "clocks_throttle_reasons",
                ("throttle_reasons",),
                nvml.nvmlDeviceGetCurrentClocksThrottleReasons,
                h,
            )
            if older is None:
                return None
            mask = older
        return throttle_names(mask)

    def _processes(self, c: DeviceCalls, h: Handle) -> tuple[ProcessSample, ...]:
        lists = self._lists
        if lists is None:
            lists = self._lists = ProcessLists(self._nvml)
        found = lists.read(c, h)
        if not found:
            self._rows = ProcessRows()
            return ()
        if self._utilization_wanted(found):
            noted = len(c.missing)
            self._usage, self._process_since = sm_utilization(
                c, self._nvml, h, self._process_since, self._process_utilization
            )
            self._usage_notes = tuple(c.missing[noted:])
        else:
            # Held, with what its last read could not get (a reused reading reports the
            # same gaps as a fresh one).
            c.missing.extend(self._usage_notes)
        return self._rows(found, self._names, self._usage)

    def _utilization_wanted(self, found: list[RunningProcess]) -> bool:
        """Per-process utilization (2 ms a call) is read every
        ``PROCESS_UTILIZATION_REFRESH`` seconds, and at once for a new process, while
        something shows or writes it: for a GPU with a process on screen, when the view says
        which are."""
        if not self._sm_wanted:
            return False
        due = self._utilization_at
        asked = self._asked
        if due is not None and self._now < due and all(entry.pid in asked for entry in found):
            return False  # nothing new since the last read, which is recent
        shown = None if self._shown is None else self._shown()
        if shown is not None and not any(entry.pid in shown for entry in found):
            return False
        self._utilization_at = self._now + PROCESS_UTILIZATION_REFRESH
        self._asked = frozenset(entry.pid for entry in found)
        return True
