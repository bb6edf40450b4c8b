"""`gputop export`: what a scrape costs, and the exporter's CPU beside nvitop-exporter's.

1. ``render``: in-process, the time to turn the newest snapshot into the text of a scrape
   (``LatestSample.render``: families from the field table, then the exposition), on the
   8 H100 x 7 MIG box with 200 processes and on 8 plain GPUs (median and p95 of 200).
2. ``scrape``: the same box live on the fake NVML in a real `gputop export`, the wall time of
   one HTTP GET of /metrics (median of 20).
3. ``cpu``: `gputop export` and `nvitop-exporter` side by side in one run on the same fake
   GPUs (tests/fakes, put under each one's pynvml by its sitecustomize), both sampling every
   1 s and scraped every 15 s, for ``--seconds`` per round; each round starts fresh
   processes, and the order in which they are started and scraped rotates from round to
   round. CPU is the process's user + system time over the round, after a first scrape.
   The fake NVML library is Python, so its CPU (standing in for the driver's C code) is in
   both figures: the exporter that calls NVML more pays more of it, as on real hardware.

nvitop-exporter is not a dependency of gputop. Install it in a venv of its own:
``python3 -m venv benchmarks/_data/nvitop && benchmarks/_data/nvitop/bin/pip install
nvitop-exporter==1.7.2``; without it the ``cpu`` part measures gputop alone.

Run: ``.venv/bin/python benchmarks/bench_export.py [--seconds 120] [--rounds 2]
[--scenario plain-8|h100-mig-8x7] [--skip-cpu]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fakes")]

from fakes.nvml_scenarios import h100_mig_box, plain_box  # noqa: E402
from gputop.insight.diagnosis import gpu_state  # noqa: E402
from gputop.model import GpuSample, Snapshot  # noqa: E402
from gputop.sinks.prometheus.latest import LatestSample  # noqa: E402
from gputop.sinks.prometheus.tracker import ExportTracker  # noqa: E402
from support.command import gputop_command  # noqa: E402
from support.net import free_port  # noqa: E402

NVITOP = ROOT / "benchmarks" / "_data" / "nvitop" / "bin" / "nvitop-exporter"
SCRAPE_EVERY = 15.0


def _classify(gpu: GpuSample) -> str:
    return gpu_state(gpu).value


def render_times(shot: Snapshot, runs: int = 200) -> tuple[float, float, int]:
    """Median and p95 ms of a render of ``shot``, and the size of the text."""
    latest = LatestSample(ExportTracker(_classify))
    latest.take(shot)
    size = len(latest.render()[0])
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        latest.render()
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)], size


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return bytes(answer.read())


def wait_ready(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        try:
            if get(url):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{what} not ready after 60 s")


@dataclass
class Exporter:
    name: str
    url: str
    process: subprocess.Popen[bytes]

    def cpu(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return float(times.user + times.system)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_gputop(scenario: str) -> Exporter:
    port = free_port()
    command, env = gputop_command(scenario)
    process = subprocess.Popen(
        [*command, "export", "--listen", f"127.0.0.1:{port}", "--interval", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/metrics"
    wait_ready(url, process, "gputop export")
    return Exporter("gputop export", url, process)


def start_nvitop(scenario: str) -> Exporter:
    port = free_port()
    _command, env = gputop_command(scenario)
    # The fake's sitecustomize needs gputop's model on the path; nvitop's venv has no gputop.
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "fakes"), str(ROOT / "tui")])
    process = subprocess.Popen(
        [str(NVITOP), "--bind-address", "127.0.0.1", "--port", str(port), "--interval", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/metrics"
    wait_ready(url, process, "nvitop-exporter")
    return Exporter("nvitop-exporter", url, process)


def scrape_times(scenario: str, runs: int = 20) -> tuple[float, int]:
    exporter = start_gputop(scenario)
    try:
        time.sleep(2.5)
        times = []
        size = 0
        for _ in range(runs):
            began = time.perf_counter()
            size = len(get(exporter.url))
            times.append((time.perf_counter() - began) * 1000)
        return statistics.median(times), size
    finally:
        exporter.stop()


def cpu_round(
    starters: list[Callable[[str], Exporter]], scenario: str, seconds: float
) -> dict[str, float]:
    """CPU % of one core of each exporter over ``seconds``, started in ``starters``' order."""
    exporters = [start(scenario) for start in starters]
    try:
        for exporter in exporters:
            get(exporter.url)  # warm: the first scrape builds what later ones reuse
        before = {e.name: e.cpu() for e in exporters}
        began = time.monotonic()
        scrapes = 0
        while time.monotonic() - began < seconds:
            time.sleep(min(SCRAPE_EVERY, max(0.0, seconds - (time.monotonic() - began))))
            order = exporters if scrapes % 2 == 0 else exporters[::-1]
            for exporter in order:
                get(exporter.url)
            scrapes += 1
        spent = time.monotonic() - began
        return {e.name: 100 * (e.cpu() - before[e.name]) / spent for e in exporters}
    finally:
        for exporter in exporters:
            exporter.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="per CPU round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scenario", default="plain-8", help="fake NVML scenario for cpu")
    parser.add_argument("--skip-cpu", action="store_true")
    args = parser.parse_args()

    print("render (in-process)     median ms   p95 ms   bytes")
    for label, shot in (("8x7 MIG, 200 procs", h100_mig_box(8, 7, 200)), ("8 GPUs", plain_box(8))):
        median, p95, size = render_times(shot)
        print(f"  {label:<20} {median:9.2f} {p95:8.2f} {size:7d}")
    median, size = scrape_times("h100-mig-8x7")
    print(f"scrape over HTTP (8x7 MIG live on the fake): median {median:.2f} ms, {size} bytes")

    if args.skip_cpu:
        return
    starters: list[Callable[[str], Exporter]] = [start_gputop]
    if NVITOP.exists():
        starters.append(start_nvitop)
    else:
        print(f"nvitop-exporter not found at {NVITOP}: see this script's docstring")
    print(f"cpu ({args.scenario}, sampling 1 s, scraped every {SCRAPE_EVERY:g} s, "
          f"{args.seconds:g} s a round)")  # fmt: skip
    totals: dict[str, list[float]] = {}
    for round_number in range(args.rounds):
        order = starters if round_number % 2 == 0 else starters[::-1]
        result = cpu_round(order, args.scenario, args.seconds)
        shown = ", ".join(f"{name} {value:.2f} %" for name, value in result.items())
        print(f"  round {round_number + 1} (started: {', '.join(e.__name__ for e in order)}): "
              f"{shown}")  # fmt: skip
        for name, value in result.items():
            totals.setdefault(name, []).append(value)
    for name, values in totals.items():
        print(f"  mean {name}: {statistics.mean(values):.2f} % of one core")


if __name__ == "__main__":
    main()
