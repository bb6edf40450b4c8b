"""What a move of the focus costs (Tab, from the GPUs to the processes and back), with each of
Textual's patches on or off: prints figures and a ratio.

Each run is a child process: gputop's app, headless (120x40), on the 4x RTX 3090 capture
replayed (its 15-16 footer keys), or on eight GPUs of it with 200 processes (``--box 8``).
It presses Tab ``--presses`` times, waiting for each frame, and prints the median CPU seconds
of the process a press (``time.process_time``: the footer's keys, styles, layout, the
frame). Runs alternate between checkouts (``--code``, default: this one; another's ``tui``,
``tests`` and ``snapshots``, e.g. a ``git archive`` of main) and ``GPUTOP_STOCK_TEXTUAL``
values (``--stock``, default: ``-``, every patch on, and ``1``, none) over ``--rounds``
rounds, so drift in the machine's load falls on each; medians, and ratios against the first.

Usage: ``python benchmarks/bench_focus.py [--code DIR ...] [--stock - 1] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import asyncio, dataclasses, statistics, sys, time
from pathlib import Path
from support.apps import eight_gpus, load, replay_app, with_processes
from gputop.model import ProcessSample

presses, gpus = int(sys.argv[1]), int(sys.argv[2])
snapshot = load(Path("snapshots/rtx3090x4-procs-v12.xml"))
if gpus == 8:
    snapshot = eight_gpus(snapshot)
    template = snapshot.gpus[0].processes[0]
    snapshot = dataclasses.replace(snapshot, gpus=tuple(
        with_processes(gpu, [dataclasses.replace(template, pid=1000 + 25 * g + i)
                             for i in range(25)])
        for g, gpu in enumerate(snapshot.gpus)))

async def main() -> None:
    app = replay_app([snapshot] * 3)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        spent = []
        for _ in range(presses):
            start = time.process_time()
            await pilot.press("tab")
            await pilot.pause()
            spent.append(time.process_time() - start)
    print(statistics.median(spent))

asyncio.run(main())
"""


def run(code: Path, stock: str, presses: int, gpus: int) -> float:
    """CPU seconds a press, the median of one child's presses."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code / "tests"), str(code / "tui")])}
    env.pop("GPUTOP_STOCK_TEXTUAL", None)
    if stock != "-":
        env["GPUTOP_STOCK_TEXTUAL"] = stock
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(presses), str(gpus)],
        capture_output=True,
        text=True,
        cwd=code,
        env=env,
        check=True,
        timeout=600,
    )
    return float(result.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=lambda path: Path(path).resolve(), nargs="+", default=[REPO])
    parser.add_argument("--stock", nargs="+", default=["-", "1"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--presses", type=int, default=30)
    parser.add_argument("--box", type=int, choices=(4, 8), default=4)
    options = parser.parse_args()
    variants = [(code, stock) for code in options.code for stock in options.stock]
    results: dict[tuple[Path, str], list[float]] = {variant: [] for variant in variants}
    for round_ in range(options.rounds):
        for code, stock in variants if round_ % 2 == 0 else list(reversed(variants)):
            results[code, stock].append(run(code, stock, options.presses, options.box))
    first = median(results[variants[0]])
    print(f"Tab on the {options.box}-GPU box, CPU ms a press (median of {options.rounds} runs)")
    for (code, stock), runs in results.items():
        label = "every patch" if stock == "-" else f"GPUTOP_STOCK_TEXTUAL={stock}"
        if len(options.code) > 1:
            label = f"{code}: {label}"
        each = " ".join(f"{1000 * value:.0f}" for value in runs)
        print(f"  {label:40} {1000 * median(runs):6.1f}  ({each})  {median(runs) / first:.2f}x")


if __name__ == "__main__":
    main()
