"""What the exporter keeps across snapshots: clock events over a window, and how long each GPU
has been waiting.

dcgm-exporter's ``DCGM_EXP_CLOCK_EVENTS_COUNT{clock_event=...}`` counts, per GPU and reason,
the samples within its window (5 minutes by default, said in ``window_size_in_ms``) in which
the reason was active; here the samples are gputop's (one per ``--interval``). Fed from the
sampling thread only; what it hands out is immutable.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from gputop.model import GpuSample, Snapshot
from gputop.model.gpu_state import GpuState, sample_state
from gputop.model.throttle import ThrottleReason
from gputop.sinks.prometheus.dcgm import CLOCK_EVENT_NAMES, DEFAULT_CLOCK_EVENTS_WINDOW_MS

Classify = Callable[[GpuSample], str]
"""A GPU sample's state: ``busy``, ``waiting``, ``idle``, ``throttled`` or ``unknown``."""

WAITING = GpuState.WAITING.value
UNKNOWN = GpuState.UNKNOWN.value


def state_of(gpu: GpuSample) -> str:
    """The sample's state as every view defines it (``model.gpu_state``)."""
    return sample_state(gpu).value


@dataclass(frozen=True, slots=True)
class GpuExtras:
    """What one GPU's series say beyond its sample."""

    state: str
    waiting_seconds: float | None
    """How long the GPU has been waiting without a break (0 when it is not waiting); None
    when its state is unknown."""
    clock_events: tuple[tuple[str, int], ...] | None
    """(dcgm-exporter's clock_event name, samples in the window it was active in), for the
    reasons seen; None when no sample in the window reported clock events."""


@dataclass(slots=True)
class _GpuTrack:
    events: deque[tuple[float, tuple[str, ...] | None]]
    waiting_since: float | None = None


def _seconds(moment: datetime | None, fallback: float) -> float:
    if moment is None:
        return fallback
    if moment.tzinfo is None:
        # Local wall time of the recording machine: differences are all that is used.
        return (moment - datetime(1970, 1, 1)).total_seconds()
    return moment.timestamp()


def _event_names(reasons: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if reasons is None:
        return None
    names = []
    for name in reasons:
        reason = ThrottleReason.parse(name)
        dcgm = None if reason is None else CLOCK_EVENT_NAMES.get(reason)
        if dcgm is not None:
            names.append(dcgm)
    return tuple(names)


class ExportTracker:
    """Per GPU (by UUID), the clock events of the last window and the start of a waiting run."""

    def __init__(
        self, classify: Classify = state_of, *, window_ms: int = DEFAULT_CLOCK_EVENTS_WINDOW_MS
    ) -> None:
        """Classify each GPU sample with ``classify`` (by default as every view does);
        count clock events over ``window_ms``."""
        self._classify = classify
        self.window_ms = window_ms
        self._tracks: dict[str, _GpuTrack] = {}

    def update(self, snapshot: Snapshot, arrived: float) -> dict[int, GpuExtras]:
        """Take a new snapshot (``arrived``: monotonic seconds, for one without a time);
        returns each GPU's extras by index."""
        now = _seconds(snapshot.timestamp, arrived)
        window = self.window_ms / 1000.0
        seen: set[str] = set()
        extras: dict[int, GpuExtras] = {}
        for gpu in snapshot.gpus:
            key = gpu.uuid or f"index {gpu.index}"
            seen.add(key)
            track = self._tracks.get(key)
            if track is None:
                track = self._tracks[key] = _GpuTrack(deque())
            events = track.events
            if events and events[-1][0] > now:
                events.clear()  # time went back: another recording, or a clock change
            events.append((now, _event_names(gpu.throttle_reasons)))
            while events and events[0][0] <= now - window:
                events.popleft()
            state = self._classify(gpu)
            if state == WAITING:
                if track.waiting_since is None:
                    track.waiting_since = now
                waiting: float | None = now - track.waiting_since
            else:
                track.waiting_since = None
                waiting = None if state == UNKNOWN else 0.0
            extras[gpu.index] = GpuExtras(state, waiting, _counts(events))
        for gone in set(self._tracks) - seen:
            del self._tracks[gone]
        return extras


def _counts(
    events: deque[tuple[float, tuple[str, ...] | None]],
) -> tuple[tuple[str, int], ...] | None:
    counts: dict[str, int] = {}
    reported = False
    for _at, names in events:
        if names is None:
            continue
        reported = True
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    if not reported:
        return None
    return tuple(sorted(counts.items()))
