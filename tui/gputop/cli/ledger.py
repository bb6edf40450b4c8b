"""`gputop report --prometheus URL --since 7d --by pod`: the GPU-hours ledger of a fleet.

Who held GPUs over a span of history, who used them, and what idling cost, read through the
Prometheus HTTP API (dcgm-exporter's series or ``gputop export``'s, any mix; VictoriaMetrics,
Thanos and Mimir answer the same API). Prometheus does the counting (``gputop.ledger``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from gputop.cli.cluster import _auth
from gputop.cli.opening import open_recording
from gputop.cli.validate import Parser, timeout_seconds
from gputop.errors import BadArguments, BadCapture, GputopError
from gputop.ledger import thresholds as th
from gputop.ledger.account import Ledger, Prices
from gputop.ledger.prometheus import ledger_from_prometheus, parse_when
from gputop.ledger.promql import GroupBy
from gputop.ledger.render import ledger_dict, render_chart, render_csv, render_table
from gputop.ledger.snapshots import ledger_from_snapshots
from gputop.ledger.thresholds import Thresholds
from gputop.model.safe_text import terminal_safe
from gputop.sources.prometheus.client import PrometheusClient


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of 0 or more")
    return value


def _step(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        value = float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a step (60, 60s, 5m, 1h)") from None
    if not 1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r}: give a step from 1 s to 1 day")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The parser for `gputop report --prometheus`."""
    parser = Parser(
        prog="gputop report --prometheus URL",
        description="GPU-hours by node, namespace, pod, job, user or GPU model over a span "
        "of a Prometheus's history: allocated, active, idle while held, waiting, idle and "
        "free, unknown, energy, and what the idle-held hours cost.",
    )
    parser.add_argument("--prometheus", metavar="URL", required=True, help="the server's URL")
    parser.add_argument(
        "--since", default="7d", metavar="WHEN", help="start: 7d, 36h, 90m ago, or an ISO time"
    )
    parser.add_argument("--until", default=None, metavar="WHEN", help="end (default: now)")
    add_ledger_options(parser)
    parser.add_argument(
        "--match",
        default="",
        metavar="MATCHERS",
        help="only the series these PromQL label matchers select, e.g. "
        "'Hostname=~\"a100-.*\"' or 'namespace!=\"kube-system\"'",
    )
    parser.add_argument(
        "--timeout",
        type=timeout_seconds,
        default=60.0,
        metavar="SEC",
        help="seconds one query may take (default 60)",
    )
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--bearer-token-file", type=Path, metavar="FILE", help="bearer token")
    token.add_argument("--bearer-token-env", metavar="VAR", help="variable with a bearer token")
    parser.add_argument("--basic-auth-user", metavar="USER", help="HTTP basic auth user")
    password = parser.add_mutually_exclusive_group()
    password.add_argument("--basic-auth-password-file", type=Path, metavar="FILE")
    password.add_argument("--basic-auth-password-env", metavar="VAR")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'")
    parser.add_argument("--ca-file", type=Path, metavar="FILE")
    return parser


def add_ledger_options(parser: argparse.ArgumentParser) -> None:
    """The options a ledger takes from Prometheus or from a recording alike."""
    parser.add_argument(
        "--by",
        choices=[g.value for g in GroupBy],
        default=GroupBy.NAMESPACE.value,
        help="group by (default namespace); job is dcgm-exporter's hpc_job label, user the "
        "user of gputop export's process series (--export-processes full)",
    )
    parser.add_argument(
        "--step",
        type=_step,
        default=None,
        metavar="SEC",
        help="judge each GPU over steps of this long (default: the finest of 1, 2, 5, 10, "
        "15, 30 min, 1 h... that gives at most 200 steps and two scrapes a step: 10 min for "
        "a day, 1 h for a week); the figures are exact to one step, and Prometheus's work "
        "grows with GPUs x steps",
    )
    parser.add_argument(
        "--idle-at-most",
        type=_positive,
        default=th.IDLE_PCT,
        metavar="PCT",
        help="activity %% at or under which a step is idle (default 1, gpu-pruner's 0.01 "
        "engine activity; 0 for Princeton jobstats' 0 %%)",
    )
    parser.add_argument(
        "--busy-from",
        type=_positive,
        default=th.BUSY_PCT,
        metavar="PCT",
        help="held steps under this are waiting (default 30, the diagnosis's)",
    )
    parser.add_argument(
        "--held-memory",
        type=_positive,
        default=th.HELD_MEMORY_MIB,
        metavar="MIB",
        help="memory in use that says a job holds the GPU (default 1024)",
    )
    parser.add_argument(
        "--power-floor",
        type=_positive,
        default=None,
        metavar="W",
        help="a step drawing at least this is not idle (gpu-pruner's power floor; off)",
    )
    parser.add_argument("--price-gpu-hour", type=_positive, metavar="PRICE")
    parser.add_argument("--price-kwh", type=_positive, metavar="PRICE")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="offenders listed")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="the ledger as JSON")
    shown.add_argument("--csv", action="store_true", help="the ledger as CSV")
    parser.add_argument(
        "--charts", action="store_true", help="a daily chart of idle-held GPU-hours"
    )
    parser.add_argument(
        "--utc", action="store_true", help="days and times in UTC (default: local time)"
    )


def _span(ns: argparse.Namespace, now: float) -> tuple[float, float]:
    try:
        since = parse_when(ns.since, now)
    except ValueError:
        raise BadArguments(f"--since {ns.since!r}: give 7d, 36h, 90m or an ISO time") from None
    try:
        until = now if ns.until is None else parse_when(ns.until, now)
    except ValueError:
        raise BadArguments(f"--until {ns.until!r}: give 7d, 36h, 90m or an ISO time") from None
    if until - since < (ns.step or 60.0):
        raise BadArguments(
            f"--since {ns.since} --until {ns.until or 'now'}: the span is shorter than one "
            f"step ({ns.step or 60.0:g} s)"
        )
    return since, until


def ledger_main(argv: Sequence[str], stdout: TextIO | None = None) -> int:
    """Run `gputop report --prometheus`; return the exit code. Errors are one line."""
    out = sys.stdout if stdout is None else stdout
    try:
        ns = build_parser().parse_args(list(argv))
        if ns.top < 0:
            raise BadArguments("--top: give 0 or more")
        since, until = _span(ns, time.time())
        client = PrometheusClient(ns.prometheus, _auth(ns), timeout=ns.timeout)
        thresholds = Thresholds(ns.idle_at_most, ns.busy_from, ns.held_memory, ns.power_floor)
        tz = datetime.now().astimezone().tzinfo if not ns.utc else None
        ledger = ledger_from_prometheus(
            client,
            GroupBy(ns.by),
            since,
            until,
            ns.step,
            thresholds,
            prices=Prices(ns.price_gpu_hour, ns.price_kwh),
            tz=tz or timezone.utc,
            match=ns.match.strip().strip("{}"),
        )
    except GputopError as error:
        print(f"gputop: {terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code
    return _write(ledger, ns, out)


def _write(ledger: Ledger, ns: argparse.Namespace, out: TextIO) -> int:
    if ns.json:
        out.write(json.dumps(ledger_dict(ledger), indent=2) + "\n")
        return 0
    if ns.csv:
        out.write(render_csv(ledger))
        return 0
    out.write(render_table(ledger, ns.top))
    if ns.charts:
        width = shutil.get_terminal_size((100, 24)).columns
        color = out.isatty() if hasattr(out, "isatty") else False
        chart = render_chart(ledger, width, color=color)
        if chart is not None:  # else left out (another plotext release: said on stderr)
            out.write("\n" + chart + "\n")
    return 0


def recording_parser() -> argparse.ArgumentParser:
    """The parser for `gputop report FILE --by ...`."""
    parser = Parser(
        prog="gputop report FILE --by",
        description="GPU-hours of one machine's recording by node, namespace, pod, job, "
        "user or GPU model (owners where the recording carries them).",
    )
    parser.add_argument("file", type=Path, metavar="FILE", help="a recording gputop reads")
    add_ledger_options(parser)
    return parser


def recording_ledger_main(argv: Sequence[str], stdout: TextIO | None = None) -> int:
    """Run `gputop report FILE --by ...`; return the exit code. Errors are one line."""
    out = sys.stdout if stdout is None else stdout
    try:
        ns = recording_parser().parse_args(list(argv))
        if ns.top < 0:
            raise BadArguments("--top: give 0 or more")
        thresholds = Thresholds(ns.idle_at_most, ns.busy_from, ns.held_memory, ns.power_floor)
        tz = timezone.utc if ns.utc else (datetime.now().astimezone().tzinfo or timezone.utc)
        try:
            with open_recording(ns.file, lambda text: print(text, file=sys.stderr)) as recording:
                snapshots = (recording.snapshot(i) for i in range(len(recording)))
                ledger = ledger_from_snapshots(
                    snapshots,
                    GroupBy(ns.by),
                    ns.step or 60.0,
                    thresholds,
                    source=str(ns.file),
                    prices=Prices(ns.price_gpu_hour, ns.price_kwh),
                    tz=tz,
                )
        except OSError as error:
            raise BadCapture(f"{ns.file}: {error.strerror or error}") from None
    except GputopError as error:
        print(f"gputop: {terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code
    return _write(ledger, ns, out)
