"""The GPU-hours ledger (`gputop report --prometheus`) on a week of 1,024 GPUs in a real
Prometheus.

The fleet of the ledger's tests (``tests/support/ledger_data.py``: pods that hold and use,
hold and idle, wait, come and go; a node stale for an hour; an exporter restart; a node
without memory data) is repeated over 128 nodes x 8 GPUs and sampled every ``--interval``
seconds (60 by default) for ``--days`` days, with only the series the ledger reads (activity,
memory, power, gputop's process count; short label sets). It is written one day per
OpenMetrics file and backfilled with ``promtool tsdb create-blocks-from openmetrics``
(Debian's), then Debian's Prometheus serves the blocks. Each ledger runs as its own process
(`gputop report --prometheus ... --json`), timed from outside, its peak RSS read from
inside; the server's count of samples read and the ledger's queries come from its JSON.

Side by side: a script's pull of every GPU's step means (one ``query_range`` per family,
nothing judged), and with ``--against TREE`` another tree's ledger (main's), in turn with
this one on the same server.

    .venv/bin/python benchmarks/bench_ledger.py [--days 7] [--nodes 128] [--interval 60]
        [--data DIR] [--against TREE] [--headline]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.ledger_data import A100, H100, State, _state  # noqa: E402
from support.ledger_servers import PROMTOOL, _binary  # noqa: E402
from support.net import free_port  # noqa: E402
from support.prometheus import RunningPrometheus  # noqa: E402

DAY = 86400


def _labels(node: str, index: int, model: str, exporter: str, pod: tuple[str, str] | None,
            job: str | None) -> str:  # fmt: skip
    parts = [
        f'UUID="GPU-{node}-{index:02d}"',
        f'Hostname="{node}"',
        f'modelName="{model}"',
        f'instance="{node}:9400"',
    ]
    if job:
        parts.append(f'hpc_job="{job}"')
    if pod:
        parts += [f'namespace="{pod[0]}"', f'pod="{pod[1]}"']
    return "{" + ",".join(parts) + "}"


def _head(
    family: str, node: str, index: int, model: str, exporter: str, state: State
) -> str | None:
    """The sample line of ``state`` up to its timestamp (None: no sample)."""
    if state.util is None:
        return None
    if family == "DCGM_FI_DEV_GPU_UTIL":
        value = state.util
    elif family == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
        value = state.util / 100
    elif family == "DCGM_FI_DEV_FB_USED":
        value = state.memory_mib or 0.0
    elif family == "DCGM_FI_DEV_POWER_USAGE":
        value = state.power_w
    else:
        value = float(state.processes or 0)
    return f"{family}{_labels(node, index, model, exporter, state.pod, state.job)} {value:g} "


def write_day(path: Path, nodes: int, start: float, day: int, interval: float) -> int:
    """Day ``day`` of the fleet as OpenMetrics (families contiguous); the sample count."""
    per_day = round(DAY / interval)
    first = day * per_day
    families = (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "gputop_processes",
    )
    fleet = []
    for n in range(nodes):
        kind = n % 8
        exporter = "dcgm" if kind < 4 else "gputop"
        for i in range(8):
            # Each GPU's day once (its states change rarely: equal ones are shared).
            states = []
            previous = None
            for k in range(first, first + per_day):
                state = _state(kind, n, i, round(k * interval) // 60, exporter)
                if state != previous:
                    previous = state
                states.append(previous)
            fleet.append((n, kind, i, exporter, states))
    stamps = [f"{start + k * interval + interval / 2:.0f}\n" for k in range(first, first + per_day)]
    count = 0
    with path.open("w", buffering=1 << 20) as out:
        for family in families:
            out.write(f"# TYPE {family} gauge\n")
            for n, kind, i, exporter, states in fleet:
                node = f"node-{n}"
                model = H100 if kind < 4 else A100
                engine = kind in (0, 1)
                if family == "gputop_processes" and exporter != "gputop":
                    continue
                if family == "DCGM_FI_DEV_GPU_UTIL" and engine:
                    continue
                if family == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and not engine:
                    continue
                if family == "DCGM_FI_DEV_FB_USED" and kind == 3 and i == 7:
                    continue
                heads: dict[int, str | None] = {}  # by state: the line up to its time
                lines = []
                for state, stamp in zip(states, stamps, strict=True):
                    head = heads.get(id(state), "")
                    if head == "":
                        head = heads[id(state)] = _head(family, node, i, model, exporter, state)
                    if head is not None:
                        lines.append(head + stamp)
                out.write("".join(lines))
                count += len(lines)
        out.write("# EOF\n")
    return count


def backfill(
    directory: Path, nodes: int, days: int, interval: float, start: float
) -> dict[str, float]:
    data = directory / "data"
    promtool = _binary("promtool", PROMTOOL, "prometheus")
    samples = 0
    began = time.monotonic()
    generate = 0.0
    running: tuple[subprocess.Popen[bytes], Path] | None = None

    def finish(job: tuple[subprocess.Popen[bytes], Path] | None) -> None:
        if job is None:
            return
        process, path = job
        if process.wait() != 0:
            raise SystemExit(f"promtool failed on {path}")
        path.unlink()

    for day in range(days):
        path = directory / f"day-{day}.om"
        t = time.monotonic()
        samples += write_day(path, nodes, start, day, interval)
        generate += time.monotonic() - t
        finish(running)  # promtool backfills one day while the next is written
        process = subprocess.Popen(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
             "--quiet", str(path), str(data)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        running = (process, path)
        print(f"  day {day + 1}/{days} written ({samples:,} samples so far)", flush=True)
    finish(running)
    return {"samples": samples, "seconds": time.monotonic() - began, "generate": generate}


_LEDGER = (
    "import resource, sys, io\n"
    "from gputop.cli.report import report_main\n"
    "out = io.StringIO()\n"
    "code = report_main(sys.argv[1:], out)\n"
    "sys.stdout.write(out.getvalue())\n"
    "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)

_PULL = (
    "import resource, sys, time, json\n"
    "from gputop.sources.prometheus.client import PrometheusClient\n"
    "url, start, end, step = sys.argv[1], *map(float, sys.argv[2:5])\n"
    "client = PrometheusClient(url, timeout=600)\n"
    "points = 0\n"
    "for family in ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE',\n"
    "               'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_POWER_USAGE', 'gputop_processes'):\n"
    "    q = f'avg_over_time({family}[{int(step)}s])'\n"
    "    series = client.query_range(q, start + step, end, step)\n"
    "    points += sum(len(s.points) for s in series)\n"
    "print(json.dumps({'points': points}))\n"
    "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


def _python() -> list[str]:
    venv = ROOT / ".venv" / "bin" / "python"
    return [str(venv if venv.exists() else sys.executable)]


def _run(code: str, args: list[str], tree: Path | None = None) -> tuple[float, int, str]:
    environ = {**os.environ, "TZ": "UTC"}
    if tree is not None:
        environ["PYTHONPATH"] = str(tree / "tui")
    began = time.monotonic()
    result = subprocess.run(
        [*_python(), "-c", code, *args], capture_output=True, text=True, timeout=3600,
        env=environ,
    )  # fmt: skip
    seconds = time.monotonic() - began
    if result.returncode != 0:
        raise SystemExit(f"failed: {result.stderr[-2000:]}")
    rss = next(
        int(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("MAXRSS")
    )
    return seconds, rss // 1024, result.stdout


def ledger(
    url: str, since: float, until: float, match: str = "", tree: Path | None = None
) -> dict[str, float]:
    args = [
        "--prometheus", url, "--since", f"{since:.0f}", "--until", f"{until:.0f}", "--by",
        "node", "--json", "--timeout", "300",
    ]  # fmt: skip
    if match:
        args += ["--match", match]
    seconds, rss, out = _run(_LEDGER, args, tree)
    document = json.loads(out)
    return {
        "seconds": seconds,
        "rss_mb": rss,
        "queries": document["queries"],
        "samples": document["samples"] or 0,
        "points": document["points"],
        "step": document["step_seconds"],
        "gpus": document["total"]["gpus"],
        "idle_held": document["total"]["idle_held_gpu_hours"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=128, help="8 GPUs each (default 128)")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    parser.add_argument(
        "--data",
        type=Path,
        help="keep the backfilled blocks here and reuse them when the fleet is the same",
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="another tree of gputop (a worktree of main) whose ledger runs in the same rounds",
    )
    parser.add_argument(
        "--headline", action="store_true", help="only the whole fleet's span and the pull"
    )
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}  ({os.cpu_count()} CPUs)")
    end = math.floor(time.time() / DAY) * DAY
    start = end - args.days * DAY
    with contextlib.ExitStack() as stack:
        if args.data is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gputop-")))
        else:
            directory = args.data
            directory.mkdir(parents=True, exist_ok=True)
        fleet = {"nodes": args.nodes, "days": args.days, "interval": args.interval}
        kept = directory / "fleet.json"
        if kept.exists() and json.loads(kept.read_text())["fleet"] == fleet:
            start = json.loads(kept.read_text())["start"]
            end = start + args.days * DAY
            print(f"reusing the blocks in {directory}")
        else:
            shutil.rmtree(directory / "data", ignore_errors=True)
            (directory / "prometheus.yml").write_text("global:\n  scrape_interval: 60s\n")
            print(f"backfilling {args.nodes * 8} GPUs x {args.days} days at {args.interval:g} s")
            filled = backfill(directory, args.nodes, args.days, args.interval, start)
            print(
                f"backfill: {filled['samples']:,} samples in {filled['seconds']:.0f} s "
                f"({filled['generate']:.0f} s writing OpenMetrics, the rest promtool)"
            )
            kept.write_text(json.dumps({"fleet": fleet, "start": start}))
        with (directory / "prometheus.log").open("w+") as log:
            server = RunningPrometheus(directory, free_port(), log, 300.0)
            server.start()
            try:
                runs: dict[tuple[int, int], dict[str, float]] = {}
                rounds: dict[str, list[dict[str, float]]] = {"this": [], "against": []}
                gpus = args.nodes * 8
                sizes = (args.nodes,) if args.headline else (8, 32, args.nodes)
                for nodes in sorted({n for n in sizes if n <= args.nodes}):
                    match = ""
                    if nodes < args.nodes:
                        match = f'Hostname=~"node-({"|".join(map(str, range(nodes)))})"'
                    runs[(nodes * 8, args.days)] = ledger(server, start, end, match)
                for days in sorted({d for d in (1, 2, 4) if d < args.days and not args.headline}):
                    runs[(gpus, days)] = ledger(server, end - days * DAY, end)
                # The same span at the same step as the whole fleet's ledger.
                step = runs[(gpus, args.days)]["step"]
                seconds, rss, out = _run(_PULL, [server, str(start), str(end), str(step)])
                pulled = json.loads(out)["points"]
                if args.against is not None:
                    # The headline again, this tree's and the other's in turn.
                    for _ in range(2):
                        rounds["this"].append(ledger(server, start, end))
                        rounds["against"].append(ledger(server, start, end, tree=args.against))
            finally:
                server.stop()
    print()
    print(
        "| ledger (by node) | step | time | peak RSS | queries | samples read | points returned |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (count, days), run in sorted(runs.items()):
        print(
            f"| {count} GPUs x {days} d | {run['step']:g} s | {run['seconds']:.1f} s | "
            f"{run['rss_mb']} MB | {run['queries']:.0f} | {run['samples']:,.0f} | "
            f"{run['points']:,.0f} |"
        )
    head = runs[(gpus, args.days)]
    print(
        f"| pull every GPU's step means instead (5 families) | {step:g} s | {seconds:.1f} s | "
        f"{rss} MB | 5 | - | {pulled:,} |"
    )
    print(
        f"\nledger vs pulling every GPU's step means: {head['seconds'] / seconds:.2f}x the "
        f"time, {head['rss_mb'] / max(rss, 1):.2f}x the memory, "
        f"{head['points'] / max(pulled, 1):.3f}x the points"
    )
    if args.against is not None:
        print(
            f"\n| {gpus} GPUs x {args.days} d, in turn | time | peak RSS | queries | samples read |"
        )
        print("| --- | --- | --- | --- | --- |")
        for name, label in (("this", "this tree"), ("against", str(args.against))):
            for run in rounds[name]:
                print(
                    f"| {label} | {run['seconds']:.1f} s | {run['rss_mb']} MB | "
                    f"{run['queries']:.0f} | {run['samples']:,.0f} |"
                )
        mine = min(r["seconds"] for r in rounds["this"])
        theirs = min(r["seconds"] for r in rounds["against"])
        print(f"best of each: {mine:.1f} s against {theirs:.1f} s, {mine / theirs:.2f}x")
        same = [r["idle_held"] for r in rounds["this"] + rounds["against"]]
        print(f"idle-held GPU-hours in every run: {sorted(set(round(x, 3) for x in same))}")
    # Time against samples read, over the spans of the whole fleet: t = a + b * samples.
    points = [(r["samples"], r["seconds"]) for (c, _), r in runs.items() if c == gpus]
    if len(points) >= 2:
        n = len(points)
        mean_x = sum(x for x, _ in points) / n
        mean_y = sum(y for _, y in points) / n
        var = sum((x - mean_x) ** 2 for x, _ in points) or 1.0
        b = sum((x - mean_x) * (y - mean_y) for x, y in points) / var
        a = mean_y - b * mean_x
        factor = args.interval / 15.0
        predicted = a + b * head["samples"] * factor
        print(
            f"time = {a:.1f} s + {b * 1e6:.2f} s per million samples read; at 15 s scrapes "
            f"({factor:g}x the samples) {gpus} GPUs x {args.days} d would take about "
            f"{predicted:.0f} s at the same step"
        )
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
