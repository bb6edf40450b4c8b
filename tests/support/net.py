"""Free ports and small HTTP reads for tests that start real servers on 127.0.0.1."""

from __future__ import annotations

import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO


def free_port() -> int:
    """A TCP port nothing listens on now on 127.0.0.1 (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(
    ready: Callable[[], bool], *, timeout: float, what: str, alive: Callable[[], str | None]
) -> None:
    """Poll ``ready`` until true; fail at ``timeout`` or as soon as ``alive`` says why the
    server died (its stderr)."""
    end = time.monotonic() + timeout
    while True:
        died = alive()
        if died is not None:
            raise AssertionError(f"{what} exited before it was ready: {died}")
        try:
            if ready():
                return
        except (OSError, urllib.error.URLError):
            pass
        if time.monotonic() > end:
            raise AssertionError(f"{what} not ready after {timeout:g} s")
        time.sleep(0.1)


def http_get(
    url: str, *, timeout: float = 5.0, context: ssl.SSLContext | None = None
) -> tuple[int, bytes]:
    """Status and body of a GET (an error status is returned, not raised)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as answer:
            return int(answer.status), bytes(answer.read())
    except urllib.error.HTTPError as error:
        return int(error.code), bytes(error.read())


def start_server(
    command: Sequence[str], directory: Path, log: IO[str]
) -> tuple[subprocess.Popen[bytes], Callable[[], str | None]]:
    """A server started in ``directory`` writing to ``log``, and the ``alive`` check of
    :func:`wait_until` for it (the end of its log once it died)."""
    process = subprocess.Popen(
        list(command),
        cwd=directory,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def died() -> str | None:
        if process.poll() is None:
            return None
        log.seek(0)
        return log.read()[-2000:]

    return process, died


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM a server started by :func:`start_server`, SIGKILL it after 15 s."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
