"""The ledger's values, and how per-group step counts add up to GPU-hours.

A source (Prometheus, a recording) hands :class:`StepCounts`: for each group and each step
of ``step`` seconds, how many GPUs were present, held, idle while held, low while held,
free, and the sums of their activity (percent) and power (watts). :func:`account` turns them
into a :class:`Ledger`: GPU-hours, kWh, the longest idle-held stretch of each group, and the
idle-held hours of each day.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timezone, tzinfo

from gputop.ledger.promql import GroupBy
from gputop.ledger.thresholds import Thresholds

NOT_SEEN = "(not seen)"
"""The row of GPU-hours no sample covers, when the grouping cannot say whose they were."""
NO_GROUP = "(none)"
"""The row of GPUs without the grouping's label (no pod, no job)."""

FIGURES = (
    "present",
    "held",
    "idle_held",
    "low_held",
    "free",
    "activity",
    "power",
    "idle_held_power",
)
"""What each step says per group (see ``promql.LedgerQueries.queries``)."""


@dataclass
class StepCounts:
    """Per figure, group and step end (seconds since the epoch, rounded to ms): the value."""

    step: float
    since: float
    until: float
    values: dict[str, dict[str, dict[float, float]]] = field(default_factory=dict)

    def add(self, figure: str, group: str, at: float, value: float) -> None:
        """File one point (a group label Prometheus left empty is ``NO_GROUP``)."""
        by_group = self.values.setdefault(figure, {})
        points = by_group.setdefault(group or NO_GROUP, {})
        key = round(at, 3)
        points[key] = points.get(key, 0.0) + value

    def times(self) -> list[float]:
        """Every step end from ``since + step`` to ``until``."""
        count = round((self.until - self.since) / self.step)
        return [round(self.since + self.step * (i + 1), 3) for i in range(count)]


@dataclass(frozen=True, slots=True)
class Stretch:
    """A run of consecutive steps in which a group held GPUs idle."""

    start: float
    """Seconds since the epoch (the first step's start)."""
    end: float
    gpus: int
    """The most GPUs held idle at once in the run."""

    @property
    def seconds(self) -> float:
        """How long it lasted."""
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class GroupHours:
    """One group's GPU-hours over the span."""

    group: str
    gpus: int
    """The most GPUs it had at one step."""
    allocated: float
    active: float
    idle_held: float
    waiting: float
    free: float
    unknown: float
    energy_kwh: float
    idle_held_kwh: float
    longest_idle: Stretch | None = None

    def idle_cost(self, prices: Prices) -> float | None:
        """What the idle-held hours cost (None without a price)."""
        if prices.kwh is None and prices.gpu_hour is None:
            return None
        cost = 0.0
        if prices.gpu_hour is not None:
            cost += self.idle_held * prices.gpu_hour
        if prices.kwh is not None:
            cost += self.idle_held_kwh * prices.kwh
        return cost


@dataclass(frozen=True, slots=True)
class Prices:
    """``--price-gpu-hour`` and ``--price-kwh`` (None: not given)."""

    gpu_hour: float | None = None
    kwh: float | None = None


@dataclass(frozen=True, slots=True)
class Cost:
    """What the ledger cost to make: requests, samples the server read, points returned."""

    queries: int = 0
    samples: int | None = None
    """As the server counted them (Prometheus's query stats); None when it does not say."""
    points: int = 0


@dataclass(frozen=True, slots=True)
class Ledger:
    """GPU-hours by group over ``[since, until)``."""

    by: GroupBy
    since: float
    until: float
    step: float
    thresholds: Thresholds
    rows: tuple[GroupHours, ...]
    """Most idle-held hours first."""
    daily: tuple[tuple[date, float], ...]
    """Idle-held GPU-hours of each day (in ``tz``)."""
    source: str
    gpus: int = 0
    """The most GPUs seen at one step."""
    cost: Cost = Cost()
    prices: Prices = Prices()
    tz: tzinfo = timezone.utc

    def total(self) -> GroupHours:
        """Every group together."""
        rows = self.rows
        return GroupHours(
            "total",
            self.gpus,
            sum(r.allocated for r in rows),
            sum(r.active for r in rows),
            sum(r.idle_held for r in rows),
            sum(r.waiting for r in rows),
            sum(r.free for r in rows),
            sum(r.unknown for r in rows),
            sum(r.energy_kwh for r in rows),
            sum(r.idle_held_kwh for r in rows),
        )


def _series(counts: StepCounts, figure: str, group: str) -> Mapping[float, float]:
    return counts.values.get(figure, {}).get(group, {})


def _stretch(points: Mapping[float, float], times: list[float], step: float) -> Stretch | None:
    best: Stretch | None = None
    start: float | None = None
    peak = 0
    for at in [*times, None]:
        value = 0.0 if at is None else points.get(at, 0.0)
        if value > 0 and at is not None:
            if start is None:
                start, peak = at - step, 0
            peak = max(peak, round(value))
            end = at
            continue
        if start is not None:
            found = Stretch(start, end, peak)
            if best is None or found.seconds > best.seconds:
                best = found
            start = None
    return best


def account(
    counts: StepCounts,
    by: GroupBy,
    thresholds: Thresholds,
    *,
    source: str,
    cost: Cost = Cost(),
    prices: Prices = Prices(),
    tz: tzinfo = timezone.utc,
) -> Ledger:
    """The ledger of ``counts``."""
    times = counts.times()
    groups: set[str] = set()
    for by_group in counts.values.values():
        groups.update(by_group)
    present_all = {g: _series(counts, "present", g) for g in groups}
    rows = [
        _group_hours(counts, group, present_all[group], times, stable=by.stable)
        for group in sorted(groups)
    ]
    per_step = [sum(present_all[g].get(at, 0.0) for g in groups) for at in times]
    fleet = max(per_step, default=0.0)
    if not by.stable and times:
        # Steps of GPUs not seen: whose they were nobody can say, so they are a row of
        # their own, counted against the most GPUs seen at once.
        missing = sum(fleet - n for n in per_step)
        if missing > 0:
            hours = counts.step / 3600.0
            rows.append(GroupHours(NOT_SEEN, 0, 0.0, 0.0, 0.0, 0.0, 0.0, missing * hours, 0.0, 0.0))
    rows.sort(key=lambda r: (-r.idle_held, -r.allocated, r.group))
    return Ledger(
        by=by,
        since=counts.since,
        until=counts.until,
        step=counts.step,
        thresholds=thresholds,
        rows=tuple(rows),
        daily=_daily(counts, groups, tz),
        source=source,
        gpus=round(fleet),
        cost=cost,
        prices=prices,
        tz=tz,
    )


def _group_hours(
    counts: StepCounts,
    group: str,
    present: Mapping[float, float],
    times: list[float],
    *,
    stable: bool,
) -> GroupHours:
    """One group's row: its steps (``present``: GPUs seen at each step) in hours and kWh."""
    hours = counts.step / 3600.0

    def total(figure: str) -> float:
        return sum(_series(counts, figure, group).values())

    seen = sum(present.values())
    held = total("held")
    free = total("free")
    unknown_steps = max(0.0, seen - held - free)
    gpus = round(max(present.values(), default=0.0))
    if stable:
        # A node's GPUs are its own all along: the steps it was not seen are its unknown.
        unknown_steps += sum((gpus - present.get(at, 0.0) for at in times), 0.0)
    idle_held = total("idle_held")
    waiting = max(0.0, total("low_held") - idle_held)
    return GroupHours(
        group=group,
        gpus=gpus,
        allocated=held * hours,
        active=total("activity") / 100.0 * hours,
        idle_held=idle_held * hours,
        waiting=waiting * hours,
        free=free * hours,
        unknown=unknown_steps * hours,
        energy_kwh=total("power") * hours / 1000.0,
        idle_held_kwh=total("idle_held_power") * hours / 1000.0,
        longest_idle=_stretch(_series(counts, "idle_held", group), times, counts.step),
    )


def _daily(counts: StepCounts, groups: set[str], tz: tzinfo) -> tuple[tuple[date, float], ...]:
    """GPU-hours held idle on each day from the first to the last step's, in ``tz``."""
    hours = counts.step / 3600.0
    daily: dict[date, float] = {}
    for group in groups:
        for at, value in _series(counts, "idle_held", group).items():
            day = datetime.fromtimestamp(at - counts.step, tz=tz).date()
            daily[day] = daily.get(day, 0.0) + value * hours
    first = datetime.fromtimestamp(counts.since, tz=tz).date()
    last = datetime.fromtimestamp(counts.until - counts.step, tz=tz).date()
    days = []
    day = first
    while day <= last:
        days.append((day, daily.get(day, 0.0)))
        day = date.fromordinal(day.toordinal() + 1)
    return tuple(days)
