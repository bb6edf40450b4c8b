"""`gputop export`: GPU metrics for Prometheus, under dcgm-exporter's names.

The snapshots come through the same pipeline as the TUI's (``--gpu``, ``--interval``), live
from NVML or from ``--replay FILE``. A recording is played at its recorded pace from its
first document and holds its last one at the end; with ``--at`` it holds that document. A
``PollLoop`` thread samples; scrapes are served on their own threads from the newest sample
(``gputop.sinks.prometheus.latest``) and never call NVML.

Safe by default: it listens on 127.0.0.1:9400 unless ``--listen`` says otherwise, serves
nothing but ``/metrics`` and ``/``, changes nothing, puts user names and command lines in
series only with ``--export-processes full``, and takes TLS and basic auth from a
``--web-config-file`` in the Prometheus exporter-toolkit format.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from gputop.cli.demo import DEMO_CAPTURE
from gputop.cli.live import EXPORT_GPM_EVERY, export_unshown, open_live_source
from gputop.cli.options import Options
from gputop.cli.recording_input import open_recording
from gputop.cli.replay import resolve_at
from gputop.cli.validate import Parser, interval_seconds
from gputop.errors import BadArguments
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import Feed, LiveFeed, ReplayFeed
from gputop.pipeline.gpu_select import GpuSelection
from gputop.pipeline.in_view import InView
from gputop.pipeline.interval import MAX_INTERVAL, MIN_INTERVAL
from gputop.pipeline.loop import PollLoop
from gputop.pipeline.tick import Tick
from gputop.sinks.prometheus.labels import ProcessDetail
from gputop.sinks.prometheus.latest import LatestSample
from gputop.sinks.prometheus.tracker import ExportTracker
from gputop.sources.nvml.gpm import GpmCadence
from gputop.sources.nvml.source import DEFAULT_DEADLINE
from gputop.sources.playback.replay import ReplayPlayer
from gputop.sources.recordings.formats import format_names
from gputop.web.config import Authenticator, WebConfig, load_web_config
from gputop.web.listen import cannot_listen
from gputop.web.metrics_server import MetricsServer

DEFAULT_LISTEN = "127.0.0.1:9400"
"""dcgm-exporter's port, on this machine only: exposing it is a choice (``--listen``)."""


class _Stop(BaseException):
    """SIGTERM: leave the server loop and stop as on Ctrl-C. A BaseException, as
    KeyboardInterrupt is: the server swallows an ``Exception`` raised while it accepts a
    request, and the signal can arrive just then."""


def build_parser() -> argparse.ArgumentParser:
    """The parser for `gputop export`."""
    parser = Parser(
        prog="gputop export",
        description="Serve GPU metrics on /metrics in the Prometheus text format, under "
        "dcgm-exporter's metric and label names (gputop_… for what it has no name for).",
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_LISTEN}, this machine only; "
        "0.0.0.0:9400 or [::]:9400 for every interface)",
    )
    parser.add_argument("--gpu", metavar="SPEC", help="export only these GPUs (as gputop --gpu)")
    parser.add_argument(
        "--interval",
        type=interval_seconds,
        default=1.0,
        metavar="SEC",
        help=f"seconds between samples (default 1, {MIN_INTERVAL} to {MAX_INTERVAL:g})",
    )
    parser.add_argument(
        "--replay",
        metavar="FILE",
        type=Path,
        help="export a recording instead of this machine's GPUs: played at its recorded pace "
        "from the start, holding the last document at the end",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="export the recorded 4-GPU box shipped with gputop (as gputop --demo; no GPU needed)",
    )
    parser.add_argument("--format", choices=format_names(), help="with --replay: its format")
    parser.add_argument(
        "--at",
        metavar="INDEX|TIME",
        help="with --replay: hold this document (index, or a time) instead of playing",
    )
    parser.add_argument(
        "--export-processes",
        choices=[detail.value for detail in ProcessDetail],
        default=ProcessDetail.BASIC.value,
        help="per-process series: none; basic (PID and process name, the default); full "
        "(also user names and command lines)",
    )
    parser.add_argument(
        "--web-config-file",
        metavar="FILE",
        type=Path,
        help="TLS and basic auth, in the Prometheus exporter-toolkit format "
        "(tls_server_config, basic_auth_users with bcrypt hashes)",
    )
    parser.add_argument(
        "--hostname",
        metavar="NAME",
        help="the Hostname label (default: this machine's name live, the recording's host "
        "in a replay, this machine's name if the recording names none)",
    )
    return parser


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``; an empty host is every interface) as (host, port).

    Raises:
        BadArguments: no port, a port out of range, or brackets that do not close.
    """
    where = f"--listen {text!r}"
    host, sep, port_text = text.strip().rpartition(":")
    if not sep:
        raise BadArguments(f"{where}: give HOST:PORT, e.g. {DEFAULT_LISTEN}")
    if host.startswith("["):
        if not host.endswith("]"):
            raise BadArguments(f"{where}: an IPv6 address goes in brackets, e.g. [::1]:9400")
        host = host[1:-1]
    elif ":" in host:
        raise BadArguments(f"{where}: put an IPv6 address in brackets, e.g. [::1]:9400")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadArguments(f"{where}: the port must be a number from 1 to 65535")
    return host or "0.0.0.0", int(port_text)


def _bind(
    address: tuple[str, int], text: str, latest: LatestSample, web: WebConfig
) -> MetricsServer:
    try:
        return MetricsServer(address, latest.render, auth=Authenticator(web.users), tls=web.tls)
    except OSError as error:
        reason = cannot_listen(error, "exporter")
        raise BadArguments(f"--listen {text}: cannot listen there: {reason}") from None
    except (UnicodeError, ValueError):
        raise BadArguments(f"--listen {text}: not a host name or address") from None


def _live_feed(selection: GpuSelection | None, detail: ProcessDetail) -> Feed:

    # Per-process utilization costs 2 ms a GPU a tick on real hardware: read only when
    # process series are written; GPM (1-2 ms a GPU or MIG instance) is worked out once a
    # scrape interval, the mean since the last time.
    in_view = InView(unshown=export_unshown(detail is not ProcessDetail.NONE))
    source = open_live_source(in_view, GpmCadence(every=EXPORT_GPM_EVERY))
    try:
        first = source.poll()
        if selection is not None:
            selection.apply(first)  # strict: every item must name a GPU now
    except BaseException:
        source.close()
        raise
    return LiveFeed(source, first=first)


def _replay_feed(ns: argparse.Namespace, selection: GpuSelection | None) -> Feed:

    options = Options(replay=ns.replay, at=ns.at, format=ns.format, interval=ns.interval)
    recording = open_recording(options, _say)
    try:
        if selection is not None:
            selection.apply(recording.snapshot(0), strict=True)
        player = ReplayPlayer(recording, interval=ns.interval)
        if ns.at is not None:
            player.seek(resolve_at(recording, ns.at), pause=True)
    except BaseException:
        recording.close()
        raise
    return ReplayFeed(player)


def _say(message: str) -> None:
    print(f"gputop: {terminal_safe(message)}", file=sys.stderr, flush=True)


def stale_after(interval: float) -> float:
    """Seconds without a new live sample before it is marked stale: a few intervals, and at
    least the NVML source's own wait for a slow GPU with a second to spare."""

    return max(3 * interval, interval + DEFAULT_DEADLINE + 1.0)


def export_main(argv: Sequence[str]) -> int:
    """Run `gputop export`; returns the exit code once stopped (SIGTERM, Ctrl-C).

    Raises:
        BadArguments: a bad option, address, web config or recording (exit 2).
        NoDriver, NoPermission: live, and NVML cannot be used (exit 1).
    """
    ns = build_parser().parse_args(list(argv))
    if ns.demo:
        if ns.replay is not None:
            raise BadArguments("--demo replays gputop's own capture: give it or --replay FILE")
        ns.replay = DEMO_CAPTURE
    if ns.replay is None and (ns.at is not None or ns.format is not None):
        raise BadArguments("--at and --format describe a recording: use them with --replay FILE")
    address = parse_listen(ns.listen)
    web = load_web_config(ns.web_config_file) if ns.web_config_file else WebConfig()
    for warning in web.warnings:
        _say(warning)
    selection = GpuSelection.parse(ns.gpu) if ns.gpu is not None else None
    live = ns.replay is None
    latest = LatestSample(
        ExportTracker(),
        host=ns.hostname,
        # A capture that names no host still gets a Hostname label, as dcgm-exporter's
        # series always have: this machine's, the one serving it.
        fallback_host=socket.gethostname() or None,
        detail=ProcessDetail(ns.export_processes),
        stale_after=stale_after(ns.interval) if live else None,
    )
    # From here SIGTERM stops the exporter as Ctrl-C does, wherever it is (a driver that
    # takes seconds to start included).
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        _serve(ns, address, web, selection, latest)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _serve(
    ns: argparse.Namespace,
    address: tuple[str, int],
    web: WebConfig,
    selection: GpuSelection | None,
    latest: LatestSample,
) -> None:
    """Bind, open the source, sample on a thread and serve until stopped."""
    # Bound before the source opens: a port in use is said at once, with nothing to undo.
    server = _bind(address, ns.listen, latest, web)
    try:
        feed = (
            _live_feed(selection, ProcessDetail(ns.export_processes))
            if ns.replay is None
            else _replay_feed(ns, selection)
        )
    except BaseException:
        server.server_close()
        raise
    pipeline = Pipeline(feed, interval=ns.interval, selection=selection)
    loop = PollLoop(pipeline, started=True, name="gputop-export-sampler")

    def take(tick: Tick) -> None:
        latest.take(tick.snapshot)

    try:
        take(pipeline.start())
        loop.start(take)
        scheme = "https" if web.tls is not None else "http"
        host, port = str(server.server_address[0]), int(server.server_address[1])
        shown = f"[{host}]" if ":" in host else host
        _say(f"serving {scheme}://{shown}:{port}/metrics")
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        # A sampler stuck in a driver call cannot be closed under its feet; the process is
        # about to exit and the OS reclaims it.
        if loop.stop(1.0):
            pipeline.close()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Stop
