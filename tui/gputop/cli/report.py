"""`gputop report FILE`: summarise a recording of `nvidia-smi -q -x` documents.

Per GPU: duration, mean/p50/p95 utilization, time idle, waiting and throttled, peak memory
and power, energy; charts of utilization and power when stdout is a terminal (or with
``--charts``); ``--json`` for the same figures as one JSON object.

Parsing the XML is nearly all the cost (about 1 ms per 8-GPU document), so a long recording
in a plain file is split into consecutive ranges of documents parsed by worker processes,
whose partial reports are then joined in order: the figures are the same as one pass's.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import multiprocessing
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from itertools import repeat
from pathlib import Path
from typing import TextIO

from gputop.cli.opening import open_recording
from gputop.cli.validate import Parser, gap_seconds, jobs_count
from gputop.errors import BadArguments, BadCapture, GputopError
from gputop.insight.health_log import health_json, health_text
from gputop.insight.report import (
    MIN_AUTO_GAP_S,
    ReportBuilder,
    gap_threshold,
    render_table,
    summary_to_json,
)
from gputop.model import Snapshot
from gputop.model.safe_text import terminal_safe
from gputop.model.units import fmt_count
from gputop.sources.csvlog import CsvRecording
from gputop.sources.recordings.dmon_columns import NotPlain, plain_runs
from gputop.sources.recordings.format_names import DMON
from gputop.sources.recordings.formats import format_names
from gputop.sources.smi.recording import Recording

PARALLEL_MIN_DOCUMENTS = 1000
"""Below this many documents one process is quicker than starting workers."""

DOCUMENTS_PER_JOB = 400
"""At least this many documents per worker, so that each one's start-up pays off."""

CSV_SNAPSHOTS_PER_DOCUMENT = 100
"""A CSV snapshot is read in about a hundredth of an XML document's time: what counts
towards splitting a log among workers."""

STREAM_BYTES = 64 << 20
"""A plain CSV file smaller than this is read in one pass by one process even when there
are several CPUs (about as quick as indexing it first and splitting it among them)."""

MAX_PENDING = 1_000_000
"""Intervals a CSV report read in one pass may hold back until the gap threshold is known
(about 25 bytes each: those longer than the threshold's floor, all of them in a log
sampled less often); past it the log is read again, indexed first."""

_GZIP_MAGIC = b"\x1f\x8b"
_PIPE_WAIT_S = 0.5

STDIN = Path("-")
"""`gputop report -`: the recording comes on standard input."""

_STDIN_PATH = Path("/dev/stdin")

STEADY_MIN_GAP_S = 2.0
"""The floor of the automatic gap threshold for logs stamped to the millisecond at a steady
pace (`--query-gpu -l 1`): a pause of four intervals there is a gap, not idle time. XML
documents are stamped to the second and an 8-GPU one can take seconds to write, so theirs
stays at ``MIN_AUTO_GAP_S``."""


def build_parser() -> argparse.ArgumentParser:
    """The parser for `gputop report`."""
    parser = Parser(
        prog="gputop report",
        description="Summarise a recording (`nvidia-smi -q -x -l 1` output, .gz, or a "
        "directory of documents; an `nvidia-smi --query-gpu=... --format=csv -l 1` log; "
        "`nvidia-smi -q` text, `dmon -o DT` or `pmon -o DT` logs): per GPU utilization, "
        "time idle, waiting and throttled, peaks and energy.",
        epilog="GPU-hours by team instead (the ledger): `gputop report --prometheus URL "
        "--since 7d --by namespace` for a fleet, `gputop report FILE --by pod` for a "
        "recording; their --help lists the ledger's options.",
    )
    parser.add_argument(
        "file", metavar="FILE", type=Path, help="the recording (- for standard input)"
    )
    parser.add_argument(
        "--format",
        choices=format_names(),
        help="read FILE as this format instead of telling it by its content",
    )
    parser.add_argument(
        "--query-gpu",
        metavar="FIELDS",
        help="the fields of a CSV log written with `noheader`, as given to nvidia-smi "
        "(e.g. --query-gpu timestamp,index,utilization.gpu,memory.used)",
    )
    parser.add_argument(
        "--apps",
        metavar="FILE",
        type=Path,
        help="with a `--query-gpu` CSV log: the `nvidia-smi --query-compute-apps=timestamp,"
        "gpu_uuid,pid,process_name,used_memory --format=csv -l 1` log kept beside it",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    charts = parser.add_mutually_exclusive_group()
    charts.add_argument(
        "--charts",
        dest="charts",
        action="store_true",
        default=None,
        help="draw utilization and power charts even when stdout is not a terminal",
    )
    charts.add_argument(
        "--no-charts", dest="charts", action="store_false", help="never draw charts"
    )
    parser.add_argument(
        "--max-gap",
        type=gap_seconds,
        metavar="SEC",
        help="intervals longer than this are gaps: not counted in any state nor in energy "
        f"(default: three sampling intervals, at least {STEADY_MIN_GAP_S:g} s for CSV and "
        f"other logs, {MIN_AUTO_GAP_S:g} s for XML captures)",
    )
    parser.add_argument(
        "--jobs",
        type=jobs_count,
        metavar="N",
        help="parse with N processes (default: one per CPU for XML recordings of "
        f"{PARALLEL_MIN_DOCUMENTS} documents or more, in a plain, uncompressed file, and for "
        f"CSV logs of {PARALLEL_MIN_DOCUMENTS * CSV_SNAPSHOTS_PER_DOCUMENT} snapshots or more, "
        f"but a plain CSV file under {STREAM_BYTES >> 20} MiB is read in one pass by one process)",
    )
    return parser


def report_main(argv: Sequence[str], stdout: TextIO | None = None) -> int:
    """Run `gputop report`; return the exit code. Errors are one line on stderr."""
    out = sys.stdout if stdout is None else stdout
    if any(arg == "--prometheus" or arg.startswith("--prometheus=") for arg in argv):
        # A fleet's history, not a recording: the GPU-hours ledger (`gputop.cli.ledger`).
        # Deferred: the ledger's Prometheus client and HTTP (125 ms), only for --prometheus.
        from gputop.cli.ledger import ledger_main

        return ledger_main(argv, out)
    if any(arg == "--by" or arg.startswith("--by=") for arg in argv):
        # A recording's GPU-hours by owner, node or model: the same ledger.
        # Deferred: the ledger and its Prometheus client (125 ms), only for --by.
        from gputop.cli.ledger import recording_ledger_main

        return recording_ledger_main(argv, out)
    try:
        args = build_parser().parse_args(list(argv))
        return _report(args, out)
    except GputopError as error:
        print(f"gputop: {terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while parsing.

    Parsing allocates millions of short-lived objects, each batch of which makes the
    collector walk every live object; none of them form cycles (reference counting frees
    them), so the walks find nothing and cost about 15% of the report.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def job_count(documents: int, requested: int | None, cpus: int) -> int:
    """How many processes parse a recording of ``documents`` documents."""
    if requested is not None:
        return max(1, min(requested, documents))
    if documents < PARALLEL_MIN_DOCUMENTS:
        return 1
    return max(1, min(cpus, documents // DOCUMENTS_PER_JOB))


def _splittable(path: Path) -> bool:
    """A plain file: every worker can open it and seek in it without inflating a copy."""
    if not path.is_file():  # before open(): opening a FIFO waits for a writer
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(2) != _GZIP_MAGIC
    except OSError:
        return False


def _build_range(
    path: Path, start: int, stop: int, origin: datetime | None, max_gap: float | None
) -> tuple[ReportBuilder, list[str]]:
    """A worker's part: the report of documents ``start`` to ``stop`` (excluded)."""
    builder = ReportBuilder(max_gap_s=max_gap, origin=origin)
    skipped: list[str] = []
    with _collector_paused(), Recording.open(path) as recording:
        for index in range(start, stop):
            try:
                builder.add(recording.snapshot(index))
            except BadCapture as error:
                skipped.append(f"{path}: skipped {error}")
    return builder, skipped


def _say(message: str) -> None:
    print(f"gputop: {terminal_safe(message)}", file=sys.stderr, flush=True)


_SHARED_CSV: CsvRecording | None = None
"""The CSV log forked workers read (set before they start: a fork inherits it, scanned)."""


def _build_csv_range(start: int, stop: int, max_gap: float, keep_samples: bool) -> ReportBuilder:
    """A worker's part of a CSV log's report: snapshots ``start`` to ``stop``."""
    recording = _SHARED_CSV
    assert recording is not None
    builder = ReportBuilder(max_gap_s=max_gap, origin=recording.origin, keep_samples=keep_samples)
    with _collector_paused():
        for part in recording.runs(start, stop):
            if isinstance(part, Snapshot):
                builder.add(part)
            else:
                builder.add_columns(part)
    return builder


def _csv_report(
    recording: CsvRecording, max_gap: float | None, jobs: int | None, charts: bool
) -> tuple[ReportBuilder, list[str]]:
    """A CSV log's report, read column by column: the same figures as snapshot by
    snapshot; also the reader's warnings.

    A plain file read by one process is read in one pass (``CsvRecording.stream``), the
    gap threshold settled at the end. Else the log is indexed first (a pipe, a .gz: as it
    comes), the gap threshold worked out from the index, so that the figures add up as
    runs come, and a long log is read by one process per CPU (a part each)."""
    one_process = charts or jobs == 1 or _cpus() == 1
    if recording.streamable and (one_process or recording.path.stat().st_size < STREAM_BYTES):
        builder = _streamed_csv(recording, max_gap, charts)
        if builder is not None:
            return builder, list(recording.warnings)
        # Too many intervals held back for the threshold: the log is read again, indexed.
        with recording.reopened() as fresh:
            return _indexed_csv(fresh, max_gap, jobs, charts), list(fresh.warnings)
    return _indexed_csv(recording, max_gap, jobs, charts), list(recording.warnings)


def _streamed_csv(
    recording: CsvRecording, max_gap: float | None, charts: bool
) -> ReportBuilder | None:
    """The report of a plain CSV file read in one pass; None when it held back more than
    ``MAX_PENDING`` intervals for the gap threshold."""
    builder = ReportBuilder(max_gap_s=max_gap, min_auto_gap_s=STEADY_MIN_GAP_S, keep_samples=charts)
    with _collector_paused():
        for part in recording.stream():
            if isinstance(part, Snapshot):
                builder.add(part)
            else:
                builder.add_columns(part)
                if builder.pending > MAX_PENDING:
                    return None
    return builder


def _indexed_csv(
    recording: CsvRecording, max_gap: float | None, jobs: int | None, charts: bool
) -> ReportBuilder:
    """The report of a CSV log indexed first (``CsvRecording.runs``), by worker processes
    reading parts of the index when the log is long and there are several CPUs."""
    global _SHARED_CSV
    count = len(recording)
    if max_gap is None:
        max_gap = gap_threshold(recording.seconds(), STEADY_MIN_GAP_S)
    workers = job_count(count // CSV_SNAPSHOTS_PER_DOCUMENT, jobs, _cpus())
    if workers <= 1 or charts or "fork" not in multiprocessing.get_all_start_methods():
        _SHARED_CSV = recording
        try:
            return _build_csv_range(0, count, max_gap, charts)
        finally:
            _SHARED_CSV = None
    starts = [count * k // workers for k in range(workers)]
    stops = [*starts[1:], count]
    _SHARED_CSV = recording
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            parts = list(pool.map(_build_csv_range, starts, stops, repeat(max_gap), repeat(False)))
    finally:
        _SHARED_CSV = None
    return ReportBuilder.merged(parts)


def _plain_dmon_report(path: Path, max_gap: float | None, charts: bool) -> ReportBuilder | None:
    """The report of a plain `dmon -o DT` log read column by column in one pass (the same
    figures as row by row: ``sources/dmon_columns``); None when it is no such log."""
    # Adding up as it goes keeps no samples; with too many intervals held back for the gap
    # threshold, the samples are kept instead.
    for keep in (True,) if charts else (False, True):
        runs = plain_runs(path)
        if runs is None:
            return None
        builder = ReportBuilder(
            max_gap_s=max_gap, min_auto_gap_s=STEADY_MIN_GAP_S, keep_samples=keep
        )
        try:
            with _collector_paused():
                for run in runs:
                    builder.add_columns(run)
                    if not keep and builder.pending > MAX_PENDING:
                        break
                else:
                    return builder
        except NotPlain:
            return None
    return None


def build_report(
    path: Path,
    max_gap: float | None = None,
    jobs: int | None = None,
    format_name: str | None = None,
    *,
    charts: bool = True,
    columns: bool = True,
    query_gpu: str | None = None,
    apps: Path | None = None,
) -> tuple[ReportBuilder, list[str]]:
    """Read the recording at ``path`` into a ReportBuilder; also return the reader's warnings.

    ``charts``: the builder must keep the samples for ``traces``. ``columns``: a CSV log is
    read column by column (False: snapshot by snapshot, as every other format; the figures
    are the same).

    Raises:
        BadCapture: the recording cannot be read.
    """
    if columns and query_gpu is None and apps is None and format_name in (None, DMON):
        plain = _plain_dmon_report(path, max_gap, charts)
        if plain is not None:
            return plain, []
    with open_recording(path, _say, format_name, query_gpu, apps) as recording:
        # A pipe is followed as it comes: a report covers all of it, read once it has ended
        # (else it would end at whatever had come when the reading caught up).
        while recording.following:
            recording.wait_for(len(recording), timeout=_PIPE_WAIT_S)
        if columns and isinstance(recording, CsvRecording):
            return _csv_report(recording, max_gap, jobs, charts)
        count = len(recording)
        # Workers read ranges of XML documents; other formats are read in one pass.
        splittable = isinstance(recording, Recording) and _splittable(path)
        workers = job_count(count, jobs, _cpus()) if splittable else 1
        if workers <= 1:
            floor = MIN_AUTO_GAP_S if isinstance(recording, Recording) else STEADY_MIN_GAP_S
            with _collector_paused():
                builder = ReportBuilder(max_gap_s=max_gap, min_auto_gap_s=floor)
                builder.add_all(recording)
            return builder, list(recording.warnings)
        stamps = (recording.timestamp(i) for i in range(count))
        origin = next((stamp for stamp in stamps if stamp is not None), None)
        warnings = list(recording.warnings)
    starts = [count * k // workers for k in range(workers)]
    stops = [*starts[1:], count]
    methods = multiprocessing.get_all_start_methods()
    # fork: the workers start in milliseconds with everything already imported.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        parts = list(
            pool.map(_build_range, repeat(path), starts, stops, repeat(origin), repeat(max_gap))
        )
    for _, skipped in parts:
        warnings.extend(skipped)
    return ReportBuilder.merged([builder for builder, _ in parts]), warnings


def _input_path(path: Path) -> Path:
    """The file to read for FILE: `-` is standard input, as with `--replay -`.

    Raises:
        BadArguments: `-` with a terminal on stdin.
    """
    if path != STDIN:
        return path
    if sys.stdin is None or sys.stdin.isatty():
        raise BadArguments(
            "report -: standard input is a terminal; pipe a recording in, e.g. "
            "zcat run.xml.gz | gputop report -"
        )
    return _STDIN_PATH


def _report(args: argparse.Namespace, out: TextIO) -> int:
    path: Path = args.file
    interactive = out.isatty()
    charts = bool(args.charts or (args.charts is None and interactive)) and not args.json
    try:
        builder, warnings = build_report(
            _input_path(path),
            args.max_gap,
            args.jobs,
            args.format,
            charts=charts,
            query_gpu=args.query_gpu,
            apps=args.apps,
        )
    except OSError as error:
        raise BadCapture(f"{path}: {error.strerror or error}") from None
    except BadCapture as error:
        if path != STDIN:
            raise
        # Named as the user named it, not as the reader opened it.
        raise BadCapture(str(error).replace(str(_STDIN_PATH), str(STDIN), 1)) from None
    machines = builder.machines
    if len(machines) > 1:
        # One report is one machine's timeline: figures summed over several machines' GPUs
        # and clocks mean nothing, and a directory of captures is better reported per file.
        shown = "; ".join(machine.describe() for machine in machines[:3])
        more = f"; and {len(machines) - 3} more" if len(machines) > 3 else ""
        raise BadCapture(
            f"{path}: holds captures of {len(machines)} different machines ({shown}{more}; "
            "told apart by host and GPU UUIDs): a report covers one machine's recording, "
            "report each on its own"
        )
    summary = builder.summary(source=str(path), warnings=warnings)
    if summary.snapshots and summary.untimed_snapshots == summary.snapshots:
        # Every snapshot left out: the reader's warning and "no GPU" would contradict each
        # other; the one fact is that this log cannot be placed in time at all.
        raise BadCapture(
            f"{path}: the log has no times (no snapshot has a timestamp), so a report over "
            "time cannot be made; record with a timestamp (nvidia-smi dmon `-o DT`, "
            "--query-gpu with `timestamp`)"
        )
    for warning in warnings:
        print(f"gputop: warning: {terminal_safe(warning)}", file=sys.stderr)
    if warnings:
        print(
            f"gputop: the report covers the {fmt_count(summary.snapshots, 'snapshot')} that "
            "could be read",
            file=sys.stderr,
        )
    health = builder.health
    if args.json:
        document = summary_to_json(summary)
        document["health"] = health_json(health.changes)
        json.dump(document, out, indent=2)
        out.write("\n")
        return 0
    # Names and the file name are outside text: each line is written terminal-safe.
    out.write("\n".join(map(terminal_safe, render_table(summary).split("\n"))) + "\n")
    said = health_text(health.changes, health.dropped)
    if said is not None:
        out.write("\n" + "\n".join(map(terminal_safe, said.split("\n"))) + "\n")
    if builder.backward_steps and (args.charts or interactive):
        out.write("\ncharts left out: time went backwards, so there is no one time axis\n")
    elif args.charts or (args.charts is None and interactive):
        # Deferred: plotext (26-100 ms), only when charts are drawn.
        from gputop.insight.charts import render_gpu_charts

        width = shutil.get_terminal_size((100, 24)).columns
        for trace in builder.traces():
            chart = render_gpu_charts(trace, builder.origin, width, color=interactive)
            if chart is None:
                break  # charts left out (another plotext release: said on stderr)
            out.write("\n" + chart + "\n")
    return 0
