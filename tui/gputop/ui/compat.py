"""Where gputop leans on Textual's private API: kept to this one module, so a Textual upgrade
that moves it breaks here and nowhere else (a test holds every other module to the public API).

Today that is a Linux terminal driver whose input thread sleeps until there is input,
taking a toast off the screen to put its replacement up (``withdraw_notification``),
a DataTable that forgets what it drew when it measures its columns again, and partial
repaints that start where the change starts (``write_changed_spans_only``).

Textual's ``LinuxDriver`` waits for keys with a 0.1 s timeout, so its input thread wakes ten
times a second for the whole life of the app, keys or not: about a sixth of gputop's CPU on
an idle box. The timeout serves two purposes, and this driver keeps both without the polling:

* a lone Esc is only known to be a key (and not the start of an escape sequence) once
  ``ESCDELAY`` has passed with nothing after it, so the parser must be ticked after input;
  here the thread polls only while input arrived within the last second;
* the thread must notice when the app stops; here stopping also writes to a pipe the
  thread waits on, and that byte alone ends the thread (which also makes quitting up to
  0.1 s faster).
"""

from __future__ import annotations

import os
import selectors
import sys
import time
from codecs import getincrementaldecoder
from collections.abc import Iterable
from typing import IO, Any, TypeVar

from rich.cells import cell_len
from rich.console import Console
from rich.control import Control
from textual import constants
from textual._compositor import ChopsUpdate
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
from textual.notifications import Notification
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

CellType = TypeVar("CellType")


def _isatty(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


KEY_POLL_SECONDS = 0.1
"""How often the parser is ticked while keys are arriving (Textual's own interval)."""

KEY_QUIET_SECONDS = 1.0
"""With no input for this long, the thread waits for input without a timeout."""


class QuietLinuxDriver(LinuxDriver):
    """``LinuxDriver`` with an input thread that blocks instead of polling, and that keeps to
    the terminal when a standard stream is not one.

    ``LinuxDriver`` reads keys from stdin, draws on stderr and takes the size from stdout
    (``shutil``, which also prefers stale ``COLUMNS``/``LINES`` to the terminal). Each of
    those may be a file or a pipe: keys then come from ``/dev/tty`` (a pipe at end of file
    made the input thread spin and no ``q`` ever arrived), drawing goes to stdout when only
    stderr is redirected, and the size is that of the terminal drawn on. (With stdout piped
    the size came out 80x24 while the first frame was drawn at the real width, so cells right
    of column 80 were never cleared: the header's right half stayed on screen twice.)
    """

    _wake_read: int | None = None
    _wake_write: int | None = None
    _tty: int | None = None
    """``/dev/tty``, opened for keys when stdin is not a terminal."""

    def __init__(
        self,
        app: App[object],
        *,
        debug: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
    ) -> None:
        """Textual's driver, on the terminal whichever standard streams were redirected."""
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        if not os.isatty(self.fileno):
            try:
                self._tty = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
            except OSError:
                pass  # the command line refuses to start the TUI without a terminal
            else:
                self.fileno = self._tty
                self.input_tty = True
        if not _isatty(self._file) and _isatty(sys.__stdout__):
            self._file = sys.__stdout__

    def _get_terminal_size(self) -> tuple[int, int]:
        """The size of the terminal drawn on (Textual's own answer when that fails)."""
        file = self._file
        try:
            width, height = os.get_terminal_size(file.fileno()) if file else (0, 0)
        except (AttributeError, ValueError, OSError):
            width = height = 0
        if width and height:
            return width, height
        return super()._get_terminal_size()

    def start_application_mode(self) -> None:
        """Open the pipe that wakes the input thread, then start as usual."""
        if self._wake_read is None:  # a resume after a suspend reuses it
            self._wake_read, self._wake_write = os.pipe()
        super().start_application_mode()  # type: ignore[no-untyped-call]

    def disable_input(self) -> None:
        """Wake the input thread, which then ends, and stop it as usual (join)."""
        if self._wake_write is not None and not self.exit_event.is_set():
            os.write(self._wake_write, b"x")
        super().disable_input()

    def close(self) -> None:
        """Close the wake pipe (and ``/dev/tty``) too."""
        super().close()
        for fd in (self._wake_read, self._wake_write, self._tty):
            if fd is not None:
                os.close(fd)
        self._wake_read = self._wake_write = self._tty = None

    def run_input_thread(self) -> None:
        """Read input and dispatch events until the app stops."""
        wake = self._wake_read
        if wake is None:
            super().run_input_thread()
            return
        fileno = self.fileno
        selector = selectors.SelectSelector()
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        last_input = time.monotonic()
        # A user's longer ESCDELAY must still expire while the thread is polling.
        quiet_after = max(KEY_QUIET_SECONDS, 2 * constants.ESCAPE_DELAY)

        def dispatch(text: str) -> None:
            for event in parser.feed(text):
                self.process_message(event)

        stopping = False
        try:
            while not stopping and not self.exit_event.is_set():
                quiet = time.monotonic() - last_input >= quiet_after
                ready = selector.select(None if quiet else KEY_POLL_SECONDS)
                for key, _mask in ready:
                    if key.fd == wake:
                        # Only ``disable_input`` writes here, before Textual's sets
                        # ``exit_event``: waiting for that event instead blocked this thread
                        # for good in ``select`` when it won the race, and the join with it
                        # (a Fatal error ending the app with no key pressed hung there).
                        os.read(wake, 64)
                        stopping = True
                        continue
                    text = decode(os.read(fileno, 4096))
                    if text:
                        last_input = time.monotonic()
                        dispatch(text)
                for event in parser.tick():
                    self.process_message(event)
            # Whatever the terminal sent before the exit still reaches the app.
            selector.unregister(fileno)
            selector.unregister(wake)
            with selectors.SelectSelector() as final:
                final.register(fileno, selectors.EVENT_READ)
                if final.select(0):
                    text = decode(os.read(fileno, 4096), final=True)
                    if text:
                        dispatch(text)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass


def withdraw_notification(app: App[Any], notification: Notification) -> None:
    """Take ``notification``'s toast off the screen before its timeout.

    Textual offers no public way to replace a toast: a notification posted again under the
    same identity keeps the toast of the first one, text and timer.
    """
    app._unnotify(notification, refresh=False)


class RemeasuredDataTable(DataTable[CellType]):
    """``DataTable`` that repaints with the widths it measured when it went idle.

    DataTable caches each rendered cell under a counter that its updates bump, and measures
    new or changed cells only when it next goes idle, without bumping the counter. A frame
    drawn in between (a resize lays out and draws the screen before the table is idle)
    caches cells cut to the old widths, and they stay on screen until some later update:
    after a resize the columns ran together and COMMAND stayed cut to its label's width.
    """

    _measured: tuple[int, ...] = ()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        super()._update_dimensions(new_rows)
        widths = tuple(column.content_width for column in self.columns.values())
        if widths != self._measured:
            self._measured = widths
            self._update_count += 1
            self.refresh()


def write_changed_spans_only() -> None:
    """Make a partial repaint write from where its region starts, not from the line's start.

    Textual writes a repainted region of a line from the left edge of the widget's piece of
    that line up to the region's right end: a TIME cell that changed in a process row was
    sent with the GPU, PID, USER... cells before it, and a moving sparkline at the right of
    a GPU row with the whole row before it. Here the write starts at the styled run (the
    segment) that holds the region's left edge, so the cells before it are not sent again.
    Cutting at a segment's start, never inside one, keeps wide characters whole.
    """
    ChopsUpdate.render_segments = _render_changed_spans  # type: ignore[method-assign]


def _render_changed_spans(self: ChopsUpdate, console: Console) -> str:
    """``ChopsUpdate.render_segments`` of Textual 8.2, starting each span at its segment."""
    sequences: list[str] = []
    append = sequences.append
    move_to = Control.move_to
    chops = self.chops
    chop_ends = self.chop_ends
    last_y = self.spans[-1][0]
    for y, x1, x2 in self.spans:
        line = chops[y]
        ends = chop_ends[y]
        for end, (x, strip) in zip(ends, line.items(), strict=False):
            if strip is None or x > x2 or end <= x1:
                continue
            if x2 > x >= x1 and end <= x2:
                append(move_to(x, y).segment.text)
                append(strip.render(console))
                continue
            strip = strip.crop(0, min(end, x2) - x)
            if x < x1:
                # Skip the segments that end before the span starts.
                skip = 0
                for segment in strip:
                    width = cell_len(segment.text)
                    if skip + width > x1 - x:
                        break
                    skip += width
                if skip:
                    strip = strip.crop(skip, strip.cell_length)
                    x += skip
            append(move_to(x, y).segment.text)
            append(strip.render(console))
        if y != last_y:
            append("\n")
    return "".join(sequences)
