"""The real `gputop export` on 127.0.0.1, on the fake NVML or replaying a capture."""

from __future__ import annotations

import signal
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.command import ROOT, gputop_command
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

    def metrics(self) -> str:
        """One scrape of ``/metrics``."""
        status, body = http_get(f"{self.url}/metrics", context=self.context)
        assert status == 200, (status, body[:200])
        return body.decode()


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

        def died() -> str | None:
            if process.poll() is None:
                return None
            return process.stderr.read() if process.stderr else ""

        wait_until(
            lambda: (
                http_get(f"{exporter.url}/metrics", timeout=2, context=context)[0] in (200, 401)
            ),
            timeout=timeout,
            what="gputop export",
            alive=died,
        )
        yield exporter
    finally:
        stop(process)


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
