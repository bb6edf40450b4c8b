"""The exporter's HTTP server: ``/metrics`` and a small page at ``/``, nothing else.

Read-only: GET and HEAD are served, any other method is answered 405. Each request runs on
its own thread and only reads the newest rendered sample (``render``), so a scrape never
waits on the driver. With a web config, the TLS handshake happens on the request's thread,
and every path asks for basic auth.

Under load and against clients that never finish: the listen backlog takes a burst of
``BACKLOG`` scrapes at once (Python's default, 5, dropped a tenth of a burst of 500); a
connection has ``REQUEST_TIMEOUT`` seconds in all, handshake, request and answer together
(a socket timeout alone bounds each read, so a client trickling its headers a byte at a time
held its thread for ever); at most ``MAX_CONNECTIONS`` are served at once, the next waiting in
the backlog for a free thread. Plain HTTP sent to the HTTPS port is answered 400 in plain
text, as Go's servers (node_exporter, dcgm-exporter) answer it, not with a bare reset.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gputop.web.basic_auth import basic_credentials
from gputop.web.config import Authenticator

REQUEST_TIMEOUT = 10.0
"""Seconds a connection may take in all: TLS handshake, request and answer."""
BACKLOG = 1024
"""Connections the kernel holds for the server before it accepts them (a burst of scrapes)."""
MAX_CONNECTIONS = 64
"""Connections served at once (a thread each); more wait in the backlog."""
PLAIN_HTTP_ON_TLS = b"Client sent an HTTP request to an HTTPS server.\n"
"""What Go's net/http answers (status 400) to plain HTTP on a TLS port; gputop says the same."""
_TLS_HANDSHAKE = 0x16
"""The first byte of a TLS connection: a handshake record."""

INDEX = b"""<!doctype html>
<html><head><title>gputop exporter</title></head>
<body><h1>gputop exporter</h1>
<p>GPU metrics under dcgm-exporter's names: <a href="metrics">/metrics</a></p>
</body></html>
"""

Render = Callable[[], tuple[bytes, str]]
"""The newest exposition and its content type."""


class _Deadlines:
    """One thread that shuts each connection's socket down at its deadline, whatever its
    request thread is blocked in (a read, a write, a TLS handshake)."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int, socket.socket]] = []
        self._live: set[int] = set()
        self._tokens = itertools.count()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="gputop-deadlines", daemon=True)
        self._thread.start()

    def watch(self, sock: socket.socket, seconds: float) -> int:
        """Shut ``sock`` down in ``seconds`` unless :meth:`done` is called first."""
        with self._wake:
            token = next(self._tokens)
            heapq.heappush(self._heap, (time.monotonic() + seconds, token, sock))
            self._live.add(token)
            self._wake.notify()
        return token

    def done(self, token: int) -> None:
        """The connection ended in time."""
        with self._wake:
            self._live.discard(token)

    def close(self) -> None:
        """End the thread."""
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while not self._closed:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)  # ended in time
                if not self._heap:
                    self._wake.wait()
                    continue
                at, token, sock = self._heap[0]
                left = at - time.monotonic()
                if left > 0:
                    self._wake.wait(left)
                    continue
                heapq.heappop(self._heap)
                self._live.discard(token)
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, under an SSL socket too: the blocked call returns at once.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class MetricsServer(ThreadingHTTPServer):
    """Serves ``render``'s answer on ``/metrics``."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        render: Render,
        *,
        auth: Authenticator | None = None,
        tls: ssl.SSLContext | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
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
        self.request_timeout = request_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        self._deadlines = _Deadlines()
        try:
            super().__init__(address, _Handler)
        except BaseException:
            self._deadlines.close()
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        """Start the connection's thread once one of ``max_connections`` is free (until
        then the next connections wait in the listen backlog)."""
        self._slots.acquire()
        # The slot goes back here when no thread could be started. Not on Ctrl-C or SIGTERM:
        # their handler can run while `start` waits for a thread already running, which
        # frees the slot itself (freed twice, the semaphore raised a ValueError in place of
        # the stop, the server swallowed it and went on serving). A stop that comes before
        # the thread starts leaves its slot taken, in a server that is stopping.
        try:
            super().process_request(request, client_address)
        except Exception:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """The connection, on its own thread; its slot is freed when it ends."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        """On the request's thread, within ``request_timeout`` in all: the TLS handshake
        (if any), then the request and its answer."""
        request.settimeout(self.request_timeout)
        token = self._deadlines.watch(request, self.request_timeout)
        try:
            if self.tls is not None:
                if not _starts_tls(request):
                    return
                request = self.tls.wrap_socket(request, server_side=True)
            _Handler(request, client_address, self)
        finally:
            self._deadlines.done(token)

    def server_close(self) -> None:
        """Stop listening (and the deadlines' thread)."""
        super().server_close()
        self._deadlines.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up, times out or fails its handshake is not worth a trace."""


def _starts_tls(sock: socket.socket) -> bool:
    """Whether the client on ``sock`` begins a TLS handshake; plain HTTP is answered 400
    here (what Go's servers say), anything else is closed."""
    first = sock.recv(1, socket.MSG_PEEK)
    if not first:
        return False
    if first[0] == _TLS_HANDSHAKE:
        return True
    if first.isalpha():  # GET, HEAD, POST...: a plain HTTP request
        # Its head is read first: closing with unread bytes would send a reset, not this.
        sock.recv(64 * 1024)
        head = (
            "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(PLAIN_HTTP_ON_TLS)}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(head.encode() + PLAIN_HTTP_ON_TLS)
    return False


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
        credentials = basic_credentials(self.headers.get("Authorization"))
        return credentials is not None and auth.check(*credentials)

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
