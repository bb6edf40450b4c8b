"""Speed and memory of reading a `nvidia-smi --query-gpu=... --format=csv -l 1` log.

Writes a log of 8 GPUs sampled every second (about two weeks in 1 GB) into a temporary
directory (or ``--keep DIR``, reused when it is already there; never commit it), with the
fields of the classic advice plus the GPU index and power, as nvidia-smi writes them
(units in the header and after each value, timestamps to the millisecond, a 4 s pause now
and then). Then measures, each in a fresh process:

- ``scan``: ``CsvRecording.open`` + ``len()``: the index of every snapshot (what replay,
  ``--at`` and ``g`` need before they can seek), in MB/s on one core, and its peak RSS;
- ``read``: every snapshot parsed into the model (``for snapshot in recording``);
- ``report``: `gputop report FILE --json` (to /dev/null), its wall time, CPU time and peak
  RSS: the log read column by column, by one process per CPU;
- ``report-1``: the same with ``--jobs 1`` (one core: the log read in one pass,
  ``CsvRecording.stream``, no index built);
- ``phases``: that one pass by phase, in one process with the collector off as `report`
  runs it: reading (read, split, check, convert: ``stream``), ``add_columns`` (states,
  sums, counts), the summary (gap threshold settled);
- ``rows``: the report the way every other format is read, each snapshot parsed into the
  model (``build_report(columns=False)``), on a ``--rows-mb`` log (100 MB by default: the
  whole 1 GB takes minutes), with ``report``/``report-1`` measured on that log too, in the
  same run, for the ratio.

``--against CHECKOUT`` (another checkout of gputop with its own ``.venv``, e.g. main's):
``scan`` and ``report-1`` are measured for both, in turn (the order swapped each round,
``--rounds`` rounds), with the CPU time (user + sys), the load average before each run, and
whether both reports say the same.

Usage: ``python benchmarks/bench_csv.py [--size-mb 1024] [--keep DIR] [--only scan]``.
Targets: scan >= 100 MB/s, RSS < 150 MB, report < 15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

GPUS = 8
START = datetime(2024, 1, 4, 15, 2, 11, 123000)
HEADER = (
    "timestamp, index, name, pstate, temperature.gpu, utilization.gpu [%], "
    "utilization.memory [%], memory.total [MiB], memory.free [MiB], memory.used [MiB], "
    "power.draw [W]\n"
)


def write_log(path: Path, size: int) -> None:
    """About ``size`` bytes of log at ``path``."""
    written = 0
    second = 0
    moment = START
    step = timedelta(seconds=1)
    pause = timedelta(seconds=4)
    with path.open("w") as handle:
        handle.write(HEADER)
        while written < size:
            stamp = moment.strftime("%Y/%m/%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
            rows = []
            for index in range(GPUS):
                busy = (second // 300 + index) % 4 < 2  # five-minute phases
                util = 90 + (second + index) % 10 if busy else (second * 7 + index) % 5
                used = 60000 + index * 100 if (second // 300 + index) % 4 < 3 else 3
                rows.append(
                    f"{stamp}, {index}, NVIDIA A100-SXM4-80GB, P0, {40 + util // 4}, {util} %, "
                    f"{util // 2} %, 81920 MiB, {81920 - used} MiB, {used} MiB, "
                    f"{80 + util * 3}.{index}5 W\n"
                )
            block = "".join(rows)
            handle.write(block)
            written += len(block)
            second += 1
            moment += pause if second % 3600 == 0 else step
    os.sync()


def _child(kind: str, path: str) -> None:
    """One measurement, in this (fresh) process; prints JSON."""
    from gputop.sources.csvlog import CsvRecording

    started = time.perf_counter()
    if kind.startswith("cli"):
        from gputop.cli.report import report_main

        jobs = ["--jobs", kind[len("cli-") :]] if kind != "cli" else []
        with open(os.environ.get("BENCH_CSV_OUT", os.devnull), "w") as sink:
            report_main([path, "--json", *jobs], stdout=sink)
        own = resource.getrusage(resource.RUSAGE_SELF)
        workers = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(
            json.dumps(
                {
                    "seconds": time.perf_counter() - started,
                    "cpu": own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime,
                    "snapshots": 0,
                    "peak_rss": max(own.ru_maxrss, workers.ru_maxrss) * 1024,
                }
            )
        )
        return
    if kind == "phases":
        _phases(path)
        return
    if kind == "rows":
        from gputop.cli.report import build_report

        builder, _ = build_report(Path(path), columns=False)
        count = builder.summary().snapshots
    else:
        with CsvRecording.open(path) as recording:
            count = len(recording)
            if kind == "read":
                count = sum(1 for _ in recording)
    elapsed = time.perf_counter() - started
    own = resource.getrusage(resource.RUSAGE_SELF)
    peak = own.ru_maxrss * 1024
    cpu = own.ru_utime + own.ru_stime
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "snapshots": count, "peak_rss": peak}))


def _phases(path: str) -> None:
    """``report --jobs 1``'s one pass, timed by phase (CPU time of this process)."""
    import gc

    from gputop.cli.report import STEADY_MIN_GAP_S
    from gputop.insight.report import ReportBuilder
    from gputop.model import Snapshot
    from gputop.sources.csvlog import CsvRecording

    gc.disable()
    clock = time.process_time
    started = clock()
    adding = 0.0
    builder = ReportBuilder(min_auto_gap_s=STEADY_MIN_GAP_S, keep_samples=False)
    with CsvRecording.open(path) as recording:
        for part in recording.stream():
            before = clock()
            if isinstance(part, Snapshot):
                builder.add(part)
            else:
                builder.add_columns(part)
            adding += clock() - before
        indexed = len(recording)
    read = clock() - started - adding
    before = clock()
    summary = builder.summary()
    summing = clock() - before
    print(
        json.dumps(
            {
                "read": read,
                "add_columns": adding,
                "summary": summing,
                "snapshots": summary.snapshots,
                "indexed": indexed,
                "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            }
        )
    )


def _measure(
    kind: str, path: Path, python: str = sys.executable, out: Path | None = None
) -> dict[str, float]:
    command = [python, __file__, "--child", kind, str(path)]
    env = {**os.environ, "BENCH_CSV_OUT": str(out or os.devnull)}
    out_text = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    result: dict[str, float] = json.loads(out_text)
    return result


def _against(path: Path, other: Path, rounds: int, folder: Path) -> None:
    """``scan`` and ``report-1`` of this checkout and of ``other``, in turn."""
    pythons = {"this": sys.executable, "other": str(other / ".venv" / "bin" / "python")}
    size = path.stat().st_size / 1e6
    print(f"this checkout against {other}, {rounds} rounds, CPU = user + sys")
    for round_ in range(rounds):
        order = ["other", "this"] if round_ % 2 == 0 else ["this", "other"]
        for who in order:
            for kind, label in (("scan", "scan"), ("cli-1", "report-1")):
                load = os.getloadavg()[0]
                out = folder / f"report-{who}.json"
                result = _measure(kind, path, pythons[who], out)
                print(
                    f"round {round_ + 1} {who:5} {label:8}: {result['cpu']:5.1f} s CPU, "
                    f"{result['seconds']:5.1f} s wall ({size / result['cpu']:.0f} MB/s of CPU), "
                    f"peak RSS {result['peak_rss'] / 2**20:.0f} MB, load before {load:.1f}"
                )
    same = (folder / "report-this.json").read_bytes() == (folder / "report-other.json").read_bytes()
    print(f"both reports the same: {same}")


def _print_report(label: str, path: Path, jobs: str = "") -> float:
    """`gputop report PATH --json [--jobs N]` in a fresh process: wall and CPU time (its
    workers' included) and the peak RSS of the largest of its processes."""
    result = _measure(f"cli-{jobs}" if jobs else "cli", path)
    seconds = result["seconds"]
    size = path.stat().st_size / 1e6
    print(
        f"{label} ({size:.0f} MB): {seconds:.1f} s wall, {result['cpu']:.1f} s CPU, "
        f"{size / seconds:.0f} MB/s, peak RSS {result['peak_rss'] / 2**20:.0f} MB"
    )
    return seconds


def _log_of(folder: Path, size_mb: int) -> Path:
    path = folder / f"gpu-log-{size_mb}mb.csv"
    if not path.exists():
        started = time.perf_counter()
        write_log(path, size_mb * 2**20)
        print(f"wrote {path} in {time.perf_counter() - started:.0f} s")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", type=Path, help="write (or reuse) the log in this directory")
    parser.add_argument(
        "--only",
        choices=["scan", "read", "report", "report-1", "phases", "rows"],
        action="append",
    )
    parser.add_argument("--rows-mb", type=int, default=100, help="the log `rows` reads")
    parser.add_argument("--against", type=Path, help="another checkout (with .venv) to compare")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        path = _log_of(folder, args.size_mb)
        size = path.stat().st_size
        print(f"log: {size / 1e6:.0f} MB, {GPUS} GPUs")
        if args.against:
            _against(path, args.against, args.rounds, folder)
            return 0
        for kind in args.only or ["scan", "read", "report", "report-1", "phases", "rows"]:
            if kind == "report":
                _print_report("report, columns, one process per CPU", path)
                continue
            if kind == "report-1":
                _print_report("report, columns, one process", path, "1")
                continue
            if kind == "phases":
                got = _measure("phases", path)
                print(
                    f"phases: read {got['read']:.1f} s, add_columns {got['add_columns']:.1f} s, "
                    f"summary {got['summary']:.1f} s of CPU; {got['snapshots']:.0f} snapshots, "
                    f"{got['indexed']:.0f} of them indexed; peak RSS "
                    f"{got['peak_rss'] / 2**20:.0f} MB"
                )
                continue
            if kind == "rows":
                small = _log_of(folder, args.rows_mb)
                rows = _measure("rows", small)
                print(
                    f"rows ({small.stat().st_size / 1e6:.0f} MB): {rows['seconds']:.1f} s, "
                    f"peak RSS {rows['peak_rss'] / 2**20:.0f} MB"
                )
                one = _print_report("  columns, one process", small, "1")
                every = _print_report("  columns, two processes", small, "2")
                print(
                    f"  ratio: {rows['seconds'] / one:.1f}x faster on one process, "
                    f"{rows['seconds'] / every:.1f}x on two"
                )
                continue
            result = _measure(kind, path)
            print(
                f"{kind}: {result['seconds']:.1f} s, {size / 1e6 / result['seconds']:.0f} MB/s, "
                f"{result['snapshots']:.0f} snapshots, peak RSS {result['peak_rss'] / 2**20:.0f} MB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
