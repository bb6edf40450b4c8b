"""`gputop cluster --targets host:9400,...`: scrape exporters directly, for a lab with no
Prometheus server.

Each refresh fetches every target's ``/metrics`` side by side, parses it with
prometheus-client's own text parser, and files the series through the same
:class:`~gputop.sources.prometheus.build.NodeBuilder` as the Prometheus source: the same
snapshots, the same screens. The window (utilization and memory means) and the node's
history are kept here, in memory, from the scrapes this run made.
"""

from __future__ import annotations

import itertools
import math
import statistics
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from prometheus_client.parser import text_string_to_metric_families

from gputop.errors import BadArguments
from gputop.model import GpuSample, Snapshot
from gputop.model.activity import load_percent
from gputop.model.fleet import FleetSnapshot, GpuWindow, NodeView
from gputop.sources.prometheus.build import NodeBuilder
from gputop.sources.prometheus.client import (
    Auth,
    PrometheusClient,
    PrometheusError,
)
from gputop.sources.prometheus.families import Reading
from gputop.sources.prometheus.identity import clash_notice, group_readings
from gputop.sources.prometheus.plausible import plausible
from gputop.sources.prometheus.window import gpu_window

HISTORY = 720
"""Snapshots kept per node for its screen's history (an hour at 5 s)."""


def parse_targets(text: str) -> list[str]:
    """``host:9400,https://h2/metrics`` -> the URLs to scrape (``/metrics`` by default)."""
    urls = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        url = item if "://" in item else f"http://{item}"
        parsed = urllib.parse.urlsplit(url)
        try:
            parsed.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            raise BadArguments(f"--targets {item!r}: the port is not a number") from None
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise BadArguments(f"--targets {item!r}: give HOST:PORT or an http(s) URL")
        if parsed.path in ("", "/"):
            url = urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, "/metrics", "", ""))
        urls.append(url)
    if not urls:
        raise BadArguments("--targets names no exporter: give HOST:PORT[,HOST:PORT...]")
    return urls


@dataclass
class _Target:
    url: str
    instance: str
    hosts: set[str] = field(default_factory=set)
    last_ok: float | None = None


@dataclass
class _Track:
    """One GPU's recent utilization and memory, for the window."""

    util: deque[tuple[float, float]] = field(default_factory=deque)
    memory: deque[tuple[float, int]] = field(default_factory=deque)


def parse_exposition(text: str, instance: str) -> list[Reading]:
    """The readings of one exposition (Prometheus text format), labelled with ``instance``;
    a value no GPU can report (a negative draw) is NaN, unknown.

    Raises:
        ValueError: the text is not an exposition.
    """
    readings = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = dict(sample.labels)
            labels.setdefault("instance", instance)
            value = plausible(sample.name, float(sample.value))
            readings.append(Reading(sample.name, labels, value))
    return readings


class DirectFleet:
    """A :class:`~gputop.sources.fleet.FleetSource` that scrapes exporters itself."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        auth: Auth | None = None,
        timeout: float = 5.0,
        window: float = 300.0,
        workers: int = 16,
    ) -> None:
        """Scrape ``urls`` (from :func:`parse_targets`) on each :meth:`fleet`."""
        # The client is only the request maker here: the same headers, TLS and error lines.
        self._clients = [PrometheusClient(url, auth, timeout, kind="the exporter") for url in urls]
        self._targets = [_Target(c.url, urllib.parse.urlsplit(c.url).netloc) for c in self._clients]
        self._window = window
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scrape")
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeView] = {}
        """By node key (``NodeView.key``)."""
        self._history: dict[str, deque[Snapshot]] = {}
        self._tracks: dict[str, _Track] = {}
        """By GPU identity (its UUID, else its index under its target): two exporters that
        report the same host name never share a window."""
        self._clashed: set[str] = set()
        self._said: set[str] = set()
        self._refreshes: deque[float] = deque(maxlen=10)

    def fleet(self) -> FleetSnapshot:
        """Scrape every target now; a target that does not answer keeps its node, stale."""
        with self._lock:
            now = time.time()
            self._refreshes.append(now)
            results = list(self._pool.map(self._scrape, range(len(self._targets))))
            failures = [error for error in results if isinstance(error, str)]
            fresh: list[Reading] = []
            for target, result in zip(self._targets, results, strict=True):
                if isinstance(result, str):
                    for key in target.hosts:
                        view = self._nodes.get(key)
                        if view is not None and not view.stale:
                            self._nodes[key] = replace(view, stale=True)
                    continue
                target.last_ok = now
                fresh.extend(result)
            notices = self._file(fresh, now)
            error = None
            if failures:
                error = failures[0]
                if len(failures) > 1 or len(failures) < len(self._targets):
                    error = f"{len(failures)} of {len(self._targets)} targets: {failures[0]}"
            return FleetSnapshot(
                taken_at=datetime.fromtimestamp(now, tz=timezone.utc),
                nodes=tuple(self._nodes[k] for k in sorted(self._nodes)),
                window_seconds=self._window,
                scrape_interval=self._interval(),
                error=error,
                notices=notices,
            )

    def node_history(self, host: str, seconds: float) -> Sequence[Snapshot]:
        """The snapshots this run scraped of ``host`` in the last ``seconds``."""
        with self._lock:
            history = list(self._history.get(host, ()))
        cutoff = time.time() - seconds
        return [s for s in history if s.timestamp is None or s.timestamp.timestamp() >= cutoff]

    def close(self) -> None:
        """Abort the scrapes in flight and stop the scraping threads."""
        for client in self._clients:
            client.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _interval(self) -> float | None:
        times = list(self._refreshes)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        return round(statistics.median(gaps), 1) if gaps else None

    def _scrape(self, position: int) -> list[Reading] | str:
        client = self._clients[position]
        target = self._targets[position]
        try:
            text = client.fetch_text()
        except PrometheusError as error:
            return str(error)
        try:
            return parse_exposition(text, target.instance)
        except (ValueError, TypeError, IndexError):
            return f"{target.url} is not a Prometheus exposition (its /metrics did not parse)"

    def _file(self, readings: list[Reading], now: float) -> tuple[str, ...]:
        """File this refresh's readings as nodes; the notices to give (said once each)."""
        clashed_before = set(self._clashed)
        groups = group_readings(readings, self._clashed)
        notices = []
        for host in sorted(self._clashed - clashed_before):
            self._nodes.pop(host, None)  # it is one of the nodes named by instance now
            notice = clash_notice(host, (g for g in groups if g.host == host))
            if notice not in self._said:
                self._said.add(notice)
                notices.append(notice)
        by_instance = {t.instance: t for t in self._targets}
        stamp = datetime.fromtimestamp(now, tz=timezone.utc)
        for group in groups:
            builder = NodeBuilder(group.host)
            builder.add_all(group.readings)
            snapshot = builder.snapshot(stamp)
            if not snapshot.gpus:
                continue  # an exporter's own series (process_*, python_*), no GPU
            for instance in group.instances:
                target = by_instance.get(instance)
                if target is not None:
                    target.hosts.add(group.key)
            self._history.setdefault(group.key, deque(maxlen=HISTORY)).append(snapshot)
            extras = {e.index: e for e in builder.extras()}
            identities = dict(builder.gpu_identities())
            windows: list[GpuWindow] = []
            for gpu in snapshot.gpus:
                util, count, memory = self._track(identities[gpu.index], now, gpu)
                extra = extras.get(gpu.index)
                windows.append(
                    gpu_window(
                        gpu,
                        utilization_mean=util,
                        samples=count,
                        memory_used_mean=memory,
                        process_count=extra.process_count if extra else None,
                        exporter_state=extra.state if extra else None,
                        seconds_waiting=extra.waiting_seconds if extra else None,
                    )
                )
            self._nodes[group.key] = NodeView(
                host=group.host,
                snapshot=snapshot,
                newest_sample=stamp,
                stale=False,
                windows=tuple(windows),
                exporter=builder.exporter,
                instance=", ".join(sorted(group.instances)) or None,
                label=group.label,
            )
        return tuple(notices)

    def _track(
        self, identity: str, now: float, gpu: GpuSample
    ) -> tuple[float | None, int, int | None]:
        track = self._tracks.setdefault(identity, _Track())
        load = load_percent(gpu)  # engine activity where exported, else utilization
        if load is not None and math.isfinite(load):
            track.util.append((now, load))
        if gpu.memory.used is not None:
            track.memory.append((now, gpu.memory.used))
        cutoff = now - self._window
        while track.util and track.util[0][0] < cutoff:
            track.util.popleft()
        while track.memory and track.memory[0][0] < cutoff:
            track.memory.popleft()
        util = statistics.fmean(v for _, v in track.util) if track.util else None
        memory = round(statistics.fmean(v for _, v in track.memory)) if track.memory else None
        return util, len(track.util), memory
