"""`gputop serve`: the TUI in a browser tab, through textual-serve.

textual-serve starts one app process per browser connection. So that a dozen open tabs do
not mean a dozen NVML pollers, the server samples once: it owns the one live source, and each
viewer's app follows what it publishes (``gputop.pipeline.serve_sampler``, through
``gputop.web.snapshot_publisher``) as a live view. A replay (``--replay``, ``--demo``) needs
no driver at all: each viewer replays the file itself, with its own replay keys. ``gputop
serve cluster ...`` serves ``gputop cluster ...`` (the fleet view reads Prometheus, not NVML)
with the same arguments.

Safe by default: it listens on 127.0.0.1 unless ``--listen`` says otherwise, every viewer is
read-only (no signal keys, whatever the flags), at most ``--max-viewers`` at once, and
``--auth-file``/``--tls-cert`` add basic auth and TLS.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import signal
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from gputop.cli.cluster import build_parser as cluster_parser
from gputop.cli.live import TUI_GPM_BUDGET, open_live_source
from gputop.cli.main import parse_options
from gputop.cli.options import Options
from gputop.cli.recording_input import recording_input
from gputop.cli.validate import Parser, viewer_count
from gputop.errors import BadArguments
from gputop.pipeline.gpu_select import GpuSelection
from gputop.pipeline.serve_sampler import Sampler
from gputop.sources.nvml.gpm import GpmCadence
from gputop.web.app_server import GputopServer, load_auth, tls_context
from gputop.web.options import DEFAULT_VIEWERS, WebOptions
from gputop.web.snapshot_publisher import SnapshotPublisher, private_socket_dir

if TYPE_CHECKING:
    import ssl


DEFAULT_LISTEN = "127.0.0.1:8000"

ParseOptions = Callable[[list[str]], Options]
"""``gputop``'s own option parser (``cli.main.parse_options``; tests hand in their own)."""

_SERVE_HELP = """\
gputop serve [--listen HOST:PORT] [web options] [gputop options]    the box (live or --replay)
gputop serve cluster [web options] --prometheus URL [cluster options]  the fleet view
"""


@dataclass(frozen=True, slots=True)
class ServeRequest:
    """``gputop serve``'s command line, parsed: the web part and the app's arguments."""

    web: WebOptions
    cluster: bool = False
    """Serve the fleet view (``gputop cluster``)."""
    app_args: tuple[str, ...] = field(default_factory=tuple)
    """The arguments the served app is started with (checked before anything is served)."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT`` or ``PORT`` (on 127.0.0.1).

    Raises:
        BadArguments: not one of those, or a port outside 1..65535.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise BadArguments(f"--listen {text!r}: give HOST:PORT, e.g. 127.0.0.1:8000") from None
    if not 1 <= port <= 65535:
        raise BadArguments(f"--listen {text!r}: the port must be from 1 to 65535")
    return host, port


def build_web_parser() -> argparse.ArgumentParser:
    """The options of ``gputop serve`` itself; the rest are the served app's."""
    parser = Parser(
        prog="gputop serve",
        usage=_SERVE_HELP,
        description="Serve gputop to web browsers (textual-serve): each browser tab gets the "
        "same screens and keys as the terminal, read-only. The other options are gputop's "
        "own (--replay FILE, --demo, --gpu, --interval, --theme; for `serve cluster`, those "
        "of `gputop cluster`).",
        add_help=True,
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to listen (default {DEFAULT_LISTEN}: this machine only; 0.0.0.0:8000 "
        "for every network the machine is on)",
    )
    parser.add_argument(
        "--max-viewers",
        type=viewer_count,
        default=DEFAULT_VIEWERS,
        metavar="N",
        help=f"browser connections served at once (default {DEFAULT_VIEWERS}); more are "
        "shown a page saying it is full",
    )
    parser.add_argument(
        "--auth-file",
        type=Path,
        metavar="FILE",
        help="ask for a user name and password (HTTP basic auth): FILE holds `user:password` "
        "lines (keep it mode 600; use TLS or a proxy when not on 127.0.0.1)",
    )
    parser.add_argument("--tls-cert", type=Path, metavar="FILE", help="serve HTTPS: PEM cert")
    parser.add_argument("--tls-key", type=Path, metavar="FILE", help="its PEM private key")
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also serve pages of ORIGIN (https://gpu.example.com: a reverse proxy's name, "
        "repeatable; * for any): by default a websocket from another site's page, and a "
        "Host name not this server's (DNS rebinding), are refused",
    )
    parser.add_argument(
        "--hide-commands",
        action="store_true",
        help="leave processes' command lines out (only the executable's name is shown)",
    )
    return parser


def parse_serve(argv: Sequence[str], parse_options: ParseOptions | None = None) -> ServeRequest:
    """Split ``gputop serve``'s arguments into the web options and the app's.

    Raises:
        BadArguments: a malformed web option, TLS half given, or app options that
            ``gputop`` itself refuses (checked here, before anything is served).
    """
    args = list(argv)
    cluster = bool(args) and args[0] == "cluster"
    if cluster:
        args = args[1:]
    ns, rest = build_web_parser().parse_known_args(args)
    host, port = parse_listen(ns.listen)
    if (ns.tls_cert is None) != (ns.tls_key is None):
        raise BadArguments("--tls-cert and --tls-key go together: give both, or neither")
    web = WebOptions(
        host=host,
        port=port,
        max_viewers=ns.max_viewers,
        auth_file=ns.auth_file,
        tls_cert=ns.tls_cert,
        tls_key=ns.tls_key,
        hide_commands=ns.hide_commands,
        allow_origins=tuple(_allowed_origin(o) for o in ns.allow_origin),
    )
    if not cluster and parse_options is not None:
        _check_app_args(rest, parse_options)
    return ServeRequest(web=web, cluster=cluster, app_args=tuple(rest))


def _allowed_origin(text: str) -> str:
    """``--allow-origin``: ``*`` or ``http(s)://HOST[:PORT]``.

    Raises:
        BadArguments: anything else (a path, another scheme).
    """
    if text == "*":
        return text
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadArguments(
            f"--allow-origin {text!r}: give an origin, e.g. https://gpu.example.com, or *"
        )
    if parts.path not in ("", "/") or parts.query or parts.username:
        raise BadArguments(f"--allow-origin {text!r}: an origin has no path, query or user")
    return text


_HEADLESS = ("--once", "--json", "--count", "--pick", "--record", "--log", "--at")


def _check_app_args(args: Sequence[str], parse_options: ParseOptions) -> Options:
    """The box view's options, as ``gputop`` would parse them; refused: what makes no sense
    in a browser (headless output, writing files on the server). ``--readonly`` is let through:
    a served view is read-only anyway, so asking for it is redundant, not wrong."""
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in _HEADLESS:
            raise BadArguments(
                f"{name} does not go with serve: a served view is the TUI, read-only, "
                "and writes nothing on the server"
            )
    return parse_options(list(args))


def _check_cluster_args(args: Sequence[str]) -> None:
    """`gputop cluster`'s options, parsed by its own parser, so a typo is one line now and not
    a dead session in every browser tab; its printing modes make no sense served."""
    ns = cluster_parser().parse_args(list(args))
    for flag in ("once", "json"):
        if getattr(ns, flag, False):
            raise BadArguments(f"--{flag} does not go with serve: a served view is the TUI")


def viewer_command(socket: Path | None, request: ServeRequest) -> str:
    """The shell command textual-serve runs for each browser connection (``exec``: the app
    is the shell's process, so one process a viewer, ended by the server's signals)."""
    python = "exec " + shlex.quote(sys.executable)
    if request.cluster:
        return " ".join([python, "-m", "gputop", "cluster", *map(shlex.quote, request.app_args)])
    parts = [python, "-m", "gputop.cli.serve_viewer"]
    if socket is not None:
        parts += ["--socket", shlex.quote(str(socket))]
    if request.web.hide_commands:
        parts.append("--hide-commands")
    parts.append("--")
    parts += map(shlex.quote, request.app_args)
    return " ".join(parts)


class _Stop(BaseException):
    """SIGTERM before the web server took the signal over (a driver slow to start, the
    recording being checked): stop as Ctrl-C does. A BaseException, as KeyboardInterrupt
    is, so that no ``except Exception`` on the way swallows it."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def serve_main(argv: Sequence[str]) -> int:
    """Run ``gputop serve``; returns the exit status: 0 once stopped by SIGTERM or Ctrl-C,
    as ``gputop export``, whenever it comes (while serving, aiohttp's own handler stops the
    server; before that, this one).

    Raises:
        BadArguments: bad options, an unreadable auth file or TLS files, a port in use.
        NoDriver, NoPermission: live, and NVML cannot be used here.
        BadCapture: ``--replay`` names no readable recording.
    """
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _serve_main(argv, parse_options)
    except _Stop:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


def _serve_main(argv: Sequence[str], parse_options: ParseOptions) -> int:
    request = parse_serve(argv, parse_options)
    users = load_auth(request.web.auth_file) if request.web.auth_file is not None else None
    ssl_context = (
        tls_context(request.web.tls_cert, request.web.tls_key)
        if request.web.tls_cert is not None and request.web.tls_key is not None
        else None
    )
    if request.cluster:
        _check_cluster_args(request.app_args)
        return _serve(request, None, users, ssl_context)
    options = _check_app_args(request.app_args, parse_options)
    if options.replay is not None:
        _check_recording(options)
        return _serve(request, None, users, ssl_context)
    return _serve_live(request, options, users, ssl_context)


def _check_recording(options: Options) -> None:
    """Open the recording once, so a bad file is one line now, not in every browser tab."""
    if str(options.replay) == "-":
        raise BadArguments("serve --replay needs a file: each viewer reads it on its own")
    source = recording_input(options)
    if source.may_wait:
        return  # a FIFO or a followed, still empty file: each viewer waits for it
    source.open().close()


def _serve_live(
    request: ServeRequest,
    options: Options,
    users: dict[str, str] | None,
    ssl: ssl.SSLContext | None,
) -> int:
    selection = GpuSelection.parse(options.gpu) if options.gpu is not None else None
    source = open_live_source(gpm_cadence=GpmCadence(budget=TUI_GPM_BUDGET))
    directory = private_socket_dir()
    try:
        first = source.poll()
        if selection is not None:
            selection.apply(first)  # strict: every item must name a GPU now
        publisher = SnapshotPublisher(directory / "sampler.sock", interval=options.interval)
        hide = request.web.hide_commands
        sampler = Sampler(source, publisher, interval=options.interval, hide=hide)
        sampler.publish(first)
        sampler.start()
        try:
            return _serve(request, publisher.path, users, ssl)
        finally:
            sampler.stop()
            publisher.close()
    finally:
        # The socket's directory first: a driver slow to close must not leave it behind.
        shutil.rmtree(directory, ignore_errors=True)
        source.close()


def _serve(
    request: ServeRequest,
    socket: Path | None,
    users: dict[str, str] | None,
    ssl: ssl.SSLContext | None,
) -> int:
    server = GputopServer(
        viewer_command(socket, request),
        web=request.web,
        users=users,
        ssl_context=ssl,
        title="gputop cluster" if request.cluster else "gputop",
    )
    return server.run()
