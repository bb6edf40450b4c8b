"""The exporter's HTTP server: ``/metrics`` and a small page at ``/``, nothing else.

Read-only: GET and HEAD are served, any other method is answered 405. Each request runs on
its own thread and only reads the newest rendered sample (``render``), so a scrape never
waits on the driver. With a web config, the TLS handshake happens on the request's thread
(a client that never completes one holds only that thread, for ``REQUEST_TIMEOUT``), and
every path asks for basic auth.
"""

from __future__ import annotations

import base64
import binascii
import socket
import ssl
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gputop.cli.web_config import Authenticator

REQUEST_TIMEOUT = 10.0
"""Seconds a connection may take to send its request (and finish a TLS handshake)."""

INDEX = b"""<!doctype html>
<html><head><title>gputop exporter</title></head>
<body><h1>gputop exporter</h1>
<p>GPU metrics under dcgm-exporter's names: <a href="metrics">/metrics</a></p>
</body></html>
"""

Render = Callable[[], tuple[bytes, str]]
"""The newest exposition and its content type."""


class MetricsServer(ThreadingHTTPServer):
    """Serves ``render``'s answer on ``/metrics``."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        render: Render,
        *,
        auth: Authenticator | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """Bind ``address`` (IPv6 when its host holds a colon).

        Raises:
            OSError: the address cannot be bound (in use, not this machine's, no permission).
        """
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.render = render
        self.auth = auth if auth is not None else Authenticator({})
        self.tls = tls
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """On the request's thread: the TLS handshake (if any), then the request."""
        request.settimeout(REQUEST_TIMEOUT)
        if self.tls is not None:
            request = self.tls.wrap_socket(request, server_side=True)
        _Handler(request, client_address, self)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up, times out or fails its handshake is not worth a trace."""


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer
    server_version = "gputop-exporter"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a scrape every few seconds is not news."""

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def __getattr__(self, name: str) -> Any:
        # Any other method (POST, PUT, DELETE, PATCH, OPTIONS, or one with no name yet):
        # nothing here changes anything.
        if name.startswith("do_"):
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self) -> None:
        self._answer(
            405,
            b"method not allowed: this exporter is read-only\n",
            "text/plain",
            body=True,
            extra={"Allow": "GET, HEAD"},
        )

    def _serve(self, *, body: bool) -> None:
        if not self._authorized():
            self._answer(
                401,
                b"unauthorized\n",
                "text/plain",
                body=body,
                extra={"WWW-Authenticate": 'Basic realm="gputop"'},
            )
            return
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            payload, kind = self.server.render()
            self._answer(200, payload, kind, body=body)
        elif path == "/":
            self._answer(200, INDEX, "text/html; charset=utf-8", body=body)
        else:
            self._answer(404, b"not found: the metrics are at /metrics\n", "text/plain", body=body)

    def _authorized(self) -> bool:
        auth = self.server.auth
        if not auth.required:
            return True
        header = self.headers.get("Authorization", "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return False
        user, sep, password = decoded.partition(":")
        return bool(sep) and auth.check(user, password)

    def _answer(
        self,
        code: int,
        payload: bytes,
        kind: str,
        *,
        body: bool,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(payload)
