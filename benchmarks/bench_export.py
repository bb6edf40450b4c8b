"""`gputop export`: what a scrape costs, and the exporter's CPU beside nvitop-exporter's.

1. ``render``: in-process, the time to turn the newest snapshot into the text of a scrape
   (``LatestSample.render``: families from the field table, then the exposition), on the
   8 H100 x 7 MIG box with 200 processes and on 8 plain GPUs (median and p95 of 200).
2. ``scrape``: the same box live on the fake NVML in a real `gputop export`, the wall time of
   one HTTP GET of /metrics (median of 20).
3. ``cpu``: `gputop export` and `nvitop-exporter` side by side in one run on the same fake
   GPUs, both sampling every 1 s and scraped every 15 s, energy and process series on (both
   exporters' defaults), for ``--seconds`` per round, on the boxes of ``bench_tui.py
   --side-by-side`` (1 GPU, 4 RTX 4090s, 8 H100s x 7 MIG) with their processes mapped onto
   live ``sleep`` processes; each round starts fresh processes, and the order in which they
   are started and scraped rotates from round to round. CPU is the process's user + system
   time over the round, after a first scrape; with ``--priced`` each NVML call costs what it
   costs on a real H200 (``snapshots/nvml-prices-h200.tsv``, spent in C), and the CPU is
   split into NVML's price, the fake's own Python and the exporter itself.
4. ``record``: headless ``gputop --record FILE --count N`` at 1 s on the 8-GPU boxes (8 plain
   GPUs, and 8 H100s x 7 MIG), CPU % of a core after a warm-up, split the same way.

nvitop-exporter is not a dependency of gputop. Install it with the peers, in their venv
(``benchmarks/README.md``: ``python3 -m venv benchmarks/_data/peers &&
benchmarks/_data/peers/bin/pip install nvitop==1.7.2 nvitop-exporter==1.7.2 -e .``); without
it the ``cpu`` part measures gputop alone.

Run: ``.venv/bin/python benchmarks/bench_export.py [--seconds 120] [--rounds 2] [--priced]
[--boxes 1gpu 4x4090 8x7] [--skip-cpu] [--skip-record]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fakes"), str(ROOT / "benchmarks")]

import bench_tui  # noqa: E402
from fakes.nvml_scenarios import h100_mig_box, plain_box  # noqa: E402
from gputop.insight.diagnosis import gpu_state  # noqa: E402
from gputop.model import GpuSample, Snapshot  # noqa: E402
from gputop.sinks.prometheus.latest import LatestSample  # noqa: E402
from gputop.sinks.prometheus.tracker import ExportTracker  # noqa: E402
from support.command import gputop_command  # noqa: E402
from support.net import free_port  # noqa: E402

PEERS_PYTHON = ROOT / "benchmarks" / "_data" / "peers" / "bin" / "python"
SCRAPE_EVERY = 15.0
BENCH_TUI = ROOT / "benchmarks" / "bench_tui.py"
CASES = {"1gpu": 2, "4x4090": 3, "8x7": 200}
"""The boxes of ``bench_tui.py --side-by-side`` and their live processes."""
RECORD_CASES = {"8gpu": 24, "8x7": 200}


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
    fake_log: Path

    def cpu(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return float(times.user + times.system)

    def fake(self) -> tuple[float, float, float]:
        """CPU seconds inside the fake so far: all of it, the counting's, the prices'."""
        mark = bench_tui._fake_log_mark(self.process.pid, self.fake_log)
        return (0.0, 0.0, 0.0) if mark is None else mark

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _bench_env(box: str, pids: list[int], options: argparse.Namespace, log: Path) -> dict[str, str]:
    """What ``bench_tui.py child`` needs to run a tool on ``box``'s fake GPUs."""
    library = bench_tui.build_price_library(bench_tui.NVTOP_LIBRARY) if options.priced else ROOT
    return bench_tui._env(
        {
            "GPUTOP_BENCH_BOX": box,
            "GPUTOP_BENCH_PROCESSES": str(len(pids)),
            "GPUTOP_BENCH_PIDS": ",".join(map(str, pids)),
            "GPUTOP_BENCH_TICKS": str(int(options.seconds) + 60),
            "GPUTOP_BENCH_FAKE_LOG": str(log),
            **bench_tui.priced_env(options.priced, library),
        }
    )


def start_exporter(
    tool: str, box: str, pids: list[int], options: argparse.Namespace, folder: Path
) -> Exporter:
    """``gputop export`` or ``nvitop-exporter`` on ``box``, sampling every 1 s."""
    port = free_port()
    log = folder / f"{tool}.log"
    env = _bench_env(box, pids, options, log)
    if tool == "gputop export":
        env["GPUTOP_BENCH_TOOL"] = "gputop"
        command = [sys.executable, str(BENCH_TUI), "child", "export"]
        command += ["--listen", f"127.0.0.1:{port}", "--interval", "1"]
    else:
        env["GPUTOP_BENCH_TOOL"] = "nvitop-exporter"
        command = [str(options.peers_python), str(BENCH_TUI), "child"]
        command += ["--bind-address", "127.0.0.1", "--port", str(port), "--interval", "1"]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/metrics"
    wait_ready(url, process, tool)
    return Exporter(tool, url, process, log)


def start_gputop(scenario: str) -> Exporter:
    """A plain `gputop export` on a scenario of the fake (for the scrape timing)."""
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
    return Exporter("gputop export", url, process, Path(os.devnull))


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


@dataclass
class Spent:
    """One tool's CPU over a round, in milliseconds a second."""

    whole: float
    price: float
    fake: float

    @property
    def tool(self) -> float:
        return self.whole - self.price - self.fake


def _spent(cpu_s: float, fake: tuple[float, float, float], seconds: float) -> Spent:
    inside, counting, price = fake
    scale = 1000 / seconds
    return Spent(cpu_s * scale, price * scale, (inside + counting - price) * scale)


def cpu_round(
    tools: list[str], box: str, pids: list[int], options: argparse.Namespace
) -> dict[str, Spent]:
    """CPU of each exporter over ``options.seconds``, started in ``tools``' order."""
    with tempfile.TemporaryDirectory() as folder:
        exporters = [start_exporter(tool, box, pids, options, Path(folder)) for tool in tools]
        try:
            for exporter in exporters:
                get(exporter.url)  # warm: the first scrape builds what later ones reuse
            before = {e.name: (e.cpu(), e.fake()) for e in exporters}
            began = time.monotonic()
            scrapes = 0
            seconds = options.seconds
            while time.monotonic() - began < seconds:
                time.sleep(min(SCRAPE_EVERY, max(0.0, seconds - (time.monotonic() - began))))
                order = exporters if scrapes % 2 == 0 else exporters[::-1]
                for exporter in order:
                    get(exporter.url)
                scrapes += 1
            spent = time.monotonic() - began
            out = {}
            for e in exporters:
                cpu, fake = e.cpu(), e.fake()
                start_cpu, start_fake = before[e.name]
                delta = tuple(b - a for a, b in zip(start_fake, fake, strict=True))
                out[e.name] = _spent(cpu - start_cpu, delta, spent)  # type: ignore[arg-type]
            return out
        finally:
            for exporter in exporters:
                exporter.stop()


def record_cpu(box: str, pids: list[int], options: argparse.Namespace) -> Spent:
    """Headless ``gputop --record FILE --count N`` at 1 s on ``box``: CPU after a warm-up."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "fake.log"
        env = {**_bench_env(box, pids, options, log), "GPUTOP_BENCH_TOOL": "gputop"}
        ticks = int(options.warmup + options.seconds + 10)
        command = [sys.executable, str(BENCH_TUI), "child", "--record", f"{folder}/run.xml"]
        command += ["--count", str(ticks), "--interval", "1"]
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            time.sleep(options.warmup)
            runner = Exporter("record", "", process, log)
            cpu, fake = runner.cpu(), runner.fake()
            began = time.monotonic()
            time.sleep(options.seconds)
            cpu_end, fake_end = runner.cpu(), runner.fake()
            spent = time.monotonic() - began
            delta = tuple(b - a for a, b in zip(fake, fake_end, strict=True))
            return _spent(cpu_end - cpu, delta, spent)  # type: ignore[arg-type]
        finally:
            process.kill()
            process.wait()


def _peer_installed(options: argparse.Namespace) -> bool:
    python = options.peers_python
    if not python.exists():
        return False
    probe = subprocess.run([python, "-c", "import nvitop_exporter"], capture_output=True)
    return probe.returncode == 0


def _row(name: str, spent: Spent, priced: bool) -> str:
    line = f"{name:16s} {spent.whole / 10:6.2f} % of a core"
    if priced:
        line += (
            f" ({spent.whole:6.1f} ms/s: NVML price {spent.price:5.1f}, fake {spent.fake:5.1f},"
            f" the tool {spent.tool:5.1f})"
        )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="per CPU round")
    parser.add_argument("--warmup", type=float, default=10.0, help="before a record run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--boxes", nargs="+", choices=sorted(CASES), default=list(CASES), help="for cpu"
    )
    parser.add_argument(
        "--priced",
        nargs="?",
        type=Path,
        const=bench_tui.PRICES,
        metavar="FILE",
        help="charge each NVML call what it costs on a real GPU (default: %(const)s)",
    )
    parser.add_argument("--peers-python", type=Path, default=PEERS_PYTHON)
    parser.add_argument("--skip-render", action="store_true")
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--skip-record", action="store_true")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} CPUs")
    print("load average at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"NVML priced as {args.priced}" if args.priced else "NVML unpriced")

    if not args.skip_render:
        print("render (in-process)     median ms   p95 ms   bytes")
        boxes = (("8x7 MIG, 200 procs", h100_mig_box(8, 7, 200)), ("8 GPUs", plain_box(8)))
        for label, shot in boxes:
            median, p95, size = render_times(shot)
            print(f"  {label:<20} {median:9.2f} {p95:8.2f} {size:7d}")
        median, size = scrape_times("h100-mig-8x7")
        print(f"scrape over HTTP (8x7 MIG live on the fake): median {median:.2f} ms, {size} bytes")

    if not args.skip_cpu:
        tools = ["gputop export"]
        if _peer_installed(args):
            tools.append("nvitop-exporter")
        else:
            print(f"nvitop-exporter not in {args.peers_python}: see this script's docstring")
        print(f"cpu (sampling 1 s, scraped every {SCRAPE_EVERY:g} s, {args.seconds:g} s a round)")
        for box in args.boxes:
            results: dict[str, list[Spent]] = {}
            with bench_tui.sleepers(CASES[box]) as pids:
                for round_number in range(args.rounds):
                    order = tools if round_number % 2 == 0 else tools[::-1]
                    result = cpu_round(order, box, pids, args)
                    for name, spent in result.items():
                        results.setdefault(name, []).append(spent)
                        row = _row(name, spent, bool(args.priced))
                        print(f"  {box} round {round_number + 1}: {row}", flush=True)
            medians = {name: _median(runs) for name, runs in results.items()}
            for name, spent in medians.items():
                print(f"  {box} median: {_row(name, spent, bool(args.priced))}")
            if len(medians) == 2:
                ratio = medians["gputop export"].whole / medians["nvitop-exporter"].whole
                print(f"  {box}: gputop export / nvitop-exporter = {ratio:.2f}x")

    if not args.skip_record:
        print(f"headless --record at 1 s ({args.seconds:g} s after {args.warmup:g} s)")
        for box, count in RECORD_CASES.items():
            with bench_tui.sleepers(count) as pids:
                runs = [record_cpu(box, pids, args) for _ in range(args.rounds)]
            print(f"  {box}: {_row('gputop --record', _median(runs), bool(args.priced))}")
    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def _median(runs: list[Spent]) -> Spent:
    return Spent(
        statistics.median(r.whole for r in runs),
        statistics.median(r.price for r in runs),
        statistics.median(r.fake for r in runs),
    )


if __name__ == "__main__":
    main()
