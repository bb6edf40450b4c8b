"""`gputop cluster`: many machines, read from a Prometheus (or from their exporters directly).

``--prometheus URL`` reads a server that already scrapes dcgm-exporter or ``gputop export``;
``--targets host:9400,...`` scrapes exporters itself, for a lab with no Prometheus. Either way
the command builds a :class:`~gputop.sources.fleet.FleetSource` and hands it on: ``--once``
and ``--json`` print the fleet and exit; otherwise the fleet screen runs
(``run_fleet_tui(source, options)``, from the UI).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from gputop.cli.validate import Parser, refresh_seconds, timeout_seconds, window_seconds
from gputop.errors import BadArguments, GputopError
from gputop.model.fleet import FleetSnapshot
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.fleet_loop import DEFAULT_NODE_HISTORY
from gputop.sinks.fleet_json import fleet_dict, fleet_text
from gputop.sources.fleet import FleetSource
from gputop.sources.prometheus.client import Auth, PrometheusClient
from gputop.sources.prometheus.direct import DirectFleet, parse_targets
from gputop.sources.prometheus.health import HealthFleet
from gputop.sources.prometheus.source import PrometheusFleet


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """What the fleet screen needs besides its source."""

    refresh: float = 5.0
    """Seconds between fleet refreshes."""
    window: float = 300.0
    """Seconds over which each GPU's state is judged; also the node screen's history."""
    theme: str | None = None
    where: str = ""
    """The Prometheus URL or the targets, for the title."""


def build_parser() -> argparse.ArgumentParser:
    """The parser for `gputop cluster`."""
    parser = Parser(
        prog="gputop cluster",
        description="A fleet view: every machine's GPUs (busy, waiting, idle) from a "
        "Prometheus that scrapes dcgm-exporter or `gputop export`, or from the exporters "
        "themselves.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--prometheus", metavar="URL", help="the Prometheus server's URL")
    where.add_argument(
        "--targets",
        metavar="HOST:PORT,...",
        help="scrape these exporters' /metrics directly (no Prometheus server)",
    )
    parser.add_argument("--once", action="store_true", help="print the fleet once and exit")
    parser.add_argument("--json", action="store_true", help="print the fleet as JSON once and exit")
    parser.add_argument(
        "--window",
        type=window_seconds,
        default=300.0,
        metavar="SEC",
        help="judge each GPU over this many seconds (default 300)",
    )
    parser.add_argument(
        "--refresh",
        type=refresh_seconds,
        default=5.0,
        metavar="SEC",
        help="seconds between refreshes of the fleet screen (default 5)",
    )
    parser.add_argument(
        "--timeout",
        type=timeout_seconds,
        default=5.0,
        metavar="SEC",
        help="seconds one request may take (default 5)",
    )
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--bearer-token-file", type=Path, metavar="FILE", help="bearer token")
    token.add_argument(
        "--bearer-token-env", metavar="VAR", help="environment variable holding a bearer token"
    )
    parser.add_argument("--basic-auth-user", metavar="USER", help="HTTP basic auth user")
    password = parser.add_mutually_exclusive_group()
    password.add_argument(
        "--basic-auth-password-file", type=Path, metavar="FILE", help="basic auth password"
    )
    password.add_argument(
        "--basic-auth-password-env",
        metavar="VAR",
        help="environment variable holding the basic auth password",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra HTTP header, e.g. 'X-Scope-OrgID: team-a' (repeatable)",
    )
    parser.add_argument(
        "--ca-file", type=Path, metavar="FILE", help="CA bundle to check the server's TLS with"
    )
    parser.add_argument("--theme", choices=["dark", "light"], help="colour theme")
    return parser


def _read_secret(path: Path, flag: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise BadArguments(f"{flag} {path}: {error.strerror or error}") from None
    secret = text.strip()
    if not secret:
        raise BadArguments(f"{flag} {path}: the file is empty")
    return secret


def _env_secret(name: str, flag: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise BadArguments(f"{flag} {name}: that environment variable is not set")
    return value


def _headers(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    headers = []
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip() or any(c in name for c in " \t\r\n"):
            raise BadArguments(f"--header {value!r}: give 'NAME: VALUE'")
        if any(c in content for c in "\r\n"):
            raise BadArguments(f"--header {value!r}: a header holds one line")
        headers.append((name.strip(), content.strip()))
    return tuple(headers)


def _auth(ns: argparse.Namespace) -> Auth:
    token = None
    if ns.bearer_token_file is not None:
        token = _read_secret(ns.bearer_token_file, "--bearer-token-file")
    elif ns.bearer_token_env is not None:
        token = _env_secret(ns.bearer_token_env, "--bearer-token-env")
    basic = None
    has_password = ns.basic_auth_password_file is not None or ns.basic_auth_password_env
    if ns.basic_auth_user is not None:
        if token is not None:
            raise BadArguments("give a bearer token or basic auth, not both")
        if ns.basic_auth_password_file is not None:
            password = _read_secret(ns.basic_auth_password_file, "--basic-auth-password-file")
        elif ns.basic_auth_password_env is not None:
            password = _env_secret(ns.basic_auth_password_env, "--basic-auth-password-env")
        else:
            raise BadArguments(
                "--basic-auth-user needs --basic-auth-password-file or --basic-auth-password-env"
            )
        basic = (ns.basic_auth_user, password)
    elif has_password:
        raise BadArguments("a basic auth password needs --basic-auth-user")
    if ns.ca_file is not None and not ns.ca_file.is_file():
        raise BadArguments(f"--ca-file {ns.ca_file}: no such file")
    return Auth(bearer_token=token, basic=basic, headers=_headers(ns.header), ca_file=ns.ca_file)


def build_source(ns: argparse.Namespace) -> tuple[FleetSource, str]:
    """The fleet source the options ask for, and where it reads from (for messages)."""
    auth = _auth(ns)
    if ns.targets is not None:
        targets = parse_targets(ns.targets)
        return DirectFleet(targets, auth=auth, timeout=ns.timeout, window=ns.window), ns.targets
    client = PrometheusClient(ns.prometheus, auth, timeout=ns.timeout)
    return HealthFleet(PrometheusFleet(client, window=ns.window), client), client.url


def cluster_main(argv: Sequence[str], stdout: TextIO | None = None) -> int:
    """Run `gputop cluster`; return the exit code. Errors are one line on stderr."""
    out = sys.stdout if stdout is None else stdout
    try:
        ns = build_parser().parse_args(list(argv))
        source, where = build_source(ns)
    except GputopError as error:
        print(f"gputop: {terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code
    try:
        if ns.once or ns.json:
            return _print_once(source, out, as_json=ns.json, one_shot=ns.targets is not None)
        options = ClusterOptions(ns.refresh, ns.window, ns.theme, where)
        return run_fleet_tui(source, options)
    finally:
        source.close()


def _print_once(source: FleetSource, out: TextIO, *, as_json: bool, one_shot: bool) -> int:
    """``one_shot``: the answer is one scrape of each target (``--targets``), with no window
    behind it; Prometheus has the window in its storage, so its answer is judged."""
    fleet: FleetSnapshot = source.fleet()
    if one_shot:
        fleet = dataclasses.replace(fleet, one_shot=True)
    for notice in fleet.notices:
        print(f"gputop: warning: {terminal_safe(notice)}", file=sys.stderr)
    if fleet.error is not None:
        print(f"gputop: {terminal_safe(fleet.error)}", file=sys.stderr)
        if not fleet.nodes:
            return 1
    if as_json:
        out.write(json.dumps(fleet_dict(fleet), indent=2) + "\n")
    else:
        out.write(fleet_text(fleet))
    return 0


def run_fleet_tui(source: FleetSource, options: ClusterOptions) -> int:
    """The interactive fleet screen (``gputop.cli.fleet_tui``); a node screen loads the
    window, or ten minutes if that is longer, so its sparklines are full."""
    # Deferred: Textual, which `--once` and `--json` do not draw with (725 M instructions).
    from gputop.cli.fleet_tui import run_fleet_tui as run

    return run(
        source,
        refresh=options.refresh,
        history=max(options.window, DEFAULT_NODE_HISTORY),
        source_label=options.where,
        theme=options.theme or "dark",
    )
