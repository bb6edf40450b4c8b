"""The fleet as Prometheus knows it: a :class:`~gputop.sources.fleet.FleetSource` over its API.

A refresh asks one query per metric family for every node at once (``last_over_time`` over
the lookback, so an exporter that stopped answering keeps its last values), three for the
window (``avg_over_time`` and ``count_over_time`` of utilization and memory), and one for how
fresh each scrape target is (``up``); the answers are grouped by host label. The queries of
one refresh run side by side on a few threads, so a refresh costs about one round trip of
time whatever the size of the fleet. Which families the server has, and its scrape interval,
are asked again once a minute.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from gputop.model import Snapshot
from gputop.model.fleet import FleetSnapshot, GpuWindow, NodeView
from gputop.sources.prometheus import families as fam
from gputop.sources.prometheus.build import NodeBuilder
from gputop.sources.prometheus.client import (
    PrometheusClient,
    PrometheusError,
    Sample,
    plausible_time,
)
from gputop.sources.prometheus.families import Reading
from gputop.sources.prometheus.identity import clash_notice, gpu_identity, group_readings
from gputop.sources.prometheus.plausible import plausible
from gputop.sources.prometheus.window import gpu_window, load_mean

DEFAULT_WINDOW = 300.0
"""Seconds over which a GPU's state is judged (busy, waiting, idle)."""
DEFAULT_LOOKBACK = 600.0
"""How far back a node's last values are looked for: an exporter silent for longer is gone
from a fresh start (one seen before in this run is kept, marked stale)."""
RETRY_INTERVALS = 5.0
"""Seconds before asking again for the scrape interval of targets that had none yet."""
DISCOVERY_EVERY = 60.0
"""Seconds between asking which metric families exist and what the scrape interval is."""
DCGM_DEFAULT_INTERVAL = 30.0
"""dcgm-exporter's default collection interval, assumed until the data says otherwise."""
STALE_INTERVALS = 3
"""A node whose newest sample is older than this many scrape intervals is stale."""
_NICE_INTERVALS = (0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600)

_FRESH = (
    "(timestamp(up) and (up == 1)) or "
    "max_over_time((timestamp(up) and (up == 1))[{lookback}:{step}])"
)
"""Per scrape target, the time of its newest successful scrape: exact while it answers,
within one subquery step once it stopped."""
INTERVAL_SPAN = 120.0
"""Seconds of raw ``up`` samples read to tell each target's scrape interval."""


def duration(seconds: float) -> str:
    """``seconds`` as a PromQL duration (``7500ms``: PromQL takes no ``7.5s``)."""
    return f"{max(1, round(seconds * 1000))}ms"


def nice_interval(seconds: float) -> float:
    """``seconds`` snapped to a usual scrape interval when within 10% of one."""
    for nice in _NICE_INTERVALS:
        if abs(seconds - nice) <= 0.1 * nice:
            return float(nice)
    return round(seconds, 1)


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def promql_string(text: str) -> str:
    """``text`` as a PromQL string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@dataclass(frozen=True, slots=True)
class _Matcher:
    """How to select one node's series again (for its history): its host label, and its
    scrape targets when another node reports the same host name."""

    label: str
    value: str
    instances: tuple[str, ...] = ()

    def selector(self, metric: str) -> str:
        where = f"{self.label}={promql_string(self.value)}"
        if self.instances:
            alternatives = "|".join(re.escape(i) for i in self.instances)
            where += f",instance=~{promql_string(alternatives)}"
        return f"{metric}{{{where}}}"


class PrometheusFleet:
    """A :class:`~gputop.sources.fleet.FleetSource` reading a Prometheus server."""

    def __init__(
        self,
        client: PrometheusClient,
        *,
        window: float = DEFAULT_WINDOW,
        lookback: float = DEFAULT_LOOKBACK,
        workers: int = 8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Read the fleet from ``client``'s server; GPU states over ``window`` seconds."""
        self._client = client
        self._window = window
        self._lookback = max(lookback, window)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prometheus")
        self._clock = clock
        self._lock = threading.Lock()
        self._families: tuple[str, ...] | None = None
        self._discovered_at = -math.inf
        self._intervals: dict[str, float] = {}
        self._interval: float | None = None
        self._intervals_at = -math.inf
        self._unknown_intervals = False
        self._nodes: dict[str, NodeView] = {}
        """By node key (``NodeView.key``)."""
        self._host_instances: dict[str, frozenset[str] | str] = {}
        """Each node's scrape targets ("" when its series carry no ``instance``)."""
        self._clashed: set[str] = set()
        """Host names that several machines report (their nodes are named by instance)."""
        self._said: set[str] = set()
        """Notices already given (each is said once)."""
        self._seen: dict[str, float] = {}
        """Each target's newest successful scrape at the last refresh."""
        self._matchers: dict[str, _Matcher] = {}

    @property
    def client(self) -> PrometheusClient:
        """The HTTP client (its round-trip count, its URL)."""
        return self._client

    def fleet(self) -> FleetSnapshot:
        """Every node's newest values and GPU states; on failure, the last answer and why."""
        with self._lock:
            try:
                return self._refresh()
            except PrometheusError as error:
                return FleetSnapshot(
                    taken_at=datetime.now(tz=timezone.utc),
                    nodes=tuple(self._nodes[k] for k in sorted(self._nodes)),
                    window_seconds=self._window,
                    scrape_interval=self._interval,
                    error=str(error),
                )

    def node_history(self, host: str, seconds: float) -> Sequence[Snapshot]:
        """The node's snapshots over the last ``seconds`` (``query_range``), oldest first;
        ``host`` is the node's key (``NodeView.key``)."""
        with self._lock:
            matcher = self._matchers.get(host)
            families = self._families
        if matcher is None or not families:
            return []
        end = time.time()
        step = max(self._interval or 1.0, seconds / 240.0, 1.0)
        start = end - seconds
        answers = self._pool.map(
            lambda metric: (
                metric,
                self._client.query_range(matcher.selector(metric), start, end, step),
            ),
            families,
        )
        by_time: dict[float, list[Reading]] = {}
        for metric, series in answers:
            for one in series:
                for at, value in one.points:
                    by_time.setdefault(at, []).append(
                        Reading(metric, one.labels, plausible(metric, value))
                    )
        snapshots = []
        name = matcher.value if matcher.label in fam.HOST_LABELS else host
        for at in sorted(by_time):
            builder = NodeBuilder(name)
            builder.add_all(by_time[at])
            snapshots.append(builder.snapshot(_time(at)))
        return snapshots

    def close(self) -> None:
        """Abort the queries in flight and stop the query threads."""
        self._client.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- one refresh ----------------------------------------------------------------------

    def _refresh(self) -> FleetSnapshot:
        now = self._clock()
        full = not self._host_instances
        if self._families is None or now - self._discovered_at >= DISCOVERY_EVERY:
            self._discover()
            self._discovered_at = now
            full = True  # a full refresh now and then: series that came or went
        elif self._unknown_intervals and now - self._intervals_at >= RETRY_INTERVALS:
            # A target too young for its interval to show at the last look: look again.
            self._learn_intervals()
        families = self._families or ()
        fresh_query = _FRESH.format(lookback=duration(self._lookback), step=duration(self._step()))
        if full:
            # Everything is asked anyway: freshness too, side by side with the rest.
            queries = {"#fresh": fresh_query, **self._queries(families, None)}
            answers, failures = self._run(queries)
            if failures and len(failures) == len(queries):
                raise failures[0]
            fresh = answers.pop("#fresh", [])
            targets = None
        else:
            fresh = self._client.query(fresh_query)
        taken = max((s.timestamp for s in fresh), default=time.time())
        # A scrape time that is no time (NaN, 1e300, before 1970) is as good as none.
        newest = {s.labels.get("instance", ""): s.value for s in fresh if plausible_time(s.value)}
        if not full:
            targets = self._changed_targets(newest)
            queries = self._queries(families, targets)
            answers, failures = self._run(queries)
            if failures and len(failures) == len(queries):
                raise failures[0]
        error = None
        if failures:
            error = f"partial answer ({len(failures)} of {len(queries)} queries failed): "
            error += str(failures[0])
        elif not families:
            error = f"{self._client.url} has no dcgm-exporter or gputop series"
        windows = {key: answers.pop(key, []) for key in _WINDOW_KEYS}
        nodes, notices = self._nodes_from(
            answers, newest, windows, taken, partial=targets is not None
        )
        if not failures:
            self._seen = newest
        return FleetSnapshot(
            taken_at=_time(taken),
            nodes=nodes,
            window_seconds=self._window,
            scrape_interval=self._interval,
            error=error,
            notices=notices,
        )

    def _changed_targets(self, newest: dict[str, float]) -> set[str] | None:
        """The targets to ask again: those scraped since the last refresh, with every other
        target of their hosts; None for all of them (most changed, or a host with no
        ``instance`` to select it by)."""
        changed = {i for i, at in newest.items() if self._seen.get(i) != at}
        if "" in self._host_instances.values() or len(changed) * 2 > len(newest):
            return None
        targets = set(changed)
        for instances in self._host_instances.values():
            if isinstance(instances, frozenset) and instances & changed:
                targets |= instances
        return targets

    def _queries(self, families: Sequence[str], targets: set[str] | None) -> dict[str, str]:
        """One query per family and three for the window, for ``targets`` (None: all)."""
        if targets is not None and not targets:
            return {}
        where = ""
        if targets is not None:
            alternatives = "|".join(re.escape(t) for t in sorted(targets))
            where = f"{{instance=~{promql_string(alternatives)}}}"
        queries = {m: f"last_over_time({m}{where}[{duration(self._lookback)}])" for m in families}
        window = f"{where}[{duration(self._window)}]"
        if fam.UTIL_METRIC in families:
            queries["#util_mean"] = f"avg_over_time({fam.UTIL_METRIC}{window})"
            queries["#util_count"] = f"count_over_time({fam.UTIL_METRIC}{window})"
        if fam.MEMORY_USED_METRIC in families:
            queries["#mem_mean"] = f"avg_over_time({fam.MEMORY_USED_METRIC}{window})"
        if fam.GR_ENGINE_ACTIVE in families:
            # GPM's engine activity, where an exporter has it for whole GPUs (load_mean).
            queries["#activity_mean"] = f"avg_over_time({fam.GR_ENGINE_ACTIVE}{window})"
            queries["#activity_count"] = f"count_over_time({fam.GR_ENGINE_ACTIVE}{window})"
        return queries

    def _step(self) -> float:
        """The freshness subquery's resolution: half an interval (1 s until one is known)."""
        if self._interval is None:
            return 1.0
        return max(1.0, min(self._interval / 2, 15.0))

    def _discover(self) -> None:
        # The scrape interval is asked side by side with the metric names.
        intervals = self._pool.submit(self._learn_intervals)
        try:
            names = self._client.label_values("__name__", ['{__name__=~"DCGM_.+|gputop_.+"}'])
        finally:
            intervals.result()
        self._families = fam.present(names)

    def _learn_intervals(self) -> None:
        self._intervals_at = self._clock()
        self._unknown_intervals = False
        try:
            series = self._client.query_matrix(f"up[{duration(INTERVAL_SPAN)}]")
        except PrometheusError:
            return  # the interval is a nicety; the refresh itself says what failed
        intervals = {}
        for one in series:
            times = [at for at, _ in one.points]
            gaps = [b - a for a, b in itertools.pairwise(times) if b > a]
            if gaps:
                intervals[one.labels.get("instance", "")] = nice_interval(statistics.median(gaps))
        self._intervals = intervals

    def _run(
        self, queries: dict[str, str]
    ) -> tuple[dict[str, list[Sample]], list[PrometheusError]]:
        futures = {key: self._pool.submit(self._client.query, q) for key, q in queries.items()}
        answers: dict[str, list[Sample]] = {}
        failures: list[PrometheusError] = []
        for key, future in futures.items():
            try:
                answers[key] = future.result()
            except PrometheusError as error:
                failures.append(error)
        return answers, failures

    def _nodes_from(
        self,
        answers: dict[str, list[Sample]],
        newest: dict[str, float],
        windows: dict[str, list[Sample]],
        taken: float,
        *,
        partial: bool,
    ) -> tuple[tuple[NodeView, ...], tuple[str, ...]]:
        readings = (
            Reading(metric, sample.labels, plausible(metric, sample.value))
            for metric, samples in answers.items()
            for sample in samples
        )
        clashed_before = set(self._clashed)
        groups = group_readings(readings, self._clashed)
        notices = []
        for host in sorted(self._clashed - clashed_before):
            # Named by instance from now on: the node filed under the bare host name is one
            # of those below, not a machine of its own.
            self._nodes.pop(host, None)
            self._host_instances.pop(host, None)
            notice = clash_notice(host, (g for g in groups if g.host == host))
            if notice not in self._said:
                self._said.add(notice)
                notices.append(notice)
        builders: dict[str, NodeBuilder] = {}
        for group in groups:
            builder = builders[group.key] = NodeBuilder(group.host)
            builder.add_all(group.readings)
            first = group.readings[0].labels
            self._matchers[group.key] = _matcher(
                first, group.host, tuple(sorted(group.instances)) if group.label else ()
            )
        aggregates = {key: _by_gpu(samples) for key, samples in windows.items()}
        for key, builder in builders.items():
            self._host_instances[key] = frozenset(builder.instances) if builder.instances else ""
        seen_intervals = [self._intervals[i] for i in newest if i in self._intervals]
        if seen_intervals:
            self._interval = statistics.median(seen_intervals)
        labels = {g.key: g.label for g in groups}
        for key, builder in builders.items():
            self._nodes[key] = self._view(builder, labels[key], newest, aggregates, taken)
        for key, view in list(self._nodes.items()):
            if key in builders:
                continue
            if partial:
                # Not scraped since the last refresh: the same values, only older.
                stale = self._stale(view.instance or "", newest, taken)
                if stale is not None and stale != view.stale:
                    self._nodes[key] = replace(view, stale=stale)
            elif not view.stale:
                # Gone from the lookback altogether: keep it, as stale, never dropped.
                self._nodes[key] = replace(view, stale=True)
        return tuple(self._nodes[k] for k in sorted(self._nodes)), tuple(notices)

    def _stale(self, instance: str, newest: dict[str, float], taken: float) -> bool | None:
        """Whether the node scraped from ``instance`` is stale (None: no ``up`` says)."""
        last = newest.get(instance)
        if last is None:
            return True if instance in self._intervals else None
        interval = self._intervals.get(instance, self._interval or DCGM_DEFAULT_INTERVAL)
        return taken - last > STALE_INTERVALS * interval + 1.0

    def _view(
        self,
        builder: NodeBuilder,
        label: str | None,
        newest: dict[str, float],
        aggregates: dict[str, dict[str, float]],
        taken: float,
    ) -> NodeView:
        instance = builder.instance or ""
        if instance not in self._intervals:
            self._unknown_intervals = True
        last = newest.get(instance)
        stale = bool(self._stale(instance, newest, taken))
        stamp = None if last is None else _time(last)
        if last is None:
            # No successful scrape found: its exporter stopped answering (or Prometheus
            # does not scrape it itself, when it has no ``up``). Its last time is kept.
            prior = self._nodes.get(label or builder.host)
            stamp = prior.newest_sample if prior is not None else None
        snapshot = builder.snapshot(stamp)
        extras = {e.index: e for e in builder.extras()}
        windows: list[GpuWindow] = []
        for index, key in builder.gpu_identities():
            gpu = snapshot.gpu(index)
            if gpu is None:
                continue
            extra = extras.get(index)
            util, count = load_mean(
                _aggregate(aggregates, "#activity", key), _aggregate(aggregates, "#util", key)
            )
            mem = aggregates.get("#mem_mean", {}).get(key)
            memory_mean = None if mem is None else round(mem / fam.MEMORY_USED_SCALE)
            windows.append(
                gpu_window(
                    gpu,
                    utilization_mean=util,
                    samples=int(count),
                    memory_used_mean=memory_mean,
                    process_count=extra.process_count if extra else None,
                    exporter_state=extra.state if extra else None,
                    seconds_waiting=extra.waiting_seconds if extra else None,
                )
            )
        return NodeView(
            host=builder.host,
            snapshot=snapshot,
            newest_sample=snapshot.timestamp,
            stale=stale,
            windows=tuple(windows),
            exporter=builder.exporter,
            instance=builder.instance,
            label=label,
        )


def _matcher(labels: Mapping[str, str], host: str, instances: tuple[str, ...]) -> _Matcher:
    for name in fam.HOST_LABELS:
        if labels.get(name) == host:
            return _Matcher(name, host, instances)
    return _Matcher("instance", str(labels.get("instance", host)))


_WINDOW_KEYS = ("#util_mean", "#util_count", "#mem_mean", "#activity_mean", "#activity_count")


def _aggregate(
    aggregates: dict[str, dict[str, float]], prefix: str, gpu: str
) -> tuple[float | None, int]:
    """A window query's (mean, sample count) for one GPU: ``prefix`` ``_mean`` and ``_count``."""
    mean = aggregates.get(f"{prefix}_mean", {}).get(gpu)
    return mean, int(aggregates.get(f"{prefix}_count", {}).get(gpu, 0.0))


def _by_gpu(samples: Iterable[Sample]) -> dict[str, float]:
    """Window aggregates by GPU identity (UUID, else index under its scrape target), from
    the GPUs' own series (not MIG instances'): never by (host, index), which two exporters
    of one host name share."""
    out: dict[str, float] = {}
    for sample in samples:
        if "GPU_I_ID" in sample.labels or not 0.0 <= sample.value < math.inf:
            continue
        key = gpu_identity(sample.labels)
        if key is not None:
            out[key] = sample.value
    return out
