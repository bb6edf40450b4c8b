"""One HTTP request of ``gputop cluster``, bounded as a whole, its credentials kept home.

urllib bounds each socket read, not a request: a server that sends a byte a second, its
headers slowly or chunks without end held a ``--timeout 3`` run for as long as it liked, and
its redirect handler sent ``Authorization`` to whatever host a 302 named. Here each request
has one deadline, enforced by a timer that shuts its socket down, whatever the request is
doing then (connecting, sending, reading headers or body); :meth:`Transport.close` does the
same to every request in flight, so quitting the fleet screen never waits on the network.
A redirect to another origin is refused when the request carries credentials (curl and Go
drop them there instead; a refusal says so, and the user can point gputop at that server).
A proxy named by the environment (``http_proxy``, ``https_proxy``, ``no_proxy``) is used as
urllib used it: an http one, CONNECT for https.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import NamedTuple

MAX_REDIRECTS = 10
"""Redirects followed for one request (urllib's and curl's default is about as many)."""

_REDIRECTS = frozenset((301, 302, 303, 307, 308))
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Answer(NamedTuple):
    """What a server answered (any status: the caller reads what it means)."""

    status: int
    reason: str
    content_type: str
    body: bytes


class TransportError(Exception):
    """A request that got no answer for a reason of this module's (not the network's)."""


class Expired(TransportError):
    """The request's deadline passed."""


class Closed(TransportError):
    """The transport was closed (the program is quitting)."""


class RedirectRefused(TransportError):
    """A redirect that is not followed; the message says where it pointed and why."""


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of ``url``, the port spelled out."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme, 0)


def same_server(first: str, then: str) -> bool:
    """Whether credentials for ``first`` may go to ``then``: the same origin, or the same host
    moved from http on port 80 to https on 443 (an upgrade, as browsers and requests allow)."""
    a, b = origin(first), origin(then)
    return a == b or (a[1] == b[1] and (a[0], a[2], b[0], b[2]) == ("http", 80, "https", 443))


class _InFlight:
    """One request's socket, shut down at most once: at its deadline or on close."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.why: type[TransportError] | None = None

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            stopped = self.why is not None
        if stopped:
            _shut(sock)

    def stop(self, why: type[TransportError]) -> None:
        with self._lock:
            if self.why is not None:
                return
            self.why = why
            sock = self._sock
        if sock is not None:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, under an SSL socket too: a read blocked in another thread
    # returns at once, where SSLSocket.shutdown would first drop its TLS state under it.
    with contextlib.suppress(OSError):  # already closed, or never connected
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class Transport:
    """Sends requests, each within ``timeout`` seconds in all; safe to use from threads."""

    def __init__(
        self,
        *,
        timeout: float,
        context: ssl.SSLContext | None = None,
        credentials: bool = False,
        max_body: int = 256 * 1024 * 1024,
    ) -> None:
        """``credentials``: the headers carry a secret, so no redirect takes them elsewhere."""
        self.timeout = timeout
        self._context = context
        self._credentials = credentials
        self._max_body = max_body
        self._lock = threading.Lock()
        self._flights: set[_InFlight] = set()
        self._closed = False

    def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None = None
    ) -> Answer:
        """Send one request, following redirects, all within the deadline.

        Raises:
            Expired, Closed, RedirectRefused: see each.
            OSError, ssl.SSLError, http.client.HTTPException: the network's own failures.
        """
        deadline = time.monotonic() + self.timeout
        first = url
        for _ in range(MAX_REDIRECTS + 1):
            answer, location = self._once(method, url, headers, body, deadline)
            if location is None:
                return answer
            target = urllib.parse.urljoin(url, location)
            try:
                scheme, host, _ = origin(target)
            except ValueError:  # a port that is not a number
                raise RedirectRefused("redirected to an address that is not a URL") from None
            if scheme not in _DEFAULT_PORTS or not host:
                raise RedirectRefused(f"redirected to {_shown(target)}, which is not http(s)")
            if self._credentials and not same_server(first, target):
                raise RedirectRefused(
                    f"redirected to {_shown(target)}, another server: not followed, so the "
                    "credentials are not sent there (give that address if it is the right one)"
                )
            if answer.status in (301, 302, 303) and method == "POST":
                # As browsers do, the request becomes a GET; the form it posted (the query's
                # parameters, all a POST here carries) goes along in the address.
                query = (body or b"").decode("ascii", "replace")
                target += ("&" if "?" in target else "?") + query if query else ""
                method, body = "GET", None
            url = target
        raise RedirectRefused(f"more than {MAX_REDIRECTS} redirects (a redirect loop?)")

    def close(self) -> None:
        """Abort every request in flight and refuse new ones."""
        with self._lock:
            self._closed = True
            flights = list(self._flights)
        for flight in flights:
            flight.stop(Closed)

    def _once(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float,
    ) -> tuple[Answer, str | None]:
        parts = urllib.parse.urlsplit(url)
        left = deadline - time.monotonic()
        if left <= 0:
            raise Expired
        flight = _InFlight()
        proxy = _proxy_for(parts)
        connection = self._connection(parts, left, flight, proxy)
        with self._lock:
            if self._closed:
                raise Closed
            self._flights.add(flight)
        timer = threading.Timer(left, flight.stop, (Expired,))
        timer.daemon = True
        timer.start()
        try:
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            sent = dict(headers)
            if proxy is not None and parts.scheme == "http":
                # Through a plain HTTP proxy the request names the whole address.
                path = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
                sent.update(_proxy_auth(proxy))
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            location = response.getheader("Location") if response.status in _REDIRECTS else None
            raw = response.read(self._max_body)
            answer = Answer(
                response.status,
                response.reason,
                response.getheader("Content-Type") or "",
                raw,
            )
        except (OSError, http.client.HTTPException, ValueError):
            if flight.why is not None:
                raise flight.why from None
            raise
        finally:
            timer.cancel()
            with self._lock:
                self._flights.discard(flight)
            connection.close()
        if flight.why is not None:  # shut down mid-body: what was read is cut short
            raise flight.why
        return answer, location

    def _connection(
        self,
        parts: urllib.parse.SplitResult,
        timeout: float,
        flight: _InFlight,
        proxy: urllib.parse.SplitResult | None,
    ) -> http.client.HTTPConnection:
        host, port = parts.hostname or "", parts.port
        if proxy is not None:
            host, port = proxy.hostname or "", proxy.port or _DEFAULT_PORTS.get(proxy.scheme)
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            context = self._context or ssl.create_default_context()
            connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
            if proxy is not None:  # a CONNECT tunnel to the server, TLS inside it
                connection.set_tunnel(parts.hostname or "", parts.port, _proxy_auth(proxy))
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)

        def create(
            address: tuple[str, int], timeout: float, source: tuple[str, int] | None = None
        ) -> socket.socket:
            # The raw socket is handed over before any TLS handshake, so that the deadline
            # bounds a handshake too.
            sock = socket.create_connection(address, timeout, source)
            flight.attach(sock)
            return sock

        # http.client's documented-by-use hook for how it opens its socket.
        connection._create_connection = create  # type: ignore[attr-defined]
        return connection


def _proxy_for(parts: urllib.parse.SplitResult) -> urllib.parse.SplitResult | None:
    """The proxy the environment names for this address (``http_proxy``, ``https_proxy``,
    ``no_proxy``, as urllib and curl read them), or None."""
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    found = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return found if found.scheme == "http" and found.hostname else None


def _proxy_auth(proxy: urllib.parse.SplitResult) -> dict[str, str]:
    if proxy.username is None:
        return {}
    user = urllib.parse.unquote(proxy.username)
    password = urllib.parse.unquote(proxy.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return {"Proxy-Authorization": f"Basic {token}"}


def _shown(url: str) -> str:
    """``url`` as said in a message: scheme, host and port (no credentials, no query)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
