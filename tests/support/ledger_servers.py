"""A real Prometheus, and a real VictoriaMetrics, holding a generated history.

``backfilled_prometheus(history)`` writes the history as OpenMetrics, turns it into TSDB
blocks with Debian's ``promtool tsdb create-blocks-from openmetrics`` and starts Debian's
Prometheus on them (no scrape targets); ``running_victoria(history)`` starts Debian's
``victoria-metrics`` and imports the same samples through its Prometheus import API. Both
listen on a free port of 127.0.0.1, in a temporary directory, and are stopped (SIGTERM, then
killed) on the way out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.ledger_data import History, write_openmetrics, write_prometheus_text
from support.net import free_port, http_get, start_server, stop_server, wait_until
from support.prometheus import RunningPrometheus

PROMTOOL = Path("/usr/bin/promtool")
VICTORIA = Path("/usr/bin/victoria-metrics")
"""Installed by scripts/install-system-deps (Debian's ``prometheus`` and
``victoria-metrics``)."""


def _binary(name: str, default: Path, package: str) -> str:
    found = shutil.which(name) or (str(default) if default.exists() else None)
    if found is None:
        raise AssertionError(
            f"{name} is not installed: run scripts/install-system-deps (Debian: apt-get "
            f"install {package})"
        )
    return found


def backfill(history: History, data: Path) -> None:
    """``promtool tsdb create-blocks-from openmetrics`` of ``history`` into ``data``."""
    source = data.parent / "history.om"
    with source.open("w") as out:
        write_openmetrics(history, out)
    result = subprocess.run(
        [
            _binary("promtool", PROMTOOL, "prometheus"),
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--max-block-duration=168h",  # a few large blocks: far quicker than 2 h ones
            "--quiet",
            str(source),
            str(data),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    source.unlink()


@contextmanager
def backfilled_prometheus(history: History, timeout: float = 120.0) -> Iterator[RunningPrometheus]:
    """Prometheus serving ``history`` from backfilled blocks; yields its URL."""
    with tempfile.TemporaryDirectory(prefix="gputop-ledger-prometheus-") as tmp:
        directory = Path(tmp)
        (directory / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\n")
        backfill(history, directory / "data")
        with (directory / "prometheus.log").open("w+") as log:
            server = RunningPrometheus(directory, free_port(), log, timeout)
            try:
                server.start()
                yield server
            finally:
                server.stop()


@contextmanager
def running_victoria(history: History, timeout: float = 120.0) -> Iterator[str]:
    """VictoriaMetrics holding ``history`` (imported, flushed, searchable); yields its URL."""
    binary = _binary("victoria-metrics", VICTORIA, "victoria-metrics")
    with tempfile.TemporaryDirectory(prefix="gputop-ledger-victoria-") as tmp:
        directory = Path(tmp)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with (directory / "victoria.log").open("w+") as log:
            process, died = start_server(
                [
                    binary,
                    f"-storageDataPath={directory / 'data'}",
                    f"-httpListenAddr=127.0.0.1:{port}",
                    "-retentionPeriod=100y",
                    "-search.latencyOffset=0s",
                    "-search.disableCache",
                    "-loggerLevel=ERROR",
                ],
                directory,
                log,
            )
            try:
                wait_until(
                    lambda: http_get(f"{url}/health", timeout=2)[0] == 200,
                    timeout=timeout,
                    what="victoria-metrics",
                    alive=died,
                )
                source = directory / "history.txt"
                with source.open("w") as out:
                    samples = write_prometheus_text(history, out)
                request = urllib.request.Request(
                    f"{url}/api/v1/import/prometheus",
                    data=source.read_bytes(),
                    method="POST",
                    headers={"Content-Type": "text/plain"},
                )
                with urllib.request.urlopen(request, timeout=timeout) as answer:
                    assert answer.status in (200, 204), answer.status
                source.unlink()
                http_get(f"{url}/internal/force_flush", timeout=30)
                _wait_for_samples(url, history, samples, timeout)
                yield url
            finally:
                stop_server(process)


def _wait_for_samples(url: str, history: History, samples: int, timeout: float) -> None:
    """Until every imported sample is searchable (VictoriaMetrics indexes in the background)."""
    span = round(history.end - history.start) + 3600
    promql = f'sum(count_over_time({{__name__=~"DCGM_.+|gputop_.+"}}[{span}s]))'
    query = urllib.parse.urlencode({"query": promql, "time": str(history.end + 1)})
    end = time.monotonic() + timeout
    found = None
    while time.monotonic() < end:
        status, body = http_get(f"{url}/api/v1/query?{query}", timeout=30)
        if status == 200:
            result = json.loads(body)["data"]["result"]
            found = float(result[0]["value"][1]) if result else 0.0
            if found >= samples:
                return
        time.sleep(0.5)
    raise AssertionError(f"victoria-metrics holds {found} of {samples} samples")
