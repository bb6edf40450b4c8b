"""The real `gputop export` on 127.0.0.1, on the fake NVML or replaying a capture."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.command import ROOT, gputop_command
from support.metrics import Series, find, series
from support.net import free_port, http_get, wait_until

FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"


@dataclass
class Exporter:
    """A running exporter: where it serves and its process."""

    url: str
    """``http://127.0.0.1:PORT`` (no trailing slash)."""
    port: int
    process: subprocess.Popen[str]

    context: ssl.SSLContext | None = None
    """Trusts the exporter's certificate, when it serves TLS."""
    said: _Said | None = None

    def stderr(self) -> str:
        """Everything the process wrote on stderr so far."""
        return "" if self.said is None else self.said.read()

    def metrics(self) -> str:
        """One scrape of ``/metrics``."""
        status, body = http_get(f"{self.url}/metrics", context=self.context)
        assert status == 200, (status, body[:200])
        return body.decode()

    def scrape_until(self, name: str, seconds: float, **labels: str) -> Series:
        """Scrapes until one has a series ``name`` with ``labels``, or ``seconds`` have
        passed: the last scrape's series (the caller asserts what it needs of them)."""
        deadline = time.monotonic() + seconds
        while True:
            values = series(self.metrics())
            if find(values, name, **labels) or time.monotonic() > deadline:
                return values
            time.sleep(0.2)


@contextmanager
def running_exporter(
    *args: str,
    fake: str = str(FOUR),
    env: dict[str, str] | None = None,
    timeout: float = 30.0,
    tls: Path | None = None,
) -> Iterator[Exporter]:
    """`gputop export ARGS --listen 127.0.0.1:PORT` on a free port, ready to scrape; stopped
    (SIGTERM, then killed) on the way out, also when the test fails. ``tls``: the
    certificate of an exporter that serves HTTPS (its web config is in ``args``); the
    readiness check then asks without credentials and takes a 401 as ready."""
    port = free_port()
    command, environ = gputop_command(fake, **(env or {}))
    process = subprocess.Popen(
        [*command, "export", "--listen", f"127.0.0.1:{port}", *args],
        cwd=ROOT,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    context = None if tls is None else ssl.create_default_context(cafile=str(tls))
    scheme = "http" if tls is None else "https"
    exporter = Exporter(f"{scheme}://127.0.0.1:{port}", port, process, context)
    try:
        said = exporter.said = _Said(process)

        def died() -> str | None:
            if process.poll() is None:
                return None
            return said.read()

        def ready() -> bool:
            # Our process says where it serves: a 200 alone could come from another test's
            # exporter that got the same free port first.
            return "serving " in said.read() and http_get(
                f"{exporter.url}/metrics", timeout=2, context=context
            )[0] in (200, 401)

        wait_until(ready, timeout=timeout, what="gputop export", alive=died)
        yield exporter
    finally:
        stop(process)


class _Said:
    """What the process wrote on stderr so far, read without blocking."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        self._fd = process.stderr.fileno()
        os.set_blocking(self._fd, False)
        self._text = ""

    def read(self) -> str:
        try:
            while chunk := os.read(self._fd, 65536):
                self._text += chunk.decode(errors="replace")
        except BlockingIOError:
            pass
        return self._text


def stop(process: subprocess.Popen[str], timeout: float = 10.0) -> int:
    """SIGTERM the process and wait; kill it if it does not go. Returns its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def replay_args(capture: Path | str, *more: str) -> tuple[str, ...]:
    """``--replay CAPTURE`` and more."""
    return ("--replay", str(capture), *more)
