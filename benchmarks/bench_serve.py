"""`gputop serve` in a browser: first drawn GPU, server cost per viewer, bytes per viewer.

Starts the real `gputop serve` on the fake NVML (the 4x RTX 3090 box of ``snapshots/``, or
``--fake`` a scenario or capture) and Debian's headless Chromium (Selenium, as the browser
tests do), then measures:

* page load to first drawn GPU: from ``driver.get`` to the terminal's buffer holding
  ``0 · NVIDIA`` (each load a new tab, so a new viewer process), median and worst of
  ``--loads``;
* server CPU (percent of one core) and memory, with 0, 1 and ``--viewers`` viewers, each
  over ``--seconds``: CPU of the whole process group (the server, its sampler and every
  viewer app); memory as the sum of PSS (shared pages split between the processes that
  share them, so N viewers are not counted as N copies of Python); once with every viewer
  live at 1 s ("active") and once with every viewer paused (space: "idle", the page open
  and nothing moving);
* bytes per second the server sends each viewer (counted in the page, by wrapping
  ``WebSocket`` before the page's script runs).

Usage: ``python benchmarks/bench_serve.py [--viewers 4] [--seconds 10] [--loads 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.browser import browser, press, screen_text, serving  # noqa: E402

COUNT_BYTES = """
window.__wsBytes = 0;
const Original = window.WebSocket;
window.WebSocket = function (url, protocols) {
    const socket = new Original(url, protocols);
    socket.addEventListener("message", (event) => {
        window.__wsBytes += typeof event.data === "string" ? event.data.length
                                                          : event.data.byteLength;
    });
    return socket;
};
window.WebSocket.prototype = Original.prototype;
"""

_TICK = 100  # clock ticks per second (os.sysconf("SC_CLK_TCK") on Linux)


def _group(leader: int) -> list[int]:
    """PIDs of the process group ``leader`` leads."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == leader:
                pids.append(int(entry.name))
    return pids


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def _pss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _measure(leader: int, seconds: float) -> tuple[float, float, int]:
    """(CPU % of one core, PSS MB, processes) of the group over ``seconds``."""
    pids = _group(leader)
    before = _cpu_ticks(pids)
    time.sleep(seconds)
    pids = _group(leader)
    used = _cpu_ticks(pids) - before
    return 100.0 * used / _TICK / seconds, _pss_mb(pids), len(pids)


def _open_viewer(driver: Any, url: str) -> float:
    """Open ``url`` in a new tab; seconds until a GPU is drawn."""
    driver.switch_to.new_window("tab")
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": COUNT_BYTES})
    start = time.perf_counter()
    driver.get(url)
    while " 0 · " not in screen_text(driver):
        if time.perf_counter() - start > 30:
            raise SystemExit("no GPU drawn in 30 s")
        time.sleep(0.02)
    return time.perf_counter() - start


def _close_tabs(driver: Any) -> None:
    while len(driver.window_handles) > 1:
        driver.switch_to.window(driver.window_handles[-1])
        driver.close()
    driver.switch_to.window(driver.window_handles[0])


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument(
        "--fake",
        default="busy-2",
        help="the fake NVML's machine (default busy-2: two GPUs whose readings move every "
        "tick, so an active viewer has something to draw)",
    )
    args = parser.parse_args()
    with browser() as driver, serving(env={"GPUTOP_FAKE_NVML": args.fake}) as served:
        leader = served.process.pid
        time.sleep(2)
        cpu, pss, procs = _measure(leader, args.seconds)
        print(f"no viewer: server CPU {cpu:.1f}% of a core, PSS {pss:.0f} MB ({procs} proc)")

        loads = []
        for _ in range(args.loads):
            loads.append(_open_viewer(driver, served.url))
            _close_tabs(driver)
            time.sleep(1)
        print(
            f"page load to first GPU: median {statistics.median(loads) * 1000:.0f} ms, "
            f"worst {max(loads) * 1000:.0f} ms ({args.loads} loads, a new viewer each)"
        )

        for count in (1, args.viewers):
            for _ in range(count):
                _open_viewer(driver, served.url)
            time.sleep(3)  # past the first frames
            start_bytes = [_bytes(driver, handle) for handle in driver.window_handles[1:]]
            cpu, pss, procs = _measure(leader, args.seconds)
            sent = [
                _bytes(driver, handle) - first
                for handle, first in zip(driver.window_handles[1:], start_bytes, strict=True)
            ]
            rate = statistics.mean(sent) / args.seconds
            print(
                f"{count} active viewer(s) at 1 s: CPU {cpu:.1f}%, PSS {pss:.0f} MB "
                f"({procs} proc); {rate / 1024:.1f} KiB/s to each viewer"
            )
            for handle in driver.window_handles[1:]:
                driver.switch_to.window(handle)
                press(driver, " ")
            time.sleep(2)
            cpu, pss, procs = _measure(leader, args.seconds)
            print(f"{count} idle (paused) viewer(s): CPU {cpu:.1f}%, PSS {pss:.0f} MB")
            _close_tabs(driver)
            time.sleep(2)


def _bytes(driver: Any, handle: str) -> int:
    driver.switch_to.window(handle)
    return int(driver.execute_script("return window.__wsBytes || 0"))


if __name__ == "__main__":
    main()
