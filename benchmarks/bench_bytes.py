"""What a TUI writes to its terminal each tick, attributed to parts of the screen.

Runs gputop (or a peer from the peers' venv, see README) on one of ``bench_tui``'s boxes, with
live ``sleep`` processes, on a 120x40 pseudo-terminal; records everything written after a
warm-up and splits it at each cursor move (a repaint writes a run of cells after a move).
Each run is attributed by where it lands and what it holds:

* ``sparkline``: cells that are all bar characters (``▁`` to ``█``) or spaces among them;
* ``header``: the first screen row (the clock, the host line);
* ``panels``: other runs above the process table's column titles;
* ``processes``: runs from the process table's column titles down;
* ``footer``: the last row;
* ``frame``: what is not a run of cells (synchronised-update brackets, the cursor's
  park, resets).

Each part is split into the cells' text (UTF-8 bytes of what a person sees) and the escape
sequences around them (cursor moves, colours). Usage::

    .venv/bin/python benchmarks/bench_bytes.py --box 1gpu --seconds 30
    .venv/bin/python benchmarks/bench_bytes.py --box 4x4090 --tool nvitop
"""

from __future__ import annotations

import argparse
import os
import re
import select
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import bench_tui

CSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")
MOVE = re.compile(rb"\x1b\[(\d+);(\d+)H")
OSC = re.compile(rb"\x1b\].*?(?:\x1b\\|\x07)")
CODES = re.compile(CSI.pattern + b"|" + OSC.pattern)
BARS = set(" ▁▂▃▄▅▆▇█")
PROCESS_TITLES = ("PID", "COMMAND")
"""Words of the process table's title row (gputop's and nvitop's)."""


def record(command: list[str], env: dict[str, str], seconds: float, warmup: float) -> bytes:
    """What ``command`` writes to a 120x40 pty in ``seconds`` after ``warmup`` seconds."""
    master, process, started = bench_tui.start_on_pty(command, bench_tui._env(env))
    out = bytearray()
    try:
        while time.perf_counter() - started < warmup + seconds:
            if not select.select([master], [], [], 0.05)[0]:
                continue
            try:
                data = os.read(master, 1 << 16)
            except OSError:
                break
            for _ in range(data.count(bench_tui.CURSOR_QUERY)):
                os.write(master, b"\x1b[1;1R")
            if time.perf_counter() - started >= warmup:
                out += data
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        os.close(master)
    return bytes(out)


def screen_rows(data: bytes) -> list[str]:
    """The screen's rows after ``data`` (a toy terminal: cursor moves and text only)."""
    rows = [[" "] * bench_tui.COLUMNS for _ in range(bench_tui.ROWS)]
    for row, col, text in runs(data):
        for offset, char in enumerate(text):
            if 0 <= row < bench_tui.ROWS and 0 <= col + offset < bench_tui.COLUMNS:
                rows[row][col + offset] = char
    return ["".join(row) for row in rows]


def runs(data: bytes) -> list[tuple[int, int, str]]:
    """(row, column, visible text) of each run of cells written after a cursor move."""
    found = []
    moves = list(MOVE.finditer(data))
    for number, move in enumerate(moves):
        end = moves[number + 1].start() if number + 1 < len(moves) else len(data)
        text = CSI.sub(b"", OSC.sub(b"", data[move.end() : end])).decode("utf-8", "replace")
        found.append((int(move.group(1)) - 1, int(move.group(2)) - 1, text.split("\n")[0]))
    return found


def _part(text: str, row: int, table_row: int) -> str:
    if not text:
        return "frame"
    if BARS.issuperset(text) and set(text) - {" "}:
        return "sparkline"
    if row == 0:
        return "header"
    if row == bench_tui.ROWS - 1:
        return "footer"
    if 0 <= table_row <= row:
        return "processes"
    return "panels"


def attribute(data: bytes, table_row: int) -> Counter[str]:
    """Bytes per part (see the module's text), each as ``<part> text`` and ``<part> codes``;
    a run's styled pieces are attributed one by one, each with the codes before it."""
    parts: Counter[str] = Counter()
    moves = list(MOVE.finditer(data))
    parts["frame codes"] += moves[0].start() if moves else len(data)
    for number, move in enumerate(moves):
        end = moves[number + 1].start() if number + 1 < len(moves) else len(data)
        row = int(move.group(1)) - 1
        codes = move.end() - move.start()
        at = move.end()
        for escape in CODES.finditer(data, move.end(), end):
            piece = data[at : escape.start()]
            if piece.strip(b"\r\n"):
                part = _part(piece.decode("utf-8", "replace").strip("\r\n"), row, table_row)
                parts[f"{part} text"] += len(piece)
                parts[f"{part} codes"] += codes
                codes = 0
            else:
                codes += len(piece)
            codes += escape.end() - escape.start()
            at = escape.end()
        piece = data[at:end]
        text = piece.decode("utf-8", "replace").strip("\r\n")
        part = _part(text, row, table_row)
        parts[f"{part} text"] += len(piece) if text else 0
        parts[f"{part} codes"] += codes + (0 if text else len(piece))
    return parts


def main() -> int:
    """Record one tool on one box and print the bytes per second by part."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--box", choices=list(bench_tui.BOXES), default="1gpu")
    parser.add_argument("--tool", default="gputop", help="gputop, nvitop or gpustat")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("--age", type=float, default=60.0)
    parser.add_argument("--peers-python", type=Path, default=bench_tui.PEERS_PYTHON)
    parser.add_argument("--code", type=Path, help="another checkout's tree to run gputop from")
    parser.add_argument("--save", type=Path, help="write the recorded bytes here")
    options = parser.parse_args()
    count = options.processes or {"1gpu": 2, "4x4090": 3, "8x7": 200}[options.box]
    bench_tui._TICKS["GPUTOP_BENCH_TICKS"] = str(int(options.seconds + options.warmup + 30))
    command, env = bench_tui._tool_command(options.tool, options)
    if options.code is not None:
        env["PYTHONPATH"] = str(options.code.resolve() / "tui")
    with bench_tui.sleepers(count) as pids:
        time.sleep(max(0.0, options.age - options.warmup))
        env.update(
            GPUTOP_BENCH_BOX=options.box,
            GPUTOP_BENCH_PROCESSES=str(count),
            GPUTOP_BENCH_PIDS=",".join(map(str, pids)),
        )
        # The first frame (to find the table's rows) and then the measured window.
        first = record(command, env, 4.0, 0.0)
        data = record(command, env, options.seconds, options.warmup)
    if options.save is not None:
        options.save.write_bytes(data)
    rows = screen_rows(first)
    table_row = next(
        (n for n, row in enumerate(rows) if all(word in row for word in PROCESS_TITLES)), -1
    )
    parts = attribute(data, table_row)
    total = sum(parts.values())
    print(
        f"{options.tool} on {options.box} ({count} processes), {options.seconds:.0f} s after"
        f" {options.warmup:.0f} s: {total / options.seconds:.0f} bytes/s"
        f" (process table from row {table_row})"
    )
    for name in sorted({key.rsplit(" ", 1)[0] for key in parts}):
        text, codes = parts[f"{name} text"], parts[f"{name} codes"]
        print(
            f"  {name:10s} {(text + codes) / options.seconds:7.0f} bytes/s"
            f"  (cells {text / options.seconds:6.0f}, escapes {codes / options.seconds:6.0f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
