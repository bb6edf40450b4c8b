"""The fleet view's own costs (the UI, not Prometheus): prints figures.

128 nodes x 8 GPUs (1,024 GPUs, the issue's scale) from an in-memory fleet source over the
bundled RTX 3090 capture, in a headless Textual app of 160x50:

* first frame: from the app's start until the table holds every node;
* a refresh: CPU time of the UI (the answer filed, the rows laid, the frame drawn) per fleet
  answer in which every node's age changed, so every row is new;
* opening a node: from Enter until its eight panels are drawn from 40 samples of history;
* peak RSS of the process.

The network side (one query per metric family per refresh, against a real Prometheus) is
measured by the cluster benchmarks; this one says what the screen adds.

Usage: ``python benchmarks/bench_fleet_ui.py [--nodes 128] [--refreshes 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from gputop.model import Snapshot  # noqa: E402
from gputop.model.fleet import FleetSnapshot, GpuState  # noqa: E402
from support.apps import eight_gpus, load  # noqa: E402
from support.fleet import (  # noqa: E402
    SCRAPE,
    TAKEN,
    MemoryFleet,
    NodeSpec,
    fleet_app,
    node_stream,
    node_view,
)

BUSY, WAITING, IDLE = GpuState.BUSY, GpuState.WAITING, GpuState.IDLE


def answers(nodes: int, count: int) -> tuple[list[FleetSnapshot], dict[str, list[Snapshot]]]:
    """``count`` answers of ``nodes`` eight-GPU nodes, each newer by one scrape."""
    base = eight_gpus(load(REPO / "snapshots" / "rtx3090x4-procs-v12.xml"))
    states = [(BUSY,) * 8, (IDLE,) * 4 + (BUSY,) * 4, (WAITING, WAITING) + (BUSY,) * 6]
    specs = [NodeSpec(f"node-{n:03d}", base, states[n % 3]) for n in range(nodes)]
    histories = {
        spec.host: node_stream(spec.base, spec.host, TAKEN - timedelta(seconds=n % 30))
        for n, spec in enumerate(specs)
    }
    result = []
    for step in range(count):
        taken = TAKEN + timedelta(seconds=step * SCRAPE / 3)
        views = tuple(node_view(spec, histories[spec.host]) for spec in specs)
        result.append(
            FleetSnapshot(taken_at=taken, nodes=views, window_seconds=300.0, scrape_interval=SCRAPE)
        )
    return result, histories


async def measure(nodes: int, refreshes: int) -> None:
    fleets, histories = answers(nodes, refreshes + 1)
    source = MemoryFleet(fleets, dict(histories))
    app = fleet_app(source)
    started = time.perf_counter()
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.fleet_screen.query_one("#fleet-data")
        while getattr(table, "row_count", 0) < nodes:
            await pilot.pause(0)
        first = time.perf_counter() - started
        cpu = time.process_time()
        wall = time.perf_counter()
        for _ in range(refreshes):
            app.loop.advance()  # type: ignore[attr-defined]
            await pilot._wait_for_screen()
            app.screen._on_timer_update()
            await pilot._wait_for_screen()
        per_refresh = (time.process_time() - cpu) / refreshes
        per_wall = (time.perf_counter() - wall) / refreshes
        opening = time.perf_counter()
        app.open_node("node-001")
        while len(app.screen.query("GpuPanel")) < 8:
            await pilot.pause(0)
        await pilot._wait_for_screen()
        opened = time.perf_counter() - opening
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"nodes {nodes} x 8 GPUs = {nodes * 8} GPUs")
    print(f"first frame with every node: {first * 1000:.0f} ms")
    print(
        f"a refresh (every row changed): {per_refresh * 1000:.1f} ms CPU, {per_wall * 1000:.1f} ms"
        f" wall; at one refresh every 5 s: {per_refresh / 5 * 100:.2f} % of one core"
    )
    print(
        f"opening a node (8 panels, {len(next(iter(histories.values())))} samples): "
        f"{opened * 1000:.0f} ms"
    )
    print(f"peak RSS: {rss:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--refreshes", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(measure(args.nodes, args.refreshes))


if __name__ == "__main__":
    main()
