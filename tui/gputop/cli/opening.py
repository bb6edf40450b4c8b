"""Open a recording that may keep gputop waiting: a FIFO with no writer, or a pipe.

``open()`` of a FIFO blocks until a writer opens it, and reading a pipe blocks until data
comes: the recording is opened on a thread, and whoever waits is told what for (a line on
stderr headless, a waiting screen in the TUI) instead of a blank screen.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from gputop.sources.recordings.formats import AnyRecording
from gputop.sources.recordings.formats import open_recording as open_any

WAIT_NOTICE_AFTER = 1.0
"""Seconds a pipe may keep the reader waiting before it says so."""


def is_pipe(path: Path) -> bool:
    """A FIFO or pipe (``/dev/stdin`` under ``|``): opening or reading it can wait for ever."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False  # Recording.open says what is wrong with it


def waiting_message(path: Path) -> str:
    """What a reader blocked on ``path`` is waiting for."""
    return f"waiting for data on a pipe: {path} (nothing has been written to it yet)"


class Opening:
    """Opening a recording (``Recording.open``, by default) on a daemon thread.

    The thread is a daemon: a FIFO nobody ever writes to holds it in ``open()`` for ever, and
    it must not keep the process from exiting when the user gives up.
    """

    def __init__(self, open_recording: Callable[[], AnyRecording]) -> None:
        self._open_recording = open_recording
        self._done = threading.Event()
        self._recording: AnyRecording | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._open, name="gputop-open", daemon=True).start()

    def _open(self) -> None:
        try:
            self._recording = self._open_recording()
        except BaseException as error:  # handed to the waiting thread, which raises it
            self._error = error
        finally:
            self._done.set()

    def done(self) -> bool:
        """True once the recording is open (or failed to)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`done`, at most ``timeout`` seconds; returns :meth:`done`."""
        return self._done.wait(timeout)

    def result(self) -> AnyRecording:
        """The open recording (call once :meth:`done`).

        Raises:
            BadCapture: what ``Recording.open`` raised.
        """
        if self._error is not None:
            raise self._error
        assert self._recording is not None
        return self._recording


def open_recording(
    path: Path,
    notice: Callable[[str], None],
    format_name: str | None = None,
    query_gpu: str | None = None,
    apps: Path | None = None,
) -> AnyRecording:
    """The recording at ``path`` in its format (or ``format_name``'s); when a pipe keeps it
    waiting a second, ``notice`` is told once, then this waits on (Ctrl+C still ends it)."""
    if not is_pipe(path):
        return open_any(path, format_name=format_name, query_gpu=query_gpu, apps=apps)
    return wait_for_opening(
        Opening(lambda: open_any(path, format_name=format_name, query_gpu=query_gpu, apps=apps)),
        notice,
        waiting_message(path),
    )


def wait_for_opening(opening: Opening, notice: Callable[[str], None], message: str) -> AnyRecording:
    """What ``opening`` opens; ``notice`` is told ``message`` once if that takes a second."""
    if not opening.wait(WAIT_NOTICE_AFTER):
        notice(message)
        # In slices: a wait with no timeout would leave Ctrl+C unanswered on some platforms.
        while not opening.wait(0.25):
            pass
    return opening.result()
