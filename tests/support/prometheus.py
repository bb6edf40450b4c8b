"""A real Prometheus server (Debian's /usr/bin/prometheus) scraping targets, for tests, and
small HTTP servers for it to scrape.

``running_prometheus(["127.0.0.1:9400"], interval=1.0)`` writes a config in a temporary
directory, starts Prometheus on a free port of 127.0.0.1 with its storage there, waits until
it is ready and yields its URL (a :class:`RunningPrometheus`: a ``str`` that can also
``stop()`` and ``start()`` the server again on the same port and storage); it is stopped on
the way out, also when the test fails. ``query(url, promql)`` asks its HTTP API for an
instant vector. ``ExpositionServer`` serves a fixed ``/metrics`` text (a real dcgm-exporter
exposition) on its own free port, so each one is a target with its own ``instance`` that a
test can stop; ``cluster(...)`` runs the real ``gputop cluster`` command.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from support.command import ROOT, gputop_command
from support.net import free_port, http_get, start_server, stop_server, wait_until

__all__ = ["free_port"]

PROMETHEUS = Path("/usr/bin/prometheus")
"""Installed by scripts/install-system-deps (Debian's package ``prometheus``)."""
DCGM = ROOT / "snapshots" / "dcgm"
"""Real dcgm-exporter expositions (snapshots/README.md credits each)."""


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


class RunningPrometheus(str):
    """The server's URL (``http://127.0.0.1:PORT``), which can also stop and start it."""

    directory: Path
    port: int
    _process: subprocess.Popen[bytes] | None
    _log: IO[str]
    _timeout: float

    def __new__(cls, directory: Path, port: int, log: IO[str], timeout: float) -> RunningPrometheus:
        self = super().__new__(cls, f"http://127.0.0.1:{port}")
        self.directory = directory
        self.port = port
        self._process = None
        self._log = log
        self._timeout = timeout
        return self

    @property
    def url(self) -> str:
        """The server's URL."""
        return str(self)

    @property
    def pid(self) -> int | None:
        """The running process's id."""
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        """Start the server (again, on the same port and storage) and wait until it is ready."""
        process, died = start_server(
            [
                str(prometheus_binary()),
                f"--config.file={self.directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            self.directory,
            self._log,
        )
        self._process = process

        data = str(self.directory / "data")

        def ready() -> bool:
            if http_get(f"{self}/-/ready", timeout=2)[0] != 200:
                return False
            # Ours, not another test's server that took the same free port first.
            status, body = http_get(f"{self}/api/v1/status/flags", timeout=2)
            flags = json.loads(body).get("data", {}) if status == 200 else {}
            return bool(flags.get("storage.tsdb.path") == data)

        wait_until(
            ready,
            timeout=self._timeout,
            what="prometheus",
            alive=died,
        )

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 15 s)."""
        process, self._process = self._process, None
        if process is not None:
            stop_server(process)

    def wait_for(self, promql: str, count: int = 1, timeout: float = 30.0) -> None:
        """Wait until ``promql`` returns at least ``count`` series (the targets were scraped)."""
        wait_for_query(self, promql, lambda result: len(result) >= count, timeout=timeout)


@contextmanager
def running_prometheus(
    scrape_targets: Sequence[str],
    interval: float = 1.0,
    *,
    config: str | None = None,
    timeout: float = 60.0,
) -> Iterator[RunningPrometheus]:
    """Prometheus scraping ``scrape_targets`` (``host:port``) every ``interval`` s; yields
    its URL. ``config``: a whole prometheus.yml instead."""
    with tempfile.TemporaryDirectory(prefix="gputop-prometheus-") as tmp:
        directory = Path(tmp)
        (directory / "prometheus.yml").write_text(config or scrape_config(scrape_targets, interval))
        with (directory / "prometheus.log").open("w+") as log:
            server = RunningPrometheus(directory, free_port(), log, timeout)
            try:
                server.start()
                yield server
            finally:
                server.stop()


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


class ExpositionServer:
    """``/metrics`` answering ``text`` (changeable while it runs) on 127.0.0.1."""

    def __init__(self, text: str, port: int | None = None) -> None:
        """Serve ``text``; ``start`` opens the port (a free one unless ``port``)."""
        self.text = text
        self.port = port or free_port()
        self.delay = 0.0
        """Seconds each answer waits (a slow exporter)."""
        self.requests = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def target(self) -> str:
        """``127.0.0.1:PORT``, as Prometheus's config names it."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> ExpositionServer:
        """Listen (again, on the same port)."""
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests += 1
                if owner.delay:
                    time.sleep(owner.delay)
                body = owner.text.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering (the port is refused from now on)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


@contextmanager
def serving(texts: Sequence[str]) -> Iterator[list[ExpositionServer]]:
    """One started ``ExpositionServer`` per text, all stopped at the end."""
    servers: list[ExpositionServer] = []
    try:
        for text in texts:
            servers.append(ExpositionServer(text).start())
        yield servers
    finally:
        for server in servers:
            server.stop()


def cluster(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real `gputop cluster` command, run from the repository's root."""
    command, environ = gputop_command()
    return subprocess.run(
        [*command, "cluster", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
