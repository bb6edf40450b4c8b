"""Experiment (issue 17): a plain first frame drawn before Textual has loaded.

gputop's first frame waits for Textual's import (about three quarters of its start-up). This
tries drawing a plain frame from the first snapshot first, then letting Textual take over:

* the child is ``bench_tui.py child`` (gputop on the fake NVML, 4 RTX 4090s, 3 live
  processes), with the live path's "import the UI while the driver starts" step replaced by:
  wait for the driver, take the first snapshot, write ``--once``'s summary on the alternate
  screen (``ESC[?1049h``, as Textual's driver does), then import the UI;
* in a 120x40 tmux pane, polled with ``capture-pane`` as fast as it answers, each capture is
  classed as blank, the plain frame, or Textual's frame; reported: when each first showed,
  any capture that was neither after the plain frame (a flash), and what is left on the
  screen once gputop has quit (the alternate screen must take it all away).

Beside it, in turn, the same gputop without the plain frame, nvitop (from the peers' venv,
see benchmarks/README.md, when given) and the bare Textual app.

Usage: ``python benchmarks/bench_plain_frame.py [--repeat 5] [--peers-python PY]``.
This is a measurement only: gputop does not draw a plain frame (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from statistics import median

import bare_app
import bench_tui

HERE = Path(__file__).resolve()
PLAIN_MARK = "Memory used / total"
"""In the plain frame (``--once``'s column header), never in Textual's."""
TEXTUAL_MARK = "PID"
"""In Textual's frame (the process table's header) once the GPUs are there too."""


def plain_child(argv: Sequence[str]) -> int:
    """gputop on the fake NVML, drawing the plain frame before the UI is imported."""
    from gputop.cli import live
    from gputop.cli.driver_start import DriverStart
    from gputop.sinks.summary import format_summary
    from gputop.sources.base import Source

    def plain_then_ui(starting: DriverStart) -> Source | None:
        if not starting.wait(5.0):
            return None
        source = starting.result()
        frame = format_summary(source.poll())
        # The alternate screen, as Textual's driver enters it; the cursor hidden.
        sys.stdout.write("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J" + frame.replace("\n", "\r\n"))
        sys.stdout.flush()
        import gputop.ui.app  # noqa: F401 -- Textual loads now, the plain frame on screen

        return source

    live._open_while_the_ui_loads = plain_then_ui
    return bench_tui.child(argv)


def _classify(screen: str, gpus: str, count: int) -> str:
    if not screen.strip():
        return "blank"
    if PLAIN_MARK in screen:
        return "plain"
    if screen.count(gpus) >= count and TEXTUAL_MARK in screen:
        return "textual"
    return "other"


def watch(command: Sequence[str], env: dict[str, str], gpus: str, count: int) -> dict[str, object]:
    """Start ``command`` in a tmux pane; times of each first sighting, what showed in which
    order, and what is on screen once it has quit."""
    socket = f"gputop-plain-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket]
    quoted = " ".join(f"'{part}'" for part in command)
    exported = " ".join(f"{key}='{value}'" for key, value in env.items())
    script = f"cd '{bench_tui.REPO}' && env {exported} {quoted}; sleep 30"
    subprocess.run([*tmux, "new-session", "-d", "-s", "idle", "-x", "10", "-y", "5"], check=True)
    seen: dict[str, float] = {}
    order: list[str] = []
    odd = ""
    try:
        started = time.perf_counter()
        size = ["-x", str(bench_tui.COLUMNS), "-y", str(bench_tui.ROWS)]
        subprocess.run([*tmux, "new-session", "-d", "-s", "t", *size, script], check=True)
        while time.perf_counter() - started < 30:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True
            ).stdout
            state = _classify(screen, gpus, count)
            if state == "other" and "other" not in seen:
                odd = screen
            seen.setdefault(state, time.perf_counter() - started)
            if not order or order[-1] != state:
                order.append(state)
            if state == "textual" and time.perf_counter() - started > seen["textual"] + 0.5:
                break
        subprocess.run([*tmux, "send-keys", "-t", "t", "q"], check=True)
        time.sleep(1.5)
        after = subprocess.run(
            [*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True
        ).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    return {"seen": seen, "order": order, "left": after.strip(), "other": odd}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peers-python", type=Path, default=None)
    options = parser.parse_args()
    box, processes = "4x4090", 3
    gpus, count = bench_tui.MARKERS[box]
    base = {
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "PYTHONPATH": str(bench_tui.REPO / "tui"),
        "GPUTOP_BENCH_BOX": box,
        "GPUTOP_BENCH_PROCESSES": str(processes),
        "GPUTOP_BENCH_TICKS": "60",
    }
    me = [sys.executable, str(HERE)]
    tools = {
        "plain": (me, "plain-child"),
        "gputop": ([sys.executable, str(HERE.with_name("bench_tui.py"))], "child"),
        "bare": ([sys.executable, str(HERE.with_name("bare_app.py"))], ""),
    }
    if options.peers_python is not None:
        peer = [str(options.peers_python), str(HERE.with_name("bench_tui.py"))]
        tools["nvitop"] = (peer, "child")
    times: dict[str, list[float]] = {name: [] for name in tools}
    plain_shown: list[float] = []
    flashes = leftovers = 0
    with bench_tui.sleepers(processes) as pids:
        env = {**base, "GPUTOP_BENCH_PIDS": ",".join(map(str, pids))}
        for sample in range(options.repeat):
            names = list(tools)
            turn = sample % len(names)
            for name in names[turn:] + names[:turn]:
                command, verb = tools[name]
                argv = [*command, *([verb] if verb else [])]
                if name == "bare":
                    taken = bench_tui.first_frame_tmux(argv, bare_app.MARKER, 1)
                    times[name].append(taken)
                    continue
                if name == "nvitop":
                    marker, times_shown = bench_tui._marker("nvitop", box)
                    extra = {**env, "GPUTOP_BENCH_TOOL": "nvitop"}
                    times[name].append(bench_tui.first_frame_tmux(argv, marker, times_shown, extra))
                    continue
                result = watch(argv, {**env, "GPUTOP_BENCH_TOOL": "gputop"}, gpus, count)
                seen = result["seen"]
                order = result["order"]
                assert isinstance(seen, dict) and isinstance(order, list)
                times[name].append(seen["textual"])
                if name == "plain":
                    plain_shown.append(seen["plain"])
                    after_plain = order[order.index("plain") :]
                    flashes += after_plain != ["plain", "textual"]
                    leftovers += PLAIN_MARK in str(result["left"])
                    print(f"  plain run {sample + 1}: {' -> '.join(order)}", flush=True)
                    if result["other"]:
                        print(f"    a screen that was neither:\n{result['other']}", flush=True)
    bare = median(times["bare"])
    print(
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}, load {os.getloadavg()[0]:.2f}, median of "
        f"{options.repeat}, 120x40 tmux, {box} box:"
    )
    print(
        f"  plain frame          {median(plain_shown) * 1000:5.0f} ms,"
        f" {median(plain_shown) / bare:.2f}x the bare Textual app"
    )
    for name, samples in times.items():
        what = "Textual's frame after it" if name == "plain" else "first frame"
        print(
            f"  {name:8s} {what:24s} {median(samples) * 1000:5.0f} ms"
            f" (min {min(samples) * 1000:.0f}), {median(samples) / bare:.2f}x the bare app"
        )
    print(f"  plain runs with anything but plain -> Textual after the plain frame: {flashes}")
    print(f"  plain runs leaving the plain frame on the screen after quitting: {leftovers}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["plain-child"]:
        sys.exit(plain_child(sys.argv[2:]))
    if sys.argv[1:2] == ["child"]:
        sys.exit(bench_tui.child(sys.argv[2:]))
    sys.exit(main())
