"""Which GPUs have a health alarm a person has not acknowledged yet.

A GPU is in alarm when a critical health event came for it (an XID 79, a double-bit ECC
error, ...) or when it has a critical problem now (a row remap pending or failed, an
uncorrectable ECC count: ``gputop.model.gpu_health``). A GPU lost is not an alarm here: its
panel already says so in red (the LOST badge and the diagnosis, with the time it went).
The views show the alarm (the panel's red line) until the user acknowledges it
(``pipeline.commands.Acknowledge``, the ``a`` key); a new critical event, or a problem
that goes away and comes back, raises it again. Runs on the pipeline's thread: the tick
carries the result (``Tick.alarms``).
"""

from __future__ import annotations

from gputop.model import GpuSample, Snapshot
from gputop.model.gpu_health import Problem, gpu_problems
from gputop.model.health import HealthEvent, Kind, Severity

Alarm = tuple[int, str]
"""(GPU index, what to say)."""


class Alarms:
    """The acknowledgements so far, and the alarms they leave."""

    def __init__(self) -> None:
        self._seen_events: dict[int, int] = {}
        """GPU -> how many events of the run were acknowledged for it (a position in the
        run's event count)."""
        self._acked_problems: dict[int, set[str]] = {}
        self._memo: tuple[object, int, int, tuple[Alarm, ...]] | None = None
        self._version = 0

    def alarms(
        self, snapshot: Snapshot, events: tuple[HealthEvent, ...], total: int
    ) -> tuple[Alarm, ...]:
        """The GPUs of ``snapshot`` in alarm. ``events``: the events the history keeps
        (oldest first), the last of the ``total`` the run has seen."""
        memo = self._memo
        if (
            memo is not None
            and memo[0] is snapshot
            and memo[1] == total
            and memo[2] == (self._version)
        ):
            return memo[3]
        first = total - len(events)
        out: list[Alarm] = []
        for gpu in snapshot.gpus:
            problems = _critical(gpu)
            acked = self._acked_problems.get(gpu.index)
            if acked is not None:
                acked &= {p.key for p in problems}  # gone, then back: an alarm again
            seen = self._seen_events.get(gpu.index, 0)
            fresh = [
                event
                for number, event in enumerate(events, start=first)
                if number >= seen
                and event.gpu == gpu.index
                and event.critical
                and event.kind is not Kind.GPU_LOST
            ]
            said = [fresh[-1].title() + fresh[-1].advice()] if fresh else []
            said += [p.text for p in problems if acked is None or p.key not in acked]
            if len(fresh) > 1:
                said.append(f"{len(fresh)} critical events")
            if said:
                out.append((gpu.index, "; ".join(said)))
        result = tuple(out)
        self._memo = (snapshot, total, self._version, result)
        return result

    def acknowledge(self, snapshot: Snapshot, total: int, gpu: int | None = None) -> None:
        """Acknowledge GPU ``gpu``'s alarm (None: every GPU's): its events so far and the
        problems it has now."""
        self._version += 1
        for sample in snapshot.gpus:
            if gpu is not None and sample.index != gpu:
                continue
            self._seen_events[sample.index] = total
            self._acked_problems[sample.index] = {p.key for p in _critical(sample)}


def _critical(gpu: GpuSample) -> list[Problem]:
    """The GPU's critical problems but its being lost (said by its panel already)."""
    return [p for p in gpu_problems(gpu) if p.severity is Severity.CRITICAL and p.key != "lost"]
