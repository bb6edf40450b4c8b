"""Where `--replay` reads from: a path, or `-` (standard input); and whether it is followed.

A pipe or stdin is followed by default (`ssh gpu-box nvidia-smi -q -x -l 1 | gputop --replay -`
is a live view of a machine where gputop is not installed); a regular file only with
`--follow` (`nvidia-smi -q -x -l 1 > run.xml` still writing).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gputop.cli.opening import Opening, wait_for_opening, waiting_message
from gputop.cli.options import Options
from gputop.errors import BadArguments
from gputop.sources.recordings.formats import AnyRecording, is_pipe
from gputop.sources.recordings.formats import open_recording as open_any

STDIN = Path("-")
"""`--replay -`: the recording comes on standard input."""

_STDIN_PATH = Path("/dev/stdin")


def reads_stdin(options: Options) -> bool:
    """`--replay -`."""
    return options.replay == STDIN


@dataclass(frozen=True)
class RecordingInput:
    """What `--replay` names, resolved: the path to open, whether it is followed, and how
    to name it to the user."""

    path: Path
    follow: bool
    name: str
    pipe: bool
    """Opening or reading it can wait for ever (a FIFO with no writer, stdin)."""
    format: str | None = None
    """--format: the format to read it as (else told by its content)."""
    query_gpu: str | None = None
    """--query-gpu: the columns of a `noheader` CSV log."""
    apps: Path | None = None
    """--apps: the `--query-compute-apps` log beside it."""

    @property
    def may_wait(self) -> bool:
        """Opening it can keep gputop waiting: a pipe, or a followed file still empty."""
        return self.pipe or self.follow

    def waiting_message(self) -> str:
        """What gputop waits for while this opens."""
        if self.pipe and self.name != "standard input":
            return waiting_message(self.path)
        return f"waiting for the first nvidia-smi document on {self.name}"

    def open(self) -> AnyRecording:
        """Open it (waiting, when followed, for the first document), in its format: told by its
        content, or `--format`'s.

        Raises:
            BadCapture: the recording cannot be read.
        """
        return open_any(
            self.path,
            follow=self.follow,
            format_name=self.format,
            query_gpu=self.query_gpu,
            apps=self.apps,
        )


def recording_input(options: Options) -> RecordingInput:
    """Resolve `--replay` (and `--follow`).

    Raises:
        BadArguments: `--replay -` with a terminal on stdin.
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
    pipe = is_pipe(path)
    name = "standard input" if reads_stdin(options) else str(options.replay)
    return RecordingInput(
        path, options.follow or pipe, name, pipe, options.format, options.query_gpu, options.apps
    )


def open_recording(options: Options, notice: Callable[[str], None]) -> AnyRecording:
    """Open `--replay`'s recording, followed when asked or when it is a pipe.

    What may keep gputop waiting (a FIFO with no writer, a pipe or followed file with no
    document yet) opens on a thread, and ``notice`` is told once after a second.

    Raises:
        BadArguments: `--replay -` with a terminal on stdin.
        BadCapture: the recording cannot be read.
    """
    source = recording_input(options)
    if not source.may_wait:
        return source.open()
    return wait_for_opening(Opening(source.open), notice, source.waiting_message())
