"""Live snapshots from NVML: the only module that imports pynvml (package nvidia-ml-py).

:func:`open_nvml_source` loads and initialises NVML and turns each way that can fail into one
clear line (no library, driver not loaded, no GPU, no permission, version mismatch) that also
says how to try gputop without a GPU. :class:`NvmlSource` takes the NVML module as an argument,
so tests hand it the real pynvml sitting on a fake NVML library.

Each GPU is sampled by its own daemon thread and each :meth:`NvmlSource.poll` waits at most
``deadline`` seconds: a driver call that hangs makes its GPU *stale* (the previous sample,
``stale=True``) while the other GPUs go on, and a hung thread never blocks interpreter exit.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from gputop.errors import GputopError, NoDriver, NoPermission
from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.sources.nvml_api import NvmlApi
from gputop.sources.nvml_calls import ErrorCodes
from gputop.sources.nvml_codes import cuda_version
from gputop.sources.nvml_device import SLOW_REFRESH, GpuSampler
from gputop.sources.nvml_processes import ProcessNames

if TYPE_CHECKING:
    from gputop.sources.procinfo import HostFields

BUNDLED_CAPTURE = "snapshots/rtx3090x4-procs-v12.xml"
"""A real capture shipped with gputop, relative to the repository root."""
BUNDLED_CAPTURE_HINT = f"gputop --replay {BUNDLED_CAPTURE}"
"""The command that shows gputop working on any machine, GPU or not."""
DEFAULT_DEADLINE = 2.0
"""Seconds one poll waits for a GPU before reporting it stale."""

Enrich = Callable[[tuple[ProcessSample, ...]], tuple[ProcessSample, ...]]
"""Adds host facts (user, command, CPU, PID namespace) to driver-reported processes."""


@runtime_checkable
class HostLookup(Protocol):
    """An enricher that answers per PID (``ProcessEnricher``): cheaper than :data:`Enrich`,
    since each row is then rebuilt once, not once by the enricher and again by the merge."""

    def host_fields(self, pids: Iterable[int]) -> Mapping[int, HostFields]:
        """Host fields for each distinct PID."""
        ...


_PACKAGED_CAPTURE = Path(__file__).resolve().parent.parent / "data" / Path(BUNDLED_CAPTURE).name
"""The same capture installed with the package, for when gputop runs outside the repository."""


def _replay_command() -> str:
    if Path(BUNDLED_CAPTURE).is_file() or not _PACKAGED_CAPTURE.is_file():
        return BUNDLED_CAPTURE_HINT
    return f"gputop --replay {_PACKAGED_CAPTURE}"


_REPLAY_HINT = f"--replay works anywhere, e.g. `{_replay_command()}`"


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
) -> NvmlSource:
    """Load and initialise NVML and return a source over every GPU it sees.

    Args:
        deadline: seconds each poll waits for a GPU before reporting it stale; None samples
            the GPUs one after the other on the calling thread, with no bound.
        enrich: adds host process details; see :data:`Enrich`.
        nvml: the pynvml module to use (imported when None).

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
        return NvmlSource(api, deadline=deadline, enrich=enrich, shutdown_on_close=True)
    except (api.NVMLError, api.NVMLLibraryMismatchError) as error:
        _shutdown(api)
        raise describe_init_failure(api, error) from None
    except GputopError:
        _shutdown(api)
        raise


def _shutdown(nvml: NvmlApi) -> None:
    with contextlib.suppress(nvml.NVMLError):
        nvml.nvmlShutdown()


@dataclass(frozen=True, slots=True)
class _Result:
    """A GPU's sample (or the exception its sampling raised) for one poll."""

    index: int
    round: int
    sample: GpuSample | None
    error: BaseException | None


class _GpuWorker:
    """A daemon thread that samples one GPU whenever asked.

    Requests and results go through C-level ``SimpleQueue``s: a tick costs two queue
    operations per GPU, not a Future and its condition variables.
    """

    def __init__(self, sampler: GpuSampler, results: queue.SimpleQueue[_Result]) -> None:
        self._sampler = sampler
        self._results = results
        self._jobs: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self.busy = False
        """Asked and not answered yet (possibly hung inside NVML)."""
        self._thread = threading.Thread(
            target=self._run, name=f"gputop-nvml-gpu{sampler.index}", daemon=True
        )
        self._thread.start()

    def submit(self, round_id: int) -> None:
        self.busy = True
        self._jobs.put(round_id)

    def stop(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        index = self._sampler.index
        while (round_id := self._jobs.get()) is not None:
            try:
                sample = self._sampler.sample()
            except BaseException as error:  # handed to the polling thread, which re-raises
                self._results.put(_Result(index, round_id, None, error))
            else:
                self._results.put(_Result(index, round_id, sample, None))


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
        clock: monotonic seconds, for that cadence (tests pass a fake one).
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
    ) -> None:
        self._nvml = nvml
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
            GpuSampler(nvml, codes, i, self._names, slow_refresh=slow_refresh, clock=clock)
            for i in range(self._count)
        ]
        self._results: queue.SimpleQueue[_Result] = queue.SimpleQueue()
        self._round = 0
        self._last: dict[int, GpuSample] = {}
        self._workers = (
            [_GpuWorker(s, self._results) for s in self._samplers] if deadline is not None else None
        )

    @property
    def gpu_count(self) -> int:
        """How many GPUs NVML reported at start."""
        return self._count

    def poll(self) -> Snapshot:
        """Sample every GPU; one that does not finish within the deadline is reported stale."""
        if self._closed:
            raise RuntimeError("poll() on a closed NvmlSource")
        taken = datetime.now()
        if self._workers is None:
            gpus = [sampler.sample() for sampler in self._samplers]
        else:
            gpus = self._sample_threaded(self._workers)
        for gpu in gpus:
            if not gpu.stale:
                self._last[gpu.index] = gpu
        self._names.keep_only({p.pid for gpu in gpus for p in gpu.processes})
        if self._enrich is not None:
            gpus = self._enrich(gpus)
        return Snapshot(
            timestamp=taken,
            gpus=tuple(gpus),
            host=self._host,
            driver_version=self._driver,
            cuda_version=self._cuda,
            attached_gpus=self._count,
        )

    def _sample_threaded(self, workers: list[_GpuWorker]) -> list[GpuSample]:
        self._round += 1
        current = self._round
        # Answers that overran an earlier deadline: keep what they read.
        while True:
            try:
                self._take(self._results.get_nowait(), current)
            except queue.Empty:
                break
        waiting = set()
        for worker, sampler in zip(workers, self._samplers, strict=True):
            if not worker.busy:
                worker.submit(current)
                waiting.add(sampler.index)
        fresh: dict[int, GpuSample] = {}
        assert self._deadline is not None
        end = time.monotonic() + self._deadline
        while waiting:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                result = self._results.get(timeout=left)
            except queue.Empty:
                break
            sample = self._take(result, current)
            if sample is not None:
                fresh[result.index] = sample
                waiting.discard(result.index)
        return [
            fresh.get(i) or replace(self._last.get(i) or GpuSample(index=i), stale=True)
            for i in range(len(workers))
        ]

    def _take(self, result: _Result, current: int) -> GpuSample | None:
        """Book a worker's answer; returns it when it belongs to this poll."""
        assert self._workers is not None
        self._workers[result.index].busy = False
        if result.error is not None:
            raise result.error
        assert result.sample is not None
        if result.round == current:
            return result.sample
        self._last[result.index] = result.sample
        return None

    def close(self) -> None:
        """Stop the sampling threads and release NVML (unless a call is still hung in it)."""
        if self._closed:
            return
        self._closed = True
        workers = self._workers or []
        for worker in workers:
            worker.stop()
        while True:  # answers that came in after the last poll's deadline
            try:
                workers[self._results.get_nowait().index].busy = False
            except queue.Empty:
                break
        if any(worker.busy for worker in workers):
            # Freeing or shutting down under a thread still inside NVML is asking for a crash;
            # the process is about to let go of NVML anyway.
            return
        for sampler in self._samplers:
            for buffer in sampler.gpm_samples:
                with contextlib.suppress(self._nvml.NVMLError):
                    self._nvml.nvmlGpmSampleFree(buffer)
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


_HOST_FIELDS = (
    "user",
    "command",
    "cpu_percent",
    "host_memory",
    "start_time",
    "foreign",
    "local_pid",
)


def _changes(host: object) -> tuple[dict[str, Any], str | None]:
    """The changes for a PID from a HostLookup's fields or a plain Enrich's row."""
    if isinstance(host, ProcessSample):
        return {name: getattr(host, name) for name in _HOST_FIELDS}, host.name
    fields = cast("HostFields", host)
    return fields.row_changes(), None if fields.foreign else fields.name


class _Enrichment:
    """Merges host facts into every GPU's and MIG device's process rows, once per tick.

    A row the driver side left unchanged (the same object as last tick, see
    ``nvml_processes.ProcessRows``) whose host facts are also unchanged is last tick's merged
    row again: no rebuilding for processes that hold still (foreign ones, above all).
    """

    def __init__(self, enrich: Enrich | HostLookup) -> None:
        self._enrich = enrich
        self._lookup = enrich if isinstance(enrich, HostLookup) else None
        self._last: dict[int, tuple[ProcessSample, object, ProcessSample]] = {}
        """id(driver row) -> (driver row, host facts, merged row), for last tick's rows."""

    def __call__(self, gpus: list[GpuSample]) -> list[GpuSample]:
        pids: dict[int, ProcessSample] = {}
        for gpu in gpus:
            for process in gpu.processes:
                pids.setdefault(process.pid, process)
        # Called on idle ticks too, so the enricher can drop what it cached for exited PIDs.
        facts: Mapping[int, object]
        if self._lookup is not None:
            facts = self._lookup.host_fields(pids)
        else:
            enrich: Any = self._enrich
            facts = {host.pid: host for host in enrich(tuple(pids.values()))}
        last = self._last
        merged_now: dict[int, tuple[ProcessSample, object, ProcessSample]] = {}
        built: dict[int, tuple[dict[str, Any], str | None]] = {}

        def merge(process: ProcessSample) -> ProcessSample:
            host = facts.get(process.pid)
            if host is None:
                return process
            key = id(process)
            seen = last.get(key)
            if seen is not None and seen[0] is process and (seen[1] is host or seen[1] == host):
                merged = seen[2]
            else:
                wanted = built.get(process.pid)
                if wanted is None:
                    wanted = built[process.pid] = _changes(host)
                update, name = wanted
                if process.name is None and name is not None:
                    merged = replace(process, name=name, **update)
                else:
                    merged = replace(process, **update)
            # The entry holds the driver row, so its id names no other object meanwhile.
            merged_now[key] = (process, host, merged)
            return merged

        out: list[GpuSample] = []
        for gpu in gpus:
            if not gpu.processes:
                out.append(gpu)
                continue
            rows = tuple(merge(process) for process in gpu.processes)
            # A MIG device lists the very objects its GPU lists: each row is merged once.
            devices = tuple(
                replace(
                    device, processes=tuple(_merged(merged_now, p, merge) for p in device.processes)
                )
                if device.processes
                else device
                for device in gpu.mig_devices
            )
            out.append(replace(gpu, processes=rows, mig_devices=devices))
        self._last = merged_now
        return out


def _merged(
    done: dict[int, tuple[ProcessSample, object, ProcessSample]],
    process: ProcessSample,
    merge: Callable[[ProcessSample], ProcessSample],
) -> ProcessSample:
    seen = done.get(id(process))
    return seen[2] if seen is not None and seen[0] is process else merge(process)
