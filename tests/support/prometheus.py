"""A real Prometheus server (Debian's /usr/bin/prometheus) scraping targets, for tests.

``running_prometheus(["127.0.0.1:9400"], interval=1.0)`` writes a config in a temporary
directory, starts Prometheus on a free port of 127.0.0.1 with its storage there, waits until
it is ready and yields its URL; it is stopped on the way out, also when the test fails.
``query(url, promql)`` asks its HTTP API for an instant vector.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.net import free_port, http_get, wait_until

PROMETHEUS = Path("/usr/bin/prometheus")
"""Installed by scripts/install-system-deps (Debian's package ``prometheus``)."""


def prometheus_binary() -> Path:
    """The Prometheus server to start; fails the test plainly when it is missing."""
    found = shutil.which("prometheus") or (str(PROMETHEUS) if PROMETHEUS.exists() else None)
    if found is None:
        raise AssertionError(
            "Prometheus is not installed: run scripts/install-system-deps (Debian: "
            "apt-get install prometheus)"
        )
    return Path(found)


def scrape_config(
    targets: Sequence[str], interval: float, *, job: str = "gputop", extra: str = ""
) -> str:
    """A prometheus.yml scraping ``targets`` every ``interval`` seconds (``extra``: more
    lines for the scrape job, indented as its keys, e.g. ``scheme: https``)."""
    seconds = f"{interval:g}s"
    listed = ", ".join(json.dumps(target) for target in targets)
    return (
        "global:\n"
        f"  scrape_interval: {seconds}\n"
        f"  evaluation_interval: {seconds}\n"
        "scrape_configs:\n"
        f"  - job_name: {json.dumps(job)}\n"
        f"    scrape_interval: {seconds}\n"
        f"    scrape_timeout: {seconds}\n"
        f"    static_configs:\n"
        f"      - targets: [{listed}]\n" + extra
    )


@contextmanager
def running_prometheus(
    scrape_targets: Sequence[str],
    interval: float = 1.0,
    *,
    config: str | None = None,
    timeout: float = 60.0,
) -> Iterator[str]:
    """Prometheus scraping ``scrape_targets`` (``host:port``) every ``interval`` s; yields
    ``http://127.0.0.1:PORT``. ``config``: a whole prometheus.yml instead."""
    binary = prometheus_binary()
    with tempfile.TemporaryDirectory(prefix="gputop-prometheus-") as tmp:
        directory = Path(tmp)
        config_file = directory / "prometheus.yml"
        config_file.write_text(config or scrape_config(scrape_targets, interval))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = (directory / "prometheus.log").open("w+")
        process = subprocess.Popen(
            [
                str(binary),
                f"--config.file={config_file}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:

            def died() -> str | None:
                if process.poll() is None:
                    return None
                log.seek(0)
                return log.read()[-2000:]

            def ready() -> bool:
                if http_get(f"{url}/-/ready", timeout=2)[0] != 200:
                    return False
                # Ours, not another test's server that took the same free port first.
                status, body = http_get(f"{url}/api/v1/status/flags", timeout=2)
                flags = json.loads(body).get("data", {}) if status == 200 else {}
                return bool(flags.get("storage.tsdb.path") == str(directory / "data"))

            wait_until(ready, timeout=timeout, what="prometheus", alive=died)
            yield url
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            log.close()


def query(url: str, promql: str) -> list[dict[str, Any]]:
    """The instant vector Prometheus at ``url`` answers for ``promql`` (its ``result``)."""
    status, body = http_get(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
    assert status == 200, (status, body[:300])
    answer = json.loads(body)
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def wait_for_query(
    url: str,
    promql: str,
    done: Callable[[list[dict[str, Any]]], bool],
    *,
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """Ask ``promql`` until ``done`` accepts the answer (scrapes take an interval or two)."""
    end = time.monotonic() + timeout
    while True:
        result = query(url, promql)
        if done(result):
            return result
        if time.monotonic() > end:
            raise AssertionError(f"{promql}: not there after {timeout:g} s: {result}")
        time.sleep(0.5)
