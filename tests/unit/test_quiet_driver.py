"""The terminal driver's input thread (``gputop.ui.compat.QuietLinuxDriver``) ends when the
app stops, whichever thread gets there first."""

from __future__ import annotations

import asyncio
import os
import selectors
import threading
import time
from collections.abc import Iterator

import pytest
from textual import constants
from textual.app import App

from gputop.ui import compat
from gputop.ui.compat import QuietLinuxDriver


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[QuietLinuxDriver]:
    """A driver reading keys from a pipe, its input thread not started yet."""
    # No key for a while: the thread waits in select with no timeout, as it does on an idle
    # screen (an app that ends with no key pressed: a driver failing to start).
    monkeypatch.setattr(compat, "KEY_QUIET_SECONDS", 0.0)
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.0)

    async def make() -> QuietLinuxDriver:
        return QuietLinuxDriver(App())  # a driver is made on the app's event loop

    driver = asyncio.run(make())
    keys_read, keys_write = os.pipe()
    driver.fileno = keys_read
    driver._wake_read, driver._wake_write = os.pipe()
    yield driver
    driver.exit_event.set()
    os.write(driver._wake_write, b"x")  # a thread still blocked wakes, sees the exit, ends
    thread = driver._key_thread
    if thread is not None:
        thread.join(2.0)
    for fd in (keys_read, keys_write, driver._wake_read, driver._wake_write, driver._tty):
        if fd is not None:
            os.close(fd)


def test_the_input_thread_ends_when_it_wakes_before_the_exit_event_is_set(
    driver: QuietLinuxDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``disable_input`` writes the wake byte, then Textual's sets ``exit_event`` and joins
    the thread. A thread that read the byte in between went back to ``select`` with no
    timeout for good, and the join with it: under load, gputop hung on its last frame when
    a slow driver start ended in an error (``--gpu 9``) instead of exiting 2."""
    wake = driver._wake_read
    woken = threading.Event()
    waits_again = threading.Event()

    class Watched(selectors.SelectSelector):
        """Says when the thread, once woken, waits again with no timeout."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            if timeout is None and woken.is_set():
                waits_again.set()
            ready = super().select(timeout)
            if any(key.fd == wake for key, _mask in ready):
                woken.set()
            return ready

    monkeypatch.setattr(selectors, "SelectSelector", Watched)  # the one compat makes
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    driver._key_thread = thread
    thread.start()

    def between_the_wake_and_the_exit_event() -> None:
        # The app's thread loses the CPU here, and the input thread runs on.
        deadline = time.monotonic() + 5.0
        while thread.is_alive() and not waits_again.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)

    monkeypatch.setattr(driver, "_disable_mouse_support", between_the_wake_and_the_exit_event)
    rescued: list[bool] = []

    def rescue() -> None:
        rescued.append(True)
        assert driver._wake_write is not None
        os.write(driver._wake_write, b"x")

    timer = threading.Timer(3.0, rescue)  # else a failing test would hang the suite
    timer.start()
    try:
        driver.disable_input()
    finally:
        timer.cancel()
    assert woken.is_set()
    assert not rescued, "the input thread slept through the stop; the join waited for it"
    assert not thread.is_alive()
