"""One GPU's sample from NVML: every field read on its own, through one helper.

A :class:`GpuSampler` belongs to one GPU and is used by one thread at a time. It keeps the
device handle, what NVML refused (never asked again), values that never change, the last
process-utilization timestamp and MIG state across ticks. Within one tick no call is made twice.
"""

from __future__ import annotations

from collections.abc import Callable

from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Power,
    ProcessSample,
    Reason,
    Temperature,
    Utilization,
)
from gputop.sources.nvml_api import Handle, NvmlApi
from gputop.sources.nvml_calls import CallFailed, CallMemo, DeviceCalls, ErrorCodes, GpuLost
from gputop.sources.nvml_codes import (
    ARCHITECTURES,
    COMPUTE_MODES,
    performance_state,
    text,
    throttle_names,
)
from gputop.sources.nvml_memory import read_bar1, read_memory
from gputop.sources.nvml_mig import MigState, sample_mig_devices
from gputop.sources.nvml_processes import process_samples, running_processes, sm_utilization

_UTILIZATION_PATHS = (
    "utilization.gpu",
    "utilization.memory",
    "utilization.encoder",
    "utilization.decoder",
)


def _watts(milliwatts: int | None) -> float | None:
    return None if milliwatts is None else milliwatts / 1000


class GpuSampler:
    """Takes samples of the GPU with NVML index ``index``."""

    def __init__(
        self,
        nvml: NvmlApi,
        codes: ErrorCodes,
        index: int,
        names: Callable[[int], str | None],
    ) -> None:
        self.index = index
        self._nvml = nvml
        self._codes = codes
        self._names = names
        self._memo = CallMemo()
        self._mig = MigState()
        self._handle: Handle | None = None
        self._mig_mode: bool | None = None
        self._process_since = 0
        self._lost = False
        self._last = GpuSample(index=index)

    @property
    def gpm_samples(self) -> list[Handle]:
        """GPM buffers this GPU allocated (freed when the source closes)."""
        return self._mig.gpm_samples()

    def sample(self) -> GpuSample:
        """Read everything NVML tells about this GPU now."""
        if self._lost:
            return self._lost_sample()
        calls = DeviceCalls(self._codes, self._memo)
        try:
            return self._sample(calls)
        except GpuLost:
            self._lost = True
            return self._lost_sample()

    def _free_gpm_samples(self) -> None:
        nvml = self._nvml
        for buffer in self._mig.gpm_samples():
            try:
                nvml.nvmlGpmSampleFree(buffer)
            except nvml.NVMLError:
                continue

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

        # MIG mode first: a change of mode changes what the GPU supports.
        mig = c.call("mig_mode", ("mig_mode",), nvml.nvmlDeviceGetMigMode, h)
        mig_mode = None if mig is None else mig[0] == nvml.NVML_DEVICE_MIG_ENABLE
        if mig_mode is not None and self._mig_mode is not None and mig_mode != self._mig_mode:
            self._memo.clear()
            self._free_gpm_samples()
            self._mig = MigState()
        if mig_mode is not None:
            self._mig_mode = mig_mode

        name = text(c.call("name", ("name",), nvml.nvmlDeviceGetName, h, static=True))
        uuid = text(c.call("uuid", ("uuid",), nvml.nvmlDeviceGetUUID, h, static=True))
        pci = c.call("pci", ("pci_bus_id",), nvml.nvmlDeviceGetPciInfo_v3, h, static=True)
        serial = text(c.call("serial", ("serial",), nvml.nvmlDeviceGetSerial, h, static=True))
        architecture = self._architecture(c, h)
        pci_bus_id = None if pci is None else text(pci.busId)

        utilization = self._utilization(c, h, mig_mode)
        memory = read_memory(c, nvml, h, "memory")
        bar1 = read_bar1(c, nvml, h, "bar1")
        temperature = self._temperature(c, h)
        power = self._power(c, h)
        fan = c.call("fan_speed", ("fan_speed",), nvml.nvmlDeviceGetFanSpeed, h)
        pstate = c.call(
            "performance_state", ("performance_state",), nvml.nvmlDeviceGetPerformanceState, h
        )
        pstate_name = None if pstate is None else performance_state(pstate)
        if pstate is not None and pstate_name is None:
            c.note(("performance_state",), Reason.NOT_AVAILABLE)
        clocks = self._clocks(c, h, "clocks", nvml.nvmlDeviceGetClockInfo, static=False)
        max_clocks = self._clocks(c, h, "max_clocks", nvml.nvmlDeviceGetMaxClockInfo, static=True)
        persistence = c.call(
            "persistence_mode", ("persistence_mode",), nvml.nvmlDeviceGetPersistenceMode, h
        )
        compute = c.call("compute_mode", ("compute_mode",), nvml.nvmlDeviceGetComputeMode, h)
        ecc = c.call("ecc_mode", ("ecc_mode",), nvml.nvmlDeviceGetEccMode, h)
        ecc_errors = self._ecc_errors(c, h)
        throttle = self._throttle_reasons(c, h)

        processes = self._processes(c, h)
        if mig_mode:
            c.relabel(("processes.sm_utilization",), Reason.UNDER_MIG)
        mig_devices = (
            sample_mig_devices(nvml, self._codes, c, h, self._mig, name, memory.total, processes)
            if mig_mode
            else ()
        )
        sample = GpuSample(
            index=self.index,
            name=name,
            uuid=uuid,
            pci_bus_id=pci_bus_id,
            serial=serial,
            architecture=architecture,
            utilization=utilization,
            memory=memory,
            bar1=bar1,
            temperature=temperature,
            power=power,
            fan_speed=None if fan is None else float(fan),
            performance_state=pstate_name,
            clocks=clocks,
            max_clocks=max_clocks,
            persistence_mode=None if persistence is None else persistence == 1,
            compute_mode=None if compute is None else COMPUTE_MODES.get(compute),
            ecc_mode=None if ecc is None else ecc[0] == 1,
            ecc_errors=ecc_errors,
            throttle_reasons=throttle,
            mig_mode=mig_mode,
            mig_devices=mig_devices,
            processes=processes,
            unavailable=c.unavailable(),
        )
        self._last = sample
        return sample

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

    def _temperature(self, c: DeviceCalls, h: Handle) -> Temperature:
        nvml = self._nvml
        gpu = c.call(
            "temperature",
            ("temperature.gpu",),
            nvml.nvmlDeviceGetTemperature,
            h,
            nvml.NVML_TEMPERATURE_GPU,
        )
        thresholds: list[int | None] = [
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
        ]
        slowdown, shutdown, max_operating = (
            None if value is None else float(value) for value in thresholds
        )
        return Temperature(
            gpu=None if gpu is None else float(gpu),
            memory=self._memory_temperature(c, h),
            slowdown=slowdown,
            shutdown=shutdown,
            max_operating=max_operating,
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
        return float(_field_number(nvml, field.valueType, field.value))

    def _power(self, c: DeviceCalls, h: Handle) -> Power:
        nvml = self._nvml
        draw = c.call("power_usage", ("power.draw",), nvml.nvmlDeviceGetPowerUsage, h)
        limit = c.call("power_limit", ("power.limit",), nvml.nvmlDeviceGetEnforcedPowerLimit, h)
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
        return Power(
            draw=_watts(draw),
            limit=_watts(limit),
            default_limit=_watts(default),
            min_limit=None if bounds is None else _watts(bounds[0]),
            max_limit=None if bounds is None else _watts(bounds[1]),
        )

    def _clocks(
        self,
        c: DeviceCalls,
        h: Handle,
        prefix: str,
        fn: Callable[[Handle, int], int],
        *,
        static: bool,
    ) -> Clocks:
        nvml = self._nvml
        values = [
            c.call(f"{prefix}:{kind}", (f"{prefix}.{name}",), fn, h, kind, static=static)
            for name, kind in (
                ("graphics", nvml.NVML_CLOCK_GRAPHICS),
                ("sm", nvml.NVML_CLOCK_SM),
                ("memory", nvml.NVML_CLOCK_MEM),
                ("video", nvml.NVML_CLOCK_VIDEO),
            )
        ]
        return Clocks(*values)

    def _ecc_errors(self, c: DeviceCalls, h: Handle) -> EccErrors:
        nvml = self._nvml
        values = [
            c.call(
                f"ecc:{kind}:{counter}",
                (f"ecc_errors.{name}",),
                nvml.nvmlDeviceGetTotalEccErrors,
                h,
                kind,
                counter,
            )
            for name, kind, counter in (
                (
                    "volatile_corrected",
                    nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                    nvml.NVML_VOLATILE_ECC,
                ),
                (
                    "volatile_uncorrected",
                    nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                    nvml.NVML_VOLATILE_ECC,
                ),
                (
                    "aggregate_corrected",
                    nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                    nvml.NVML_AGGREGATE_ECC,
                ),
                (
                    "aggregate_uncorrected",
                    nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                    nvml.NVML_AGGREGATE_ECC,
                ),
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
        found = running_processes(c, self._nvml, h)
        if not found:
            return ()
        usage, self._process_since = sm_utilization(c, self._nvml, h, self._process_since)
        return process_samples(found, self._names, usage)


def _field_number(nvml: NvmlApi, value_type: int, value: object) -> float:
    """The number in an ``nvmlValue_t`` union, by its declared type."""
    member = {
        nvml.NVML_VALUE_TYPE_DOUBLE: "dVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
        nvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal",
        nvml.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
    }.get(value_type, "uiVal")
    number: float = getattr(value, member)
    return number
