"""The process table's own cost a tick, checkout beside checkout: prints figures and a ratio.

Each run is a child process with one checkout's ``tui`` on its path (``--code``, given twice
or more, e.g. main's tree and this one's); it mounts the process table alone in a headless
app (120x40), shows a box of ``--processes`` processes, then times ``--ticks`` ticks: each
moves the GPU memory of a tenth of the processes (rows change, resort, some on screen) and the
clock by one second (TIME cells of the young processes change), and waits for the frame. CPU
seconds of the whole process per tick (``time.process_time``) and of the table's ``show``
alone (the diff, sort, widths and cells, without the frame), medians over ``--rounds``
rounds in alternating order, so drift in the machine's load falls on every checkout; the
ratios are against the first ``--code``.

Usage: ``python benchmarks/bench_process_table.py --code /tmp/main-tree --code .``.
Not for: the whole TUI (``bench_tui.py --live-table`` runs gputop on the fake NVML).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

CHILD = r"""
import asyncio, json, sys, time
from dataclasses import replace
from textual.app import App
from gputop.model import GpuSample, ProcessSample, Snapshot
from gputop.ui.widgets.process_table import ProcessTable

NOW = 1_700_000_000.0
count, ticks = int(sys.argv[1]), int(sys.argv[2])

def box(tick):
    processes = tuple(
        ProcessSample(
            pid=10_000 + i, type="C", user="u", command=f"python job{i}.py --rank {i}",
            memory_used=(count - i + (tick * 7 if i % 10 == tick % 10 else 0)) * 2**20,
            start_time=NOW - (30 if i % 5 == 0 else 600 + i),
        )
        for i in range(count)
    )
    return Snapshot(timestamp=None, gpus=(GpuSample(index=0, name="GPU", processes=processes),))

class Clock:
    now = NOW
    def __call__(self):
        return self.now

class TableApp(App[None]):
    def __init__(self):
        super().__init__()
        self.clock = Clock()
    def compose(self):
        yield ProcessTable(clock=self.clock)

async def main():
    app = TableApp()
    snapshots = [box(tick) for tick in range(ticks + 1)]
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(ProcessTable)
        table.show(snapshots[0])
        for _ in range(3):
            await pilot.pause()
        started = time.process_time()
        showing = 0.0
        for tick in range(1, ticks + 1):
            app.clock.now += 1
            before = time.process_time()
            table.show(snapshots[tick])
            showing += time.process_time() - before
            await pilot.pause()
        spent = time.process_time() - started
    print(json.dumps({"tick": spent / ticks * 1000, "show": showing / ticks * 1000}))

asyncio.run(main())
"""


def run(code: Path, count: int, ticks: int) -> tuple[float, float]:
    """Milliseconds of CPU a tick for the checkout at ``code``: (the whole tick with its
    frame, the table's ``show`` alone)."""
    env = {**os.environ, "PYTHONPATH": str(code.resolve() / "tui")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(count), str(ticks)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return float(figures["tick"]), float(figures["show"])


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, action="append", required=True)
    parser.add_argument("--processes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--ticks", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    codes: list[Path] = options.code
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {options.ticks} ticks a run")
    for count in options.processes:
        results: dict[Path, list[tuple[float, float]]] = {code: [] for code in codes}
        for round_number in range(options.rounds):
            order = codes if round_number % 2 == 0 else codes[::-1]
            for code in order:
                figure = run(code, count, options.ticks)
                results[code].append(figure)
                label = f"{count:5d} processes  {code!s:30s} round {round_number + 1}"
                print(f"  {label}: tick {figure[0]:6.2f} ms, show {figure[1]:6.2f} ms")
        first = [median(figure[part] for figure in results[codes[0]]) for part in (0, 1)]
        for code in codes:
            tick, show = (median(figure[part] for figure in results[code]) for part in (0, 1))
            print(
                f"{count:5d} processes  {code!s:30s} median tick {tick:6.2f} ms "
                f"({tick / first[0]:.3f}x), show {show:6.2f} ms ({show / first[1]:.3f}x)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
