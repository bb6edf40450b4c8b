"""The exporter's health series: XID errors as dcgm-exporter shows them, and as counters.

dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` is a gauge of the *last* XID a GPU had, with
``err_code`` and ``err_msg`` labels (0 and no such labels while it had none): a burst of
XIDs reads as one. ``gputop_xid_errors_total{xid=…}`` counts each code since the exporter
started, so ``increase(...[5m])`` sees every one of them, and
``gputop_health_events_total{event=…}`` counts the other health events (double-bit ECC,
page-retirement failure, …). :class:`XidTally` keeps these across snapshots, fed from the
sampling thread with each snapshot's ``events``; what it hands out is immutable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gputop.model import Snapshot
from gputop.model.health import HealthEvent, Kind

XID_GAUGE = "DCGM_FI_DEV_XID_ERRORS"
XID_COUNTER = "gputop_xid_errors_total"
EVENT_COUNTER = "gputop_health_events_total"
ERR_CODE = "err_code"
ERR_MSG = "err_msg"


@dataclass(frozen=True, slots=True)
class GpuHealth:
    """One GPU's XIDs and other health events since the exporter started."""

    last_xid: int | None = None
    last_message: str | None = None
    xids: tuple[tuple[int, int], ...] = ()
    """(XID code, how many), by code."""
    events: tuple[tuple[str, int], ...] = ()
    """(event name, how many) of the events that are not XIDs, by name."""


NO_EVENTS = GpuHealth()


def event_name(kind: Kind) -> str:
    """The ``event`` label of a kind: ``double_bit_ecc``, ``page_retirement_failure``."""
    return kind.name.lower()


class XidTally:
    """Per GPU (by UUID, else index), the counts of each XID code and event kind."""

    def __init__(self) -> None:
        self._by_gpu: dict[str, GpuHealth] = {}

    def update(self, snapshot: Snapshot) -> dict[int, GpuHealth]:
        """Count the snapshot's events; each GPU's counts by its index in ``snapshot``."""
        keys = {gpu.index: gpu.uuid or f"index {gpu.index}" for gpu in snapshot.gpus}
        for event in snapshot.events:
            key = keys.get(event.gpu) or event.uuid or f"index {event.gpu}"
            self._by_gpu[key] = _counted(self._by_gpu.get(key, NO_EVENTS), event)
        return {index: self._by_gpu.get(key, NO_EVENTS) for index, key in keys.items()}


def _counted(health: GpuHealth, event: HealthEvent) -> GpuHealth:
    if event.xid is not None:
        xids = dict(health.xids)
        xids[event.xid] = xids.get(event.xid, 0) + 1
        return GpuHealth(
            last_xid=event.xid,
            last_message=event.description,
            xids=tuple(sorted(xids.items())),
            events=health.events,
        )
    events = dict(health.events)
    name = event_name(event.kind)
    events[name] = events.get(name, 0) + 1
    return GpuHealth(
        last_xid=health.last_xid,
        last_message=health.last_message,
        xids=health.xids,
        events=tuple(sorted(events.items())),
    )


def health_of(extras: Mapping[int, GpuHealth], index: int) -> GpuHealth:
    """GPU ``index``'s counts, none when it had no event."""
    return extras.get(index, NO_EVENTS)
