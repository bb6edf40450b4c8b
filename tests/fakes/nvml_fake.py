"""A fake NVML shared library, driven by Snapshots, for the real pynvml to call into.

pynvml keeps the loaded ``CDLL`` in ``pynvml.nvmlLib`` and resolves every C function with
``getattr(nvmlLib, name)``. :class:`FakeNvml` stands in for that object: each attribute is a
C-level function that receives exactly what pynvml passes to the real library (ctypes handles,
``byref`` outputs, string buffers, struct arrays) and returns an ``nvmlReturn_t``. So pynvml's
own marshalling, two-step list protocols and return-code -> NVMLError mapping all run in tests.

What the library reports comes from a sequence of :class:`gputop.model.Snapshot` (one per tick,
the last one repeating); values that are None in the snapshot are NotSupported. Faults are
injected with :class:`Faults`. Every call is logged (function, device, arguments) so tests can
count calls per tick and the benchmark can time our code apart from NVML's.

Ticks: each device counts its own ticks. A device's tick advances when a call repeats one it
already saw in the current tick (gputop never repeats a call within a tick), or when the test
calls :meth:`FakeNvml.advance`.

Prices: a fake answers in microseconds where a real driver takes milliseconds for some calls.
``Faults.prices`` (from a file, :func:`load_prices`, e.g. ``snapshots/nvml-prices-h200.tsv``
recorded on a real H200) makes each listed call spend its CPU time busy on the calling thread,
and sleep what its wall time has beyond that (PCIe throughput: 21 ms), before it answers.
Off by default, so the tests stay fast.

MIG device handles name a position on their GPU. By default a handle stays valid while that
position exists, whatever instance sits there; :meth:`FakeNvml.invalidate_mig_handles` makes
the handles handed out so far answer INVALID_ARGUMENT, as a real driver's do once their
instance is destroyed (for a test that rebuilds the layout between ticks).
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import pynvml  # noqa: TID251 -- the fake sits under the real pynvml

from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Snapshot

# pynvml ships no types: the codes the fake returns, as ints.
NVML_ERROR_ARGUMENT_VERSION_MISMATCH: int = pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
NVML_ERROR_GPU_IS_LOST: int = pynvml.NVML_ERROR_GPU_IS_LOST
NVML_ERROR_INSUFFICIENT_SIZE: int = pynvml.NVML_ERROR_INSUFFICIENT_SIZE
NVML_ERROR_INVALID_ARGUMENT: int = pynvml.NVML_ERROR_INVALID_ARGUMENT
NVML_ERROR_NOT_FOUND: int = pynvml.NVML_ERROR_NOT_FOUND
NVML_ERROR_NOT_SUPPORTED: int = pynvml.NVML_ERROR_NOT_SUPPORTED
NVML_ERROR_NO_PERMISSION: int = pynvml.NVML_ERROR_NO_PERMISSION
NVML_PSTATE_UNKNOWN: int = pynvml.NVML_PSTATE_UNKNOWN
NVML_SUCCESS: int = pynvml.NVML_SUCCESS
NVML_ERROR_TIMEOUT: int = pynvml.NVML_ERROR_TIMEOUT

MIB = 1024 * 1024
_U32_NONE = 0xFFFFFFFF
_U64_NONE = 0xFFFFFFFFFFFFFFFF
_GPM_BASE = 0x40000000
_WHOLE_GPU = -1
"""The GPU-instance id the fake files a whole GPU's GPM sample under."""
_CARG_TYPE = type(ctypes.byref(ctypes.c_int()))

ARCHITECTURE_CODES = {
    "Kepler": pynvml.NVML_DEVICE_ARCH_KEPLER,
    "Maxwell": pynvml.NVML_DEVICE_ARCH_MAXWELL,
    "Pascal": pynvml.NVML_DEVICE_ARCH_PASCAL,
    "Volta": pynvml.NVML_DEVICE_ARCH_VOLTA,
    "Turing": pynvml.NVML_DEVICE_ARCH_TURING,
    "Ampere": pynvml.NVML_DEVICE_ARCH_AMPERE,
    "Ada Lovelace": pynvml.NVML_DEVICE_ARCH_ADA,
    "Hopper": pynvml.NVML_DEVICE_ARCH_HOPPER,
    "Blackwell": pynvml.NVML_DEVICE_ARCH_BLACKWELL,
}

THROTTLE_BITS: dict[str, int] = {
    "gpu_idle": pynvml.nvmlClocksEventReasonGpuIdle,
    "applications_clocks_setting": pynvml.nvmlClocksEventReasonApplicationsClocksSetting,
    "sw_power_cap": pynvml.nvmlClocksEventReasonSwPowerCap,
    "hw_slowdown": pynvml.nvmlClocksEventReasonHwSlowdown,
    "sync_boost": pynvml.nvmlClocksEventReasonSyncBoost,
    "sw_thermal_slowdown": pynvml.nvmlClocksEventReasonSwThermalSlowdown,
    "hw_thermal_slowdown": pynvml.nvmlClocksEventReasonHwThermalSlowdown,
    "hw_power_brake_slowdown": pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown,
    "display_clocks_setting": pynvml.nvmlClocksEventReasonDisplayClockSetting,
    "unknown": 0x8000000000000000,  # nvmlClocksThrottleReasonUnknown in older headers
}

COMPUTE_MODE_CODES = {
    "Default": pynvml.NVML_COMPUTEMODE_DEFAULT,
    "Exclusive_Thread": pynvml.NVML_COMPUTEMODE_EXCLUSIVE_THREAD,
    "Prohibited": pynvml.NVML_COMPUTEMODE_PROHIBITED,
    "Exclusive_Process": pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS,
}

# Real GPU-instance profile ids (nvidia-smi mig -lgip) of A100/H100-class parts.
GPU_INSTANCE_PROFILE_IDS = {
    "1g.5gb": 19,
    "1g.10gb": 19,
    "1g.12gb": 19,
    "1g.18gb": 19,
    "1g.20gb": 15,
    "1g.24gb": 15,
    "1g.35gb": 15,
    "2g.10gb": 14,
    "2g.20gb": 14,
    "2g.24gb": 14,
    "2g.35gb": 14,
    "3g.20gb": 9,
    "3g.40gb": 9,
    "3g.47gb": 9,
    "3g.71gb": 9,
    "4g.20gb": 5,
    "4g.40gb": 5,
    "4g.47gb": 5,
    "4g.71gb": 5,
    "7g.40gb": 0,
    "7g.80gb": 0,
    "7g.94gb": 0,
    "7g.141gb": 0,
}


class Call(NamedTuple):
    """One C-level call: the function, the GPU it concerned (or None) and its argument key."""

    name: str
    gpu: int | None
    key: tuple[Any, ...]


@dataclass
class Faults:
    """What should go wrong, and when.

    Attributes:
        errors: (GPU index or None for every GPU, C function name) -> NVML return code that
            call returns instead of its value (e.g. NVML_ERROR_NOT_SUPPORTED, NO_PERMISSION).
        missing: C functions the library does not export (pynvml raises FunctionNotFound).
        lose_at: GPU index -> the tick (0-based, counted per GPU) from which every call on it
            returns GPU_IS_LOST.
        hang: (GPU index, C function name) -> (first tick, event): from that tick, the call
            blocks until the event is set. GPU None: a system call (no device), from the start.
        latency: seconds every C call sleeps (a slow driver); ``latency_by_name`` per function.
        init_error: the code ``nvmlInitWithFlags`` returns (LIBRARY_NOT_FOUND, ...).
        mps_pids: compute processes listed as MPS-compute instead.
        prices: C function -> (CPU seconds, wall seconds) each call costs, as on real
            hardware (:func:`load_prices`); spent by :attr:`FakeNvml.spend`.
    """

    errors: dict[tuple[int | None, str], int] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    lose_at: dict[int, int] = field(default_factory=dict)
    hang: dict[tuple[int | None, str], tuple[int, threading.Event]] = field(default_factory=dict)
    latency: float = 0.0
    latency_by_name: dict[str, float] = field(default_factory=dict)
    init_error: int | None = None
    mps_pids: set[int] = field(default_factory=set)
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)


def load_prices(path: Path) -> dict[str, tuple[float, float]]:
    """C function -> (CPU seconds, wall seconds) a call, from a prices file: lines of
    ``function<TAB>cpu_us<TAB>wall_us or -<TAB>note``, ``#`` comments.

    Raises:
        ValueError: a line that says something else (naming the file and the line).
    """
    prices: dict[str, tuple[float, float]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        try:
            cpu = float(parts[1]) / 1e6
            wall = cpu if parts[2].strip() == "-" else float(parts[2]) / 1e6
        except (IndexError, ValueError):
            wanted = "function, cpu_us, wall_us"
            raise ValueError(f"{path}:{number}: not '{wanted}': {line!r}") from None
        if not parts[0].startswith("nvml") or cpu < 0 or wall < cpu:
            raise ValueError(f"{path}:{number}: not a price: {line!r}")
        prices[parts[0]] = (cpu, wall)
    return prices


def spend(cpu: float, wall: float) -> None:
    """Be busy for ``cpu`` seconds of this thread's CPU time, then sleep what ``wall`` has
    beyond it: a driver call's cost, in Python (which holds the GIL meanwhile, where a real
    driver call lets it go: the benchmarks spend it in C instead, ``fake_nvml_c/price.c``)."""
    end = time.thread_time() + cpu
    while time.thread_time() < end:
        pass
    if wall > cpu:
        time.sleep(wall - cpu)


class FakeLibrary:
    """What pynvml sees as the loaded NVML: its attributes are the C functions.

    A function listed in ``Faults.missing``, or not implemented by :class:`FakeNvml`, raises
    AttributeError, which pynvml reports as NVMLError_FunctionNotFound.
    """

    def __init__(self, fake: FakeNvml) -> None:
        self._fake = fake
        self._functions = {
            name: _CFunction(fake, name, getattr(fake, name))
            for name in dir(type(fake))
            if name.startswith("nvml")
        }

    def __getattr__(self, name: str) -> _CFunction:
        if name in self._fake.faults.missing or name not in self._functions:
            raise AttributeError(name)
        return self._functions[name]


class _CFunction:
    """A C function of the fake library; pynvml may set ``restype``/``argtypes`` on it."""

    __slots__ = ("argtypes", "fake", "impl", "name", "restype")

    def __init__(self, fake: FakeNvml, name: str, impl: Callable[..., Any]) -> None:
        self.fake = fake
        self.name = name
        self.impl = impl
        self.restype: Any = None
        self.argtypes: Any = None

    def __call__(self, *args: Any) -> Any:
        return self.fake._dispatch(self, args)


@dataclass
class _GpuState:
    tick: int = 0
    seen: set[tuple[Any, ...]] = field(default_factory=set)


def _arg_key(arg: Any) -> Any:
    if arg is None:
        return None
    if isinstance(arg, ctypes._Pointer):
        return ("h", ctypes.cast(arg, ctypes.c_void_p).value)
    if isinstance(arg, _CARG_TYPE):
        return "ref"
    if isinstance(arg, ctypes.Array):
        # A struct array by its size: a list read again into a bigger array, in the same
        # tick, is another question (a string buffer is the same one).
        return ("buf", len(arg)) if issubclass(arg._type_, ctypes.Structure) else "buf"
    if isinstance(arg, ctypes._SimpleCData):
        return arg.value
    if isinstance(arg, int):
        return arg
    return type(arg).__name__


def _obj(ref: Any) -> Any:
    """What a ``byref()`` argument points at."""
    target: Any = ref  # ctypes declares no _obj on byref() results, but it has one
    return target._obj if isinstance(ref, _CARG_TYPE) else ref


def _put(ref: Any, value: int | float) -> None:
    _obj(ref).value = value


def _put_handle(ref: Any, value: int) -> None:
    ctypes.c_void_p.from_buffer(_obj(ref)).value = value


def _put_text(buffer: Any, text: str) -> None:
    data = text.encode()[: len(buffer) - 1]
    buffer.value = data


def _handle_value(arg: Any) -> int:
    return ctypes.cast(arg, ctypes.c_void_p).value or 0


def _gpu_handle(gpu: int) -> int:
    return (gpu + 1) << 16


def _mig_handle(gpu: int, mig: int, generation: int = 0) -> int:
    # The low byte (unused by MIG handles otherwise) holds the handle's generation.
    return ((gpu + 1) << 16) | ((mig + 1) << 8) | (generation & 0xFF)


def _instance_handle(gpu: int, gi: int) -> int:
    return ((gpu + 1) << 16) | 0x8000 | (gi & 0xFF)


def _decode(value: int) -> tuple[int, int | None, int | None]:
    """(GPU index, MIG position or None, GPU-instance id or None) of a device-side handle."""
    gpu = (value >> 16) - 1
    if value & 0x8000:
        return gpu, None, value & 0xFF
    mig = (value >> 8) & 0x7F
    return gpu, (mig - 1 if mig else None), None


def _gi_profile_name(profile: str | None) -> str | None:
    """``1c.3g.40gb`` -> ``3g.40gb``."""
    if profile is None:
        return None
    parts = profile.split(".")
    return ".".join(parts[1:]) if parts[0].endswith("c") else profile


def _slices(profile: str | None) -> tuple[int, int]:
    """(GPU-instance slices, compute-instance slices) from a profile name, or (0, 0)."""
    if profile is None:
        return 0, 0
    parts = profile.split(".")
    try:
        if parts[0].endswith("c"):
            return int(parts[1].rstrip("g")), int(parts[0].rstrip("c"))
        slices = int(parts[0].rstrip("g"))
    except ValueError:
        return 0, 0
    return slices, slices


TROUBLE_EVENTS: int = (
    pynvml.nvmlEventTypeXidCriticalError
    | pynvml.nvmlEventTypeDoubleBitEccError
    | pynvml.nvmlEventTypeSingleBitEccErrorStorm
    | pynvml.nvmlEventTypeDramRetirementEvent
    | pynvml.nvmlEventTypeDramRetirementFailure
    | pynvml.nvmlEventTypeNonFatalPoisonError
    | pynvml.nvmlEventTypeFatalPoisonError
    | pynvml.nvmlEventTypeGpuUnavailableError
    | pynvml.nvmlEventTypeGpuRecoveryAction
)
"""The event types a GPU of the fake supports by default (an H200 registers for critical
XIDs, `../shared/realdata/h200-live/nvml-costs-and-gpm.json`)."""
_EVENT_SET_BASE = 0x50000000


class _Event(NamedTuple):
    gpu: int
    type: int
    data: int
    gi: int | None
    ci: int | None


class _Events:
    """Event sets: which GPUs and types each listens to, and its events not yet read.

    An event put before any set listens for it waits for the first set that registers for
    its GPU and type (a real driver would drop it): a test that cues an XID cannot know when
    the program under test registers, and means the program to see it."""

    def __init__(self) -> None:
        self.supported = TROUBLE_EVENTS
        """What nvmlDeviceGetSupportedEventTypes answers (a test may narrow it)."""
        self._ready = threading.Condition()
        self._next = 0
        self._sets: dict[int, dict[int, int]] = {}
        self._waiting: dict[int, list[_Event]] = {}
        self._unheard: list[_Event] = []

    def create(self) -> int:
        with self._ready:
            self._next += 1
            handle = _EVENT_SET_BASE + self._next
            self._sets[handle] = {}
            self._waiting[handle] = []
        return handle

    def free(self, handle: int) -> bool:
        with self._ready:
            self._waiting.pop(handle, None)
            return self._sets.pop(handle, None) is not None

    def register(self, handle: int, gpu: int, mask: int) -> bool:
        with self._ready:
            listening = self._sets.get(handle)
            if listening is None:
                return False
            listening[gpu] = listening.get(gpu, 0) | mask
            heard = [e for e in self._unheard if e.gpu == gpu and e.type & mask]
            if heard:
                self._unheard = [e for e in self._unheard if e not in heard]
                self._waiting[handle].extend(heard)
                self._ready.notify_all()
        return True

    @property
    def registered(self) -> dict[int, int]:
        """GPU -> every event type some set listens to on it."""
        with self._ready:
            out: dict[int, int] = {}
            for listening in self._sets.values():
                for gpu, mask in listening.items():
                    out[gpu] = out.get(gpu, 0) | mask
            return out

    def put(self, event: _Event) -> None:
        with self._ready:
            heard = False
            for handle, listening in self._sets.items():
                if listening.get(event.gpu, 0) & event.type:
                    self._waiting[handle].append(event)
                    heard = True
            if not heard:
                self._unheard.append(event)
            self._ready.notify_all()

    def wait(self, handle: int, seconds: float) -> _Event | None:
        deadline = time.monotonic() + seconds
        with self._ready:
            while True:
                queue = self._waiting.get(handle)
                if queue:
                    return queue.pop(0)
                left = deadline - time.monotonic()
                if left <= 0 or queue is None:
                    return None
                self._ready.wait(left)


def _retired_field(gpu: GpuSample, field_id: int) -> int | None:
    pages = gpu.retired_pages
    value: int | bool | None = {
        pynvml.NVML_FI_DEV_RETIRED_SBE: pages.single_bit,
        pynvml.NVML_FI_DEV_RETIRED_DBE: pages.double_bit,
        pynvml.NVML_FI_DEV_RETIRED_PENDING: pages.pending,
    }.get(field_id)
    return None if value is None else int(value)


def cuda_code(text: str | None) -> int | None:
    """``12.2`` -> 12020, as ``nvmlSystemGetCudaDriverVersion`` reports it."""
    if not text:
        return None
    major, _, minor = text.partition(".")
    try:
        return int(major) * 1000 + int(minor or 0) * 10
    except ValueError:
        return None


class FakeNvml:
    """The fake library object installed as ``pynvml.nvmlLib``.

    Args:
        snapshots: what the machine looks like at tick 0, 1, ... (the last one repeats).
        faults: what should fail.
        nvml_version: what ``nvmlSystemGetNVMLVersion`` reports.
    """

    def __init__(
        self,
        snapshots: Snapshot | Sequence[Snapshot],
        faults: Faults | None = None,
        *,
        nvml_version: str = "12.550.54",
    ) -> None:
        self.snapshots: tuple[Snapshot, ...] = (
            (snapshots,) if isinstance(snapshots, Snapshot) else tuple(snapshots)
        )
        if not self.snapshots:
            raise ValueError("FakeNvml needs at least one snapshot")
        self.faults = faults or Faults()
        self.nvml_version = nvml_version
        self.calls: list[Call] = []
        self.time_in_calls_ns = 0
        self.spend: Callable[[str, float, float], None] = lambda _name, cpu, wall: spend(cpu, wall)
        """How a priced call spends its price: (function, CPU s, wall s)."""
        self.priced_calls: Counter[str] = Counter()
        """Priced calls made, per C function."""
        self.initialized = 0
        self._lock = threading.Lock()
        self._gpus: dict[int, _GpuState] = {}
        self._gpm_next = 0
        self._alloc_calls = itertools.count(1)
        self._gpm_live: set[int] = set()
        self._gpm_samples: dict[int, tuple[int, int, int]] = {}
        self._mig_generation: dict[int, int] = {}
        self.events = _Events()
        """Health events: what the GPUs support, who listens, what is waiting to be read."""
        self.library = FakeLibrary(self)
        """The object to install as ``pynvml.nvmlLib``."""

    # ----- what tests use -----------------------------------------------------------------

    def mark(self) -> int:
        """A position in the call log, for :meth:`calls_since`."""
        return len(self.calls)

    def calls_since(self, mark: int) -> list[Call]:
        """Calls made since ``mark``."""
        return self.calls[mark:]

    def counts_since(self, mark: int) -> Counter[str]:
        """Calls per C function since ``mark``."""
        return Counter(call.name for call in self.calls[mark:])

    def tick_of(self, gpu: int) -> int:
        """The tick GPU ``gpu`` is in."""
        return self._state(gpu).tick

    def advance(self) -> None:
        """Move every GPU to its next tick."""
        with self._lock:
            for state in self._gpus.values():
                state.tick += 1
                state.seen.clear()

    def invalidate_mig_handles(self, gpu: int) -> None:
        """Every MIG device handle of GPU ``gpu`` handed out so far stops working (calls on
        it answer INVALID_ARGUMENT); new ones come from nvmlDeviceGetMigDeviceHandleByIndex."""
        with self._lock:
            self._mig_generation[gpu] = self._mig_generation.get(gpu, 0) + 1

    def inject_event(
        self, gpu: int, event_type: int, data: int = 0, gi: int | None = None, ci: int | None = None
    ) -> None:
        """Deliver an NVML event of ``event_type`` on GPU ``gpu`` now, to every event set
        registered for that type (``gi``/``ci``: the MIG instance it names)."""
        self.events.put(_Event(gpu, event_type, data, gi, ci))

    def inject_xid(self, gpu: int, code: int, gi: int | None = None, ci: int | None = None) -> None:
        """A critical XID error ``code`` on GPU ``gpu`` now (as the driver announces one)."""
        self.inject_event(gpu, pynvml.nvmlEventTypeXidCriticalError, code, gi, ci)

    def set_gpu(self, gpu: int, **changes: Any) -> None:
        """From now on GPU ``gpu`` reports ``changes`` (GpuSample fields: ``ecc_errors``,
        ``remapped_rows``, ``retired_pages``, ...) at every tick."""
        self.snapshots = tuple(
            replace(
                snapshot,
                gpus=tuple(
                    replace(sample, **changes) if position == gpu else sample
                    for position, sample in enumerate(snapshot.gpus)
                ),
            )
            for snapshot in self.snapshots
        )

    def lose(self, gpu: int) -> None:
        """GPU ``gpu`` falls off the bus now."""
        self.faults.lose_at[gpu] = self.tick_of(gpu)

    def hang(self, gpu: int | None, function: str, from_tick: int | None = None) -> threading.Event:
        """Make ``function`` on GPU ``gpu`` (None: a system call) block until the returned
        event is set; from ``from_tick``, by default the GPU's current tick."""
        event = threading.Event()
        start = 0 if gpu is None else self.tick_of(gpu) if from_tick is None else from_tick
        self.faults.hang[(gpu, function)] = (start, event)
        return event

    def release_hangs(self) -> None:
        """Let every hung call return."""
        for _, event in self.faults.hang.values():
            event.set()

    @property
    def live_gpm_samples(self) -> int:
        """GPM sample buffers allocated and not freed."""
        return len(self._gpm_live)

    # ----- dispatch -----------------------------------------------------------------------

    def _state(self, gpu: int) -> _GpuState:
        state = self._gpus.get(gpu)
        if state is None:
            with self._lock:
                state = self._gpus.setdefault(gpu, _GpuState())
        return state

    def _snapshot(self, gpu: int | None = None) -> Snapshot:
        tick = 0
        if gpu is not None:
            tick = self._state(gpu).tick
        elif self._gpus:
            tick = max(state.tick for state in self._gpus.values())
        return self.snapshots[min(tick, len(self.snapshots) - 1)]

    def _gpu_sample(self, gpu: int) -> GpuSample:
        return self._snapshot(gpu).gpus[gpu]

    def _device_of(self, fn: _CFunction, args: tuple[Any, ...]) -> int | None:
        if fn.name == "nvmlDeviceGetHandleByIndex_v2":
            return int(args[0].value)
        if fn.name == "nvmlGpmMetricsGet":
            request = _obj(args[0])
            sample = self._gpm_samples.get(_handle_value(request.sample2))
            return None if sample is None else sample[0]
        if args and isinstance(args[0], ctypes._Pointer):
            value = _handle_value(args[0])
            if 0 < value < _GPM_BASE:
                return _decode(value)[0]
        return None

    def _key(self, fn: _CFunction, args: tuple[Any, ...]) -> tuple[Any, ...]:
        if fn.name == "nvmlGpmSampleAlloc":
            # Each allocation is a new buffer, not the same question asked again; the count
            # is taken atomically, since sampling threads allocate at the same time.
            return ("buffer", next(self._alloc_calls))
        if fn.name == "nvmlGpmMetricsGet":
            request = _obj(args[0])
            return (_handle_value(request.sample1), _handle_value(request.sample2))
        return tuple(_arg_key(arg) for arg in args)

    def _dispatch(self, fn: _CFunction, args: tuple[Any, ...]) -> Any:
        if fn.name == "nvmlEventSetWait_v2":
            # Waiting for an event is idle time, not the work of a call: kept out of the
            # time the benchmarks read.
            return self._run(fn, args)
        started = time.perf_counter_ns()
        try:
            return self._run(fn, args)
        finally:
            elapsed = time.perf_counter_ns() - started
            with self._lock:
                self.time_in_calls_ns += elapsed

    def _run(self, fn: _CFunction, args: tuple[Any, ...]) -> Any:
        faults = self.faults
        gpu = self._device_of(fn, args)
        key = self._key(fn, args)
        with self._lock:
            self.calls.append(Call(fn.name, gpu, key))
            if gpu is not None:
                state = self._gpus.setdefault(gpu, _GpuState())
                full_key = (fn.name, *key)
                if full_key in state.seen:
                    state.tick += 1
                    state.seen.clear()
                state.seen.add(full_key)
        delay = faults.latency_by_name.get(fn.name, faults.latency)
        if delay:
            time.sleep(delay)
        price = faults.prices.get(fn.name) if faults.prices else None
        if price is not None:
            with self._lock:
                self.priced_calls[fn.name] += 1
            self.spend(fn.name, *price)
        if gpu is not None:
            tick = self._state(gpu).tick
            lost_at = faults.lose_at.get(gpu)
            if lost_at is not None and tick >= lost_at:
                return NVML_ERROR_GPU_IS_LOST
            hang = faults.hang.get((gpu, fn.name))
            if hang is not None and tick >= hang[0]:
                hang[1].wait()
            code = faults.errors.get((gpu, fn.name), faults.errors.get((None, fn.name)))
            if code is not None:
                return code
        else:
            hang = faults.hang.get((None, fn.name))
            if hang is not None:
                hang[1].wait()
            code = faults.errors.get((None, fn.name))
            if code is not None:
                return code
        if gpu is not None and gpu >= len(self._snapshot(gpu).gpus):
            return NVML_ERROR_INVALID_ARGUMENT
        return fn.impl(*args)

    def _target(self, handle: Any) -> tuple[GpuSample, MigDeviceSample | None] | None:
        """The GPU (and MIG device) a device handle names, or None for a bad handle."""
        value = _handle_value(handle)
        if not value or value >= _GPM_BASE:
            return None
        gpu, mig, _ = _decode(value)
        sample = self._gpu_sample(gpu)
        if mig is None:
            return sample, None
        if mig >= len(sample.mig_devices):
            return None
        if value & 0xFF != self._mig_generation.get(gpu, 0) & 0xFF:
            return None  # a handle from before invalidate_mig_handles
        return sample, sample.mig_devices[mig]

    # ----- system -------------------------------------------------------------------------

    def nvmlInitWithFlags(self, flags: Any) -> int:
        if self.faults.init_error is not None:
            return self.faults.init_error
        self.initialized += 1
        return NVML_SUCCESS

    def nvmlShutdown(self) -> int:
        self.initialized = max(0, self.initialized - 1)
        return NVML_SUCCESS

    def nvmlErrorString(self, code: Any) -> bytes:
        return f"fake NVML error {int(code)}".encode()

    def nvmlSystemGetNVMLVersion(self, buffer: Any, size: Any) -> int:
        _put_text(buffer, self.nvml_version)
        return NVML_SUCCESS

    def nvmlSystemGetDriverVersion(self, buffer: Any, size: Any) -> int:
        version = self._snapshot().driver_version
        if version is None:
            return NVML_ERROR_NOT_SUPPORTED
        _put_text(buffer, version)
        return NVML_SUCCESS

    def nvmlSystemGetCudaDriverVersion(self, out: Any) -> int:
        code = cuda_code(self._snapshot().cuda_version)
        if code is None:
            return NVML_ERROR_NOT_SUPPORTED
        _put(out, code)
        return NVML_SUCCESS

    def nvmlSystemGetCudaDriverVersion_v2(self, out: Any) -> int:
        return self.nvmlSystemGetCudaDriverVersion(out)

    def nvmlSystemGetProcessName(self, pid: Any, buffer: Any, size: Any) -> int:
        wanted = int(pid.value)
        for gpu in self._snapshot().gpus:
            for process in gpu.processes:
                if process.pid == wanted:
                    if process.name is None:
                        return NVML_ERROR_NOT_FOUND
                    _put_text(buffer, process.name)
                    return NVML_SUCCESS
        return NVML_ERROR_NOT_FOUND

    def nvmlDeviceGetCount_v2(self, out: Any) -> int:
        _put(out, len(self._snapshot().gpus))
        return NVML_SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, out: Any) -> int:
        gpu = int(index.value)
        if gpu >= len(self._snapshot(gpu).gpus):
            return NVML_ERROR_INVALID_ARGUMENT
        _put_handle(out, _gpu_handle(gpu))
        return NVML_SUCCESS

    # ----- helpers for device functions ---------------------------------------------------

    def _value(
        self, handle: Any, out: Any, read: Callable[[GpuSample, MigDeviceSample | None], Any]
    ) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        value = read(*target)
        if value is None:
            return NVML_ERROR_NOT_SUPPORTED
        _put(out, value)
        return NVML_SUCCESS

    def _gpu_value(self, handle: Any, out: Any, read: Callable[[GpuSample], Any]) -> int:
        return self._value(handle, out, lambda g, m: None if m is not None else read(g))

    def _text(self, handle: Any, buffer: Any, read: Callable[[Any], str | None]) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu, mig = target
        text = read(mig if mig is not None else gpu)
        if text is None:
            return NVML_ERROR_NOT_SUPPORTED
        _put_text(buffer, text)
        return NVML_SUCCESS

    # ----- identity -----------------------------------------------------------------------

    def nvmlDeviceGetIndex(self, handle: Any, out: Any) -> int:
        # gpustat asks (the benchmark runs it on this fake); gputop knows the index it asked by.
        return self._gpu_value(handle, out, lambda g: g.index)

    def nvmlDeviceGetName(self, handle: Any, buffer: Any, size: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu, mig = target
        if gpu.name is None:
            return NVML_ERROR_NOT_SUPPORTED
        name = gpu.name if mig is None else f"{gpu.name} MIG {mig.profile or '?'}"
        _put_text(buffer, name)
        return NVML_SUCCESS

    def nvmlDeviceGetUUID(self, handle: Any, buffer: Any, size: Any) -> int:
        return self._text(handle, buffer, lambda device: device.uuid)

    def nvmlDeviceGetSerial(self, handle: Any, buffer: Any, size: Any) -> int:
        return self._text(handle, buffer, lambda d: getattr(d, "serial", None))

    def nvmlDeviceGetPciInfo_v3(self, handle: Any, out: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        bus_id = target[0].pci_bus_id
        if bus_id is None:
            return NVML_ERROR_NOT_SUPPORTED
        info = _obj(out)
        info.busId = bus_id
        info.busIdLegacy = bus_id[-12:]
        try:
            domain, bus, rest = bus_id.split(":")
            info.domain = int(domain, 16)
            info.bus = int(bus, 16)
            info.device = int(rest.split(".")[0], 16)
        except ValueError:
            pass
        return NVML_SUCCESS

    def nvmlDeviceGetArchitecture(self, handle: Any, out: Any) -> int:
        return self._gpu_value(
            handle,
            out,
            lambda g: (
                None
                if g.architecture is None
                else ARCHITECTURE_CODES.get(g.architecture, pynvml.NVML_DEVICE_ARCH_UNKNOWN)
            ),
        )

    # ----- PCIe ---------------------------------------------------------------------------

    def _pcie_not_reported(self, handle: Any) -> int:
        # The snapshot model has no PCIe link figures; nvtop asks for them, and a driver
        # answers NotSupported where it has none (as on some vGPU and MIG set-ups).
        if self._target(handle) is None:
            return NVML_ERROR_INVALID_ARGUMENT
        return NVML_ERROR_NOT_SUPPORTED

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any, out: Any) -> int:
        return self._pcie_not_reported(handle)

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any, out: Any) -> int:
        return self._pcie_not_reported(handle)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any, out: Any) -> int:
        return self._pcie_not_reported(handle)

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any, out: Any) -> int:
        return self._pcie_not_reported(handle)

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: Any, out: Any) -> int:
        return self._pcie_not_reported(handle)

    # ----- load ---------------------------------------------------------------------------

    def nvmlDeviceGetUtilizationRates(self, handle: Any, out: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu, mig = target
        if mig is not None or gpu.utilization.gpu is None or gpu.utilization.memory is None:
            return NVML_ERROR_NOT_SUPPORTED
        rates = _obj(out)
        rates.gpu = round(gpu.utilization.gpu)
        rates.memory = round(gpu.utilization.memory)
        return NVML_SUCCESS

    def _engine(self, handle: Any, out: Any, period: Any, value: float | None) -> int:
        if value is None:
            return NVML_ERROR_NOT_SUPPORTED
        _put(out, round(value))
        _put(period, 167000)
        return NVML_SUCCESS

    def nvmlDeviceGetEncoderUtilization(self, handle: Any, out: Any, period: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu, mig = target
        return self._engine(handle, out, period, None if mig else gpu.utilization.encoder)

    def nvmlDeviceGetDecoderUtilization(self, handle: Any, out: Any, period: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu, mig = target
        return self._engine(handle, out, period, None if mig else gpu.utilization.decoder)

    def nvmlDeviceGetMemoryInfo(self, handle: Any, out: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        memory = target[1].memory if target[1] is not None else target[0].memory
        if memory.total is None or memory.used is None or memory.free is None:
            return NVML_ERROR_NOT_SUPPORTED
        info = _obj(out)
        info.total = memory.total
        # v1 counts what the driver reserves as used.
        info.used = memory.used + (memory.reserved or 0)
        info.free = memory.free
        return NVML_SUCCESS

    def nvmlDeviceGetMemoryInfo_v2(self, handle: Any, out: Any) -> int:
        info = _obj(out)
        if info.version != pynvml.nvmlMemory_v2:
            return NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        memory = target[1].memory if target[1] is not None else target[0].memory
        if None in (memory.total, memory.used, memory.free, memory.reserved):
            # A driver before r510: no reserved figure.
            return NVML_ERROR_NOT_SUPPORTED
        info.total = memory.total
        info.used = memory.used
        info.free = memory.free
        info.reserved = memory.reserved
        return NVML_SUCCESS

    def nvmlDeviceGetBAR1MemoryInfo(self, handle: Any, out: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        bar1 = target[1].bar1 if target[1] is not None else target[0].bar1
        if bar1.total is None or bar1.used is None or bar1.free is None:
            return NVML_ERROR_NOT_SUPPORTED
        info = _obj(out)
        info.bar1Total = bar1.total
        info.bar1Used = bar1.used
        info.bar1Free = bar1.free
        return NVML_SUCCESS

    # ----- thermal and power --------------------------------------------------------------

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, out: Any) -> int:
        if int(sensor.value) != pynvml.NVML_TEMPERATURE_GPU:
            return NVML_ERROR_INVALID_ARGUMENT
        return self._gpu_value(
            handle, out, lambda g: None if g.temperature.gpu is None else round(g.temperature.gpu)
        )

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: Any, out: Any) -> int:
        which = int(threshold.value)
        pick: dict[int, Callable[[GpuSample], float | None]] = {
            pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: lambda g: g.temperature.slowdown,
            pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: lambda g: g.temperature.shutdown,
            pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX: lambda g: g.temperature.max_operating,
        }
        read = pick.get(which)
        if read is None:
            return NVML_ERROR_NOT_SUPPORTED
        return self._gpu_value(
            handle, out, lambda g: None if read(g) is None else round(read(g) or 0)
        )

    def nvmlDeviceGetFieldValues(self, handle: Any, count: Any, values: Any) -> int:
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu = target[0]
        array = _obj(values)
        for slot in range(int(count.value)):
            entry = array[slot]
            entry.timestamp = int(time.time() * 1e6)
            retired = _retired_field(gpu, entry.fieldId)
            if (
                entry.fieldId == pynvml.NVML_FI_DEV_MEMORY_TEMP
                and gpu.temperature.memory is not None
            ):
                entry.nvmlReturn = pynvml.NVML_SUCCESS
                entry.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
                entry.value.uiVal = round(gpu.temperature.memory)
            elif retired is not None:
                entry.nvmlReturn = pynvml.NVML_SUCCESS
                entry.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                entry.value.ullVal = retired
            else:
                entry.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
        return NVML_SUCCESS

    @staticmethod
    def _milliwatts(watts: float | None) -> int | None:
        return None if watts is None else round(watts * 1000)

    def nvmlDeviceGetPowerUsage(self, handle: Any, out: Any) -> int:
        return self._gpu_value(handle, out, lambda g: self._milliwatts(g.power.draw))

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any, out: Any) -> int:
        return self._gpu_value(
            handle, out, lambda g: None if g.power.energy is None else round(g.power.energy * 1000)
        )

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any, out: Any) -> int:
        return self._gpu_value(handle, out, lambda g: self._milliwatts(g.power.limit))

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any, out: Any) -> int:
        return self._gpu_value(handle, out, lambda g: self._milliwatts(g.power.default_limit))

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any, low: Any, high: Any) -> int:
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        power = target[0].power
        if power.min_limit is None or power.max_limit is None:
            return NVML_ERROR_NOT_SUPPORTED
        _put(low, self._milliwatts(power.min_limit) or 0)
        _put(high, self._milliwatts(power.max_limit) or 0)
        return NVML_SUCCESS

    def nvmlDeviceGetFanSpeed(self, handle: Any, out: Any) -> int:
        return self._gpu_value(
            handle, out, lambda g: None if g.fan_speed is None else round(g.fan_speed)
        )

    def nvmlDeviceGetPerformanceState(self, handle: Any, out: Any) -> int:
        def pstate(g: GpuSample) -> int | None:
            text = g.performance_state
            if text is None:
                return None
            try:
                return int(text.lstrip("P"))
            except ValueError:
                return NVML_PSTATE_UNKNOWN

        return self._gpu_value(handle, out, pstate)

    # ----- clocks and modes ---------------------------------------------------------------

    @staticmethod
    def _clock(clocks: Any, kind: int) -> int | None:
        names = {
            pynvml.NVML_CLOCK_GRAPHICS: "graphics",
            pynvml.NVML_CLOCK_SM: "sm",
            pynvml.NVML_CLOCK_MEM: "memory",
            pynvml.NVML_CLOCK_VIDEO: "video",
        }
        name = names.get(kind)
        return None if name is None else getattr(clocks, name)

    def nvmlDeviceGetClockInfo(self, handle: Any, kind: Any, out: Any) -> int:
        return self._gpu_value(handle, out, lambda g: self._clock(g.clocks, int(kind.value)))

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, kind: Any, out: Any) -> int:
        return self._gpu_value(handle, out, lambda g: self._clock(g.max_clocks, int(kind.value)))

    def nvmlDeviceGetPersistenceMode(self, handle: Any, out: Any) -> int:
        return self._gpu_value(
            handle, out, lambda g: None if g.persistence_mode is None else int(g.persistence_mode)
        )

    def nvmlDeviceGetComputeMode(self, handle: Any, out: Any) -> int:
        return self._gpu_value(
            handle,
            out,
            lambda g: None if g.compute_mode is None else COMPUTE_MODE_CODES.get(g.compute_mode),
        )

    def nvmlDeviceGetEccMode(self, handle: Any, current: Any, pending: Any) -> int:
        status = self._gpu_value(
            handle, current, lambda g: None if g.ecc_mode is None else int(g.ecc_mode)
        )
        if status == pynvml.NVML_SUCCESS:
            _put(pending, _obj(current).value)
        return status

    def nvmlDeviceGetTotalEccErrors(
        self, handle: Any, error_type: Any, counter_type: Any, out: Any
    ) -> int:
        corrected = int(error_type.value) == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED
        volatile = int(counter_type.value) == pynvml.NVML_VOLATILE_ECC
        name = ("volatile_" if volatile else "aggregate_") + (
            "corrected" if corrected else "uncorrected"
        )
        return self._gpu_value(handle, out, lambda g: getattr(g.ecc_errors, name))

    def nvmlDeviceGetRemappedRows(
        self, handle: Any, correctable: Any, uncorrectable: Any, pending: Any, failure: Any
    ) -> int:
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        rows = target[0].remapped_rows
        values = (rows.correctable, rows.uncorrectable, rows.pending, rows.failure)
        if any(value is None for value in values):
            return NVML_ERROR_NOT_SUPPORTED
        for ref, value in zip((correctable, uncorrectable, pending, failure), values, strict=True):
            _put(ref, int(value or 0))
        return NVML_SUCCESS

    # ----- events -------------------------------------------------------------------------

    def nvmlEventSetCreate(self, out: Any) -> int:
        _put_handle(out, self.events.create())
        return NVML_SUCCESS

    def nvmlEventSetFree(self, event_set: Any) -> int:
        return (
            NVML_SUCCESS
            if self.events.free(_handle_value(event_set))
            else (NVML_ERROR_INVALID_ARGUMENT)
        )

    def nvmlDeviceGetSupportedEventTypes(self, handle: Any, out: Any) -> int:
        if self._target(handle) is None:
            return NVML_ERROR_INVALID_ARGUMENT
        _put(out, self.events.supported)
        return NVML_SUCCESS

    def nvmlDeviceRegisterEvents(self, handle: Any, types: Any, event_set: Any) -> int:
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        mask = int(types.value if isinstance(types, ctypes._SimpleCData) else types)
        if mask & ~self.events.supported:
            return NVML_ERROR_NOT_SUPPORTED
        gpu = _decode(_handle_value(handle))[0]
        if not self.events.register(_handle_value(event_set), gpu, mask):
            return NVML_ERROR_INVALID_ARGUMENT
        return NVML_SUCCESS

    def nvmlEventSetWait_v2(self, event_set: Any, out: Any, timeout: Any) -> int:
        millis = int(timeout.value if isinstance(timeout, ctypes._SimpleCData) else timeout)
        event = self.events.wait(_handle_value(event_set), millis / 1000)
        if event is None:
            return NVML_ERROR_TIMEOUT
        data = _obj(out)
        data.device = ctypes.cast(ctypes.c_void_p(_gpu_handle(event.gpu)), pynvml.c_nvmlDevice_t)
        data.eventType = event.type
        data.eventData = event.data
        data.gpuInstanceId = _U32_NONE if event.gi is None else event.gi
        data.computeInstanceId = _U32_NONE if event.ci is None else event.ci
        return NVML_SUCCESS

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any, out: Any) -> int:
        def mask(g: GpuSample) -> int | None:
            if g.throttle_reasons is None:
                return None
            return sum(THROTTLE_BITS.get(name, 0) for name in set(g.throttle_reasons))

        return self._gpu_value(handle, out, mask)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Any, out: Any) -> int:
        return self.nvmlDeviceGetCurrentClocksEventReasons(handle, out)

    # ----- MIG ----------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, handle: Any, current: Any, pending: Any) -> int:
        status = self._gpu_value(
            handle, current, lambda g: None if g.mig_mode is None else int(g.mig_mode)
        )
        if status == pynvml.NVML_SUCCESS:
            _put(pending, _obj(current).value)
        return status

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any, out: Any) -> int:
        return self._gpu_value(
            handle, out, lambda g: None if g.mig_mode is None else max(7, len(g.mig_devices))
        )

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, index: Any, out: Any) -> int:
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu = target[0]
        position = int(index.value)
        if not gpu.mig_mode:
            return NVML_ERROR_NOT_SUPPORTED
        if position >= len(gpu.mig_devices):
            return NVML_ERROR_NOT_FOUND
        index = gpu.index if gpu.index is not None else 0
        _put_handle(out, _mig_handle(index, position, self._mig_generation.get(index, 0)))
        return NVML_SUCCESS

    def _mig_value(self, handle: Any, out: Any, read: Callable[[MigDeviceSample], Any]) -> int:
        return self._value(
            handle,
            out,
            lambda g, m: None if m is None else read(m),
        )

    def nvmlDeviceGetGpuInstanceId(self, handle: Any, out: Any) -> int:
        return self._mig_value(handle, out, lambda m: m.gpu_instance_id)

    def nvmlDeviceGetComputeInstanceId(self, handle: Any, out: Any) -> int:
        return self._mig_value(handle, out, lambda m: m.compute_instance_id)

    def nvmlDeviceGetAttributes_v2(self, handle: Any, out: Any) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        mig = target[1]
        if mig is None or mig.sm_count is None:
            return NVML_ERROR_NOT_SUPPORTED
        attributes = _obj(out)
        gi_slices, ci_slices = _slices(mig.profile)
        attributes.multiprocessorCount = mig.sm_count
        attributes.gpuInstanceSliceCount = gi_slices
        attributes.computeInstanceSliceCount = ci_slices
        attributes.memorySizeMB = (mig.memory.total or 0) // MIB
        return NVML_SUCCESS

    def _instance(self, gpu: GpuSample, gi: int) -> MigDeviceSample | None:
        for device in gpu.mig_devices:
            if device.gpu_instance_id == gi:
                return device
        return None

    def nvmlDeviceGetGpuInstanceById(self, handle: Any, gi: Any, out: Any) -> int:
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu = target[0]
        wanted = int(gi.value if isinstance(gi, ctypes._SimpleCData) else gi)
        device = self._instance(gpu, wanted)
        if device is None:
            return NVML_ERROR_NOT_FOUND
        if device.profile is None or device.profile_derived:
            # What an unprivileged user gets; the profile is then worked out from SMs/memory.
            return NVML_ERROR_NO_PERMISSION
        _put_handle(out, _instance_handle(_decode(_handle_value(handle))[0], wanted))
        return NVML_SUCCESS

    def nvmlGpuInstanceGetInfo(self, instance: Any, out: Any) -> int:
        value = _handle_value(instance)
        gpu_index, _, gi = _decode(value)
        if gi is None:
            return NVML_ERROR_INVALID_ARGUMENT
        device = self._instance(self._gpu_sample(gpu_index), gi)
        name = _gi_profile_name(None if device is None else device.profile)
        if device is None or name is None:
            return NVML_ERROR_NOT_FOUND
        info = _obj(out)
        info.device = ctypes.cast(ctypes.c_void_p(_gpu_handle(gpu_index)), pynvml.c_nvmlDevice_t)
        info.id = gi
        info.profileId = self._profile_ids(self._gpu_sample(gpu_index))[name]
        return NVML_SUCCESS

    def _profile_ids(self, gpu: GpuSample) -> dict[str, int]:
        ids: dict[str, int] = {}
        for device in gpu.mig_devices:
            name = _gi_profile_name(device.profile)
            if name is not None and name not in ids:
                ids[name] = GPU_INSTANCE_PROFILE_IDS.get(name, 100 + len(ids))
        return ids

    def nvmlDeviceGetGpuInstanceProfileInfoV(self, handle: Any, profile: Any, out: Any) -> int:
        info = _obj(out)
        if info.version != pynvml.nvmlGpuInstanceProfileInfo_v2:
            return NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        entries = list(self._profile_ids(target[0]).items())
        position = int(profile.value if isinstance(profile, ctypes._SimpleCData) else profile)
        if position >= len(entries):
            return NVML_ERROR_NOT_SUPPORTED
        name, profile_id = entries[position]
        slices, _ = _slices(name)
        info.id = profile_id
        info.sliceCount = slices
        info.name = f"MIG {name}"
        return NVML_SUCCESS

    # ----- processes ----------------------------------------------------------------------

    def _process_list(self, handle: Any, count: Any, array: Any, kind: str) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu, mig = target
        processes: tuple[ProcessSample, ...] = gpu.processes if mig is None else mig.processes
        mps = self.faults.mps_pids
        if kind == "graphics":
            chosen = [p for p in processes if p.type in ("G", "C+G")]
        elif kind == "mps":
            chosen = [p for p in processes if p.type in ("C", "C+G") and p.pid in mps]
        else:
            chosen = [p for p in processes if p.type in ("C", "C+G") and p.pid not in mps]
        counter = _obj(count)
        if array is None:
            counter.value = len(chosen)
            return NVML_ERROR_INSUFFICIENT_SIZE if chosen else pynvml.NVML_SUCCESS
        if counter.value < len(chosen):
            counter.value = len(chosen)
            return NVML_ERROR_INSUFFICIENT_SIZE
        entries = _obj(array)
        has_instances = hasattr(type(entries[0]) if len(entries) else object, "gpuInstanceId")
        for slot, process in enumerate(chosen):
            entry = entries[slot]
            entry.pid = process.pid
            entry.usedGpuMemory = _U64_NONE if process.memory_used is None else process.memory_used
            if has_instances:
                entry.gpuInstanceId = (
                    _U32_NONE if process.gpu_instance_id is None else process.gpu_instance_id
                )
                entry.computeInstanceId = (
                    _U32_NONE
                    if process.compute_instance_id is None
                    else process.compute_instance_id
                )
        counter.value = len(chosen)
        return NVML_SUCCESS

    def nvmlDeviceGetComputeRunningProcesses_v3(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "compute")

    def nvmlDeviceGetComputeRunningProcesses_v2(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "compute")

    def nvmlDeviceGetComputeRunningProcesses(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "compute")

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "graphics")

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "graphics")

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "graphics")

    def nvmlDeviceGetMPSComputeRunningProcesses_v3(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "mps")

    def nvmlDeviceGetMPSComputeRunningProcesses_v2(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "mps")

    def nvmlDeviceGetMPSComputeRunningProcesses(self, h: Any, count: Any, array: Any) -> int:
        return self._process_list(h, count, array, "mps")

    def nvmlDeviceGetProcessUtilization(
        self, handle: Any, array: Any, count: Any, since: Any
    ) -> int:
        target = self._target(handle)
        if target is None:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu, mig = target
        if mig is not None or gpu.mig_mode:
            return NVML_ERROR_NOT_SUPPORTED
        gpu_index = _decode(_handle_value(handle))[0]
        # Samples are stamped with the GPU's tick, so each tick has newer ones.
        stamp = (self.tick_of(gpu_index) + 1) * 1_000_000
        after = int(since.value if isinstance(since, ctypes._SimpleCData) else since)
        samples = [p for p in gpu.processes if p.sm_utilization is not None]
        if not samples or stamp <= after:
            return NVML_ERROR_NOT_FOUND
        counter = _obj(count)
        if array is None:
            counter.value = len(samples)
            return NVML_ERROR_INSUFFICIENT_SIZE
        if counter.value < len(samples):
            counter.value = len(samples)
            return NVML_ERROR_INSUFFICIENT_SIZE
        entries = _obj(array)
        for slot, process in enumerate(samples):
            entry = entries[slot]
            entry.pid = process.pid
            entry.timeStamp = stamp
            entry.smUtil = round(process.sm_utilization or 0)
            entry.memUtil = 0
        counter.value = len(samples)
        return NVML_SUCCESS

    # ----- GPM ----------------------------------------------------------------------------

    def _gpm_supported(self, gpu: GpuSample) -> bool:
        """Hopper and later: the snapshot has a GPM value for the GPU or a MIG instance."""
        return any(d.utilization.gpu is not None for d in gpu.mig_devices) or any(
            value is not None for value in astuple(gpu.activity)
        )

    def nvmlGpmQueryDeviceSupport(self, handle: Any, out: Any) -> int:
        support = _obj(out)
        if support.version != pynvml.NVML_GPM_SUPPORT_VERSION:
            return NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        target = self._target(handle)
        if target is None or target[1] is not None:
            return NVML_ERROR_INVALID_ARGUMENT
        support.isSupportedDevice = int(self._gpm_supported(target[0]))
        return NVML_SUCCESS

    def nvmlGpmSampleAlloc(self, out: Any) -> int:
        with self._lock:
            self._gpm_next += 1
            value = _GPM_BASE + self._gpm_next
            self._gpm_live.add(value)
        _put_handle(out, value)
        return NVML_SUCCESS

    def nvmlGpmSampleFree(self, sample: Any) -> int:
        value = _handle_value(sample)
        with self._lock:
            if value not in self._gpm_live:
                return NVML_ERROR_INVALID_ARGUMENT
            self._gpm_live.discard(value)
            self._gpm_samples.pop(value, None)
        return NVML_SUCCESS

    def nvmlGpmSampleGet(self, handle: Any, sample: Any) -> int:
        target = self._target(handle)
        value = _handle_value(sample)
        if target is None or target[1] is not None or value not in self._gpm_live:
            return NVML_ERROR_INVALID_ARGUMENT
        if not self._gpm_supported(target[0]):
            return NVML_ERROR_NOT_SUPPORTED
        gpu_index = _decode(_handle_value(handle))[0]
        with self._lock:
            self._gpm_samples[value] = (gpu_index, _WHOLE_GPU, self.tick_of(gpu_index))
        return NVML_SUCCESS

    def nvmlGpmMigSampleGet(self, handle: Any, gi: Any, sample: Any) -> int:
        target = self._target(handle)
        value = _handle_value(sample)
        if target is None or target[1] is not None or value not in self._gpm_live:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu = target[0]
        wanted = int(gi.value if isinstance(gi, ctypes._SimpleCData) else gi)
        if not self._gpm_supported(gpu):
            return NVML_ERROR_NOT_SUPPORTED
        if self._instance(gpu, wanted) is None:
            return NVML_ERROR_NOT_FOUND
        gpu_index = _decode(_handle_value(handle))[0]
        with self._lock:
            self._gpm_samples[value] = (gpu_index, wanted, self.tick_of(gpu_index))
        return NVML_SUCCESS

    def nvmlGpmMetricsGet(self, request_ref: Any) -> int:
        request = _obj(request_ref)
        if request.version != pynvml.NVML_GPM_METRICS_GET_VERSION:
            return NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        first = self._gpm_samples.get(_handle_value(request.sample1))
        second = self._gpm_samples.get(_handle_value(request.sample2))
        if first is None or second is None or first[:2] != second[:2] or first[2] >= second[2]:
            return NVML_ERROR_INVALID_ARGUMENT
        gpu_index, gi, tick = second
        snapshot = self.snapshots[min(tick, len(self.snapshots) - 1)]
        if gi == _WHOLE_GPU:
            # The window's values are those of the snapshot at its end.
            return _gpu_metrics(request, snapshot.gpus[gpu_index])
        device = self._instance(snapshot.gpus[gpu_index], gi)
        if device is None:
            return NVML_ERROR_NOT_FOUND
        for slot in range(request.numMetrics):
            metric = request.metrics[slot]
            value: float | None = None
            if metric.metricId == pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL:
                value = device.utilization.gpu
            elif metric.metricId == pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL:
                value = device.utilization.memory
            if value is None:
                metric.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
            else:
                metric.nvmlReturn = pynvml.NVML_SUCCESS
                metric.value = value
        return NVML_SUCCESS


GPU_GPM_METRICS: dict[int, tuple[str, float]] = {
    pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL: ("graphics", 1.0),
    pynvml.NVML_GPM_METRIC_SM_UTIL: ("sm", 1.0),
    pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: ("sm_occupancy", 1.0),
    pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: ("tensor", 1.0),
    pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: ("dram", 1.0),
    pynvml.NVML_GPM_METRIC_PCIE_TX_PER_SEC: ("pcie_tx", 1 / MIB),
    pynvml.NVML_GPM_METRIC_PCIE_RX_PER_SEC: ("pcie_rx", 1 / MIB),
    pynvml.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: ("nvlink_tx", 1 / MIB),
    pynvml.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: ("nvlink_rx", 1 / MIB),
}
"""A whole GPU's GPM metric id -> its ``Activity`` attribute and the factor to NVML's unit
(percent, or MiB/s where the model holds bytes/s)."""


def _gpu_metrics(request: Any, gpu: GpuSample) -> int:
    """Fill a metrics request from the GPU's ``activity``; a None value (or a metric the
    snapshot has no attribute for) is that metric's NOT_SUPPORTED, as NVML answers per metric."""
    for slot in range(request.numMetrics):
        metric = request.metrics[slot]
        known = GPU_GPM_METRICS.get(metric.metricId)
        value = None if known is None else getattr(gpu.activity, known[0])
        if value is None or known is None:
            metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
        else:
            metric.nvmlReturn = NVML_SUCCESS
            metric.value = value * known[1]
    return NVML_SUCCESS
