"""A real Alertmanager (Debian's /usr/bin/prometheus-alertmanager) delivering to a webhook
receiver served by the test, for the alerting tests.

``running_alertmanager(webhook_url)`` writes a config that routes every alert to the webhook
at once (``group_wait`` and ``group_interval`` of a second), starts Alertmanager on a free
port of 127.0.0.1 with clustering off and its storage in a temporary directory, waits until it
is ready and yields its ``host:port``; it is stopped on the way out, also when the test fails.
``WebhookReceiver`` keeps every notification POSTed to it with the time it arrived.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support.net import free_port, http_get, start_server, stop_server, wait_until

ALERTMANAGER = Path("/usr/bin/prometheus-alertmanager")
"""Installed by scripts/install-system-deps (Debian's package ``prometheus-alertmanager``)."""


def alertmanager_binary() -> Path:
    """The Alertmanager to start; fails the test plainly when it is missing."""
    found = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if found is None and ALERTMANAGER.exists():
        found = str(ALERTMANAGER)
    if found is None:
        raise AssertionError(
            "Alertmanager is not installed: run scripts/install-system-deps (Debian: "
            "apt-get install prometheus-alertmanager)"
        )
    return Path(found)


class WebhookReceiver:
    """Alertmanager's webhook notifications, each with the monotonic time it arrived."""

    def __init__(self) -> None:
        self.port = free_port()
        self.received: list[tuple[float, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._arrived:
                    owner.received.append((time.monotonic(), body))
                    owner._arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Where Alertmanager posts."""
        return f"http://127.0.0.1:{self.port}/hook"

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for_alert(
        self, alertname: str, timeout: float, **labels: str
    ) -> tuple[float, dict[str, Any]]:
        """The first firing alert named ``alertname`` with ``labels``: (when it arrived, the
        alert); fails after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        with self._arrived:
            while True:
                for arrived, body in self.received:
                    for alert in body.get("alerts", []):
                        found = alert.get("labels", {})
                        if (
                            alert.get("status") == "firing"
                            and found.get("alertname") == alertname
                            and all(found.get(k) == v for k, v in labels.items())
                        ):
                            return arrived, alert
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no {alertname} {labels} within {timeout:g} s: {self.received}"
                    )
                self._arrived.wait(left)


def alertmanager_config(webhook: str) -> str:
    """Every alert to ``webhook`` at once, grouped per alert and GPU."""
    return (
        "route:\n"
        "  receiver: test\n"
        "  group_by: [alertname, instance, gpu]\n"
        "  group_wait: 1s\n"
        "  group_interval: 1s\n"
        "  repeat_interval: 1h\n"
        "receivers:\n"
        "  - name: test\n"
        "    webhook_configs:\n"
        f"      - url: {json.dumps(webhook)}\n"
        "        send_resolved: false\n"
    )


@contextmanager
def running_alertmanager(webhook: str, timeout: float = 60.0) -> Iterator[str]:
    """Alertmanager sending every alert to ``webhook``; yields its ``127.0.0.1:PORT``."""
    with tempfile.TemporaryDirectory(prefix="gputop-alertmanager-") as tmp:
        directory = Path(tmp)
        (directory / "alertmanager.yml").write_text(alertmanager_config(webhook))
        port = free_port()
        address = f"127.0.0.1:{port}"
        with (directory / "alertmanager.log").open("w+") as log:
            process, died = start_server(
                [
                    str(alertmanager_binary()),
                    f"--config.file={directory / 'alertmanager.yml'}",
                    f"--storage.path={directory / 'data'}",
                    f"--web.listen-address={address}",
                    "--cluster.listen-address=",
                    "--log.level=warn",
                ],
                directory,
                log,
            )
            try:

                def ready() -> bool:
                    if http_get(f"http://{address}/-/ready", timeout=2)[0] != 200:
                        return False
                    # Ours, not another test's that took the same free port first.
                    status, body = http_get(f"http://{address}/api/v2/status", timeout=2)
                    return status == 200 and webhook in body.decode(errors="replace")

                wait_until(ready, timeout=timeout, what="alertmanager", alive=died)
                yield address
            finally:
                stop_server(process)
