"""Speed and memory of reading a `nvidia-smi --query-gpu=... --format=csv -l 1` log.

Writes a log of 8 GPUs sampled every second (about two weeks in 1 GB) into a temporary
directory (or ``--keep DIR``, reused when it is already there; never commit it), with the
fields of the classic advice plus the GPU index and power, as nvidia-smi writes them
(units in the header and after each value, timestamps to the millisecond, a 4 s pause now
and then). Then measures, each in a fresh process:

- ``scan``: ``CsvRecording.open`` + ``len()``: the index of every snapshot (what replay,
  ``--at`` and ``g`` need before they can seek), in MB/s on one core, and its peak RSS;
- ``read``: every snapshot parsed into the model (``for snapshot in recording``);
- ``report``: `gputop report FILE --json` (to /dev/null), its wall time and peak RSS.

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
    with CsvRecording.open(path) as recording:
        count = len(recording)
        if kind == "read":
            count = sum(1 for _ in recording)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": elapsed, "snapshots": count, "peak_rss": peak}))


def _measure(kind: str, path: Path) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", kind, str(path)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    result: dict[str, float] = json.loads(out)
    return result


def _report(path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        subprocess.run(
            [sys.executable, "-m", "gputop", "report", str(path), "--json"],
            stdout=sink,
            check=True,
        )
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return elapsed, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", type=Path, help="write (or reuse) the log in this directory")
    parser.add_argument("--only", choices=["scan", "read", "report"], action="append")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"gpu-log-{args.size_mb}mb.csv"
        if not path.exists():
            started = time.perf_counter()
            write_log(path, args.size_mb * 2**20)
            print(f"wrote {path} in {time.perf_counter() - started:.0f} s")
        size = path.stat().st_size
        print(f"log: {size / 1e6:.0f} MB, {GPUS} GPUs")
        for kind in args.only or ["scan", "read", "report"]:
            if kind == "report":
                seconds, peak = _report(path)
                print(f"report: {seconds:.1f} s, peak RSS {peak / 2**20:.0f} MB (target < 15 s)")
                continue
            result = _measure(kind, path)
            print(
                f"{kind}: {result['seconds']:.1f} s, {size / 1e6 / result['seconds']:.0f} MB/s, "
                f"{result['snapshots']:.0f} snapshots, peak RSS {result['peak_rss'] / 2**20:.0f} MB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
