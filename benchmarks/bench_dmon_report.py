"""`gputop report` on a `nvidia-smi dmon -o DT` log against the same rows as a `--query-gpu`
CSV log, side by side, with the ratio.

Writes both logs into a temporary directory (or ``--keep DIR``, reused when there; never
commit it): ``--rows`` rows (10^6 by default) of ``--gpus`` GPUs sampled every second,
dmon's columns with the frame buffer (``-s pucm``: power, temperatures, utilizations,
clocks, ``fb``) and its two header lines every 44 rows as dmon repeats them; the CSV log
holds the very same values under their ``--query-gpu`` names, at the same times. Each
`gputop report FILE --json --jobs 1` (one core, to /dev/null) runs in a fresh process, in
turn (the order swapped each round, ``--rounds`` rounds); printed: wall and CPU time (user +
sys) of each, the ratio dmon/CSV, the load average before each run, and whether the two
reports give the same figures. ``--against COMMAND`` times another gputop's dmon report in
the same rounds (main's, from a tree of it: ``env PYTHONPATH=/tmp/main/tui
.venv/bin/python -m gputop``) and checks it gives this one's figures.

Usage: ``python benchmarks/bench_dmon_report.py [--rows 1000000] [--gpus 8] [--rounds 3]
[--gputop COMMAND] [--against COMMAND]``. Target: dmon within 2x of CSV.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

START = datetime(2024, 1, 4, 13, 0, 0)
DMON_HEADER = (
    "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   "
    "pclk     fb\n"
    "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %    MHz    "
    "MHz     MB\n"
)
HEADER_EVERY = 44
"""Rows between dmon's headers (a screenful: as the real H200's `dmon -o DT` repeats it)."""
CSV_HEADER = (
    "timestamp, index, power.draw [W], temperature.gpu, temperature.memory, "
    "utilization.gpu [%], utilization.memory [%], utilization.encoder [%], "
    "utilization.decoder [%], clocks.current.memory [MHz], clocks.current.graphics [MHz], "
    "memory.used [MiB]\n"
)


def _values(second: int, gpu: int) -> tuple[int, ...]:
    """A training-like row: busy most of the time, a pause every few minutes."""
    phase = (second + 37 * gpu) % 300
    busy = phase < 270
    sm = (92 + (second * 7 + gpu) % 8) if busy else (second % 3)
    power = (560 + (second * 13 + gpu) % 130) if busy else 120
    return (
        power,
        55 + sm // 10,
        44 + sm // 20,
        sm,
        sm // 4,
        0,
        0,
        3201,
        1980 if busy else 345,
        32385 if busy else 1024,
    )


def write_logs(folder: Path, rows: int, gpus: int) -> tuple[Path, Path]:
    """The dmon and CSV logs of ``rows`` rows, written unless already there."""
    dmon, csv = folder / f"dmon-{rows}-{gpus}.txt", folder / f"csv-{rows}-{gpus}.csv"
    if dmon.exists() and csv.exists():
        return dmon, csv
    with dmon.open("w") as dmon_out, csv.open("w") as csv_out:
        dmon_out.write(DMON_HEADER)
        csv_out.write(CSV_HEADER)
        written = 0
        for second in range(rows // gpus):
            moment = START + timedelta(seconds=second)
            dmon_stamp = moment.strftime(" %Y%m%d    %H:%M:%S")
            csv_stamp = moment.strftime("%Y/%m/%d %H:%M:%S.000")
            dmon_lines = []
            csv_lines = []
            for gpu in range(gpus):
                v = _values(second, gpu)
                dmon_lines.append(
                    f"{dmon_stamp} {gpu:6d} {v[0]:6d} {v[1]:6d} {v[2]:6d} {v[3]:6d} {v[4]:6d} "
                    f"{v[5]:6d} {v[6]:6d} {v[7]:6d} {v[8]:6d} {v[9]:6d}\n"
                )
                csv_lines.append(
                    f"{csv_stamp}, {gpu}, {v[0]:.2f} W, {v[1]}, {v[2]}, {v[3]} %, {v[4]} %, "
                    f"{v[5]} %, {v[6]} %, {v[7]} MHz, {v[8]} MHz, {v[9]} MiB\n"
                )
            for line in dmon_lines:
                if written and written % HEADER_EVERY == 0:
                    dmon_out.write(DMON_HEADER)
                dmon_out.write(line)
                written += 1
            csv_out.write("".join(csv_lines))
    return dmon, csv


def _report(gputop: str, path: Path) -> tuple[float, float, dict[str, object]]:
    """Wall and CPU seconds of `gputop report PATH --json --jobs 1`, and its figures."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        [*shlex.split(gputop), "report", str(path), "--json", "--jobs", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{path.name}: {result.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    figures: dict[str, object] = json.loads(result.stdout)
    return wall, cpu, figures


def _comparable(figures: dict[str, object]) -> object:
    """What both logs must agree on: every GPU's figures but its name and memory total
    (dmon has neither), and the span."""
    gpus = figures["gpus"]
    assert isinstance(gpus, list)
    return (
        figures["snapshots"],
        figures["start"],
        figures["end"],
        [
            {k: v for k, v in gpu.items() if k not in ("name", "uuid", "memory_total_bytes")}
            for gpu in gpus
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--gputop", default=str(Path(sys.executable).with_name("gputop")))
    parser.add_argument(
        "--against", help="another gputop command (e.g. main's) whose dmon report is timed too"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        dmon, csv = write_logs(folder, args.rows, args.gpus)
        print(
            f"{args.rows} rows of {args.gpus} GPU(s): dmon {dmon.stat().st_size / 1e6:.0f} MB, "
            f"CSV {csv.stat().st_size / 1e6:.0f} MB; {args.gputop}"
            + (f" against {args.against}" if args.against else "")
        )
        for number in range(args.rounds):
            order = [("dmon", args.gputop, dmon), ("csv", args.gputop, csv)]
            if args.against:
                order.append(("against", args.against, dmon))
            if number % 2:
                order.reverse()
            measured: dict[str, tuple[float, float, dict[str, object]]] = {}
            loads: dict[str, float] = {}
            for name, command, path in order:
                loads[name] = os.getloadavg()[0]
                measured[name] = _report(command, path)
            same = _comparable(measured["dmon"][2]) == _comparable(measured["csv"][2])
            line = (
                f"round {number + 1}: dmon {measured['dmon'][0]:.2f} s wall, "
                f"{measured['dmon'][1]:.2f} s CPU (load {loads['dmon']:.1f}); "
                f"CSV {measured['csv'][0]:.2f} s wall, {measured['csv'][1]:.2f} s CPU "
                f"(load {loads['csv']:.1f}); dmon/CSV CPU "
                f"{measured['dmon'][1] / measured['csv'][1]:.2f}x; same figures: {same}"
            )
            if args.against:
                before = measured["against"]
                line += (
                    f"; against: dmon {before[1]:.2f} s CPU (load {loads['against']:.1f}), "
                    f"{before[1] / measured['csv'][1]:.2f}x CSV, same figures: "
                    f"{before[2] == measured['dmon'][2]}"
                )
            print(line)


if __name__ == "__main__":
    main()
