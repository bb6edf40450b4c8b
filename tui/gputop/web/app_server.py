"""The web side of `gputop serve`: textual-serve's server, made safe to leave running.

What it adds to textual-serve's ``Server``:

* a page of gputop's own (``page/``) that fetches nothing from outside: textual-serve's
  page loads Roboto Mono from Google Fonts, this one from the font textual-serve ships, with
  the browser's monospace as the fallback, so it renders the same offline;
* URLs taken from the browser's own address (textual-serve writes ``http://HOST:PORT`` of
  the listening socket into the page, wrong behind a proxy or on 0.0.0.0);
* a limit on viewers at once, with a page that says so when it is reached;
* HTTP basic auth from a file, and TLS;
* the page's terminal reachable from its JavaScript (``window.textualSession.terminal``,
  xterm.js), which the browser tests read (``web/serve_compat``'s patch of textual-serve's
  script);
* what no browser of this page sends, refused: a terminal larger than ``MAX_COLUMNS`` x
  ``MAX_ROWS`` is clamped (a viewer of 100000x100000 grew to gigabytes), a request whose
  ``Host`` is a name not this server's (DNS rebinding) or a websocket from a page of another
  origin is answered 403 unless ``--allow-origin`` names it, and junk (a plain ``GET /ws``, a
  message that is not JSON, a client gone while its viewer starts) is one log line, never a
  traceback nor a lost viewer;
* the viewer's slot freed as soon as its browser goes (its app is then asked to quit, and
  killed if it has not within ``QUIT_WAIT`` seconds: ``web/serve_compat.Viewer``).

Only textual-serve's public API is used here (``web/serve_compat`` holds the rest): the aiohttp
application is gputop's own (``web_app``), and ``serve`` runs it.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import socket
import ssl
import sys
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from gputop.errors import BadArguments
from gputop.model.safe_text import terminal_safe
from gputop.web.basic_auth import basic_credentials
from gputop.web.listen import cannot_listen
from gputop.web.options import WebOptions
from gputop.web.serve_compat import Viewer, page_script

PAGE = Path(__file__).parent / "page"
"""gputop's page template and the page shown when every viewer slot is taken."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MAX_COLUMNS = 1000
MAX_ROWS = 500
"""The largest terminal a viewer gets: wider than any screen (a 8K display in a small font is
about 800 columns), and small enough that one viewer stays in tens of megabytes."""
QUIT_WAIT = 3.0
"""Seconds a viewer's app has to quit once its browser has gone, before it is killed."""

log = logging.getLogger("gputop.serve")
_LOOPBACK_NAMES = frozenset(("localhost", "localhost.localdomain", "ip6-localhost"))


def load_auth(path: Path) -> dict[str, str]:
    """``user:password`` lines of ``path`` (blank lines and ``#`` comments skipped).

    Raises:
        BadArguments: the file cannot be read, or holds no user, or a line without ``:``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or error
        raise BadArguments(f"--auth-file {path}: {why}") from None
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not user or not password:
            raise BadArguments(f"--auth-file {path}: line {number} is not user:password")
        users[user] = password
    if not users:
        raise BadArguments(f"--auth-file {path}: no user:password line in it")
    return users


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """An HTTPS context from PEM files.

    Raises:
        BadArguments: either file is missing or not a certificate and its key.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise BadArguments(f"--tls-cert {cert} / --tls-key {key}: {error}") from None
    return context


def _authorized(header: str | None, users: Mapping[str, str]) -> bool:
    credentials = basic_credentials(header)
    if credentials is None:
        return False
    user, password = credentials
    expected = users.get(user)
    # Compared in constant time even for an unknown user, so timing tells no user names.
    return hmac.compare_digest(password.encode(), (expected or "\0").encode()) and (
        expected is not None
    )


def _clamped(value: object, default: int, high: int) -> int:
    """A terminal dimension from the browser: a whole number from 1 to ``high``, or
    ``default`` for anything that is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return default
    try:
        number = int(value)
    except (ValueError, OverflowError):
        return default
    return max(1, min(number, high))


def terminal_size(width: object, height: object) -> tuple[int, int]:
    """(columns, rows) a viewer gets for what its browser asked: at most 1000x500."""
    return _clamped(width, 80, MAX_COLUMNS), _clamped(height, 24, MAX_ROWS)


def _split_host(text: str, default_port: int) -> tuple[str, int] | None:
    """``name:port`` or ``[v6]:port`` (the port defaulted) as (lower-case name, port)."""
    try:
        parts = urllib.parse.urlsplit("//" + text.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.hostname.lower(), port or default_port


def _origin(text: str) -> tuple[str, int] | None:
    """A browser's ``Origin`` (``scheme://host[:port]``) as (host, port); None for "null"."""
    try:
        parts = urllib.parse.urlsplit(text.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https"):
        return None
    return _split_host(parts.netloc, 443 if parts.scheme == "https" else 80)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class OriginPolicy:
    """Which ``Host`` names and websocket ``Origin`` s are this server's.

    A page of another site may open a websocket to 127.0.0.1:8000 (browsers allow it: the
    ``Origin`` header says whose page it is), or reach the server under a name of its own
    that it points at 127.0.0.1 (DNS rebinding: then the ``Host`` header is that name). So a
    ``Host`` must be an IP address (no DNS name to rebind), ``localhost`` when listening on
    this machine only, the ``--listen`` name, or the machine's own name when listening on
    every address; and a websocket's ``Origin`` must be the address the page was served
    from. ``--allow-origin ORIGIN`` adds a name (a reverse proxy's, a page of one's own);
    ``*`` allows every one.
    """

    def __init__(self, listen_host: str, allowed: tuple[str, ...] = ()) -> None:
        """Check requests to a server listening on ``listen_host``."""
        self.any = "*" in allowed
        self._allowed = {o for o in (_origin(a) for a in allowed if a != "*") if o is not None}
        host = listen_host.strip("[]").lower()
        names = {host, *(name for name, _ in self._allowed)}
        wildcard = host in ("", "0.0.0.0", "::")
        if (
            wildcard
            or host in _LOOPBACK_NAMES
            or (_is_ip(host) and ipaddress.ip_address(host).is_loopback)
        ):
            names |= _LOOPBACK_NAMES
        if wildcard:
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        self._names = frozenset(names)

    def host_refusal(self, host: str | None) -> str | None:
        """Why a request with this ``Host`` header is refused, or None."""
        if host is None or self.any:
            return None
        split = _split_host(host, 0)
        if split is not None and (_is_ip(split[0]) or split[0] in self._names):
            return None
        shown = terminal_safe(host[:100])
        return (
            f"Host {shown!r} is not a name of this server (a page of another site reaching it "
            f"by DNS rebinding?): give --allow-origin http://{shown} to serve under that name"
        )

    def origin_refusal(self, origin: str | None, host: str | None, secure: bool) -> str | None:
        """Why a websocket from a page of ``origin``, sent to ``host``, is refused, or None.
        No ``Origin`` is no browser: nothing a page could do for someone else."""
        if origin is None or self.any:
            return None
        theirs = _origin(origin)
        ours = _split_host(host or "", 443 if secure else 80)
        if theirs is not None and (theirs == ours or theirs in self._allowed):
            return None
        shown = terminal_safe(origin[:100])
        return (
            f"a websocket from {shown!r}, a page of another site, refused: give "
            f"--allow-origin {shown} if that page is yours"
        )


class GputopServer(Server):
    """textual-serve's server with gputop's page, limit, auth and TLS."""

    def __init__(
        self,
        command: str,
        *,
        web: WebOptions,
        users: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        title: str = "gputop",
    ) -> None:
        """Serve ``command`` (one process per browser connection)."""
        super().__init__(
            command, host=web.host, port=web.port, title=title, templates_path=str(PAGE)
        )
        self.templates_path = PAGE
        self.web = web
        self.users = dict(users) if users is not None else None
        self.ssl_context = ssl_context
        self.policy = OriginPolicy(web.host, web.allow_origins)
        self.viewers = 0
        """Browser connections with a running app now."""
        self.refused = 0
        self._endings: set[asyncio.Future[None]] = set()
        """Apps of viewers whose browsers have gone, being asked to quit (or killed)."""
        """Connections turned away because every slot was taken."""
        script = self.statics_path / "js" / "textual.js"
        self._script = page_script(script.read_text(encoding="utf-8"))

    @property
    def url(self) -> str:
        """Where to point a browser."""
        scheme = "https" if self.ssl_context is not None else "http"
        host = f"[{self.web.host}]" if ":" in self.web.host else self.web.host
        return f"{scheme}://{host}:{self.web.port}/"

    async def web_app(self) -> web.Application:
        """The aiohttp application: gputop's routes, behind the ``Host`` check and auth."""
        app = web.Application(middlewares=[self._host, *([self._auth] if self.users else [])])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(str(self.templates_path)))
        app.on_shutdown.append(self._end_viewers)
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                *([web.get("/static/js/textual.js", self._handle_script)] if self._script else []),
                web.static("/static", self.statics_path, name="static"),
            ]
        )
        return app

    @web.middleware
    async def _host(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refusal = self.policy.host_refusal(request.headers.get("Host"))
        if refusal is None:
            return await handler(request)
        log.warning("%s: %s", _peer(request), refusal)
        return web.Response(status=403, text=f"gputop serve: {refusal}\n")

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        assert self.users is not None
        if _authorized(request.headers.get("Authorization"), self.users):
            return await handler(request)
        return web.Response(
            status=401,
            text="gputop: a user name and password are needed\n",
            headers={"WWW-Authenticate": 'Basic realm="gputop", charset="UTF-8"'},
        )

    async def _handle_script(self, request: web.Request) -> web.Response:
        assert self._script is not None
        return web.Response(text=self._script, content_type="application/javascript")

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The page, or the 'full' page (503) when every viewer slot is taken."""
        if self.viewers >= self.web.max_viewers:
            self.refused += 1
            return self._full(request)
        font_size = request.query.get("fontsize", "16")
        context = {
            "font_size": int(font_size) if font_size.isdigit() else 16,
            "title": self.title,
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    def _full(self, request: web.Request) -> web.StreamResponse:
        response = aiohttp_jinja2.render_template(
            "full.html",
            request,
            {"title": self.title, "limit": self.web.max_viewers},
            status=503,
        )
        response.headers["Retry-After"] = "30"
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One viewer: its own app process, within the limit, the origin checked."""
        socket = web.WebSocketResponse(heartbeat=15)
        if not socket.can_prepare(request).ok:
            log.warning("%s: GET /ws without a websocket handshake: answered 400", _peer(request))
            raise web.HTTPBadRequest(text="gputop serve: /ws is the page's websocket: open /\n")
        refusal = self.policy.origin_refusal(
            request.headers.get("Origin"), request.headers.get("Host"), request.secure
        )
        if refusal is not None:
            log.warning("%s: %s", _peer(request), refusal)
            raise web.HTTPForbidden(text=f"gputop serve: {refusal}\n")
        if self.viewers >= self.web.max_viewers:
            # Two pages loaded at the same moment past the limit: the second is told here.
            self.refused += 1
            await socket.prepare(request)
            await socket.close(code=1013, message=b"gputop: every viewer slot is taken")
            return socket
        width, height = terminal_size(request.query.get("width"), request.query.get("height"))
        self.viewers += 1
        viewer: Viewer | None = None
        try:
            await socket.prepare(request)
            viewer = Viewer(
                self.command,
                write_bytes=socket.send_bytes,
                write_str=socket.send_str,
                close=lambda: _close(socket),
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await viewer.start(width, height)
            await self._relay(socket, viewer)
        except asyncio.CancelledError:  # the client went (or the server stops)
            await socket.close()
        except (ConnectionError, RuntimeError) as error:  # aiohttp: "closing transport"
            log.warning("%s: the viewer left while its app started (%s)", _peer(request),
                        type(error).__name__)  # fmt: skip
        except Exception as error:  # one line, never a traceback: nothing a client sends
            log.warning("%s: viewer ended: %s", _peer(request), type(error).__name__)
        finally:
            # The browser has gone: its slot is free now, whatever its app still does; the
            # app is ended apart from this handler (which aiohttp may be cancelling).
            self.viewers -= 1
            if viewer is not None:
                ending = asyncio.ensure_future(viewer.end(QUIT_WAIT))
                self._endings.add(ending)
                ending.add_done_callback(self._endings.discard)
        if not socket.prepared:
            # The client went during the handshake: aiohttp would close the socket it never
            # opened (a traceback); an answer to nobody is dropped quietly instead.
            raise web.HTTPBadRequest(text="gputop serve: the websocket was not opened\n")
        return socket

    async def _relay(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """The browser's messages to its app: keys, sizes (clamped), focus, pings. One that
        is not what the page sends is said once in the log and ignored."""
        said = False
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind = envelope[0]
                if kind == "stdin":
                    await app_service.send_bytes(str(envelope[1]).encode("utf-8"))
                elif kind == "resize":
                    size = envelope[1]
                    columns, rows = terminal_size(size.get("width"), size.get("height"))
                    await app_service.set_terminal_size(columns, rows)
                elif kind == "ping":
                    await websocket.send_json(["pong", envelope[1]])
                elif kind == "blur":
                    await app_service.blur()
                elif kind == "focus":
                    await app_service.focus()
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
                if not said:
                    log.warning("a viewer sent a message that is not the page's: ignored")
                    said = True

    def run(self) -> int:
        """Serve until Ctrl+C or SIGTERM; returns the exit status.

        Raises:
            BadArguments: the address cannot be listened on (in use, not this machine's).
        """
        logging.basicConfig(level=logging.WARNING, format="gputop serve: %(message)s")
        # Bound here, before saying where it serves: a port in use is one line, not a
        # "serving at" line followed by asyncio's bind error.
        listening = self._listen()
        say = f"gputop serve: {self.url} (at most {self.web.max_viewers} viewers"
        say += ", basic auth)" if self.users else ")"
        print(say, file=sys.stderr, flush=True)
        web.run_app(
            self.web_app(),
            sock=listening,
            ssl_context=self.ssl_context,
            print=lambda *args: None,
            access_log=None,
            # On Ctrl+C or SIGTERM the viewers are told to quit; waiting longer for
            # their sockets to close would only keep the terminal.
            shutdown_timeout=3.0,
        )
        return 0

    def _listen(self) -> socket.socket:
        """The listening socket on ``--listen``.

        Raises:
            BadArguments: in use, not this machine's address, or a privileged port.
        """
        where = f"--listen {self.web.host}:{self.web.port}"
        try:
            family = socket.getaddrinfo(
                self.web.host, self.web.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )[0][0]
            return socket.create_server((self.web.host, self.web.port), family=family)
        except socket.gaierror:
            raise BadArguments(f"{where}: not a host name or address of this machine") from None
        except OSError as error:
            reason = cannot_listen(error, "server")
            raise BadArguments(f"{where}: cannot listen there: {reason}") from None

    async def _end_viewers(self, app: web.Application) -> None:
        """On the way out: the apps of viewers that have gone are given their time to quit."""
        if self._endings:
            await asyncio.wait(set(self._endings), timeout=QUIT_WAIT + 1.0)

    def serve(self, debug: bool = False) -> None:
        """textual-serve's way to run: gputop's server, with its checks (``run``)."""
        self.run()

    async def on_startup(self, app: Any) -> None:
        """textual-serve prints a banner here; gputop has said where it listens."""


async def _close(socket: web.WebSocketResponse) -> None:
    await socket.close()


def _peer(request: web.Request) -> str:
    return terminal_safe(str(request.remote or "a client"))
