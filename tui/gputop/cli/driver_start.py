"""Opening the live source on a thread of its own, so that a slow driver start is waited for
in plain sight.

Where the GPUs are not kept initialised, ``nvmlInit`` sets them up first: seconds, by
NVIDIA's driver persistence notes, and tens of seconds on a box in trouble. Waiting for it on
the main thread left a blank terminal and keys that did nothing. So the source is opened on a
thread: the TUI starts at once and says "waiting for the NVIDIA driver (N s)" in its header
(``WaitingFeed``), ``q`` quits at once, and a headless run says on stderr that it waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from gputop.errors import Fatal, GputopError, Waiting
from gputop.model import Snapshot
from gputop.sources.base import Source

HEADLESS_NOTE_AFTER = 1.0
"""Seconds of waiting for the driver before a headless run says so on stderr."""

WAITING_FOR = "waiting for the NVIDIA driver"


class DriverStart:
    """``open_source()`` running on a daemon thread (a stuck driver never keeps gputop alive)."""

    def __init__(
        self, open_source: Callable[[], Source], clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Start opening at once."""
        self._clock = clock
        self._began = clock()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._source: Source | None = None
        self._error: BaseException | None = None
        self._abandoned = False
        self._thread = threading.Thread(
            target=self._open, args=(open_source,), name="gputop-open", daemon=True
        )
        self._thread.start()

    def _open(self, open_source: Callable[[], Source]) -> None:
        try:
            source = open_source()
        except BaseException as error:  # handed over to whoever asks for the result
            self._error = error
        else:
            with self._lock:
                self._source = source
                abandoned = self._abandoned
            if abandoned:
                source.close()  # gputop quit while the driver started: nobody will use it
        self._done.set()

    @property
    def waited(self) -> float:
        """Seconds since opening began."""
        return self._clock() - self._began

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` s (for good with None; Ctrl-C still interrupts); done?"""
        return self._done.wait(timeout)

    def result(self) -> Source:
        """The open source (waiting for it first).

        Raises:
            Whatever opening raised (NoDriver, NoPermission...).
        """
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._source is not None
        return self._source

    def abandon(self) -> None:
        """Nobody will use the source: close it now if it is open, or once it opens."""
        with self._lock:
            self._abandoned = True
            source = self._source
        if source is not None:
            source.close()

    def wait_saying_so(self, err: TextIO, after: float = HEADLESS_NOTE_AFTER) -> Source:
        """The open source; after ``after`` s of waiting, one line on ``err`` says why."""
        if not self.wait(after):
            print(f"gputop: {WAITING_FOR} to start…", file=err, flush=True)
        return self.result()


class WaitingFeed:
    """A Source for the TUI over a driver still starting.

    Until the driver is open each poll raises ``Waiting`` (the header shows it, the keys
    work); then the first snapshot goes through ``check`` (``--gpu`` must name something,
    ``--record`` must be a recording of this machine), as the command line checks it before a
    fast start, and polls go to the source. Failing to open, or failing a check, is
    ``Fatal``: the TUI ends and the command says why.
    """

    def __init__(
        self, start: DriverStart, check: Callable[[Snapshot], object] | None = None
    ) -> None:
        """Wait on ``start``; ``check`` the first snapshot (raising GputopError)."""
        self._start = start
        self._check = check
        self._source: Source | None = None

    def poll(self) -> Snapshot:
        """The next snapshot once the driver is open.

        Raises:
            Waiting: the driver is still starting.
            Fatal: it failed to, or the first snapshot failed ``check``.
        """
        source = self._source
        if source is None:
            if not self._start.wait(0):
                raise Waiting(f"{WAITING_FOR} ({self._start.waited:.0f} s)")
            try:
                source = self._source = self._start.result()
            except GputopError as error:
                raise Fatal(error) from None
            except Exception as error:
                cause = GputopError(f"{type(error).__name__}: {error}")
                cause.exit_code = 1
                raise Fatal(cause) from None
        snapshot = source.poll()
        if self._check is not None:
            # The first snapshot that arrives is checked, even when the first poll failed.
            check, self._check = self._check, None
            try:
                check(snapshot)
            except GputopError as error:
                raise Fatal(error) from None
        return snapshot

    @property
    def note(self) -> str | None:
        """The opened source's ``note`` (see ``LiveFeed``), once there is one."""
        return getattr(self._source, "note", None)

    def close(self) -> None:
        """Close the source, now or when it opens: never wait for a stuck driver here."""
        self._start.abandon()
