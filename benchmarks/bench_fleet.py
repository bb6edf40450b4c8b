"""`gputop cluster --prometheus`: what a fleet view of 1,024 GPUs costs.

A synthetic dcgm-exporter exposition per node (dcgm-exporter's default counters and labels,
8 GPUs, utilization and memory spread over busy, waiting and idle) is served by one small
HTTP server per node, all scraped every 15 s (``--scrape``) by a real Prometheus (Debian's,
as in the tests) on 127.0.0.1. Then, in a fresh process each time:

1. ``first``: wall time from the start of `gputop cluster --prometheus URL --json` to its
   output (Python start-up, imports, the discovery queries and the first refresh), median
   of 3; and, in-process, the first ``fleet()`` alone.
2. ``refresh``: ``fleet()`` every 5 s (the fleet screen's default) for ``--seconds``: the
   process's CPU time over the wall time (percent of one core), the time of one refresh,
   the HTTP round trips of one refresh and the peak RSS.

Run for 1, 16 and 128 nodes (8, 128 and 1,024 GPUs) to see how the cost grows:
``.venv/bin/python benchmarks/bench_fleet.py [--nodes 1,16,128] [--seconds 60]
[--scrape 15]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.command import gputop_command  # noqa: E402
from support.prometheus import ExpositionServer, running_prometheus  # noqa: E402

GPUS_PER_NODE = 8
SCRAPE_INTERVAL = 15.0
"""Prometheus's default scrape interval (dcgm-exporter collects every 30 s by default)."""

_FAMILIES = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", lambda g: 1410 if g % 3 else 210),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", lambda g: 1593),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", lambda g: 40 + g),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", lambda g: 35 + 3 * g),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", lambda g: 80.5 + 40 * (g % 4)),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", lambda g: 4335301032 + g),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", lambda g: 0),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", lambda g: (97, 12, 0, 64, 0, 88, 3, 45)[g % 8]),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", lambda g: (40, 2, 0, 20, 0, 31, 1, 9)[g % 8]),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", lambda g: 0),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", lambda g: 0),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", lambda g: 0),
    ("DCGM_FI_DEV_FB_FREE", "gauge", lambda g: 81000 - (70000, 30000, 0, 50000, 2, 60000, 0, 1000)[g % 8]),  # noqa: E501
    ("DCGM_FI_DEV_FB_USED", "gauge", lambda g: (70000, 30000, 0, 50000, 2, 60000, 0, 1000)[g % 8]),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", lambda g: 559),
)  # fmt: skip


def exposition(node: int) -> str:
    """dcgm-exporter's answer for node ``node`` (8 H100s), in its label order."""
    lines = []
    for name, kind, value in _FAMILIES:
        lines.append(f"# HELP {name} {name}.")
        lines.append(f"# TYPE {name} {kind}")
        for gpu in range(GPUS_PER_NODE):
            labels = (
                f'gpu="{gpu}",UUID="GPU-{node:08x}-0000-0000-0000-{gpu:012x}",'
                f'pci_bus_id="00000000:{gpu + 0x18:02X}:00.0",device="nvidia{gpu}",'
                f'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-{node:03d}",'
                'DCGM_FI_DRIVER_VERSION="550.54.15"'
            )
            lines.append(f"{name}{{{labels}}} {value(gpu)}")
    return "\n".join(lines) + "\n"


def child(url: str, seconds: float, refresh: float) -> None:
    """The measured process: first fleet(), then one every ``refresh`` s; prints JSON."""
    started = time.perf_counter()
    from gputop.cli.startup import hold_collection, release_collection

    # As the command does (cli/main.py): the collector held at start, then a young
    # generation of 20,000 allocations instead of Python's 700.
    hold_collection()
    release_collection()
    from gputop.sources.prometheus.client import PrometheusClient
    from gputop.sources.prometheus.source import PrometheusFleet

    source = PrometheusFleet(PrometheusClient(url, timeout=30))
    fleet = source.fleet()
    first = time.perf_counter() - started
    assert fleet.error is None, fleet.error
    gpus = sum(len(n.snapshot.gpus) for n in fleet.nodes)
    me = psutil.Process()
    cpu0 = sum(me.cpu_times()[:2])
    wall0 = time.perf_counter()
    took: list[float] = []
    trips: list[int] = []
    deadline = wall0 + seconds
    next_at = wall0
    while next_at < deadline:
        next_at += refresh
        time.sleep(max(0.0, next_at - time.perf_counter()))
        before = source.client.round_trips
        t = time.perf_counter()
        fleet = source.fleet()
        took.append(time.perf_counter() - t)
        assert fleet.error is None, fleet.error
        trips.append(source.client.round_trips - before)
    cpu = sum(me.cpu_times()[:2]) - cpu0
    wall = time.perf_counter() - wall0
    source.close()
    rss = me.memory_info().rss
    peak = getattr(me.memory_full_info(), "uss", rss)
    print(
        json.dumps(
            {
                "nodes": len(fleet.nodes),
                "gpus": gpus,
                "first_s": first,
                "refresh_ms": statistics.median(took) * 1000,
                "refresh_p95_ms": sorted(took)[int(0.95 * (len(took) - 1))] * 1000,
                "cpu_pct": 100 * cpu / wall,
                "cpu_ms_per_refresh": 1000 * cpu / len(took),
                "round_trips": statistics.median(trips),
                "rss_mb": rss / 2**20,
                "uss_mb": peak / 2**20,
            }
        )
    )


def command_first(url: str) -> float:
    """Wall time of the real `gputop cluster --prometheus URL --json`, start to output."""
    command, environ = gputop_command()
    started = time.perf_counter()
    result = subprocess.run(
        [*command, "cluster", "--prometheus", url, "--json", "--timeout", "30"],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        check=False,
    )
    took = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    return took


def measure(nodes: int, seconds: float, refresh: float, scrape: float) -> dict[str, float]:
    """Serve ``nodes`` expositions, scrape them, measure; return the child's figures."""
    servers = [ExpositionServer(exposition(n)).start() for n in range(nodes)]
    try:
        with running_prometheus([s.target for s in servers], scrape) as prometheus:
            prometheus.wait_for("up == 1", nodes, timeout=60)
            time.sleep(2 * scrape + 1)  # a window with more than one sample
            firsts = [command_first(prometheus.url) for _ in range(3)]
            output = subprocess.run(
                [sys.executable, __file__, "--child", prometheus.url, "--seconds",
                 str(seconds), "--refresh", str(refresh)],
                capture_output=True, text=True, check=True, cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT / "tui")},
            )  # fmt: skip
            figures: dict[str, float] = json.loads(output.stdout)
            figures["command_first_s"] = statistics.median(firsts)
            return figures
    finally:
        for server in servers:
            server.stop()


def main() -> None:
    """Parse the options and print one line of figures per fleet size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", default="1,16,128", help="fleet sizes, in nodes of 8 GPUs")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--refresh", type=float, default=5.0)
    parser.add_argument(
        "--scrape", type=float, default=SCRAPE_INTERVAL, help="Prometheus's scrape interval"
    )
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seconds, args.refresh)
        return
    print(
        f"{'GPUs':>5} {'nodes':>5} {'command':>8} {'first':>7} {'refresh':>8} {'p95':>7} "
        f"{'CPU %':>6} {'CPU/ref':>8} {'trips':>5} {'RSS MB':>7}"
    )
    for nodes in (int(n) for n in args.nodes.split(",")):
        f = measure(nodes, args.seconds, args.refresh, args.scrape)
        print(
            f"{f['gpus']:>5.0f} {f['nodes']:>5.0f} {f['command_first_s'] * 1000:>6.0f}ms "
            f"{f['first_s'] * 1000:>5.0f}ms {f['refresh_ms']:>6.1f}ms "
            f"{f['refresh_p95_ms']:>5.1f}ms {f['cpu_pct']:>6.2f} "
            f"{f['cpu_ms_per_refresh']:>6.1f}ms {f['round_trips']:>5.0f} {f['rss_mb']:>7.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
