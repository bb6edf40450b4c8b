"""Command line: parse options, pick a source, run headless or the TUI.

Errors a user can cause (bad file, no driver, unknown GPU) are GputopError: one line on
stderr and the error's exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from gputop import __version__
from gputop.cli import startup
from gputop.cli.demo import DEMO_CAPTURE
from gputop.cli.options import Options
from gputop.cli.terminal import tui_or_batch
from gputop.cli.validate import Parser, interval_seconds, pick_count, sample_count
from gputop.errors import BadArguments, GputopError
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.interval import MAX_INTERVAL, MIN_INTERVAL
from gputop.sources.recordings.format_names import FORMAT_NAMES


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for `gputop` (without the `report` subcommand)."""
    parser = Parser(
        prog="gputop",
        description="A terminal UI for NVIDIA GPUs: live through NVML, or replaying "
        "recorded `nvidia-smi -q -x` output.",
        epilog="Subcommands: `gputop report FILE` summarises a recording; `gputop export` "
        "serves the GPUs' metrics to Prometheus; `gputop cluster --prometheus URL` shows a "
        "fleet; `gputop serve` serves the TUI to web browsers (see `gputop serve --help`); "
        "`gputop alert-rules` prints Prometheus alert rules for GPU health.",
    )
    parser.add_argument("--version", action="version", version=f"gputop {__version__}")
    _add_replay_options(parser)
    _add_run_options(parser)
    return parser


def _add_replay_options(parser: argparse.ArgumentParser) -> None:
    """What to replay, and how to read it."""
    parser.add_argument(
        "--replay",
        metavar="FILE",
        type=Path,
        help="replay a recording: nvidia-smi XML (one document, a `-l` stream, .gz, or a "
        "directory), a `--query-gpu` CSV log, `nvidia-smi -q` text or a dmon/pmon log; "
        "`-` reads standard input (followed: `ssh host nvidia-smi -q -x -l 1 | gputop --replay -`)",
    )
    parser.add_argument(
        "--format",
        choices=FORMAT_NAMES,
        help="with --replay: read FILE as this format instead of telling it by its content "
        "(xml: `nvidia-smi -q -x`; csv: `nvidia-smi --query-gpu=... --format=csv`; text: "
        "`nvidia-smi -q`; dmon: `nvidia-smi dmon`/`pmon`)",
    )
    parser.add_argument(
        "--query-gpu",
        metavar="FIELDS",
        help="with --replay: the fields of a CSV log written with `noheader`, as given to "
        "nvidia-smi (e.g. --query-gpu timestamp,index,utilization.gpu,memory.used)",
    )
    parser.add_argument(
        "--apps",
        metavar="FILE",
        type=Path,
        help="with --replay of a `--query-gpu` CSV log: the `nvidia-smi --query-compute-apps="
        "timestamp,gpu_uuid,pid,process_name,used_memory --format=csv -l 1` log kept beside it",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="with --replay FILE: keep reading documents appended to FILE as they arrive, "
        "like tail -f (always on for a pipe or `-`)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="replay a recorded 4-GPU box shipped with gputop (works anywhere, no GPU needed)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """How a run samples, what it prints or writes, and what the TUI may do."""
    parser.add_argument("--once", action="store_true", help="print a compact summary and exit")
    parser.add_argument("--json", action="store_true", help="print the snapshot as JSON and exit")
    parser.add_argument(
        "--at",
        metavar="INDEX|TIME",
        help="with --once/--json on a stream: which snapshot (0-based index, negative from "
        "the end, or an ISO time such as 2024-09-18T21:34:12 or 21:34:12)",
    )
    parser.add_argument(
        "--gpu",
        metavar="SPEC",
        help="show only these GPUs: comma list of indices, GPU-/MIG- UUIDs (or prefixes), "
        "PCI bus ids",
    )
    parser.add_argument(
        "--interval",
        type=interval_seconds,
        default=1.0,
        metavar="SEC",
        help=f"seconds between samples (default 1, {MIN_INTERVAL} to {MAX_INTERVAL:g})",
    )
    parser.add_argument(
        "--record",
        metavar="FILE",
        type=Path,
        help="append each live snapshot to FILE as nvidia-smi XML (.gz to compress); every GPU "
        "is recorded whatever --gpu says (select again at replay)",
    )
    parser.add_argument(
        "--count", type=sample_count, metavar="N", help="headless: take N snapshots and stop"
    )
    parser.add_argument(
        "--pick",
        type=pick_count,
        metavar="N",
        help="print N free GPUs (no compute process, at most 5%% busy over --count samples, "
        "2 by default) for CUDA_VISIBLE_DEVICES, or exit 1; with --replay, at --at (default: "
        "the last snapshot)",
    )
    parser.add_argument("--readonly", action="store_true", help="never send signals to processes")
    parser.add_argument("--theme", choices=["dark", "light"], help="colour theme")
    parser.add_argument(
        "--log",
        metavar="FILE.csv",
        type=Path,
        help="append one CSV row per GPU per tick (live, or with --replay --count N)",
    )


def parse_options(argv: Sequence[str]) -> Options:
    """Turn argv into Options.

    Raises:
        BadArguments: a malformed or out-of-range option, or options that do not go together.
    """
    ns = build_parser().parse_args(list(argv))
    if ns.demo:
        if ns.replay is not None:
            raise BadArguments("--demo replays gputop's own capture: give it or --replay FILE")
        ns.replay = DEMO_CAPTURE
    options = Options(
        replay=ns.replay,
        once=ns.once,
        json=ns.json,
        at=ns.at,
        gpu=ns.gpu,
        interval=ns.interval,
        record=ns.record,
        count=ns.count,
        pick=ns.pick,
        readonly=ns.readonly,
        theme=ns.theme,
        log=ns.log,
        follow=ns.follow,
        format=ns.format,
        query_gpu=ns.query_gpu,
        apps=ns.apps,
    )
    if options.follow and options.replay is None:
        raise BadArguments(
            "--follow reads a recording as it is written: use it with --replay FILE (or -)"
        )
    if options.format is not None and options.replay is None:
        raise BadArguments("--format names the format of a recording: use it with --replay FILE")
    if options.query_gpu is not None and options.replay is None:
        raise BadArguments("--query-gpu names the columns of a CSV log: use it with --replay FILE")
    if options.apps is not None and options.replay is None:
        raise BadArguments("--apps names the processes of a CSV log: use it with --replay FILE")
    if options.at is not None and options.replay is None:
        raise BadArguments("--at picks a snapshot of a recording: use it with --replay FILE")
    if options.log is not None and options.replay is not None and not options.headless:
        raise BadArguments(
            "--log with --replay converts a recording to CSV: add --count N (and --at) to "
            "choose the snapshots"
        )
    if options.pick is not None and (options.once or options.json):
        raise BadArguments("--pick prints GPU indices; it does not go with --once or --json")
    if options.record is not None and options.replay is not None:
        raise BadArguments("--record records live data; it cannot be used with --replay")
    return options


COMMANDS: dict[str, tuple[str, str]] = {
    "report": ("gputop.cli.report", "report_main"),
    "export": ("gputop.cli.export", "export_main"),
    "cluster": ("gputop.cli.cluster", "cluster_main"),
    "alert-rules": ("gputop.cli.alert_rules", "alert_rules_main"),
    "serve": ("gputop.cli.serve", "serve_main"),
}
"""``gputop NAME ...``: the module that runs each subcommand and its entry, ``f(argv) -> int``.
A command's module is imported only when it runs (the one place start-up is made lazy: each
module imports what it uses at its top; ``tests/unit/test_deferred_imports.py``)."""

MODES: dict[str, tuple[str, str]] = {
    "replay-headless": ("gputop.cli.replay", "replay_headless"),
    "replay": ("gputop.cli.tui", "run_tui"),
    "live": ("gputop.cli.live", "run_live"),
}
"""``gputop [options]``: the module that runs each mode and its entry, ``f(options) -> int``;
imported as ``COMMANDS``' are, so the live TUI loads no replay reader or headless output
(``tests/unit/test_live_imports.py``)."""


def _entry(module: str, function: str) -> Callable[..., int]:
    """The entry ``function`` of ``module``, imported now."""
    entry: Callable[..., int] = getattr(importlib.import_module(module), function)
    return entry


def main(argv: Sequence[str] | None = None) -> int:
    """Run gputop; return the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] and args[0] in COMMANDS:
            startup.end()
            return _entry(*COMMANDS[args[0]])(args[1:])
        options = tui_or_batch(parse_options(args))
        if options.headless:
            startup.end()
        return _entry(*MODES[_mode(options)])(options)
    except GputopError as error:
        print(f"gputop: {terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `gputop --json | head` closes the pipe early; that is not an error worth a trace.
        sys.stderr.close()
        return 0


def _mode(options: Options) -> str:
    """Which of ``MODES`` runs ``options``."""
    if options.replay is None:
        return "live"
    return "replay-headless" if options.headless else "replay"
