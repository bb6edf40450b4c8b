"""What gputop sends to its terminal each second on a busy box: about what curses sends.

Over ssh every byte is carried, each tick. The real command runs on a 120x40 pseudo-terminal
on the fake NVML's two busy GPUs (load, power and temperature move every tick); after the
first frame and a warm-up, the bytes written in a few seconds are counted. Before partial
repaints sent only changed cells and colour changes, and sparkline cells summed up five
ticks, the same box wrote about 1,900 bytes a second (200 after); nvitop writes about 450
on one GPU.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time

from support.command import ROOT, gputop_command

COLUMNS, ROWS = 120, 40
WARMUP_S = 2.0
MEASURE_S = 10.0
QUIET_BYTES = 2_000
"""Less than a second's output once start-up's frames are written: a whole frame is about
20 KB, a tick here under 1 KB."""
BYTES_PER_SECOND = 500
"""Two busy GPUs: six moving values, their sparklines' newest cells, the clock, and each
sparkline moving once in five seconds."""


def read_for(master: int, seconds: float) -> bytes:
    """What the terminal received in ``seconds``."""
    out = bytearray()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([master], [], [], min(left, 0.1))[0]:
            try:
                out += os.read(master, 1 << 16)
            except OSError:
                break
    return bytes(out)


def settle(master: int, seconds: float = 30) -> None:
    """Read until a second passes with a tick's output, not start-up's frames: on a loaded
    machine the first frames (written two or three times as the app starts) can come
    seconds apart."""
    deadline = time.monotonic() + seconds
    while len(read_for(master, 1.0)) >= QUIET_BYTES:
        assert time.monotonic() < deadline, "the output never settled"


def shown(sent: bytes) -> str:
    """What ``sent`` put on the screen, without its escape sequences: for a failure."""
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", sent).decode(errors="replace")[:800]


def test_a_busy_box_costs_few_bytes_a_second() -> None:
    command, env = gputop_command("busy-2", TERM="xterm-256color", COLORTERM="truecolor")
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env, start_new_session=True
    )
    os.close(slave)
    try:
        seen = bytearray()
        deadline = time.monotonic() + 30
        while b"TEMP" not in seen and time.monotonic() < deadline:
            seen += read_for(master, 0.2)
        assert b"TEMP" in seen, seen[-500:]
        settle(master)
        read_for(master, WARMUP_S)
        started = time.monotonic()
        sent = read_for(master, MEASURE_S)
        per_second = len(sent) / (time.monotonic() - started)
        # The values did move on screen: the numbers were sent again, tick after tick.
        assert sent.count(b"\x1b[") > MEASURE_S * 4
        assert per_second < BYTES_PER_SECOND, f"{per_second:.0f} bytes/s: {shown(sent)!r}"
        os.write(master, b"q")
        assert process.wait(10) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(master)
