"""What GPM costs a tick, priced as a real H200 charged, for each cadence gputop can run it at.

GPM is the one NVML reading whose price decides how often gputop may take it: on a real H200
(``snapshots/h200-gpm.json``) ``nvmlGpmMetricsGet`` costs 1.0-1.9 ms of CPU (median 1.4 ms)
and ``nvmlGpmSampleGet`` 35-47 us, where utilization costs 2-15 us. The fake NVML answers in
microseconds, so this benchmark counts the GPM calls NvmlSource makes over a minute of
simulated 1 s ticks (its clock moved a second a tick) and prices them; beside that, the
fake's own poll time with GPM and without it (the GPM entry points missing) is what GPM costs
in gputop's own Python.

Boxes: 1, 4 and 8 H200s (whole GPUs, the real H200's windows) and 8 H100s of 7 MIG instances
(each instance's activity through GPM). Rows, side by side:

* ``main``: what gputop did before this work: whole GPUs read no GPM; MIG instances every tick;
* ``every tick``: ``--json``/``--log`` (each printed tick has its own window);
* ``TUI budget``: the TUI and ``serve`` (``cli.live.TUI_GPM_BUDGET``, 0.3 % of a core);
* ``export 15 s``: ``gputop export`` (``cli.live.EXPORT_GPM_EVERY``).

Columns: GPM samples and metrics calls per second, their priced CPU in ms per second and in
% of one core, and the poll's CPU per tick on the fake with and without GPM (ms of the polling
thread's CPU, median: the fake's own Python included, a real driver's time not).

Run: ``.venv/bin/python benchmarks/bench_gpm.py [--ticks 60]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pynvml  # noqa: TID251 -- the real pynvml over the fake library

from fakes.nvml_fake import FakeNvml, Faults
from fakes.nvml_h200 import h200_gpu, loaded_windows, price_us
from fakes.nvml_install import installed
from fakes.nvml_scenarios import h100_mig_box, snapshot
from gputop.cli.live import EXPORT_GPM_EVERY, TUI_GPM_BUDGET
from gputop.model import Snapshot
from gputop.sources.nvml.gpm import GpmCadence
from gputop.sources.nvml.source import NvmlSource


class TickClock:
    """The source's monotonic clock, moved a second a tick by the benchmark."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Row:
    box: str
    cadence: str
    samples_per_s: float
    metrics_per_s: float
    priced_ms_per_s: float
    poll_ms: float
    poll_without_ms: float


def h200_box(gpus: int, ticks: int) -> list[Snapshot]:
    """``gpus`` H200s going through the recorded windows, each a window ahead of the last."""
    windows = loaded_windows()
    return [
        snapshot(*(h200_gpu(windows[(tick + i) % len(windows)], i) for i in range(gpus)))
        for tick in range(ticks + 1)
    ]


def run(
    snaps: list[Snapshot], cadence: GpmCadence, ticks: int, *, gpm: bool
) -> tuple[int, int, float]:
    """(GPM samples, metrics calls, median poll ms) over ``ticks`` ticks after the first."""
    faults = Faults() if gpm else Faults(missing={"nvmlGpmQueryDeviceSupport"})
    fake = FakeNvml(snaps, faults)
    clock = TickClock()
    polls: list[float] = []
    with installed(fake):
        pynvml.nvmlInit()
        source = NvmlSource(pynvml, deadline=None, host="bench", clock=clock, gpm_cadence=cadence)
        try:
            source.poll()  # the first tick: static reads, buffers, the first samples
            mark = fake.mark()
            for number in range(1, ticks + 1):
                clock.now = float(number)
                started = time.thread_time_ns()  # deadline None: polled on this thread
                source.poll()
                polls.append((time.thread_time_ns() - started) / 1e6)
            counts = fake.counts_since(mark)
        finally:
            source.close()
            pynvml.nvmlShutdown()
    samples = counts["nvmlGpmSampleGet"] + counts["nvmlGpmMigSampleGet"]
    return samples, counts["nvmlGpmMetricsGet"], statistics.median(polls)


def measure(
    box: str, snaps: list[Snapshot], cadence_name: str, cadence: GpmCadence, ticks: int,
    *, gpu_gpm: bool = True,
) -> Row:  # fmt: skip
    if not gpu_gpm:
        # main read no GPM for whole GPUs: the GPUs' own activity is left out of the snapshots.
        snaps = [
            replace(s, gpus=tuple(replace(g, activity=type(g.activity)()) for g in s.gpus))
            for s in snaps
        ]
    samples, metrics, poll = run(snaps, cadence, ticks, gpm=True)
    _, _, without = run(snaps, cadence, ticks, gpm=False)
    sample_ms = price_us("nvmlGpmSampleGet") / 1000
    metrics_ms = price_us("nvmlGpmMetricsGet") / 1000
    priced = (samples * sample_ms + metrics * metrics_ms) / ticks
    return Row(box, cadence_name, samples / ticks, metrics / ticks, priced, poll, without)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=60)
    args = parser.parse_args()
    ticks: int = args.ticks
    cadences: tuple[tuple[str, Callable[[], GpmCadence]], ...] = (
        ("every tick", GpmCadence),
        ("TUI budget", lambda: GpmCadence(budget=TUI_GPM_BUDGET)),
        ("export 15 s", lambda: GpmCadence(every=EXPORT_GPM_EVERY)),
    )
    rows: list[Row] = []
    for gpus in (1, 4, 8):
        snaps = h200_box(gpus, ticks)
        box = f"{gpus}x H200"
        rows.append(measure(box, snaps, "main", GpmCadence(), ticks, gpu_gpm=False))
        rows.extend(measure(box, snaps, name, make(), ticks) for name, make in cadences)
    mig = [h100_mig_box()]
    rows.append(measure("8x7 H100 MIG", mig, "main", GpmCadence(), ticks))
    rows.extend(measure("8x7 H100 MIG", mig, name, make(), ticks) for name, make in cadences[1:])
    print(
        f"GPM priced at the H200's medians: sample {price_us('nvmlGpmSampleGet'):.1f} us, "
        f"metrics {price_us('nvmlGpmMetricsGet'):.1f} us; {ticks} ticks of 1 s"
    )
    header = (
        f"{'box':<14}{'cadence':<13}{'samples/s':>10}{'metrics/s':>10}{'GPM ms/s':>10}"
        f"{'% core':>8}{'poll ms':>9}{'no GPM':>8}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row.box:<14}{row.cadence:<13}{row.samples_per_s:>10.2f}{row.metrics_per_s:>10.2f}"
            f"{row.priced_ms_per_s:>10.2f}{row.priced_ms_per_s / 10:>7.2f}%"
            f"{row.poll_ms:>9.2f}{row.poll_without_ms:>8.2f}"
        )


if __name__ == "__main__":
    main()
