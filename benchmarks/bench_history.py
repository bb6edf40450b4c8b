"""What the history costs over a day of live at 1 s on the 8 GPUs x 7 MIG box.

Feeds the pipeline's own store (``gputop.pipeline.core.new_history``: every metric, throttling,
an hour and a minute of ticks, a day of minute buckets) 24 h of snapshots one second apart:
the fake NVML's 8 H100s x 7 MIG instances with 200 processes (``tests/fakes``), load, power and
temperature moving. Reports:

- ``append``: the time of one ``append`` (median and mean), and of the ticks that also sum up
  the minute before them into a bucket;
- ``memory``: the bytes the rings hold (``nbytes``) against ``memory_bound``, and what
  ``tracemalloc`` traced to ``gputop/history`` at the end and at the peak;
- ``window``: one read of each window the history screen offers (1 min, 10 min, 1 h, all) for
  one GPU, and the statistics of its seven table rows, as the screen does on each tick.

Usage: ``python benchmarks/bench_history.py [--hours 24] [--gpus 8] [--no-memory]``; the
memory pass (with tracemalloc) runs the day a second time.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import statistics
import sys
import time
import tracemalloc
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes.nvml_scenarios import h100_mig_box, varying
from gputop.history import HistoryStore, Metric, gpu_key, memory_bound
from gputop.model import Snapshot
from gputop.pipeline.core import new_history

START = datetime(2024, 9, 18, 0, 0, 0)
WINDOWS = {"1 min": 60.0, "10 min": 600.0, "1 h": 3600.0, "all": None}
TABLE = (
    Metric.GPU_UTIL,
    Metric.MEM_UTIL,
    Metric.MEM_USED,
    Metric.POWER,
    Metric.TEMP,
    Metric.SM_CLOCK,
    Metric.MEM_CLOCK,
)


def day(gpus: int, seconds: int) -> tuple[list[Snapshot], int]:
    """Distinct snapshots to cycle through, and how many ticks to feed."""
    base = varying(h100_mig_box(gpus=gpus), ticks=120)
    # As the command does once it runs (cli/startup.py): what exists is out of the collector's
    # way, so a full collection does not walk the 120 snapshots' objects on some ticks.
    gc.freeze()
    return base, seconds


def feed(store: HistoryStore, base: list[Snapshot], seconds: int) -> list[int]:
    """Append ``seconds`` ticks, 1 s apart; the CPU ns each append took."""
    took: list[int] = []
    clock = time.thread_time_ns  # CPU time: the shared VM preempts, which is not our cost
    for second in range(seconds):
        snapshot = dataclasses.replace(
            base[second % len(base)], timestamp=START + timedelta(seconds=second)
        )
        begin = clock()
        store.append(snapshot)
        took.append(clock() - begin)
    return took


def timing(gpus: int, seconds: int) -> HistoryStore:
    base, ticks = day(gpus, seconds)
    store = new_history()
    took = feed(store, base, ticks)
    # The first tick of each minute also sums up the minute before it into a bucket.
    closing = [ns for second, ns in enumerate(took) if second and second % 60 == 0]
    print(f"{gpus} GPUs x 7 MIG, {ticks:,} ticks at 1 s ({ticks / 3600:g} h)")
    print(
        f"  append: median {statistics.median(took) / 1e3:.1f} us, "
        f"mean {statistics.fmean(took) / 1e3:.1f} us; "
        f"a tick that sums up a minute: median {statistics.median(closing) / 1e3:.0f} us, "
        f"max {max(closing) / 1e3:.0f} us"
    )
    return store


def windows(store: HistoryStore, key: str) -> None:
    for label, seconds in WINDOWS.items():
        reads: list[float] = []
        for _ in range(20):
            begin = time.perf_counter()
            window = store.reader.window(key, seconds)
            for metric in TABLE:
                window.stats(metric)
            reads.append(time.perf_counter() - begin)
        median_ms = statistics.median(reads) * 1e3
        print(
            f"  window {label:>6}: {len(window):>5} points, {window.samples:>6,} samples, "
            f"span {window.span / 3600:5.2f} h; read + stats {median_ms:.2f} ms"
        )


def memory(gpus: int, seconds: int) -> None:
    base, ticks = day(gpus, seconds)
    ours = [tracemalloc.Filter(True, "*/gputop/history/*")]
    tracemalloc.start()
    try:
        store = new_history()
        feed(store, base, ticks)
        traced = tracemalloc.take_snapshot().filter_traces(ours)
        current = sum(stat.size for stat in traced.statistics("filename"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    bound = memory_bound(metrics=len(store.metrics), keys=gpus)
    print(
        f"  memory: rings {store.nbytes() / 1e6:.2f} MB (bound {bound / 1e6:.2f} MB for {gpus} "
        f"GPUs, {memory_bound() / 1e6:.1f} MB for the 64 the store keeps at most); traced in "
        f"gputop/history {current / 1e6:.2f} MB; process peak under tracemalloc {peak / 1e6:.1f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    seconds = round(args.hours * 3600)
    store = timing(args.gpus, seconds)
    key = gpu_key(h100_mig_box(gpus=args.gpus).gpus[0])
    windows(store, key)
    if not args.no_memory:
        memory(args.gpus, seconds)


if __name__ == "__main__":
    main()
