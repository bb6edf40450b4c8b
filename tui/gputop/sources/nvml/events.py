"""NVML's health events (XID errors and the like), watched on a thread of their own.

:class:`EventWatcher` registers every GPU for the event types that mean trouble (critical
XID errors above all; double-bit ECC, ECC storms, page retirement and its failure, poison
errors, a GPU gone unavailable, a recovery action the driver asks for), each as far as the
GPU supports it (``nvmlDeviceGetSupportedEventTypes``), then waits for them with
``nvmlEventSetWait_v2`` and a timeout, so that :meth:`EventWatcher.close` is answered within
one timeout. Each event is rated from the XID table (:mod:`gputop.model.health`) and queued;
the source drains the queue on each poll into ``Snapshot.events``, so events travel with the
snapshots (ARCHITECTURE.md, "Health events") and nothing else crosses threads.

A driver or library without events (an old pynvml, a vGPU guest, the C fake of the
benchmarks) leaves the watcher idle with a :attr:`EventWatcher.status` that says why.
"""

from __future__ import annotations

import ctypes
import threading
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol, cast

from gputop.model.health import HealthEvent, Kind, kind_event, xid_event
from gputop.sources.nvml.api import Handle, NvmlApi

WAIT_MS = 500
"""How long one wait lasts: the longest :meth:`EventWatcher.close` waits for the thread."""
MAX_QUEUED = 10_000
"""Events kept between two polls at most (a storm of XIDs while nothing polls)."""
_NO_INSTANCE = 0xFFFFFFFF

_EVENT_KINDS: tuple[tuple[str, Kind], ...] = (
    ("nvmlEventTypeXidCriticalError", Kind.XID),
    ("nvmlEventTypeDoubleBitEccError", Kind.DOUBLE_BIT_ECC),
    ("nvmlEventTypeSingleBitEccErrorStorm", Kind.SINGLE_BIT_ECC_STORM),
    ("nvmlEventTypeDramRetirementEvent", Kind.PAGE_RETIREMENT),
    ("nvmlEventTypeDramRetirementFailure", Kind.PAGE_RETIREMENT_FAILURE),
    ("nvmlEventTypeNonFatalPoisonError", Kind.POISON),
    ("nvmlEventTypeFatalPoisonError", Kind.FATAL_POISON),
    ("nvmlEventTypeGpuUnavailableError", Kind.GPU_UNAVAILABLE),
    ("nvmlEventTypeGpuRecoveryAction", Kind.RECOVERY_ACTION),
)
"""pynvml's name of each event type that means trouble, and what gputop calls it; an older
pynvml lacks the later ones, which are then not asked for."""


class EventData(Protocol):
    """``c_nvmlEventData_t``."""

    device: Handle
    eventType: int
    eventData: int
    gpuInstanceId: int
    computeInstanceId: int


class EventApi(Protocol):
    """The part of pynvml the watcher uses."""

    NVML_ERROR_TIMEOUT: int

    def nvmlEventSetCreate(self) -> Handle: ...
    def nvmlDeviceGetSupportedEventTypes(self, handle: Handle) -> int: ...
    def nvmlDeviceRegisterEvents(
        self, handle: Handle, eventTypes: int, eventSet: Handle
    ) -> None: ...
    def nvmlEventSetWait_v2(self, eventSet: Handle, timeoutms: int) -> EventData: ...
    def nvmlEventSetFree(self, eventSet: Handle) -> None: ...


class WatchedGpu(NamedTuple):
    """A GPU the watcher listens to: its index, handle and UUID."""

    gpu: int
    handle: Handle
    uuid: str | None


def _address(handle: Handle) -> int:
    return ctypes.cast(handle, ctypes.c_void_p).value or 0


def event_kinds(nvml: NvmlApi) -> dict[int, Kind]:
    """Each trouble event type this pynvml knows, by its bit."""
    kinds: dict[int, Kind] = {}
    for name, kind in _EVENT_KINDS:
        bit = getattr(nvml, name, None)
        if isinstance(bit, int) and bit:
            kinds[bit] = kind
    return kinds


class EventWatcher:
    """Listens for health events of ``gpus`` on a daemon thread and queues them.

    Args:
        nvml: an initialised pynvml module.
        gpus: the GPUs to register.
        wait_ms: how long each wait lasts before the thread looks whether it should stop.
        now: the wall clock events are stamped with (local time, as snapshots are).
    """

    def __init__(
        self,
        nvml: NvmlApi,
        gpus: Sequence[WatchedGpu],
        *,
        wait_ms: int = WAIT_MS,
        now: Callable[[], datetime] = datetime.now,
    ) -> None:
        self._nvml = nvml
        self._api = cast(EventApi, nvml)
        self._gpus = {_address(gpu.handle): gpu for gpu in gpus}
        self._wait_ms = wait_ms
        self._now = now
        self._kinds = event_kinds(nvml)
        self._queue: deque[HealthEvent] = deque(maxlen=MAX_QUEUED)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._set: Handle | None = None
        self.registered: dict[int, int] = {}
        """GPU index -> the event mask it was registered for."""
        self.status: str | None = "not started"
        """Why no events are watched (None while they are)."""
        self.dropped = 0
        """Events lost to a full queue."""

    def start(self) -> bool:
        """Register the GPUs and start the thread; False (and ``status`` says why) when no
        GPU could be registered."""
        nvml = self._nvml
        api = self._api
        errors = (nvml.NVMLError, nvml.NVMLLibraryMismatchError, AttributeError)
        try:
            event_set = api.nvmlEventSetCreate()
        except errors as error:
            self.status = f"NVML events unavailable: {error}"
            return False
        wanted = 0
        for bit in self._kinds:
            wanted |= bit
        for gpu in self._gpus.values():
            mask = self._register(event_set, gpu.handle, wanted)
            if mask:
                self.registered[gpu.gpu] = mask
        if not self.registered:
            self._free(event_set)
            self.status = "no GPU supports health events"
            return False
        self._set = event_set
        self.status = None
        self._thread = threading.Thread(target=self._run, name="gputop-nvml-events", daemon=True)
        self._thread.start()
        return True

    def _register(self, event_set: Handle, handle: Handle, wanted: int) -> int:
        nvml = self._nvml
        api = self._api
        errors = (nvml.NVMLError, nvml.NVMLLibraryMismatchError, AttributeError)
        try:
            supported = int(api.nvmlDeviceGetSupportedEventTypes(handle))
        except errors:
            supported = wanted  # ask, and let the registration say no
        xid = next((bit for bit, kind in self._kinds.items() if kind is Kind.XID), 0)
        for mask in (wanted & supported, xid & supported):
            if not mask:
                continue
            try:
                api.nvmlDeviceRegisterEvents(handle, mask, event_set)
            except errors:
                continue
            return mask
        return 0

    def _run(self) -> None:
        nvml = self._nvml
        api = self._api
        timeout = getattr(nvml, "NVML_ERROR_TIMEOUT", None)
        event_set = self._set
        while not self._stop.is_set():
            try:
                data = api.nvmlEventSetWait_v2(event_set, self._wait_ms)
            except nvml.NVMLError as error:
                if getattr(error, "value", None) == timeout:
                    continue
                # Anything else (a GPU lost under the set, a driver error): not a spin.
                self._stop.wait(self._wait_ms / 1000)
                continue
            event = self._event(data)
            if event is None:
                continue
            with self._lock:
                if len(self._queue) == self._queue.maxlen:
                    self.dropped += 1
                self._queue.append(event)

    def _event(self, data: EventData) -> HealthEvent | None:
        gpu = self._gpus.get(_address(data.device))
        if gpu is None:
            return None
        kind = self._kinds.get(int(data.eventType))
        if kind is None:
            return None
        gi = int(data.gpuInstanceId)
        ci = int(data.computeInstanceId)
        where: dict[str, Any] = {
            "uuid": gpu.uuid,
            "gpu_instance_id": None if gi == _NO_INSTANCE else gi,
            "compute_instance_id": None if ci == _NO_INSTANCE else ci,
        }
        if kind is Kind.XID:
            return xid_event(self._now(), gpu.gpu, int(data.eventData), **where)
        return kind_event(self._now(), gpu.gpu, kind, **where)

    def drain(self) -> tuple[HealthEvent, ...]:
        """The events queued since the last drain, oldest first."""
        with self._lock:
            if not self._queue:
                return ()
            events = tuple(self._queue)
            self._queue.clear()
        return events

    def close(self) -> None:
        """Stop the thread (within one wait) and free the event set."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(self._wait_ms / 1000 * 2 + 1)
            if thread.is_alive():
                return  # still inside NVML: freeing the set under it is asking for a crash
        if self._set is not None:
            self._free(self._set)
            self._set = None

    def _free(self, event_set: Handle) -> None:
        nvml = self._nvml
        try:
            self._api.nvmlEventSetFree(event_set)
        except (nvml.NVMLError, AttributeError):
            return


def start_watcher(
    nvml: NvmlApi, gpus: Sequence[WatchedGpu], *, wait_ms: int = WAIT_MS
) -> EventWatcher:
    """A watcher over ``gpus``, started (its ``status`` says when it could not)."""
    watcher = EventWatcher(nvml, gpus, wait_ms=wait_ms)
    watcher.start()
    return watcher


class LostWatch:
    """Turns a GPU's going lost (NVML's GPU_IS_LOST, seen by its sampler) into one event."""

    def __init__(self, now: Callable[[], datetime] = datetime.now) -> None:
        self._lost: set[int] = set()
        self._now = now

    def events(self, gpus: Sequence[Any]) -> tuple[HealthEvent, ...]:
        """A ``GPU_LOST`` event for each GPU of ``gpus`` (GpuSamples) lost since last time."""
        found: list[HealthEvent] = []
        for gpu in gpus:
            if gpu.lost and gpu.index not in self._lost:
                self._lost.add(gpu.index)
                found.append(kind_event(self._now(), gpu.index, Kind.GPU_LOST, uuid=gpu.uuid))
        return tuple(found)
