"""The ledger from a Prometheus (or anything that answers its HTTP API: VictoriaMetrics,
Thanos, Mimir): the span is cut into chunks that each stay within the server's limits, each
chunk's queries run side by side, and the per-group step counts they return are added up.

Prometheus refuses a range query of more than 11,000 points per series, and one that loads
more than ``--query.max-samples`` (50 million by default) samples. A chunk has at most
``MAX_POINTS`` steps and reads about ``SAMPLE_BUDGET`` samples: GPUs x selectors x (chunk /
scrape interval), both read from the data by one small probe first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timezone, tzinfo

from gputop.ledger.account import NO_GROUP, Cost, Ledger, Prices, StepCounts, account
from gputop.ledger.promql import SELECTORS, GroupBy, LedgerQueries
from gputop.ledger.thresholds import Thresholds
from gputop.sources.prometheus.client import PrometheusClient, PrometheusError

DEFAULT_THRESHOLDS = Thresholds()
NO_PRICES = Prices()

MAX_POINTS = 10_000
"""Steps per query: under Prometheus's 11,000 points per series."""
SAMPLE_BUDGET = 10_000_000
"""Samples one query may read: a fifth of Prometheus's default ``--query.max-samples``."""
PROBE_SECONDS = 3600.0
"""How much recent data the probe counts samples in (to tell GPUs and scrape interval)."""


_FILED: dict[tuple[str, bool], tuple[tuple[str, float], ...]] = {
    # (query, series with a pod) -> the ledger's figures it adds to (or takes from). A
    # GPU present is held unless it is idle without a pod, and then held only when its
    # memory or a process says so: held = present - idle (no pod) + idle_res.
    **{("present", pod): (("present", 1.0), ("held", 1.0)) for pod in (False, True)},
    **{("activity", pod): (("activity", 1.0),) for pod in (False, True)},
    ("idle", True): (("idle_held", 1.0),),
    ("idle", False): (("held", -1.0), ("low_held", -1.0)),
    **{("low", pod): (("low_held", 1.0),) for pod in (False, True)},
    **{
        ("idle_res", pod): (("held", 1.0), ("idle_held", 1.0), ("low_held", 1.0))
        for pod in (False, True)
    },
    **{("free", pod): (("free", 1.0),) for pod in (False, True)},
    **{("power", pod): (("power", 1.0),) for pod in (False, True)},
    **{
        (name, pod): (("idle_held_power", 1.0),)
        for name in ("idle_power_pod", "idle_power_res")
        for pod in (False, True)
    },
}


def _scale(
    client: PrometheusClient, queries: LedgerQueries, until: float, span: float
) -> tuple[int, float]:
    """(GPUs, seconds between samples) near the end of the span; a guess when none."""
    window = min(span, PROBE_SECONDS)
    for at in (until, until - span / 2):
        answer = client.query(queries.scale_probe(window), at=at)
        counts = [s.value for s in answer if math.isfinite(s.value) and s.value > 0]
        if counts:
            return len(counts), max(1.0, window / max(counts))
    return 1, queries.step


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
    """Steps per query so that it reads at most ``SAMPLE_BUDGET`` samples."""
    per_step = max(1.0, gpus * SELECTORS * step / interval)
    return max(1, min(MAX_POINTS, int(SAMPLE_BUDGET / per_step)))


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
    gpus, interval = _scale(client, probe, until, until - since)
    if step is None:
        step = auto_step(until - since, interval)
    steps = max(1, math.floor((until - since) / step))
    until = since + steps * step
    queries = LedgerQueries(by, step, thresholds, match)
    per_chunk = chunk_steps(gpus, interval, step)
    chunks = []
    first = 0
    while first < steps:
        last = min(steps, first + per_chunk)
        # A range query's points are start, start + step, ... end: each the end of a step.
        chunks.append((since + (first + 1) * step, since + last * step))
        first = last
    counts = StepCounts(step=step, since=since, until=until)
    jobs = [(name, promql, a, b) for a, b in chunks for name, promql in queries.queries().items()]
    samples: int | None = 0
    points = 0
    done = 0
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ledger") as pool:
        futures = [
            (name, pool.submit(client.query_range_counted, promql, a, b, step))
            for name, promql, a, b in jobs
        ]
        try:
            for name, future in futures:
                series, read = future.result()
                samples = None if samples is None or read is None else samples + read
                for one in series:
                    group = by.group_of(one.labels) or NO_GROUP
                    targets = _FILED[(name, bool(one.labels.get("pod")))]
                    for at, value in one.points:
                        if math.isfinite(value):
                            for figure, sign in targets:
                                counts.add(figure, group, at, sign * value)
                            points += 1
                done += 1
                if on_progress is not None:
                    on_progress(done, len(futures))
        except PrometheusError:
            for _, future in futures:
                future.cancel()
            raise
    cost = Cost(queries=len(jobs) + 1, samples=samples, points=points)
    return account(counts, by, thresholds, source=client.url, cost=cost, prices=prices, tz=tz)


def parse_when(text: str, now: float | None = None) -> float:
    """``7d``, ``36h``, ``90m`` ago; or an ISO date/time; or seconds since the epoch.

    Raises:
        ValueError: none of those.
    """
    from datetime import datetime

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
