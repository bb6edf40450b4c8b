"""The thread under both polling loops (the box's ``PollLoop`` and the fleet's
``FleetPollLoop``): a daemon thread woken at once by a request or by ``stop``, that hands an
unexpected error to the UI instead of dying silently."""

from __future__ import annotations

import threading
from collections.abc import Callable

from gputop.pipeline.clock import Clock, SystemClock


class LoopThread:
    """A loop (``_loop``, written by the subclass) on its own daemon thread.

    ``_wake`` cuts a wait short (a request queued, or ``stop``); ``_stopping`` says the
    loop should end; an exception that ends the loop is kept in ``failure`` and handed to the
    ``on_failure`` given to ``_start_thread`` unless the loop was being stopped.
    """

    def __init__(self, *, clock: Clock | None, name: str) -> None:
        self._clock: Clock = clock or SystemClock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._on_failure: Callable[[BaseException], None] | None = None
        self.failure: BaseException | None = None
        """An unexpected exception that ended the loop, if any."""

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _start_thread(self, on_failure: Callable[[BaseException], None] | None) -> None:
        self._on_failure = on_failure
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> bool:
        """Ask the thread to end and wait up to ``timeout`` s; True when it has ended.

        A call stuck in a driver or on the network cannot be interrupted; the thread is a
        daemon, so it does not keep the process alive (the source's own timeouts bound it).
        """
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as error:
            self.failure = error
            if self._on_failure is not None and not self._stopping.is_set():
                self._on_failure(error)

    def _loop(self) -> None:
        raise NotImplementedError
