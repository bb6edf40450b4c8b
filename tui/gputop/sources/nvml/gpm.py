"""GPU performance monitoring (GPM, Hopper and later): what the GPU's own counters measured
between two samples, for a whole GPU and for each MIG GPU instance.

NVML's GPM takes a sample of the counters into a buffer (``nvmlGpmSampleGet``, or
``nvmlGpmMigSampleGet`` for a GPU instance) and works metrics out of two samples
(``nvmlGpmMetricsGet``): the mean over the time between them. What that costs, in CPU per call
on a real H200 (``snapshots/h200-gpm.json``): a sample 35-47 us, the metrics 1.0-1.9 ms
(worst 5 ms), whatever the number of metrics asked. So a :class:`GpmWindow` takes a sample
only on the ticks it works metrics out: the sample that ends one window starts the next, the
value is the mean over the whole time since the last one, and a window of several ticks costs
one sample and one metrics call, with nothing in between lost. Between two computations the
last window's values are served again (held), as a DCGM field is between two updates.

How often metrics are worked out is the source's :class:`GpmCadence`, which the command line
sets by what the run needs (``cli.live``; ``benchmarks/bench_gpm.py`` has the figures): every
tick where each tick is printed or written, at least 15 s apart for an exporter scraped every
15 s, and in the TUI within a CPU budget: at the measured price, every window of the machine
(a GPU, a MIG instance) together may cost no more than a set share of a core.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gputop.model import Activity, Reason, Unavailable
from gputop.model.fields import ACTIVITY_FIELDS
from gputop.sources.nvml.api import GpmMetric, GpmMetricsGet, Handle, NvmlApi
from gputop.sources.nvml.calls import CallFailed, DeviceCalls, ErrorCodes, read_number

MIB = 1024 * 1024

ACTIVITY_PATHS: tuple[str, ...] = tuple(f.path for f in ACTIVITY_FIELDS)
"""The model paths GPM fills for a GPU, in :class:`~gputop.model.Activity` order."""

METRICS_PRICE_S = 0.0014
"""CPU seconds one ``nvmlGpmMetricsGet`` costs: the median of 17 calls on a real H200 (1.0-1.9
ms, ``snapshots/h200-gpm.json``); its sample is 35-47 us more."""

LONGEST_S = 10.0
"""A budget never spaces computations further apart than this: a MIG tree of 56 instances
still moves every 10 s (and costs 0.8 % of a core doing so)."""


class GpmCadence:
    """How often a source's GPM windows work their metrics out (shared by its GPU samplers).

    ``every``: at least this many seconds apart (0: every tick). ``budget``: a share of one
    core (0.003 is 0.3 %) that all the windows together may cost at :data:`METRICS_PRICE_S`,
    which spaces them further apart the more windows there are, up to :data:`LONGEST_S`.
    Windows count themselves in when they are made and out when freed (from any sampler
    thread, hence the lock).
    """

    __slots__ = ("_lock", "budget", "every", "windows")

    def __init__(self, every: float = 0.0, budget: float | None = None) -> None:
        self.every = every
        self.budget = budget
        self.windows = 0
        self._lock = threading.Lock()

    def opened(self, count: int = 1) -> None:
        """``count`` more windows measure on this cadence."""
        with self._lock:
            self.windows += count

    def closed(self, count: int = 1) -> None:
        """``count`` windows were freed."""
        with self._lock:
            self.windows = max(0, self.windows - count)

    def seconds(self) -> float:
        """Seconds from one computation of a window to its next."""
        if self.budget is None or self.budget <= 0:
            return self.every
        spaced = min(self.windows * METRICS_PRICE_S / self.budget, LONGEST_S)
        return max(self.every, spaced)


EVERY_TICK = GpmCadence()
"""Metrics on every tick (tests, benchmarks, and a source nobody set a cadence for)."""

FIRST_SAMPLE = CallFailed(Reason.NOT_AVAILABLE, None)
"""What a window answers until it holds two samples: one sample is not a rate."""


def gpu_metric_ids(nvml: NvmlApi) -> tuple[tuple[int, float], ...]:
    """(NVML metric id, factor to the model's unit) of each of :data:`ACTIVITY_PATHS`:
    percent as NVML gives it, MiB/s made bytes/s."""
    return (
        (nvml.NVML_GPM_METRIC_GRAPHICS_UTIL, 1.0),
        (nvml.NVML_GPM_METRIC_SM_UTIL, 1.0),
        (nvml.NVML_GPM_METRIC_SM_OCCUPANCY, 1.0),
        (nvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL, 1.0),
        (nvml.NVML_GPM_METRIC_DRAM_BW_UTIL, 1.0),
        (nvml.NVML_GPM_METRIC_PCIE_TX_PER_SEC, MIB),
        (nvml.NVML_GPM_METRIC_PCIE_RX_PER_SEC, MIB),
        (nvml.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, MIB),
        (nvml.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, MIB),
    )


def support(nvml: NvmlApi, calls: DeviceCalls, handle: Handle) -> Reason | None:
    """None when the GPU at ``handle`` has GPM, else why not (asked once per GPU: static)."""
    query = getattr(nvml, "nvmlGpmQueryDeviceSupport", None)
    answer = calls.attempt("gpm_support", query, handle, static=True)
    if isinstance(answer, CallFailed):
        return answer.reason
    return None if answer.isSupportedDevice else Reason.NOT_SUPPORTED


class GpmRequest:
    """One metrics request: NVML's struct (room for every GPM metric, about 9 KiB) with the
    metric ids set once; each call sets the two samples it compares and reads the answer
    before the next call, so one request serves every window of a thread (a GPU's MIG
    instances are sampled one after another on one thread)."""

    __slots__ = ("_factors", "_slots", "_success", "request")

    def __init__(self, nvml: NvmlApi, metrics: Sequence[tuple[int, float]]) -> None:
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(metrics)
        for slot, (metric_id, _) in enumerate(metrics):
            request.metrics[slot].metricId = metric_id
            request.metrics[slot].nvmlReturn = 0
            request.metrics[slot].value = 0.0
        self.request: GpmMetricsGet = request
        # Views into the struct, which NVML fills on each call: looked up once.
        self._slots: tuple[GpmMetric, ...] = tuple(request.metrics[i] for i in range(len(metrics)))
        self._factors = tuple(factor for _, factor in metrics)
        self._success = nvml.NVML_SUCCESS

    def read(
        self,
        calls: DeviceCalls,
        key: str,
        fn: Callable[[GpmMetricsGet], object],
        first: Handle,
        second: Handle,
    ) -> tuple[tuple[float | None, ...], tuple[int, ...]] | CallFailed:
        """(each metric's value, each metric's NVML code) from ``first`` to ``second``."""
        request = self.request
        request.sample1 = first
        request.sample2 = second
        answer = calls.attempt(key, fn, request)
        if isinstance(answer, CallFailed):
            return answer
        success = self._success
        values: list[float | None] = []
        codes: list[int] = []
        for slot, factor in zip(self._slots, self._factors, strict=True):
            code = int(read_number(slot, "nvmlReturn"))
            codes.append(code)
            values.append(float(read_number(slot, "value")) * factor if code == success else None)
        return tuple(values), tuple(codes)


Measured = tuple[tuple[float | None, ...], tuple[int, ...]] | CallFailed
"""A window's metrics and their codes, or why there are none."""


@dataclass(slots=True)
class GpmWindow:
    """Two sample buffers of one GPU (or GPU instance): the start of the window being measured
    and the one its end is written into."""

    buffers: tuple[Handle, Handle]
    sample_key: str
    metrics_key: str
    start: int = 0
    """Which buffer holds the window's start sample."""
    primed: bool = False
    """A start sample is held."""
    due_at: float = -math.inf
    """Monotonic seconds from which the next tick works metrics out."""
    held: Measured = FIRST_SAMPLE
    """The last answer, served again until the next is due."""
    sample_failed: CallFailed | None = field(default=None)
    """How this tick's sample failed (the caller tells a vanished GPU instance by it)."""
    counted: bool = True
    """Counted in its cadence's windows (made so; out while :meth:`idle`)."""

    def reset(self) -> None:
        """Forget the start sample (it was of a GPU instance that no longer exists)."""
        self.primed = False
        self.due_at = -math.inf
        self.held = FIRST_SAMPLE

    def idle(self, cadence: GpmCadence) -> None:
        """Not measured for now (nothing shows it, or its GPU instance is gone): forget the
        start sample, and leave the cadence's budget to the windows that measure until
        :meth:`measure` is called again."""
        self.reset()
        if self.counted:
            self.counted = False
            cadence.closed()

    def measure(
        self,
        calls: DeviceCalls,
        request: GpmRequest,
        nvml: NvmlApi,
        take: tuple[Callable[..., object], tuple[Any, ...]],
        now: float,
        cadence: GpmCadence,
    ) -> Measured:
        """The metrics of the window ending now, when due; else the last window's again.

        ``take`` is the sampling function and its arguments before the buffer.
        """
        self.sample_failed = None
        if not self.counted:
            self.counted = True
            cadence.opened()
        if self.primed and now < self.due_at:
            return self.held
        end = 1 - self.start if self.primed else self.start
        fn, args = take
        taken = calls.attempt(self.sample_key, fn, *args, self.buffers[end])
        if isinstance(taken, CallFailed):
            # The start sample stays good: the next window is simply longer.
            self.sample_failed = taken
            self.held = taken
            return taken
        if not self.primed:
            self.primed = True
            self.held = FIRST_SAMPLE  # the next tick has two samples
            return FIRST_SAMPLE
        result = request.read(
            calls, self.metrics_key, nvml.nvmlGpmMetricsGet, self.buffers[self.start],
            self.buffers[end],
        )  # fmt: skip
        self.start = end
        # A hair early, so that a cadence of whole ticks does not slip a tick on jitter.
        self.due_at = now + cadence.seconds() - 0.05
        self.held = result
        return result


def allocate(nvml: NvmlApi, calls: DeviceCalls, key: str) -> tuple[Handle, Handle] | CallFailed:
    """Two sample buffers, or why NVML gave none (memoized under ``key``)."""
    first = calls.attempt(f"{key}:0", nvml.nvmlGpmSampleAlloc)
    if isinstance(first, CallFailed):
        return first
    second = calls.attempt(f"{key}:1", nvml.nvmlGpmSampleAlloc)
    if isinstance(second, CallFailed):
        _free(nvml, (first,))
        return second
    return first, second


def _free(nvml: NvmlApi, buffers: Sequence[Handle]) -> None:
    for buffer in buffers:
        try:
            nvml.nvmlGpmSampleFree(buffer)
        except nvml.NVMLError:
            continue


def missing(
    paths: Sequence[str], measured: Measured, codes: ErrorCodes
) -> tuple[tuple[float | None, ...], Unavailable]:
    """Each path's value and the reasons of those without one."""
    if isinstance(measured, CallFailed):
        return (None,) * len(paths), tuple((path, measured.reason) for path in paths)
    values, returned = measured
    notes = tuple(
        (path, codes.reason(code))
        for path, value, code in zip(paths, values, returned, strict=True)
        if value is None
    )
    return values, notes


class GpuActivity:
    """A whole GPU's GPM: its support (asked once), one window, one request of every metric.

    Used by the GPU's sampler thread only. Not for a GPU in MIG mode: each GPU instance is
    measured on its own there (:mod:`gputop.sources.nvml.mig`).
    """

    __slots__ = ("_cadence", "_codes", "_nvml", "_request", "window")

    def __init__(self, nvml: NvmlApi, codes: ErrorCodes, cadence: GpmCadence = EVERY_TICK) -> None:
        self._nvml = nvml
        self._codes = codes
        self._cadence = cadence
        self._request: GpmRequest | None = None
        self.window: GpmWindow | None = None

    def buffers(self) -> list[Handle]:
        """The sample buffers allocated, for freeing."""
        return [] if self.window is None else list(self.window.buffers)

    def release(self) -> None:
        """This GPU's window no longer measures (its buffers are being freed)."""
        if self.window is not None:
            self._cadence.closed()
            self.window = None

    def read(self, calls: DeviceCalls, handle: Handle, now: float) -> Activity:
        """The GPU's activity over the window ending now (or the last one, until due);
        each value it lacks noted in ``calls`` with its reason."""
        nvml = self._nvml
        unsupported = support(nvml, calls, handle)
        if unsupported is not None:
            calls.note(ACTIVITY_PATHS, unsupported)
            return Activity()
        window = self.window
        if window is None:
            buffers = allocate(nvml, calls, "gpm_alloc")
            if isinstance(buffers, CallFailed):
                calls.note(ACTIVITY_PATHS, buffers.reason)
                return Activity()
            window = self.window = GpmWindow(buffers, "gpm_sample", "gpm_metrics")
            self._cadence.opened()
        request = self._request
        if request is None:
            request = self._request = GpmRequest(nvml, gpu_metric_ids(nvml))
        measured = window.measure(
            calls, request, nvml, (nvml.nvmlGpmSampleGet, (handle,)), now, self._cadence
        )
        values, notes = missing(ACTIVITY_PATHS, measured, self._codes)
        calls.missing.extend(notes)
        return Activity(*values)
