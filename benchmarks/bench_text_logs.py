"""Speed and memory of the text log readers: `nvidia-smi -q -l` text and `dmon -o DT`.

Writes, into a temporary directory, a `-q -l 1` stream made of the bundled H100 log repeated
(timestamps a second apart) and an 8-GPU `dmon -o DT` log of the bundled H100's rows (one
sample a second). For each, in this process: the scan (open + ``len``: the index of
samples), a seek to the middle, and a read-through (parse every sample); then peak RSS.

Usage: ``python benchmarks/bench_text_logs.py [--logs 3000] [--dmon-seconds 100000]``.
"""

from __future__ import annotations

import argparse
import re
import resource
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from gputop.sources.recordings.dmon import open_monitor_log
from gputop.sources.recordings.linelog import LineLog
from gputop.sources.smi.text import open_text

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
START = datetime(2024, 1, 4, 13, 0, 0)
_STAMP = re.compile(rb"^(Timestamp\s+: ).*$", re.MULTILINE)


def _q_stream(path: Path, logs: int) -> None:
    log = (SNAPSHOTS / "h100-590-q.txt").read_bytes()
    with path.open("wb") as out:
        for second in range(logs):
            stamp = (START + timedelta(seconds=second)).strftime("%a %b %d %H:%M:%S %Y")
            out.write(_STAMP.sub(rb"\g<1>" + stamp.encode(), log, count=1))


def _dmon_log(path: Path, seconds: int) -> None:
    lines = (SNAPSHOTS / "h100-590-dmon.txt").read_text().splitlines()
    header = "#Date       Time     " + lines[0][1:] + "\n"
    rows = [line[5:] for line in lines[2:]]
    with path.open("w") as out:
        out.write(header)
        for second in range(seconds):
            moment = START + timedelta(seconds=second)
            stamp = moment.strftime(" %Y%m%d   %H:%M:%S")
            row = rows[second % len(rows)]
            out.write("".join(f"{stamp} {gpu:5d}{row}\n" for gpu in range(8)))


def _measure(name: str, path: Path, opener: Callable[[Path], LineLog]) -> None:
    size = path.stat().st_size / 1e6
    started = time.perf_counter()
    log = opener(path)
    count = len(log)
    scan = time.perf_counter() - started
    started = time.perf_counter()
    log.snapshot(count // 2)
    seek = time.perf_counter() - started
    started = time.perf_counter()
    for _ in log:
        pass
    read = time.perf_counter() - started + scan
    log.close()
    print(
        f"{name}: {size:.0f} MB, {count} samples; scan {size / scan:.0f} MB/s "
        f"({scan:.2f} s); seek to the middle {seek * 1000:.1f} ms; "
        f"read-through {size / read:.1f} MB/s ({read:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--logs", type=int, default=3000)
    parser.add_argument("--dmon-seconds", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        q_path = Path(folder) / "q.txt"
        dmon_path = Path(folder) / "dmon.log"
        _q_stream(q_path, args.logs)
        _dmon_log(dmon_path, args.dmon_seconds)
        _measure("-q -l 1 text", q_path, open_text)
        _measure("dmon -o DT, 8 GPUs", dmon_path, open_monitor_log)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
