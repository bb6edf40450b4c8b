"""Health over a recording, for `gputop report`: the events it carries and each change of
a GPU's health, with their times.

A change is a GPU's health problem starting or ending (``gputop.model.gpu_health``: a row
remap pending or failed, uncorrectable ECC errors, a page retirement pending, a thermal or
hardware slowdown, the GPU lost) or one of its memory-repair counters growing (rows
remapped, pages retired, lifetime uncorrectable ECC). :class:`HealthLog` takes snapshots in
time order, keeps only the changes and each GPU's last state, and merges the logs of
consecutive parts of one recording (the report reads big files in parallel) as if one log
had read them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from gputop.model import GpuSample, Snapshot
from gputop.model.gpu_health import gpu_problems
from gputop.model.health import HealthEvent, Severity
from gputop.model.safe_text import terminal_safe

MAX_CHANGES = 1000
"""Changes kept at most (a slowdown that flaps every second over a day would be 86 400)."""

_COUNTERS: tuple[tuple[str, str], ...] = (
    ("remapped_rows.uncorrectable", "rows remapped after uncorrectable errors"),
    ("remapped_rows.correctable", "rows remapped after correctable errors"),
    ("retired_pages.double_bit", "pages retired after double-bit errors"),
    ("retired_pages.single_bit", "pages retired after single-bit errors"),
    ("ecc_errors.aggregate_uncorrected", "uncorrectable ECC errors (lifetime)"),
    ("ecc_errors.volatile_uncorrected", "uncorrectable ECC errors since the driver loaded"),
)


@dataclass(frozen=True, slots=True)
class HealthChange:
    """One GPU's health changing at one moment."""

    time: datetime | None
    gpu: int
    severity: Severity
    text: str
    """``row remap pending: reset the GPU to apply it (began)``, ``XID 79: ...``."""


@dataclass(frozen=True, slots=True)
class _State:
    problems: dict[str, tuple[Severity, str]]
    counters: dict[str, int]


def _counter(gpu: GpuSample, path: str) -> int | None:
    part, _, name = path.partition(".")
    value = getattr(getattr(gpu, part), name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _state(gpu: GpuSample) -> _State:
    problems = {p.key: (p.severity, p.text) for p in gpu_problems(gpu)}
    counters = {}
    for path, _ in _COUNTERS:
        value = _counter(gpu, path)
        if value is not None:
            counters[path] = value
    return _State(problems, counters)


def _event_change(event: HealthEvent) -> HealthChange:
    return HealthChange(event.time, event.gpu, event.severity, event.title() + event.advice())


class HealthLog:
    """The health changes of a recording read in time order."""

    def __init__(self) -> None:
        self._first: dict[int, _State] = {}
        self._last: dict[int, _State] = {}
        self._changes: list[HealthChange] = []
        self._started: datetime | None = None
        """The time of the first snapshot: where a part of a recording begins."""
        self.dropped = 0

    def add(self, snapshot: Snapshot) -> None:
        """The next snapshot in time order."""
        moment = snapshot.timestamp
        if self._started is None:
            self._started = moment
        for event in snapshot.events:
            self._keep(_event_change(event))
        for gpu in snapshot.gpus:
            state = _state(gpu)
            before = self._last.get(gpu.index)
            if before is None:
                self._first[gpu.index] = state
                for severity, text in state.problems.values():
                    self._keep(HealthChange(moment, gpu.index, severity, f"{text} (at start)"))
            else:
                self._compare(moment, gpu.index, before, state)
            self._last[gpu.index] = state

    def _compare(self, moment: datetime | None, gpu: int, before: _State, now: _State) -> None:
        for key, (severity, text) in now.problems.items():
            if key not in before.problems:
                self._keep(HealthChange(moment, gpu, severity, f"{text} (began)"))
        for key, (_, text) in before.problems.items():
            if key not in now.problems:
                self._keep(HealthChange(moment, gpu, Severity.INFO, f"{text} (ended)"))
        for path, words in _COUNTERS:
            old, new = before.counters.get(path), now.counters.get(path)
            if old is not None and new is not None and new > old:
                severity = (
                    Severity.WARNING if "uncorrect" in path or "double" in path else (Severity.INFO)
                )
                self._keep(HealthChange(moment, gpu, severity, f"{words}: {old} -> {new}"))

    def _keep(self, change: HealthChange) -> None:
        if len(self._changes) >= MAX_CHANGES:
            self.dropped += 1
            return
        self._changes.append(change)

    @property
    def changes(self) -> tuple[HealthChange, ...]:
        """The changes, in the order they came."""
        return tuple(self._changes)

    @classmethod
    def merged(cls, parts: Sequence[HealthLog]) -> HealthLog:
        """One log from the logs of consecutive parts, in order: each part's first state is
        compared with the state the parts before it ended in."""
        whole = cls()
        for part in parts:
            for gpu, first in part._first.items():
                before = whole._last.get(gpu)
                if before is None:
                    whole._first[gpu] = first
                    whole._changes.extend(
                        c for c in part._changes if c.gpu == gpu and c.text.endswith("(at start)")
                    )
                else:
                    whole._compare(part._started, gpu, before, first)
            whole._changes.extend(c for c in part._changes if not c.text.endswith("(at start)"))
            whole._last.update(part._last)
            whole.dropped += part.dropped
        return whole


def health_text(changes: Sequence[HealthChange], dropped: int = 0) -> str | None:
    """The report's health section: one line per change; None when nothing changed."""
    if not changes:
        return None
    lines = ["Health (events and changes):"]
    for change in changes:
        when = "time n/a" if change.time is None else change.time.isoformat(sep=" ")[:19]
        text = terminal_safe(change.text)
        lines.append(f"  {when}  GPU {change.gpu}  {change.severity.value:<8} {text}")
    if dropped:
        lines.append(f"  … {dropped} more changes left out")
    return "\n".join(lines)


def health_json(changes: Sequence[HealthChange]) -> list[dict[str, object]]:
    """The changes as the JSON report's ``health`` list."""
    return [
        {
            "time": None if change.time is None else change.time.isoformat(),
            "gpu": change.gpu,
            "severity": change.severity.value,
            "change": change.text,
        }
        for change in changes
    ]
