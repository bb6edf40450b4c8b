"""Speed of `gputop report` on a one-hour, 8-GPU, 1 s recording (3600 documents).

Writes the recording with ``gputop.sinks.smi_xml`` (nvidia-smi's XML, schema v12: what
``gputop --record`` writes) into a temporary directory: 8 GPUs each with a training process,
utilization cycling between busy, input-bound and idle phases, a stretch of thermal
throttling. Then measures, each run in this process after one warm-up:

- ``report``: everything `gputop report FILE --json` does (open, scan, parse every document,
  build the summary, write JSON to /dev/null), with its default parallel parsing (one worker
  per CPU) and with ``--jobs 1`` (one process);
- ``summary only``: ``ReportBuilder`` over already parsed snapshots (the report's own cost,
  without the reader);
- ``charts``: rendering the 8 GPUs' plotext charts at 160 columns.

Usage: ``python benchmarks/bench_report.py [--repeat 3] [--gpus 8] [--seconds 3600]
[--keep DIR] [--profile]``. Target: report < 2 s.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from gputop.cli.report import job_count, report_main
from gputop.insight.charts import render_gpu_charts
from gputop.insight.report import ReportBuilder
from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    Power,
    ProcessSample,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.sinks.smi_xml import snapshot_to_xml
from gputop.sources.smi.recording import Recording

TARGET_S = 2.0
GIB = 1024**3
START = datetime(2024, 9, 18, 8, 0, 0)


def _gpu(index: int, second: int) -> GpuSample:
    phase = (second // 300 + index) % 4  # five-minute phases: busy, busy, waiting, idle
    if phase in (0, 1):
        util = 92.0 + (second * 7 + index) % 8
    elif phase == 2:
        util = 8.0 + (second * 3 + index) % 10
    else:
        util = 0.0
    throttled = 1800 <= second < 1900 and index == 3
    loaded = phase != 3
    return GpuSample(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-{index:08x}-0000-0000-0000-000000000000",
        pci_bus_id=f"00000000:{0x18 + index:02X}:00.0",
        serial=f"16520230{index:05d}",
        architecture="Hopper",
        utilization=Utilization(gpu=util, memory=util / 2, encoder=0.0, decoder=0.0),
        memory=Memory(total=80 * GIB, used=(40 if loaded else 0) * GIB + index * 2**20, free=None),
        bar1=Memory(total=128 * 2**30, used=2**20),
        temperature=Temperature(gpu=35 + util / 2, slowdown=87.0, shutdown=92.0),
        power=Power(
            draw=70.0 + 6.0 * util + 5 * math.sin(second / 10),
            limit=700.0,
            default_limit=700.0,
            min_limit=200.0,
            max_limit=700.0,
        ),
        fan_speed=None,
        performance_state="P0" if loaded else "P8",
        clocks=Clocks(graphics=1980, sm=1500 if throttled else 1980, memory=2619, video=1545),
        max_clocks=Clocks(graphics=1980, sm=1980, memory=2619, video=1980),
        persistence_mode=True,
        compute_mode="Default",
        ecc_mode=True,
        ecc_errors=EccErrors(0, 0, 0, 0),
        throttle_reasons=("sw_thermal_slowdown",)
        if throttled
        else (() if loaded else ("gpu_idle",)),
        mig_mode=False,
        processes=(ProcessSample(pid=1000 + index, type="C", name="python", memory_used=40 * GIB),)
        if loaded
        else (),
    )


def build_recording(path: Path, gpus: int, seconds: int) -> int:
    """Write ``seconds`` documents of ``gpus`` GPUs; returns the bytes written."""
    written = 0
    with path.open("wb") as out:
        for second in range(seconds):
            snapshot = Snapshot(
                timestamp=START + timedelta(seconds=second),
                gpus=tuple(_gpu(i, second) for i in range(gpus)),
                driver_version="550.90.07",
                cuda_version="12.4",
                attached_gpus=gpus,
            )
            data = snapshot_to_xml(snapshot)
            out.write(data)
            written += len(data)
    return written


def _best(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    run()  # warm-up: imports, page cache
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=3600)
    parser.add_argument("--keep", type=Path, help="write the recording here and keep it")
    parser.add_argument("--profile", action="store_true", help="profile one report run")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "report-bench.xml"
        started = time.perf_counter()
        size = build_recording(path, args.gpus, args.seconds)
        print(
            f"recording: {args.seconds} documents x {args.gpus} GPUs, {size / 1e6:.1f} MB "
            f"({size / args.seconds / 1024:.1f} KiB per document), written in "
            f"{time.perf_counter() - started:.1f} s"
        )

        def report(*extra: str) -> None:
            with open(os.devnull, "w") as sink:
                code = report_main([str(path), "--json", *extra], stdout=sink)
            if code != 0:
                raise SystemExit(f"report failed with {code}")

        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        jobs = job_count(args.seconds, None, cpus or 1)
        best, median = _best(report, args.repeat)
        verdict = "OK" if best < TARGET_S else "MISSED"
        print(
            f"report --json ({jobs} jobs on {cpus} CPUs): best {best:.3f} s, median "
            f"{median:.3f} s (target < {TARGET_S:.0f} s: {verdict}); {size / 1e6 / best:.0f} MB/s"
        )
        serial, serial_median = _best(lambda: report("--jobs", "1"), args.repeat)
        print(
            f"report --json --jobs 1: best {serial:.3f} s, median {serial_median:.3f} s; "
            f"{serial / args.seconds * 1000:.2f} ms per document"
        )

        with Recording.open(path) as recording:
            snapshots = list(recording)

        def summary_only() -> None:
            ReportBuilder().add_all(snapshots).summary()

        best_summary, _ = _best(summary_only, args.repeat)
        print(
            f"summary only (parsed snapshots in memory): {best_summary * 1000:.0f} ms "
            f"({best_summary / serial * 100:.0f}% of the one-process report)"
        )

        traces = ReportBuilder().add_all(snapshots).traces()

        def charts() -> None:
            for trace in traces:
                render_gpu_charts(trace, START, 160)

        best_charts, _ = _best(charts, args.repeat)
        print(f"charts, {len(traces)} GPUs at 160 columns: {best_charts * 1000:.0f} ms")

        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            report("--jobs", "1")
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
            print(out.getvalue())
    return 0 if best < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
