"""Where `--replay` reads from: a path, or `-` (standard input); and whether it is followed.

A pipe or stdin is followed by default (`ssh gpu-box nvidia-smi -q -x -l 1 | gputop --replay -`
is a live view of a machine where gputop is not installed); a regular file only with
`--follow` (`nvidia-smi -q -x -l 1 > run.xml` still writing).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from gputop.cli.options import Options
from gputop.errors import BadArguments
from gputop.sources.smi.recording import Recording

STDIN = Path("-")
"""`--replay -`: the recording comes on standard input."""

_STDIN_PATH = Path("/dev/stdin")


def reads_stdin(options: Options) -> bool:
    """`--replay -`."""
    return options.replay == STDIN


def _is_pipe(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # opening it says what is wrong
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def open_recording(options: Options) -> Recording:
    """Open `--replay`'s recording, followed when asked or when it is a pipe.

    Waiting for a followed recording's first document says so on stderr after a second.

    Raises:
        BadArguments: `--replay -` with a terminal on stdin.
        BadCapture: the recording cannot be read.
    """
    assert options.replay is not None
    path = options.replay
    if reads_stdin(options):
        if sys.stdin is None or sys.stdin.isatty():
            raise BadArguments(
                "--replay -: standard input is a terminal; pipe a capture in, e.g. "
                "ssh gpu-box nvidia-smi -q -x -l 1 | gputop --replay -"
            )
        path = _STDIN_PATH
    follow = options.follow or _is_pipe(path)
    name = "standard input" if reads_stdin(options) else str(options.replay)

    def waiting() -> None:
        print(f"gputop: waiting for the first nvidia-smi document on {name}", file=sys.stderr)

    return Recording.open(path, follow=follow, waiting=waiting)


def keys_from_the_terminal() -> None:
    """After `--replay -`, read the TUI's keys from the terminal, not from the recording.

    Textual reads keys from file descriptor 0, which is the pipe; the recording has its own
    descriptor for it by now, so 0 is pointed at the controlling terminal, as `less` does.

    Raises:
        BadArguments: there is no terminal to read keys from.
    """
    try:
        terminal = os.open("/dev/tty", os.O_RDWR)
    except OSError:
        raise BadArguments(
            "--replay -: no terminal to read keys from; use --once, --json or --count N"
        ) from None
    try:
        os.dup2(terminal, 0)
    finally:
        os.close(terminal)
