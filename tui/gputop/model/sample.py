"""One moment of a machine's GPUs as immutable values.

Every source (live NVML, replay of nvidia-smi XML) produces these; every consumer (history,
widgets, JSON, recording) reads them. A value the GPU does not report is ``None`` and the
owning object's ``unavailable`` records why, keyed by the field's dotted path
(``"utilization.gpu"``, ``"power.draw"``, ``"fan_speed"``), so the UI can say why instead of
showing 0.

Units: memory in bytes, power in watts, temperature in degrees Celsius, clocks in MHz,
utilization, activity and fan speed in percent, transfer rates in bytes per second.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from gputop.model.container import ContainerView
from gputop.model.health import HealthEvent, RemappedRows, RetiredPages
from gputop.model.owner import Owner


class Reason(enum.Enum):
    """Why a value is missing."""

    NOT_SUPPORTED = "not supported"
    NO_PERMISSION = "no permission"
    UNDER_MIG = "not available under MIG"
    NOT_AVAILABLE = "not available"
    DEPRECATED = "deprecated by the driver"
    NOT_REPORTED = "not reported by this driver"
    GPU_LOST = "GPU lost"
    ERROR = "error"
    NOT_IN_LOG = "not in this log"
    """A text log (dmon, pmon, a `--query-gpu` CSV) that has no column for the value."""
    NOT_EXPORTED = "not exported"
    """A remote machine's exporter publishes no series for the value (dcgm-exporter's
    default counters leave many out)."""
    INVALID = "invalid value in the recording"
    """A recording holds something no GPU can report: negative, non-finite, out of range,
    or in a unit that is not the field's."""


Unavailable = tuple[tuple[str, Reason], ...]
"""(field path, reason) pairs; a tuple so that samples stay hashable and immutable."""


def reason_for(unavailable: Unavailable, path: str) -> Reason | None:
    """Return why ``path`` is missing, or None when it was reported (or never asked)."""
    for name, reason in unavailable:
        if name == path:
            return reason
    return None


@dataclass(frozen=True, slots=True)
class Utilization:
    """Percent busy over the driver's last sample period."""

    gpu: float | None = None
    memory: float | None = None
    encoder: float | None = None
    decoder: float | None = None


@dataclass(frozen=True, slots=True)
class Activity:
    """What the GPU's performance monitors (GPM: Hopper and later) measured over a window
    between two of their samples: how much of the GPU did work, not only whether a kernel ran.

    ``utilization.gpu`` is the share of time *any* kernel ran, so one small kernel at a time
    reads 100 %; these say how many SMs worked and how hard. Percent (0-100) of time or of the
    hardware's peak, as NVML reports them (DCGM's ``DCGM_FI_PROF_*`` are the same as ratios);
    transfer rates in bytes per second. None on GPUs without GPM, under MIG (see the MIG
    devices' own ``utilization``), in recordings, and until two samples exist.
    """

    graphics: float | None = None
    """Share of time the graphics/compute engine was active (DCGM's ``GR_ENGINE_ACTIVE``)."""
    sm: float | None = None
    """Share of SM cycles with at least one warp assigned, averaged over the SMs."""
    sm_occupancy: float | None = None
    """Warps resident on the SMs against the most they can hold."""
    tensor: float | None = None
    """Share of cycles any tensor pipe was active."""
    dram: float | None = None
    """Device memory bandwidth used against its peak."""
    pcie_tx: float | None = None
    """Bytes per second the GPU sent over PCIe (headers included)."""
    pcie_rx: float | None = None
    nvlink_tx: float | None = None
    """Bytes per second sent over all NVLinks together."""
    nvlink_rx: float | None = None


@dataclass(frozen=True, slots=True)
class Memory:
    """A memory pool, in bytes."""

    total: int | None = None
    used: int | None = None
    free: int | None = None
    reserved: int | None = None


@dataclass(frozen=True, slots=True)
class Temperature:
    """Degrees Celsius: the current reading and the driver's thresholds."""

    gpu: float | None = None
    memory: float | None = None
    slowdown: float | None = None
    shutdown: float | None = None
    max_operating: float | None = None
    """The GPU's maximum operating temperature (``gpu_temp_max_gpu_threshold``)."""


@dataclass(frozen=True, slots=True)
class Power:
    """Watts."""

    draw: float | None = None
    limit: float | None = None
    """The enforced limit: what the GPU is held to now."""
    default_limit: float | None = None
    min_limit: float | None = None
    max_limit: float | None = None
    energy: float | None = None
    """Joules used since the driver was loaded (NVML's total energy counter, Volta and
    later; live only: no recording format carries it)."""


@dataclass(frozen=True, slots=True)
class Clocks:
    """MHz."""

    graphics: int | None = None
    sm: int | None = None
    memory: int | None = None
    video: int | None = None


@dataclass(frozen=True, slots=True)
class EccErrors:
    """Error counts; volatile since the last driver load, aggregate over the GPU's life."""

    volatile_corrected: int | None = None
    volatile_uncorrected: int | None = None
    aggregate_corrected: int | None = None
    aggregate_uncorrected: int | None = None


@dataclass(frozen=True, slots=True)
class ProcessSample:
    """A process using a GPU or one of its MIG devices.

    The first fields come from the driver (smi XML carries only these); the rest are filled
    by the live source from the host's process table when the PID resolves here.
    """

    pid: int
    type: str | None = None
    """"C" (compute), "G" (graphics) or "C+G"."""
    name: str | None = None
    memory_used: int | None = None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    sm_utilization: float | None = None
    user: str | None = None
    command: str | None = None
    cpu_percent: float | None = None
    host_memory: int | None = None
    start_time: float | None = None
    """Seconds since the epoch."""
    foreign: bool = False
    """True when the PID does not resolve in this PID namespace (another container)."""
    local_pid: int | None = None
    """The PID in this namespace when it differs from the driver's (host) PID."""
    owner: Owner | None = None
    """Its container, pod or Slurm job; None when not looked up or not found."""


@dataclass(frozen=True, slots=True)
class MigDeviceSample:
    """One MIG device: a compute instance inside a GPU instance."""

    index: int | None
    gpu_instance_id: int | None
    compute_instance_id: int | None
    profile: str | None = None
    """e.g. ``"3g.40gb"``; None when it cannot be known."""
    profile_derived: bool = False
    """True when ``profile`` was not read from NVML's profile table: worked out from SM count
    and memory, or (``profile_from_name``) taken from the MIG device's name."""
    profile_from_name: bool = False
    """True when ``profile`` is the end of the MIG device's name (``… MIG 3g.20gb``)."""
    sm_count: int | None = None
    memory: Memory = field(default_factory=Memory)
    bar1: Memory = field(default_factory=Memory)
    uuid: str | None = None
    utilization: Utilization = field(default_factory=Utilization)
    processes: tuple[ProcessSample, ...] = ()
    holders: tuple[Owner, ...] = ()
    """Pods the kubelet assigned this MIG device to (PodResources API); () when unknown."""
    unavailable: Unavailable = ()


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU at one moment."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    serial: str | None = None
    architecture: str | None = None
    utilization: Utilization = field(default_factory=Utilization)
    activity: Activity = field(default_factory=Activity)
    """GPM's measurements (Hopper and later), live only."""
    memory: Memory = field(default_factory=Memory)
    bar1: Memory = field(default_factory=Memory)
    temperature: Temperature = field(default_factory=Temperature)
    power: Power = field(default_factory=Power)
    fan_speed: float | None = None
    performance_state: str | None = None
    clocks: Clocks = field(default_factory=Clocks)
    max_clocks: Clocks = field(default_factory=Clocks)
    persistence_mode: bool | None = None
    compute_mode: str | None = None
    ecc_mode: bool | None = None
    ecc_errors: EccErrors = field(default_factory=EccErrors)
    remapped_rows: RemappedRows = field(default_factory=RemappedRows)
    retired_pages: RetiredPages = field(default_factory=RetiredPages)
    throttle_reasons: tuple[str, ...] | None = None
    """Names of the active clock-event (throttle) reasons; None when not reported."""
    mig_mode: bool | None = None
    mig_devices: tuple[MigDeviceSample, ...] = ()
    processes: tuple[ProcessSample, ...] = ()
    """Every process on this GPU, MIG devices' included."""
    holders: tuple[Owner, ...] = ()
    """Pods the kubelet assigned this GPU to (PodResources API, time-sharing replicas
    included); () when unknown or not on Kubernetes."""
    lost: bool = False
    """The GPU fell off the bus or stopped answering; other values are stale or None."""
    stale: bool = False
    """This tick's sampling did not finish in time (a hung driver call): the values are the
    previous tick's."""
    unavailable: Unavailable = ()

    def reason(self, path: str) -> Reason | None:
        """Why the field at ``path`` is None."""
        return reason_for(self.unavailable, path)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything known about a machine's GPUs at one moment."""

    timestamp: datetime | None
    """When the sample was taken, in the recording machine's local time (smi XML has no zone)."""
    gpus: tuple[GpuSample, ...] = ()
    host: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    attached_gpus: int | None = None
    """What the driver said it has; may disagree with ``len(gpus)`` in edited captures."""
    container: ContainerView | None = None
    """The container gputop runs in (live, inside one): the GPUs it was given, its pod;
    None on a host, and for recordings."""
    events: tuple[HealthEvent, ...] = ()
    """Health events (XID errors, ...) that arrived since the previous snapshot of the same
    source, oldest first; the history keeps them (``gputop.history.events``)."""

    def gpu(self, index: int) -> GpuSample | None:
        """The GPU with NVML index ``index``, if present."""
        gpus = self.gpus
        # Straight to it where it sits at its own position, as in every snapshot of a live
        # source (history and diagnosis ask for each GPU of each snapshot on every tick).
        if 0 <= index < len(gpus) and gpus[index].index == index:
            return gpus[index]
        for gpu in gpus:
            if gpu.index == index:
                return gpu
        return None
