"""Servers that misbehave on purpose, on 127.0.0.1, for the tests of what gputop refuses.

A :class:`HostileServer` reads each request's head (and body), records it, and hands the
connection to a behaviour: answer odd JSON, redirect elsewhere, trickle bytes, chunk forever.
Every connection runs on a daemon thread that ends when the server stops (its sockets are
shut down), so a test that fails never leaves one behind for long.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    """One request as the server read it (header names in lower case)."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urllib.parse.urlsplit(self.target).path

    def params(self) -> dict[str, str]:
        """The query's parameters, from the address and the form body together."""
        query = urllib.parse.urlsplit(self.target).query
        pairs = urllib.parse.parse_qsl(query) + urllib.parse.parse_qsl(self.body.decode())
        return dict(pairs)


Behaviour = Callable[["Connection"], None]


@dataclass
class Connection:
    """What a behaviour is handed: the request, its socket, and the server's stop flag."""

    request: Request
    sock: socket.socket
    stopping: threading.Event

    def send(self, data: bytes) -> bool:
        """Send ``data``; False once the client has gone."""
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def answer(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """A whole HTTP answer, then the connection closed."""
        head = [f"HTTP/1.1 {status} Odd", f"Content-Type: {content_type}"]
        head += [f"Content-Length: {len(body)}", "Connection: close"]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    def json(self, document: Any) -> None:
        """A 200 answer of ``document`` as JSON."""
        self.answer(200, json.dumps(document).encode())

    def trickle(self, data: bytes, every: float) -> None:
        """Send ``data`` a byte at a time, one each ``every`` s, until the client goes or
        the server stops (repeating ``data`` when it runs out)."""
        position = 0
        while not self.stopping.wait(every):
            if not self.send(data[position : position + 1]):
                return
            position = (position + 1) % len(data)


@dataclass
class HostileServer:
    """A TCP server on 127.0.0.1 that hands each connection to ``behave``."""

    behave: Behaviour
    requests: list[Request] = field(default_factory=list)
    _listener: socket.socket | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _clients: list[socket.socket] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> HostileServer:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._listener.settimeout(0.05)
        self._spawn(self._accept)
        return self

    def stop(self) -> None:
        self._stopping.set()
        for sock in list(self._clients):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in list(self._threads):
            thread.join(2.0)
        for sock in self._clients:
            sock.close()
        if self._listener is not None:
            self._listener.close()

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._clients.append(sock)
            self._spawn(self._serve, sock)

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(5.0)
        try:
            # A behaviour marked ``raw`` speaks first, before any request (a TLS server).
            raw = getattr(self.behave, "raw", False)
            request = Request("", "", {}, b"") if raw else _read_request(sock)
        except (OSError, ValueError):
            return
        if request is None:
            return
        self.requests.append(request)
        with contextlib.suppress(OSError):
            self.behave(Connection(request, sock, self._stopping))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _read_request(sock: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Request(method, target, headers, rest[:length])


@contextlib.contextmanager
def hostile(behave: Behaviour) -> Iterator[HostileServer]:
    """A started :class:`HostileServer`, stopped at the end."""
    server = HostileServer(behave).start()
    try:
        yield server
    finally:
        server.stop()


def took(since: float) -> float:
    """Seconds since ``since`` (``time.monotonic()``)."""
    return time.monotonic() - since
