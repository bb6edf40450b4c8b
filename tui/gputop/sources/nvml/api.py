"""The exact subset of pynvml (nvidia-ml-py) that gputop calls, as a typing Protocol.

``gputop.sources.nvml.source`` is handed a module (the real ``pynvml``, which tests drive through a
fake NVML library underneath it) and only touches what is declared here, so this file is the
list of NVML entry points and constants gputop depends on. pynvml itself ships no type hints.

A few entry points are missing from older nvidia-ml-py releases; the source looks those up with
``getattr`` and treats a missing one as "not supported" (they are marked *optional* below).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any, Protocol

Handle = Any
"""An opaque NVML handle (``c_nvmlDevice_t``, ``c_nvmlGpuInstance_t``, ``c_nvmlGpmSample_t``)."""


class PciInfo(Protocol):
    """``nvmlPciInfo_t``: only the bus id is read."""

    busId: str


class Utilization(Protocol):
    """``c_nvmlUtilization_t``, percent."""

    gpu: int
    memory: int


class MemoryInfo(Protocol):
    """``c_nvmlMemory_t`` (v1, ``used`` includes reserved) or ``c_nvmlMemory_v2_t``."""

    total: int
    free: int
    used: int


class MemoryInfoV2(MemoryInfo, Protocol):
    """``c_nvmlMemory_v2_t``: adds memory the driver reserves."""

    reserved: int


class Bar1MemoryInfo(Protocol):
    """``c_nvmlBAR1Memory_t``, bytes."""

    bar1Total: int
    bar1Free: int
    bar1Used: int


class FieldValue(Protocol):
    """``c_nvmlFieldValue_t``: each requested field has its own return code and value type."""

    nvmlReturn: int
    valueType: int
    value: Any


class DeviceAttributes(Protocol):
    """``c_nvmlDeviceAttributes`` of a MIG device."""

    multiprocessorCount: int
    gpuInstanceSliceCount: int
    computeInstanceSliceCount: int


class GpuInstanceInfo(Protocol):
    """``c_nvmlGpuInstanceInfo_t``: ``profileId`` is an id, not the profile enum."""

    id: int
    profileId: int


class GpuInstanceProfileInfo(Protocol):
    """``c_nvmlGpuInstanceProfileInfo_v2_t``: ``name`` such as ``MIG 1g.10gb``."""

    id: int
    name: str


class GpmSupport(Protocol):
    """``c_nvmlGpmSupport_t``."""

    isSupportedDevice: int


class GpmMetric(Protocol):
    """``c_nvmlGpmMetric_t``."""

    metricId: int
    nvmlReturn: int
    value: float


class GpmMetricsGet(Protocol):
    """``c_nvmlGpmMetricsGet_t``: two samples in, up to NVML_GPM_METRIC_MAX metrics out."""

    version: int
    numMetrics: int
    sample1: Handle
    sample2: Handle
    metrics: Sequence[GpmMetric]


class NvmlApi(Protocol):
    """The pynvml functions, constants and exceptions gputop uses."""

    # Exceptions. NVMLError carries the NVML return code in ``.value``; the mismatch error is
    # raised by pynvml itself (not an NVMLError) when an unversioned entry point is missing.
    NVMLError: type[Exception]
    NVMLLibraryMismatchError: type[Exception]

    # Return codes.
    NVML_SUCCESS: int
    NVML_ERROR_NOT_SUPPORTED: int
    NVML_ERROR_NO_PERMISSION: int
    NVML_ERROR_NOT_FOUND: int
    NVML_ERROR_INVALID_ARGUMENT: int
    NVML_ERROR_INSUFFICIENT_SIZE: int
    NVML_ERROR_DRIVER_NOT_LOADED: int
    NVML_ERROR_LIBRARY_NOT_FOUND: int
    NVML_ERROR_FUNCTION_NOT_FOUND: int
    NVML_ERROR_GPU_IS_LOST: int
    NVML_ERROR_LIB_RM_VERSION_MISMATCH: int
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH: int
    NVML_ERROR_DEPRECATED: int
    NVML_ERROR_UNKNOWN: int

    # Other constants.
    NVML_TEMPERATURE_GPU: int
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: int
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: int
    NVML_TEMPERATURE_THRESHOLD_GPU_MAX: int
    NVML_FI_DEV_MEMORY_TEMP: int
    NVML_CLOCK_GRAPHICS: int
    NVML_CLOCK_SM: int
    NVML_CLOCK_MEM: int
    NVML_CLOCK_VIDEO: int
    NVML_MEMORY_ERROR_TYPE_CORRECTED: int
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED: int
    NVML_VOLATILE_ECC: int
    NVML_AGGREGATE_ECC: int
    NVML_DEVICE_MIG_ENABLE: int
    NVML_GPU_INSTANCE_PROFILE_COUNT: int
    NVML_GPM_METRIC_GRAPHICS_UTIL: int
    NVML_GPM_METRIC_SM_UTIL: int
    NVML_GPM_METRIC_SM_OCCUPANCY: int
    NVML_GPM_METRIC_ANY_TENSOR_UTIL: int
    NVML_GPM_METRIC_DRAM_BW_UTIL: int
    NVML_GPM_METRIC_PCIE_TX_PER_SEC: int
    NVML_GPM_METRIC_PCIE_RX_PER_SEC: int
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: int
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: int
    NVML_GPM_METRICS_GET_VERSION: int
    NVML_VALUE_TYPE_DOUBLE: int
    NVML_VALUE_TYPE_UNSIGNED_INT: int
    NVML_VALUE_TYPE_UNSIGNED_LONG: int
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: int
    NVML_VALUE_TYPE_SIGNED_LONG_LONG: int
    NVML_VALUE_TYPE_SIGNED_INT: int
    nvmlMemory_v2: int

    # ctypes types used to build arguments.
    c_nvmlGpmMetricsGet_t: Callable[[], GpmMetricsGet]
    # What the _v2 and _v3 process lists fill (the same struct in every release so far).
    c_nvmlProcessInfo_v2_t: type[ctypes.Structure]
    c_nvmlProcessInfo_v3_t: type[ctypes.Structure]
    # What nvmlDeviceGetProcessUtilization fills (pid, timeStamp in microseconds, smUtil...).
    c_nvmlProcessUtilizationSample_t: type[ctypes.Structure]

    # Library.
    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str: ...
    def nvmlSystemGetCudaDriverVersion(self) -> int: ...
    def nvmlSystemGetProcessName(self, pid: int) -> str: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Handle: ...
    def _nvmlGetFunctionPointer(self, name: str) -> Callable[..., int]:
        """Used for the process lists, read from the C arrays without pynvml's per-entry
        objects (and for the v1 lists, which pynvml no longer wraps)."""
        ...

    # Identity (read once per GPU).
    def nvmlDeviceGetName(self, handle: Handle) -> str: ...
    def nvmlDeviceGetUUID(self, handle: Handle) -> str: ...
    def nvmlDeviceGetPciInfo_v3(self, handle: Handle) -> PciInfo: ...
    def nvmlDeviceGetSerial(self, handle: Handle) -> str: ...
    def nvmlDeviceGetArchitecture(self, handle: Handle) -> int: ...

    # Load.
    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> Utilization: ...
    def nvmlDeviceGetEncoderUtilization(self, handle: Handle) -> list[int]: ...
    def nvmlDeviceGetDecoderUtilization(self, handle: Handle) -> list[int]: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Handle, version: int | None = None) -> Any: ...
    def nvmlDeviceGetBAR1MemoryInfo(self, handle: Handle) -> Bar1MemoryInfo: ...

    # Thermal and power.
    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int: ...
    def nvmlDeviceGetTemperatureThreshold(self, handle: Handle, threshold: int) -> int: ...
    def nvmlDeviceGetFieldValues(
        self, handle: Handle, fieldIds: Sequence[int]
    ) -> Sequence[FieldValue]: ...
    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int: ...
    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Handle) -> int: ...
    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Handle) -> int: ...
    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Handle) -> int: ...
    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Handle) -> list[int]: ...
    def nvmlDeviceGetFanSpeed(self, handle: Handle) -> int: ...
    def nvmlDeviceGetPerformanceState(self, handle: Handle) -> int: ...

    # Clocks and modes.
    def nvmlDeviceGetClockInfo(self, handle: Handle, type: int) -> int: ...
    def nvmlDeviceGetMaxClockInfo(self, handle: Handle, type: int) -> int: ...
    def nvmlDeviceGetPersistenceMode(self, handle: Handle) -> int: ...
    def nvmlDeviceGetComputeMode(self, handle: Handle) -> int: ...
    def nvmlDeviceGetEccMode(self, handle: Handle) -> list[int]: ...
    def nvmlDeviceGetTotalEccErrors(
        self, handle: Handle, errorType: int, counterType: int
    ) -> int: ...
    # optional (nvidia-ml-py >= 12.535.108); the throttle-named one is the fallback.
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Handle) -> int: ...
    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Handle) -> int: ...

    # Processes. The lists (compute, graphics, MPS; _v3, _v2 and v1 entry points) and
    # nvmlDeviceGetProcessUtilization are called through _nvmlGetFunctionPointer: see
    # gputop.sources.nvml.processes.

    # MIG.
    def nvmlDeviceGetMigMode(self, handle: Handle) -> list[int]: ...
    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Handle) -> int: ...
    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Handle, index: int) -> Handle: ...
    def nvmlDeviceGetGpuInstanceId(self, handle: Handle) -> int: ...
    def nvmlDeviceGetComputeInstanceId(self, handle: Handle) -> int: ...
    def nvmlDeviceGetAttributes_v2(self, handle: Handle) -> DeviceAttributes: ...
    def nvmlDeviceGetGpuInstanceById(self, handle: Handle, gpuInstanceId: int) -> Handle: ...
    def nvmlGpuInstanceGetInfo(self, gpuInstance: Handle) -> GpuInstanceInfo: ...
    def nvmlDeviceGetGpuInstanceProfileInfo(
        self, handle: Handle, profile: int, version: int = 2
    ) -> GpuInstanceProfileInfo: ...

    # GPM (Hopper and newer), optional.
    def nvmlGpmQueryDeviceSupport(self, handle: Handle) -> GpmSupport: ...
    def nvmlGpmSampleAlloc(self) -> Handle: ...
    def nvmlGpmSampleFree(self, gpmSample: Handle) -> None: ...
    def nvmlGpmSampleGet(self, handle: Handle, gpmSample: Handle) -> Handle: ...
    def nvmlGpmMigSampleGet(
        self, handle: Handle, gpuInstanceId: int, gpmSample: Handle
    ) -> Handle: ...
    def nvmlGpmMetricsGet(self, metricsGet: GpmMetricsGet) -> GpmMetricsGet: ...


def field_number(nvml: NvmlApi, value_type: int, value: object) -> float:
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
