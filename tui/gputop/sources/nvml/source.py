"""Live snapshots from NVML: the only module that imports pynvml (package nvidia-ml-py).

:func:`open_nvml_source` loads and initialises NVML and turns each way that can fail into one
clear line (no library, driver not loaded, no GPU, no permission, version mismatch) that also
says how to try gputop without a GPU. :class:`NvmlSource` takes the NVML module as an argument,
so tests hand it the real pynvml sitting on a fake NVML library.

GPUs are sampled on daemon threads (:mod:`gputop.sources.nvml.pool`) and each
:meth:`NvmlSource.poll` waits at most ``deadline`` seconds: a driver call that hangs makes its
GPU *stale* (the previous sample, ``stale=True``) while the other GPUs go on, and a hung thread
never blocks interpreter exit.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, replace
from datetime import datetime
from operator import attrgetter
from types import ModuleType
from typing import Any, NamedTuple, Protocol, TypeVar, cast, runtime_checkable

from gputop.errors import GputopError, NoDriver, NoPermission
from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Snapshot
from gputop.model.fields import host_facts
from gputop.sources.nvml.api import NvmlApi
from gputop.sources.nvml.calls import ErrorCodes, same_objects
from gputop.sources.nvml.codes import cuda_version
from gputop.sources.nvml.device import SLOW_REFRESH, GpuSampler, Shown
from gputop.sources.nvml.events import EventWatcher, LostWatch, WatchedGpu, start_watcher
from gputop.sources.nvml.gpm import GpmCadence
from gputop.sources.nvml.pool import SamplerPool
from gputop.sources.nvml.prices import ENERGY_REFRESH
from gputop.sources.nvml.processes import ProcessNames

BUNDLED_CAPTURE_HINT = "gputop --demo"
"""The command that shows gputop working on any machine, GPU or not, from any directory: it
replays a capture installed with the package."""
DEFAULT_DEADLINE = 2.0
"""Seconds one poll waits for a GPU before reporting it stale."""

Enrich = Callable[[tuple[ProcessSample, ...]], tuple[ProcessSample, ...]]
"""Adds host facts (user, command, CPU, PID namespace) to driver-reported processes."""


@runtime_checkable
class HostLookup(Protocol):
    """An enricher that answers per PID (``ProcessEnricher``): cheaper than :data:`Enrich`,
    since each row is then rebuilt once, not once by the enricher and again by the merge."""

    def host_fields(self, pids: Iterable[int]) -> Mapping[int, ProcessSample]:
        """Host fields for each distinct PID."""
        ...


_REPLAY_HINT = (
    f"`{BUNDLED_CAPTURE_HINT}` replays a recorded 4-GPU box, and --replay FILE plays any "
    "`nvidia-smi -q -x` capture"
)


def _with_hint(text: str) -> str:
    return f"{text}; {_REPLAY_HINT}"


MESSAGE_NO_PACKAGE = _with_hint(
    "the nvidia-ml-py package (pynvml) is not installed: `pip install nvidia-ml-py`"
)
MESSAGE_NO_LIBRARY = _with_hint(
    "NVML library not found (libnvidia-ml.so.1 / nvml.dll): no NVIDIA driver is installed here"
)
MESSAGE_DRIVER_NOT_LOADED = _with_hint(
    "NVIDIA driver not loaded: NVML is installed but the nvidia kernel module is not running "
    "(check `nvidia-smi`, or reboot)"
)
MESSAGE_NO_GPU = _with_hint("no NVIDIA GPU found: the driver is loaded but reports 0 devices")
MESSAGE_NO_PERMISSION = _with_hint(
    "no permission to use NVML: this user cannot open the /dev/nvidia* devices "
    "(check their permissions, or the container's GPU access)"
)
MESSAGE_VERSION_MISMATCH = _with_hint(
    "NVML library/driver version mismatch: the driver was updated but the old kernel module is "
    "still loaded (reboot, or reload the nvidia module)"
)


def describe_init_failure(nvml: NvmlApi, error: BaseException) -> GputopError:
    """The user-facing error for an NVML start-up failure."""
    if isinstance(error, nvml.NVMLLibraryMismatchError):
        return NoDriver(MESSAGE_VERSION_MISMATCH)
    code = getattr(error, "value", None)
    if code == nvml.NVML_ERROR_LIBRARY_NOT_FOUND:
        return NoDriver(MESSAGE_NO_LIBRARY)
    if code == nvml.NVML_ERROR_DRIVER_NOT_LOADED:
        return NoDriver(MESSAGE_DRIVER_NOT_LOADED)
    if code == nvml.NVML_ERROR_NO_PERMISSION:
        return NoPermission(MESSAGE_NO_PERMISSION)
    if code == nvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return NoDriver(MESSAGE_VERSION_MISMATCH)
    return NoDriver(_with_hint(f"NVML failed to start: {error}"))


def _import_pynvml() -> NvmlApi:
    try:
        # Deferred: a missing nvidia-ml-py is NoDriver's one line, not an ImportError.
        import pynvml  # noqa: TID251 -- this module is the one place NVML is imported
    except ImportError:
        raise NoDriver(MESSAGE_NO_PACKAGE) from None
    module: ModuleType = pynvml
    api: NvmlApi = module
    return api


def open_nvml_source(
    *,
    deadline: float | None = DEFAULT_DEADLINE,
    enrich: Enrich | HostLookup | None = None,
    nvml: NvmlApi | None = None,
    seldom: frozenset[str] = frozenset(),
    events: bool = True,
    gpm_cadence: GpmCadence | None = None,
    shown: Shown | None = None,
    mig_shown: Callable[[], bool] | None = None,
) -> NvmlSource:
    """Load and initialise NVML and return a source over every GPU it sees.

    Args:
        deadline: seconds each poll waits for a GPU before reporting it stale; None samples
            the GPUs one after the other on the calling thread, with no bound.
        enrich: adds host process details; see :data:`Enrich`.
        nvml: the pynvml module to use (imported when None).
        seldom, shown, mig_shown: see :class:`NvmlSource`.
        events: watch the GPUs' health events (XID errors, ...) on a thread of their own.
        gpm_cadence: see :class:`NvmlSource`.

    Raises:
        NoDriver: no NVML library, driver not loaded, no GPU, or a version mismatch.
        NoPermission: this user may not open the GPU devices.
    """
    api = nvml if nvml is not None else _import_pynvml()
    try:
        api.nvmlInit()
    except (api.NVMLError, api.NVMLLibraryMismatchError) as error:
        raise describe_init_failure(api, error) from None
    try:
        count = api.nvmlDeviceGetCount()
        if count == 0:
            raise NoDriver(MESSAGE_NO_GPU)
        return NvmlSource(
            api,
            deadline=deadline,
            enrich=enrich,
            shutdown_on_close=True,
            seldom=seldom,
            events=events,
            gpm_cadence=gpm_cadence,
            shown=shown,
            mig_shown=mig_shown,
        )
    except (api.NVMLError, api.NVMLLibraryMismatchError) as error:
        _shutdown(api)
        raise describe_init_failure(api, error) from None
    except GputopError:
        _shutdown(api)
        raise


def _shutdown(nvml: NvmlApi) -> None:
    with contextlib.suppress(nvml.NVMLError):
        nvml.nvmlShutdown()


class NvmlSource:
    """A :class:`gputop.sources.base.Source` reading every GPU through NVML.

    Args:
        nvml: an initialised pynvml module (or anything with :class:`NvmlApi`'s shape).
        deadline: seconds each poll waits for a GPU before reporting it stale; None samples
            inline on the polling thread (no threads, no bound: for tests and benchmarks).
        enrich: called once per tick with every distinct process (first occurrence per PID);
            what it returns is merged back into every GPU's and MIG device's process list.
            A :class:`HostLookup` (``ProcessEnricher``) is asked by PID instead.
        host: the name put in each snapshot; this machine's host name when None.
        shutdown_on_close: call ``nvmlShutdown`` on close (when this source initialised NVML).
        slow_refresh: seconds between re-reads of values that change rarely (modes, ECC
            counters, power limit, BAR1, MIG layout); 0 reads everything every tick.
        clock: monotonic seconds, for the cadences (tests pass a fake one).
        seldom: field paths that nothing of the run shows or writes: the graphics and video
            clocks are then read with the slow values, per-process utilization
            (``processes.sm_utilization``) and MIG activity (``mig_devices.utilization``)
            not at all (see :mod:`gputop.sources.nvml.prices`).
        energy_refresh: seconds between reads of the total energy counter.
        shown: the PIDs a view shows now (None from it: all); per-process utilization is
            read only for the GPUs that run one of them.
        mig_shown: whether a view shows MIG instances' activity now; GPM is read only then.
        events: watch health events (:mod:`gputop.sources.nvml.events`); each poll's
            snapshot carries those that arrived since the previous one.
        gpm_cadence: how often GPM's metrics (activity, MIG instances' utilization) are
            worked out; None: every tick.
    """

    def __init__(
        self,
        nvml: NvmlApi,
        *,
        deadline: float | None = DEFAULT_DEADLINE,
        enrich: Enrich | HostLookup | None = None,
        host: str | None = None,
        shutdown_on_close: bool = False,
        slow_refresh: float = SLOW_REFRESH,
        clock: Callable[[], float] = time.monotonic,
        seldom: frozenset[str] = frozenset(),
        energy_refresh: float = ENERGY_REFRESH,
        shown: Shown | None = None,
        mig_shown: Callable[[], bool] | None = None,
        events: bool = False,
        gpm_cadence: GpmCadence | None = None,
    ) -> None:
        self._nvml = nvml
        cadence = GpmCadence() if gpm_cadence is None else gpm_cadence
        self._deadline = deadline
        self._enrich = None if enrich is None else _Enrichment(enrich)
        self._shutdown_on_close = shutdown_on_close
        self._closed = False
        self._host = host if host is not None else socket.gethostname()
        self._count = int(nvml.nvmlDeviceGetCount())
        self._driver = _system_text(nvml, nvml.nvmlSystemGetDriverVersion)
        cuda = _system_value(nvml, nvml.nvmlSystemGetCudaDriverVersion)
        self._cuda = None if cuda is None else cuda_version(int(cuda))
        self._names = ProcessNames(nvml, wait=None if deadline is None else min(0.1, deadline))
        codes = ErrorCodes(nvml)
        self._samplers = [
            GpuSampler(
                nvml,
                codes,
                i,
                self._names,
                slow_refresh=slow_refresh,
                clock=clock,
                seldom=seldom,
                gpm_cadence=cadence,
                energy_refresh=energy_refresh,
                shown=shown,
                mig_shown=mig_shown,
            )
            for i in range(self._count)
        ]
        self._pool = None if deadline is None else SamplerPool(self._samplers, deadline)
        self._rows: list[tuple[ProcessSample, ...]] = []
        """Last poll's process rows per GPU."""
        self._watch_events = events
        self._events: EventWatcher | None = None
        """Started at the second poll, over the handles the samplers opened: it makes no
        call of its own on a GPU but registering it, and a one-shot run (``--once``) that
        polls once never starts it nor waits for it to stop."""
        self._polls = 0
        self._lost = LostWatch()

    def poll(self) -> Snapshot:
        """Sample every GPU; one that does not finish within the deadline is reported stale."""
        if self._closed:
            raise RuntimeError("poll() on a closed NvmlSource")
        taken = datetime.now()
        if self._pool is None:
            gpus = [sampler.sample() for sampler in self._samplers]
        else:
            gpus = [self._identified(gpu) for gpu in self._pool.sample()]
        rows = [gpu.processes for gpu in gpus]
        if not same_objects(rows, self._rows):  # the same tuples hold the same PIDs
            self._names.keep_only({p.pid for listed in rows for p in listed})
            self._rows = rows
        if self._enrich is not None:
            gpus = self._enrich(gpus)
        self._polls += 1
        if self._events is not None:
            events = self._events.drain()
        else:
            events = ()
            if self._watch_events and self._polls >= 2:
                self._events = start_watcher(self._nvml, self._watched())
        return Snapshot(
            timestamp=taken,
            gpus=tuple(gpus),
            host=self._host,
            driver_version=self._driver,
            cuda_version=self._cuda,
            attached_gpus=self._count,
            events=events + self._lost.events(gpus),
        )

    def _watched(self) -> list[WatchedGpu]:
        """Each GPU whose sampler holds its handle, for the event watcher."""
        watched = []
        for sampler in self._samplers:
            handle = sampler.handle
            if handle is not None:
                identity = sampler.identity
                watched.append(
                    WatchedGpu(sampler.index, handle, None if identity is None else identity.uuid)
                )
        return watched

    def _identified(self, gpu: GpuSample) -> GpuSample:
        """A stale GPU with no sample yet, under its UUID when its sampler has read it.

        A first sample slower than the deadline leaves only the GPU's index; when its UUID
        came later, the views took the two for two GPUs, one of them gone.
        """
        if not gpu.stale or gpu.uuid is not None:
            return gpu
        identity = self._samplers[gpu.index].identity
        return gpu if identity is None else replace(identity, stale=True)

    def close(self) -> None:
        """Stop the sampling threads and release NVML (unless a call is still hung in it)."""
        if self._closed:
            return
        self._closed = True
        if self._events is not None:
            self._events.close()
        if self._pool is not None and not self._pool.close():
            # Freeing or shutting down under a thread still inside NVML is asking for a crash;
            # the process is about to let go of NVML anyway.
            return
        for sampler in self._samplers:
            sampler.free_gpm()
        if self._shutdown_on_close:
            _shutdown(self._nvml)

    def __enter__(self) -> NvmlSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _system_value(nvml: NvmlApi, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except (nvml.NVMLError, nvml.NVMLLibraryMismatchError):
        return None


def _system_text(nvml: NvmlApi, fn: Callable[[], Any]) -> str | None:
    value = _system_value(nvml, fn)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return str(value) if value else None


def _changes(host: ProcessSample) -> tuple[dict[str, Any], str | None]:
    """The changes for a PID from its host facts (a HostLookup's or a plain Enrich's row)."""
    return host_facts(host), host.name


_D = TypeVar("_D")


def _rebuilder(cls: type[_D], *changed: str) -> Callable[..., _D]:
    """A fast ``dataclasses.replace(obj, **{changed[i]: values[i]})`` for a dataclass whose
    fields are all positional: one C-level read of every field and a positional call, not
    replace's walk over the fields (about half the time for a GpuSample)."""
    declared = fields(cast("Any", cls))
    if any(not f.init or f.kw_only for f in declared):
        raise TypeError(f"{cls.__name__} has fields that cannot be passed by position")
    names = [f.name for f in declared]
    read = attrgetter(*names)
    positions = [names.index(name) for name in changed]

    def rebuild(obj: _D, *values: object) -> _D:
        args = list(read(obj))
        for position, value in zip(positions, values, strict=True):
            args[position] = value
        return cls(*args)

    return rebuild


_with_rows = _rebuilder(MigDeviceSample, "processes")
_with_rows_and_devices = _rebuilder(GpuSample, "processes", "mig_devices")


_Known = dict[int, tuple[ProcessSample, object, ProcessSample]]
"""id(driver row) -> (driver row, host facts, merged row), from last tick's merge."""


def _known(old: _Merged | None) -> _Known:
    if old is None:
        return {}
    return {
        id(row): (row, host, merged)
        for row, host, merged in zip(old.rows, old.hosts, old.merged, strict=True)
    }


class _Merged(NamedTuple):
    """Driver rows of a GPU or MIG device, their host facts, and the merged rows."""

    rows: tuple[ProcessSample, ...]
    hosts: list[ProcessSample | None]
    merged: tuple[ProcessSample, ...]


class _Enrichment:
    """Merges host facts into every GPU's and MIG device's process rows, once per tick.

    Works from last tick's merge of the same GPU (or MIG device): driver rows that are last
    tick's tuple (see ``nvml_processes.ProcessRows``) with the same host facts are last
    tick's merged tuple again; otherwise a row that is last tick's object whose host facts
    are unchanged is last tick's merged row again. Processes that hold still (foreign ones,
    above all) cost no rebuilding, and a MIG device lists the very rows its GPU lists.
    """

    def __init__(self, enrich: Enrich | HostLookup) -> None:
        self._enrich = enrich
        self._lookup = enrich if isinstance(enrich, HostLookup) else None
        self._last: dict[tuple[int, int], _Merged] = {}
        """(GPU index, MIG device position or -1 for the GPU) -> last tick's merge."""

    def __call__(self, gpus: list[GpuSample]) -> list[GpuSample]:
        pids: dict[int, ProcessSample] = {}
        for gpu in gpus:
            for process in gpu.processes:
                pids.setdefault(process.pid, process)
        # Called on idle ticks too, so the enricher can drop what it cached for exited PIDs.
        facts: Mapping[int, ProcessSample]
        if self._lookup is not None:
            facts = self._lookup.host_fields(pids)
        else:
            enrich: Any = self._enrich
            facts = {host.pid: host for host in enrich(tuple(pids.values()))}
        last = self._last
        now: dict[tuple[int, int], _Merged] = {}
        built: dict[int, tuple[dict[str, Any], str | None]] = {}

        def merge(
            process: ProcessSample, host: ProcessSample | None, before: _Known
        ) -> ProcessSample:
            if host is None:
                return process
            seen = before.get(id(process))
            if seen is not None and seen[0] is process and (seen[1] is host or seen[1] == host):
                return seen[2]
            wanted = built.get(process.pid)
            if wanted is None:
                wanted = built[process.pid] = _changes(host)
            update, name = wanted
            if process.name is None and name is not None:
                return replace(process, name=name, **update)
            return replace(process, **update)

        def device_rows(
            key: tuple[int, int], rows: tuple[ProcessSample, ...], gpu: _Merged, same_gpu: bool
        ) -> tuple[ProcessSample, ...]:
            """A MIG device lists some of its GPU's rows: the same merged objects."""
            old = last.get(key)
            if old is None or old.rows is not rows or not same_gpu:
                of_gpu = {id(row): done for row, done in zip(gpu.rows, gpu.merged, strict=True)}
                merged = tuple(
                    of_gpu.get(id(row)) or merge(row, facts.get(row.pid), {}) for row in rows
                )
                if old is not None and same_objects(merged, old.merged):
                    merged = old.merged
                old = _Merged(rows, [], merged)
            now[key] = old
            return old.merged

        out: list[GpuSample] = []
        for gpu in gpus:
            rows = gpu.processes
            if not rows:
                out.append(gpu)
                continue
            key = (gpu.index, -1)
            hosts = [facts.get(process.pid) for process in rows]
            old = last.get(key)
            same = old is not None and old.rows is rows and same_objects(hosts, old.hosts)
            if old is not None and same:
                entry = old
            else:
                known = _known(old)
                merged = tuple(
                    merge(process, host, known) for process, host in zip(rows, hosts, strict=True)
                )
                if old is not None and same_objects(merged, old.merged):
                    merged = old.merged
                entry = _Merged(rows, hosts, merged)
            now[key] = entry
            devices = tuple(
                _with_rows(device, device_rows((gpu.index, at), device.processes, entry, same))
                if device.processes
                else device
                for at, device in enumerate(gpu.mig_devices)
            )
            out.append(_with_rows_and_devices(gpu, entry.merged, devices))
        self._last = now
        return out
