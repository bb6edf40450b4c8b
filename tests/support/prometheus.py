"""A real Prometheus on 127.0.0.1 for the tests, and small HTTP servers it scrapes.

``running_prometheus`` writes a ``prometheus.yml`` (1 s scrapes) into a temporary directory,
starts Debian's ``prometheus`` on a free port, waits until it says it is ready, and always
stops it (also when the test fails). ``ExpositionServer`` serves a fixed ``/metrics`` text
(a real dcgm-exporter exposition, or gputop's format) on its own free port, so each one is a
scrape target with its own ``instance`` that a test can stop and start again.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from support.command import ROOT, gputop_command

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DCGM = ROOT / "snapshots" / "dcgm"
"""Real dcgm-exporter expositions (snapshots/README.md credits each)."""

READY_TIMEOUT = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


@contextlib.contextmanager
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


class RunningPrometheus:
    """A Prometheus process the test controls: its URL, and stop/start on the same port."""

    def __init__(self, directory: Path, port: int, args: Sequence[str]) -> None:
        """Run in ``directory`` (config and data) on ``port``."""
        self.directory = directory
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._args = list(args)
        self._process: subprocess.Popen[bytes] | None = None
        self._log = directory / "prometheus.log"

    def start(self, ready_path: str = "/-/ready", auth: str | None = None) -> None:
        """Start it and wait until it is ready."""
        command = [
            PROMETHEUS,
            f"--config.file={self.directory / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
            *self._args,
        ]
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + READY_TIMEOUT
        request = urllib.request.Request(self.url + ready_path)
        if auth is not None:
            request.add_header("Authorization", auth)
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self._log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(request, timeout=1) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"prometheus not ready in {READY_TIMEOUT:g} s")

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL after 10 s)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    @property
    def pid(self) -> int | None:
        """The running process's id."""
        return None if self._process is None else self._process.pid

    def wait_for(self, promql: str, count: int = 1, timeout: float = 30.0) -> None:
        """Wait until ``promql`` returns at least ``count`` series (the targets were scraped)."""
        import json
        import urllib.parse

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            query = urllib.parse.urlencode({"query": promql})
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=2) as r:
                    if len(json.load(r)["data"]["result"]) >= count:
                        return
            except (urllib.error.URLError, OSError, KeyError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{promql!r} did not return {count} series in {timeout:g} s")


def config(targets: Sequence[str], interval: str = "1s") -> str:
    """A prometheus.yml scraping ``targets`` (``host:port``) every ``interval``."""
    listed = ", ".join(f"'{t}'" for t in targets)
    return (
        "global:\n"
        f"  scrape_interval: {interval}\n"
        f"  scrape_timeout: {interval}\n"
        "scrape_configs:\n"
        "  - job_name: gpus\n"
        "    static_configs:\n"
        f"      - targets: [{listed}]\n"
    )


@contextlib.contextmanager
def running_prometheus(
    targets: Sequence[str],
    *,
    interval: str = "1s",
    args: Sequence[str] = (),
    files: dict[str, str] | None = None,
    ready_auth: str | None = None,
) -> Iterator[RunningPrometheus]:
    """A real Prometheus scraping ``targets`` every ``interval``, stopped at the end.

    ``files`` are written beside the config (a ``--web.config.file``, say); ``args`` are
    added to the command line; ``ready_auth`` is the Authorization header of the readiness
    check when the server asks for one.
    """
    directory = Path(tempfile.mkdtemp(prefix="gputop-prometheus-"))
    (directory / "prometheus.yml").write_text(config(targets, interval))
    for name, text in (files or {}).items():
        (directory / name).write_text(text)
    prometheus = RunningPrometheus(
        directory, free_port(), [a.replace("{dir}", str(directory)) for a in args]
    )
    try:
        prometheus.start(auth=ready_auth)
        yield prometheus
    finally:
        prometheus.stop()
        shutil.rmtree(directory, ignore_errors=True)


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
