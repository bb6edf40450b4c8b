"""The ledger from a Prometheus (or anything that answers its HTTP API: VictoriaMetrics,
Thanos, Mimir): the span is cut into chunks that each stay within the server's limits, each
chunk's queries (one per family, ``promql.py``) run side by side, and every GPU's steps in
them are judged (``judge.py``) and added to their group's counts before the next chunk.

Prometheus refuses a range query of more than 11,000 points per series, and one that loads
more than ``--query.max-samples`` (50 million by default) samples. A chunk has at most
``MAX_POINTS`` steps, reads about ``SAMPLE_BUDGET`` samples (GPUs x chunk / scrape interval,
both read from the data by one small probe first) and returns at most ``POINT_BUDGET``
points a query, which bounds the ledger's memory whatever the fleet and span.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone, tzinfo
from typing import NamedTuple

from gputop.ledger.account import NO_GROUP, Cost, Ledger, Prices, StepCounts, account
from gputop.ledger.judge import file_step
from gputop.ledger.promql import FAMILIES, GroupBy, LedgerQueries
from gputop.ledger.thresholds import Thresholds
from gputop.sources.prometheus.client import PrometheusClient, PrometheusError, Series

DEFAULT_THRESHOLDS = Thresholds()
NO_PRICES = Prices()

MAX_POINTS = 10_000
"""Steps per query: under Prometheus's 11,000 points per series."""
SAMPLE_BUDGET = 10_000_000
"""Samples one query may read: a fifth of Prometheus's default ``--query.max-samples``."""
POINT_BUDGET = 50_000
"""Points (GPUs x steps) one query may return: what one chunk holds in memory at once."""
PROBE_SECONDS = 3600.0
"""How much recent data the probe counts samples in (to tell GPUs and scrape interval)."""


PROBES = 3
"""Probe queries a ledger sends before its range queries."""


def _scale(
    client: PrometheusClient, queries: LedgerQueries, since: float, until: float
) -> tuple[int, float]:
    """(GPUs, seconds between samples): the most GPUs and the shortest interval seen near
    the end, the middle and the start of the span, so that a fleet that grew or shrank over
    it is sized by its largest; a guess when none is seen."""
    span = until - since
    window = min(span, PROBE_SECONDS)
    gpus, interval = 0, math.inf
    for at in (until, since + (span + window) / 2, since + window):
        answer = client.query(queries.scale_probe(window), at=at)
        counts = [s.value for s in answer if math.isfinite(s.value) and s.value > 0]
        if counts:
            gpus = max(gpus, len(counts))
            interval = min(interval, max(1.0, window / max(counts)))
    if not gpus:
        return 1, queries.step
    return gpus, interval


NICE_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400)
MAX_STEPS = 200
"""The automatic step gives a span at most this many steps (a day in 10 minutes, a week in
hours): Prometheus's work grows with GPUs x steps, far more than with samples read."""


def auto_step(span: float, interval: float) -> float:
    """The finest usual step that gives at most ``MAX_STEPS`` and holds two samples."""
    for nice in NICE_STEPS:
        if span / nice <= MAX_STEPS and nice >= 2 * interval:
            return float(nice)
    return float(NICE_STEPS[-1])


def chunk_steps(gpus: int, interval: float, step: float) -> int:
    """Steps per query so that it reads at most ``SAMPLE_BUDGET`` samples and returns at
    most ``POINT_BUDGET`` points."""
    per_step = max(1.0, gpus * step / interval)
    most = min(MAX_POINTS, SAMPLE_BUDGET / per_step, POINT_BUDGET / max(1, gpus))
    return max(1, int(most))


def ledger_from_prometheus(
    client: PrometheusClient,
    by: GroupBy,
    since: float,
    until: float,
    step: float | None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    prices: Prices = NO_PRICES,
    tz: tzinfo = timezone.utc,
    match: str = "",
    workers: int = 4,
    on_progress: Callable[[int, int], None] | None = None,
) -> Ledger:
    """The ledger of ``[since, until)`` at ``step`` seconds (None: ``auto_step``), by ``by``,
    of the series ``match`` selects (PromQL label matchers; all by default).

    Raises:
        PrometheusError: a query failed (the first failure's line).
    """
    probe = LedgerQueries(by, step or 60.0, match=match)
    gpus, interval = _scale(client, probe, since, until)
    if step is None:
        step = auto_step(until - since, interval)
    steps = max(1, math.floor((until - since) / step))
    until = since + steps * step
    counts = StepCounts(step=step, since=since, until=until)
    named = LedgerQueries(by, step, match).queries()
    samples: int | None = 0
    points = 0
    done = 0
    first = 0
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ledger") as pool:
        while first < steps:
            per_chunk = chunk_steps(gpus, interval, step)
            last = min(steps, first + per_chunk)
            total = done + len(named) * math.ceil((steps - first) / per_chunk)
            # A range query's points are start, start + step, ... end: each the end of a step.
            a, b = since + (first + 1) * step, since + last * step
            futures = {
                name: pool.submit(client.query_range_counted, promql, a, b, step)
                for name, promql in named.items()
            }
            answers: dict[str, list[Series]] = {}
            try:
                for name, future in futures.items():
                    answers[name], read = future.result()
                    samples = None if samples is None or read is None else samples + read
                    points += sum(len(one.points) for one in answers[name])
                    done += 1
                    if on_progress is not None:
                        on_progress(done, total)
            except PrometheusError:
                for future in futures.values():
                    future.cancel()
                raise
            # More GPUs than the probe saw (a fleet larger within the span than at its
            # probed moments): the next chunks are cut smaller, keeping POINT_BUDGET.
            gpus = max(gpus, _file_chunk(counts, by, thresholds, answers))
            first = last
    cost = Cost(queries=PROBES + done, samples=samples, points=points)
    return account(counts, by, thresholds, source=client.url, cost=cost, prices=prices, tz=tz)


class _Step(NamedTuple):
    """One series' means in one step: what ``file_step`` judges."""

    group: str
    pod: bool
    activity: float | None
    memory: float | None
    processes: float | None
    power: float | None


def _file_chunk(
    counts: StepCounts, by: GroupBy, thresholds: Thresholds, answers: Mapping[str, list[Series]]
) -> int:
    """Judge every GPU's steps in one chunk's answers and file them under their groups;
    how many GPUs (by UUID, else by label set) the answers held."""
    gpus: dict[tuple[tuple[str, str], ...], dict[str, dict[float, float]]] = {}
    labels_of: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
    for family in FAMILIES:
        for series in answers.get(family, ()):
            # One GPU's families meet by their whole label set but the name (Prometheus's
            # ``avg_over_time`` drops it, VictoriaMetrics's keeps it).
            key = tuple(sorted(kv for kv in series.labels.items() if kv[0] != "__name__"))
            gpus.setdefault(key, {})[family] = dict(series.points)
            labels_of[key] = series.labels
    users: dict[tuple[str, float], str] = {}
    for series in answers.get("users", ()):
        uuid, user = series.labels.get("UUID", ""), series.labels.get("user", "")
        for at, _ in series.points:
            # A GPU shared by several users' processes in one step is filed under the
            # first by name, as a recording's is.
            filed = users.get((uuid, at))
            if filed is None or user < filed:
                users[(uuid, at)] = user
    # A pod that comes or goes within a step starts another series of its GPU: the GPU's
    # steps that two series share are one GPU step, not two.
    gpu_of = {key: labels.get("UUID") or repr(key) for key, labels in labels_of.items()}
    series_of = Counter(gpu_of.values())
    shared: dict[tuple[str, float], list[_Step]] = {}
    for key, families in gpus.items():
        gpu = gpu_of[key]
        for at, step in _steps(by, labels_of[key], families, users):
            if series_of[gpu] > 1:
                shared.setdefault((gpu, at), []).append(step)
            else:
                _file(counts, thresholds, at, step)
    for (_, at), steps in shared.items():
        _file(counts, thresholds, at, steps[0] if len(steps) == 1 else _one_step(steps))
    return len(series_of)


def _steps(
    by: GroupBy,
    labels: Mapping[str, str],
    families: Mapping[str, Mapping[float, float]],
    users: Mapping[tuple[str, float], str],
) -> Iterator[tuple[float, _Step]]:
    """One series' steps (its label set's families), each with its group."""
    empty: dict[float, float] = {}
    pod = bool(labels.get("pod"))
    group = by.group_of(labels) or NO_GROUP
    uuid = labels.get("UUID", "")
    engine = families.get("engine", empty)
    util = families.get("util", empty)
    memory = families.get("memory", empty)
    processes = families.get("processes", empty)
    power = families.get("power", empty)
    for at in engine.keys() | util.keys() | power.keys():
        # Engine activity where the GPU has it at that step, else utilization; a value over
        # 100 % is DCGM's blank (no activity), not a reading.
        activity = 100 * engine[at] if at in engine else util.get(at)
        if activity is not None and not activity <= 100:
            activity = None
        yield (
            at,
            _Step(
                (users.get((uuid, at)) or NO_GROUP) if by is GroupBy.USER else group,
                pod,
                activity,
                _value(memory, at),
                _value(processes, at),
                _value(power, at),
            ),
        )


def _one_step(steps: list[_Step]) -> _Step:
    """A GPU's step seen in several series (a pod came or went within it): held if a pod
    held it for part of the step, filed under that pod's group, each value the mean of the
    series' means (each series covers its part of the step)."""
    held = [step for step in steps if step.pod] or steps

    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else None

    return _Step(
        held[0].group,
        held[0].pod,
        mean([step.activity for step in steps]),
        mean([step.memory for step in steps]),
        mean([step.processes for step in steps]),
        mean([step.power for step in steps]),
    )


def _file(counts: StepCounts, thresholds: Thresholds, at: float, step: _Step) -> None:
    file_step(
        counts,
        thresholds,
        step.group,
        at,
        pod=step.pod,
        activity=step.activity,
        memory=step.memory,
        processes=step.processes,
        power=step.power,
    )


def _value(points: Mapping[float, float], at: float) -> float | None:
    """The point at ``at``; NaN (a value the server could not give) is none."""
    value = points.get(at)
    return value if value is not None and math.isfinite(value) else None


def parse_when(text: str, now: float | None = None) -> float:
    """``7d``, ``36h``, ``90m`` ago; or an ISO date/time; or seconds since the epoch.

    Raises:
        ValueError: none of those.
    """
    now = time.time() if now is None else now
    text = text.strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if text and text[-1] in units:
        number = float(text[:-1])
        if number < 0 or not math.isfinite(number):
            raise ValueError(text)
        return now - number * units[text[-1]]
    try:
        return float(text)
    except ValueError:
        pass
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.astimezone()  # as the person means it: their local time
    return moment.timestamp()
