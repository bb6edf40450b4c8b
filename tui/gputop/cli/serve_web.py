"""The web side of `gputop serve`: textual-serve's server, made safe to leave running.

What it adds to textual-serve's ``Server``:

* a page of gputop's own (``serve_page/``) that fetches nothing from outside: textual-serve's
  page loads Roboto Mono from Google Fonts, this one from the font textual-serve ships, with
  the browser's monospace as the fallback, so it renders the same offline;
* URLs taken from the browser's own address (textual-serve writes ``http://HOST:PORT`` of
  the listening socket into the page, wrong behind a proxy or on 0.0.0.0);
* a limit on viewers at once, with a page that says so when it is reached;
* HTTP basic auth from a file, and TLS;
* the page's terminal reachable from its JavaScript (``window.textualSession.terminal``,
  xterm.js), which the browser tests read.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hmac
import logging
import socket
import ssl
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server

from gputop.cli.serve_options import WebOptions
from gputop.errors import BadArguments

PAGE = Path(__file__).parent / "serve_page"
"""gputop's page template and the page shown when every viewer slot is taken."""

_ANCHOR = "t.forEach((e=>{const t=new w(e,{ping:r});"
"""Where textual-serve's script makes the page's terminal session (textual-serve 1.1)."""
_EXPOSE = _ANCHOR + "window.textualSession=t;"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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


def patched_script(original: str) -> str:
    """textual-serve's script with its terminal session kept in ``window.textualSession``.

    Raises:
        RuntimeError: the script is not the one this was written for (the tests catch it).
    """
    if _ANCHOR not in original:
        raise RuntimeError("textual-serve's textual.js changed: cannot reach its terminal")
    return original.replace(_ANCHOR, _EXPOSE, 1)


def _authorized(header: str | None, users: Mapping[str, str]) -> bool:
    if header is None or not header.startswith("Basic "):
        return False
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, _, password = decoded.partition(":")
    expected = users.get(user)
    # Compared in constant time even for an unknown user, so timing tells no user names.
    return hmac.compare_digest(password.encode(), (expected or "\0").encode()) and (
        expected is not None
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
        self.viewers = 0
        """Browser connections with a running app now."""
        self.refused = 0
        """Connections turned away because every slot was taken."""
        script = self.statics_path / "js" / "textual.js"
        self._script = patched_script(script.read_text(encoding="utf-8"))

    @property
    def url(self) -> str:
        """Where to point a browser."""
        scheme = "https" if self.ssl_context is not None else "http"
        host = f"[{self.web.host}]" if ":" in self.web.host else self.web.host
        return f"{scheme}://{host}:{self.web.port}/"

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth] if self.users else [])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(str(self.templates_path)))
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/static/js/textual.js", self._handle_script),
                web.static("/static", self.statics_path, name="static"),
            ]
        )
        return app

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
        """One viewer: its own app process, within the limit."""
        if self.viewers >= self.web.max_viewers:
            # Two pages loaded at the same moment past the limit: the second is told here.
            self.refused += 1
            socket = web.WebSocketResponse()
            await socket.prepare(request)
            await socket.close(code=1013, message=b"gputop: every viewer slot is taken")
            return socket
        self.viewers += 1
        try:
            return await super().handle_websocket(request)
        finally:
            self.viewers -= 1

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
            self._make_app(),
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
            if error.errno == errno.EADDRINUSE:
                reason = "the address is already in use (another server on that port?)"
            elif error.errno == errno.EACCES:
                reason = "permission denied (ports below 1024 need privileges)"
            elif error.errno == errno.EADDRNOTAVAIL:
                reason = "that address is not one of this machine's"
            else:
                reason = error.strerror or str(error)
            raise BadArguments(f"{where}: cannot listen there: {reason}") from None

    async def on_startup(self, app: Any) -> None:
        """textual-serve prints a banner here; gputop has said where it listens."""
