"""`gputop alert-rules`: print a Prometheus rule file of GPU health alerts.

The rules read gputop's and dcgm-exporter's series alike (``gputop.sinks.prometheus.rules``);
each threshold is a flag, its default documented with where it comes from.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gputop.cli.validate import Parser
from gputop.errors import BadArguments
from gputop.sinks.prometheus.rules import Thresholds, rules_yaml, valid_duration

_DEFAULTS = Thresholds()


def build_parser() -> argparse.ArgumentParser:
    """The parser for `gputop alert-rules`."""
    parser = Parser(
        prog="gputop alert-rules",
        description="Print a Prometheus rule file of GPU health alerts (critical XIDs by "
        "class, uncorrectable ECC, row remapping, a lost GPU, thermal and hardware "
        "slowdown, an exporter down or stale, a GPU held but unused) over the series of "
        "`gputop export` and of dcgm-exporter. Load it with rule_files: in prometheus.yml.",
    )
    parser.add_argument(
        "--xid-window",
        default=_DEFAULTS.xid_window,
        metavar="DURATION",
        help=f"how long an XID alert fires after the XID (default {_DEFAULTS.xid_window})",
    )
    parser.add_argument(
        "--slowdown-for",
        default=_DEFAULTS.slowdown_for,
        metavar="DURATION",
        help="how long a thermal or hardware slowdown lasts before it alerts "
        f"(default {_DEFAULTS.slowdown_for})",
    )
    parser.add_argument(
        "--idle-for",
        default=_DEFAULTS.idle_for,
        metavar="DURATION",
        help="how long a GPU held by a process or pod sits unused before it alerts "
        f"(default {_DEFAULTS.idle_for}, Princeton's jobstats)",
    )
    parser.add_argument(
        "--idle-utilization",
        type=float,
        default=_DEFAULTS.idle_utilization,
        metavar="PERCENT",
        help="GPU utilization at or under which a held GPU is unused "
        f"(default {_DEFAULTS.idle_utilization:g}, jobstats)",
    )
    parser.add_argument(
        "--idle-activity",
        type=float,
        default=_DEFAULTS.idle_activity,
        metavar="RATIO",
        help="graphics-engine activity (0-1, DCGM_FI_PROF_GR_ENGINE_ACTIVE) under which a "
        f"pod's GPU is unused (default {_DEFAULTS.idle_activity:g}, gpu-pruner)",
    )
    parser.add_argument(
        "--down-for",
        default=_DEFAULTS.down_for,
        metavar="DURATION",
        help="how long an exporter is down or stale before it alerts "
        f"(default {_DEFAULTS.down_for})",
    )
    parser.add_argument(
        "--job",
        default=_DEFAULTS.job,
        metavar="REGEX",
        help=f"the scrape jobs of the GPU exporters, for `up` (default {_DEFAULTS.job!r})",
    )
    parser.add_argument(
        "--interval",
        default=None,
        metavar="DURATION",
        help="the rule group's evaluation interval (default: Prometheus's global one)",
    )
    return parser


def thresholds_from(ns: argparse.Namespace) -> Thresholds:
    """The thresholds the flags say; a bad one is one line (BadArguments)."""
    for flag, value in (
        ("--xid-window", ns.xid_window),
        ("--slowdown-for", ns.slowdown_for),
        ("--idle-for", ns.idle_for),
        ("--down-for", ns.down_for),
        ("--interval", ns.interval),
    ):
        if value is not None and not valid_duration(value):
            raise BadArguments(f"{flag}: {value!r} is not a duration such as 30s, 5m or 1h")
    if not 0 <= ns.idle_utilization <= 100:
        raise BadArguments("--idle-utilization: a percentage from 0 to 100")
    if not 0 <= ns.idle_activity <= 1:
        raise BadArguments("--idle-activity: a ratio from 0 to 1")
    if not ns.job or '"' in ns.job or "\\" in ns.job:
        raise BadArguments('--job: a regular expression without " or \\')
    return Thresholds(
        xid_window=ns.xid_window,
        slowdown_for=ns.slowdown_for,
        idle_for=ns.idle_for,
        idle_utilization=ns.idle_utilization,
        idle_activity=ns.idle_activity,
        down_for=ns.down_for,
        job=ns.job,
        interval=ns.interval,
    )


def alert_rules_main(argv: Sequence[str]) -> int:
    """Print the rule file; 0, or 2 with one line for a bad flag."""
    ns = build_parser().parse_args(list(argv))
    sys.stdout.write(rules_yaml(thresholds_from(ns)))
    return 0
