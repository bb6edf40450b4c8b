"""Where gputop leans on Textual's private API: kept to this module (and ``serve_compat`` for
textual-serve's), so a Textual upgrade that moves it breaks here and nowhere else
(``tests/unit/test_import_hygiene.py`` walks every other module's attribute accesses).

Every patch is a :class:`Patch` in :data:`PATCHES`: what it fixes or saves, its measured gain
(``benchmarks/README.md``, "Textual's patches, each side by side with stock Textual"), and the
Textual release it was written against. :func:`enabled` says whether it applies: never under
``GPUTOP_STOCK_TEXTUAL=1`` (stock Textual, every patch off; a comma list of patch names turns
those off alone, which is how each one's gain is measured), and not when the installed Textual
is another release or lacks a private name the patch reaches for (``Patch.needs``; this
module binds Textual's private names only once a patch that needs them applies, so it still
imports when one has moved), which is then said in one line on stderr and the stock behaviour
is used.

The patches: a Linux terminal driver whose input thread sleeps until there is input
(``QuietLinuxDriver``), taking a toast off the screen to put its replacement up
(``withdraw_notification``), a DataTable that forgets what it drew when it measures its
columns again (``RemeasuredDataTable``), renders again only the cells that changed and keeps
about a screenful of what it drew (``CellCachedDataTable``), a screen that is not styled
a second time as it is first shown (``StyledOnceScreen``), partial repaints that write only
the changed cells with colour changes only (``write_changed_spans_only``) and render only the
lines a change covers (``render_dirty_lines_only``), handed to the screen by the widget's
owner at once (``repaint_regions``). A patch whose gain is under 2 % of a tick's CPU or 1 MiB
of RSS goes (issue 30), unless it pays at the first frame or at a key press: key names
looked up without ``unicodedata`` (0.7 MiB) went so.

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
from typing import IO, TYPE_CHECKING, Any, Self, TypeVar

from rich.cells import cell_len
from rich.color import ColorSystem
from rich.console import COLOR_SYSTEMS, Console
from rich.segment import Segment
from rich.style import Style
from textual import constants, events
from textual.app import App
from textual.cache import LRUCache
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.geometry import Region
from textual.notifications import Notification
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from gputop.patches import Patch, enabled
from gputop.ui.pen import Pen

if TYPE_CHECKING:
    # Textual's private names are bound only once a patch that needs them applies
    # (``Patch.needs``): a release that moved one turns those patches off, in one line.
    from textual._compositor import ChopsUpdate, Compositor
    from textual.widgets._data_table import RowRenderables

CellType = TypeVar("CellType")

TEXTUAL = "8.2"
"""The Textual release series every patch here was written against (8.2.8 tested)."""

QUIET_DRIVER = Patch(
    "quiet_driver",
    fixes="the input thread blocks until a key arrives instead of waking ten times a second; "
    "keys come from /dev/tty and frames go to the terminal when a standard stream is "
    "redirected, sized as the terminal drawn on",
    gain="the input thread's 0.07-0.20 % of a core to 0.00 % (2-15 % of a tick, 8x7 and "
    "4x4090 boxes); the redirected streams are fixes (no keys at all from a piped stdin)",
    package="textual",
    written_for=TEXTUAL,
    needs=(
        "textual._xterm_parser:XTermParser",
        "textual._parser:ParseError",
        "textual.drivers.linux_driver:LinuxDriver._get_terminal_size",
    ),
)
WITHDRAW_TOAST = Patch(
    "withdraw_toast",
    fixes="a toast of a kind replaces the previous one (Textual has no public way to take "
    "one toast down): a held key no longer stacks toasts over the header",
    gain="not a speed patch; stock: toasts stack until their timeouts",
    package="textual",
    written_for=TEXTUAL,
    needs=("textual.app:App._unnotify",),
)
REMEASURED_TABLE = Patch(
    "remeasured_table",
    fixes="a DataTable drawn between an update and its measuring on idle keeps cells cut to "
    "the old widths (after a resize the columns ran together, COMMAND cut to its label)",
    gain="not a speed patch: a drawing fix",
    package="textual",
    written_for=TEXTUAL,
    needs=("textual.widgets:DataTable._update_dimensions",),
)
CELL_CACHE = Patch(
    "cell_cache",
    fixes="DataTable renders every visible cell through Rich again after any update_cell; "
    "a cell's render is kept until that cell (or the table's structure) changes",
    gain="the UI thread 0.26 % of a core, 8 % of a tick, on the 8x7 box with 200 live processes",
    package="textual",
    written_for=TEXTUAL,
    needs=(
        "textual.widgets:DataTable._render_cell",
        "textual.widgets:DataTable._get_row_renderables",
    ),
)
TABLE_CACHES = Patch(
    "table_caches",
    fixes="DataTable keeps up to 1,000 rendered lines and rows and 10,000 cells, most of them "
    "of updates long past (their keys hold an update counter never seen again); here a "
    "screenful and a margin of each",
    gain="RSS 2.9 MiB on the 8x7 box with 200 processes a minute in (54.8 -> 51.9 MiB), 0.6 "
    "MiB at 20 s, 0.1-0.6 MiB more since rows' renderables are bounded to the lines, and "
    "0.1-0.3 MiB more at 28 s since the bound is one screenful, not two (47.3-47.4 -> 47.1-47.2); "
    "nothing on boxes with a few processes, whose table seldom changes",
    package="textual",
    written_for=TEXTUAL,
)
STYLED_ONCE = Patch(
    "styled_once",
    fixes="the main screen's first ScreenResume styles every node a second time",
    gain="31 M instructions of the first frame on 4 GPUs, 2.2 % of it (1,413 -> 1,382 M)",
    package="textual",
    written_for=TEXTUAL,
    needs=("textual.screen:Screen._on_screen_resume",),
)
CHANGED_SPANS = Patch(
    "changed_spans",
    fixes="a partial repaint writes each line from the widget's left edge, with full colour "
    "codes around every run; here only the changed cells, each colour change once",
    gain="terminal bytes 30x fewer on the 8x7 box (11,135 -> 368 a second), 14x on the "
    "4x4090 one, where it also saves 10 % of a tick's CPU",
    package="textual",
    written_for=TEXTUAL,
    needs=("textual._compositor:ChopsUpdate.render_segments",),
)
DIRTY_LINES = Patch(
    "dirty_lines",
    fixes="a partial repaint renders every line of every widget inside the box around all "
    "changes; here only the widgets and lines a change covers",
    gain="0.13-0.27 % of a core, 15-20 % of a tick, on the 4x RTX 4090 box (none seen on "
    "the 8x7 one)",
    package="textual",
    written_for=TEXTUAL,
    needs=(
        "textual._compositor:Compositor.render_partial_update",
        "textual._compositor:Compositor._regions_to_spans",
        "textual._compositor:ChopsUpdate",
    ),
)
DIRECT_REPAINT = Patch(
    "direct_repaint",
    fixes="a panel's refresh goes through its own message pump and an Update message; here "
    "the screen is handed the regions at once",
    gain="0.13-0.27 % of a core, 15-20 % of a tick, on the 4x RTX 4090 box (per tick 10 "
    "messages and 11 wake-ups on the UI thread -> 2 and 2); none seen on the 8x7 box",
    package="textual",
    written_for=TEXTUAL,
    needs=("textual.widget:Widget._set_dirty",),
)
PATCHES: tuple[Patch, ...] = (
    QUIET_DRIVER,
    WITHDRAW_TOAST,
    REMEASURED_TABLE,
    CELL_CACHE,
    TABLE_CACHES,
    STYLED_ONCE,
    CHANGED_SPANS,
    DIRTY_LINES,
    DIRECT_REPAINT,
)
"""Every patch of Textual, for ``GPUTOP_STOCK_TEXTUAL``'s names and the tests."""


def apply_patches() -> None:
    """Patch Textual's classes process-wide, each patch that applies (``patches.enabled``):
    partial repaints. Called as an app picks its driver, before it draws."""
    if enabled(CHANGED_SPANS):
        write_changed_spans_only()
    if enabled(DIRTY_LINES):
        render_dirty_lines_only()


def driver_class(chosen: type[Driver]) -> type[Driver]:
    """The driver to run with, Textual's ``chosen`` one: the quiet driver in place of
    Textual's Linux one, when that patch applies."""
    if chosen is LinuxDriver and enabled(QUIET_DRIVER):
        return QuietLinuxDriver
    return chosen


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
        # Deferred: Textual's private parser, reached for once this driver is chosen.
        from textual._parser import ParseError
        from textual._xterm_parser import XTermParser

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
    if enabled(WITHDRAW_TOAST):
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
        if not enabled(REMEASURED_TABLE):
            return
        widths = tuple(column.content_width for column in self.columns.values())
        if widths != self._measured:
            self._measured = widths
            self._update_count += 1
            self.refresh()


CACHE_MARGIN_LINES = 8
"""Lines a table's render caches keep beyond its height (``TABLE_CACHES``): room for what
partial repaints supersede until the next whole frame (``_bound_caches``)."""


class CellCachedDataTable(RemeasuredDataTable[CellType]):
    """``DataTable`` that renders again only the cells that changed.

    DataTable forgets every cell it rendered on every ``update_cell`` (its caches are keyed
    by one update counter), so a tick that changes the TIME cells re-renders every visible
    cell through Rich. Here a cell's render is keyed by the table's structure (rows, order,
    widths) and that cell's own last update (``CELL_CACHE``).
    """

    _value_updates = 0
    """``update_cell`` calls that changed a value only (no widths): not structural."""
    _stamps: dict[tuple[RowKey | None, ColumnKey | None], int] | None = None
    _cell_cache: bool | None = None
    """Whether ``CELL_CACHE`` applies, decided at the first update."""
    _bounding: bool | None = None
    """Whether ``TABLE_CACHES`` applies, decided at the first render."""
    cell_renders = 0
    """Cells rendered through Rich, not from the cache (tests read it)."""
    _cells_asked = 0
    """Calls of ``_get_row_renderables``, which DataTable makes to render a cell anew."""

    def _caching(self) -> bool:
        if self._cell_cache is None:
            self._cell_cache = enabled(CELL_CACHE)
        return self._cell_cache

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellType,
        *,
        update_width: bool = False,
    ) -> None:
        """As DataTable's, noting which cell changed so that only its render is redone."""
        super().update_cell(row_key, column_key, value, update_width=update_width)
        if update_width or not self._caching():
            return
        self._value_updates += 1
        if self._stamps is None:
            self._stamps = {}
        row = RowKey(row_key) if isinstance(row_key, str) else row_key
        column = ColumnKey(column_key) if isinstance(column_key, str) else column_key
        # A stamp is never reused, so no render made before this update can match it.
        self._stamps[(row, column)] = self._update_count

    def remove_row(self, row_key: RowKey | str) -> None:
        """As DataTable's, forgetting the row's cell stamps."""
        super().remove_row(row_key)
        if self._stamps:
            row = RowKey(row_key) if isinstance(row_key, str) else row_key
            for column in self.columns:
                self._stamps.pop((row, column), None)

    def clear(self, columns: bool = False) -> Self:
        """As DataTable's, forgetting every cell stamp."""
        self._stamps = None
        return super().clear(columns)

    @property
    def cached_renders(self) -> int:
        """Rendered lines, rows, row renderables and cells DataTable holds (tests read it)."""
        caches = (
            self._line_cache,
            self._row_render_cache,
            self._row_renderable_cache,
            self._cell_render_cache,
        )
        return sum(len(cache) for cache in caches)

    def render_lines(self, crop: Region) -> list[Strip]:
        """As DataTable's, its caches first bound to what the table shows now."""
        self._bound_caches()
        return super().render_lines(crop)

    def _bound_caches(self) -> None:
        """Keep a screenful of what the table drew, plus a margin (``TABLE_CACHES``).

        A key in DataTable's caches holds the update counter, so what an earlier update drew
        is never read again, and the least recently drawn go first. A frame of the whole
        table reads every entry it shows (each fixed column's cells twice, and a row label
        per row), so those stay; a partial repaint reads only the rows that changed, and the
        margin is the room their superseded entries take until the next whole frame, after
        which the oldest quiet rows' cells are rendered again (once, on a scroll). A miss
        only renders again.

        A new bound takes new caches: one of Textual's, once full, keeps the size it filled
        to whatever its ``maxsize`` becomes (a table made taller kept its shorter bound, one
        made shorter its longer one). Nothing is lost: the bound changes with the size, the
        columns or the fixed columns, and DataTable renders every cell anew after each."""
        if self._bounding is None:
            self._bounding = enabled(TABLE_CACHES)
        if not self._bounding:
            return
        lines = max(self.size.height, 1) + CACHE_MARGIN_LINES
        if self._line_cache.maxsize != lines:
            self._line_cache = LRUCache(lines)
            self._row_render_cache = LRUCache(lines)
            # A row's renderables are keyed by a cell's stamp (``CellCachedDataTable``): read
            # again only for that cell's next render, a miss rebuilds a list of its cells.
            self._row_renderable_cache = LRUCache(lines)
        cells = lines * (len(self.columns) + self.fixed_columns + 1)
        if self._cell_render_cache.maxsize != cells:
            self._cell_render_cache = LRUCache(cells)

    def _get_row_renderables(self, row_index: int) -> RowRenderables:
        """As DataTable's, counted (``_render_cell``)."""
        self._cells_asked += 1
        return super()._get_row_renderables(row_index)

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        if not self._caching():
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        structure = self._update_count - self._value_updates
        stamp = 0
        if self._stamps and row_index >= 0 and column_index >= 0:
            row = self._row_locations.get_key(row_index)
            column = self._column_locations.get_key(column_index)
            stamp = self._stamps.get((row, column), 0)
        saved = self._update_count
        # DataTable keys a cell's render (and the row's renderables it is made from) by
        # ``_update_count``: for this one call it is (structure, this cell's last update).
        self._update_count = (structure, stamp)  # type: ignore[assignment]
        try:
            # A render through Rich (a miss) is the one path that asks for the row's cells;
            # the cache's length does not tell once the cache is full.
            before = self._cells_asked
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            if self._cells_asked != before:
                self.cell_renders += 1
            return lines
        finally:
            self._update_count = saved


class StyledOnceScreen(Screen[None]):
    """A screen whose nodes are not styled all over again as it is first shown.

    Textual styles each node as it mounts; then the screen's first ``ScreenResume`` (the
    default screen's comes as the app starts, a moment later) styles every node and
    component class again, though nothing has changed: for gputop's main screen about a
    sixth of what ``App.run`` costs before the first frame (issue 17). Later resumes (back
    from a dialog, perhaps after a theme change) restyle as ever.
    """

    _shown = False

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        # Textual calls the handler of every class along the MRO: this one before
        # Screen's, which reads the flag.
        if not self._shown and enabled(STYLED_ONCE):
            self._shown = True
            event.refresh_styles = False


def write_changed_spans_only() -> None:
    """Make a partial repaint write the cells that changed, with colour changes only.

    Textual writes a repainted region of a line from the left edge of the widget's piece of
    that line up to the region's right end: a TIME cell that changed in a process row was
    sent with the GPU, PID, USER... cells before it, and a moving sparkline at the right of
    a GPU row with the whole row before it. Here the write starts at the region's left edge
    (at the start of the styled run that holds it when that run has wide characters, which
    are never cut in two), the cursor is moved only when it is not already where the next
    run goes, and each run's colours are sent only where they differ from the previous
    run's (``pen.Pen``) instead of in full around every run.
    """
    # Deferred: Textual's private compositor, reached for once the patch applies.
    from textual._compositor import ChopsUpdate

    ChopsUpdate.render_segments = _render_changed_spans  # type: ignore[method-assign]


def _render_changed_spans(self: ChopsUpdate, console: Console) -> str:
    """``ChopsUpdate.render_segments`` of Textual 8.2, writing only each span's cells.

    Spans never overlap, so the order they are written in does not change the screen: runs
    that start in the same style go one after the other (every value of the panels, then
    every sparkline cell), each colour sent once rather than at every switch between them.
    """
    runs: list[tuple[int, int, list[tuple[str, Style | None]]]] = []
    chops = self.chops
    chop_ends = self.chop_ends
    for y, x1, x2 in self.spans:
        line = chops[y]
        ends = chop_ends[y]
        for end, (x, strip) in zip(ends, line.items(), strict=False):
            if strip is None or x >= x2 or end <= x1:
                continue
            start, cut = _cut(strip, max(0, x1 - x), x2 - x)
            if cut:
                runs.append((y, x + start, cut))
    groups: dict[Style | None, int] = {}
    order = [groups.setdefault(cut[0][1], len(groups)) for _, _, cut in runs]
    sequences: list[str] = []
    append = sequences.append
    pen = Pen(COLOR_SYSTEMS.get(console.color_system or "", ColorSystem.TRUECOLOR))
    cursor = (-1, -1)
    for _, (y, x, cut) in sorted(zip(order, runs, strict=True), key=lambda item: item[0]):
        if cursor != (x, y):
            append(f"\x1b[{y + 1};{x + 1}H")
        for text, style in cut:
            if style is not None and style.link:
                append(pen.reset())
                append(Strip.render_style(style, text, pen.color_system))
                continue
            append(pen.to(style))
            append(text)
            x += cell_len(text)
        cursor = (x, y)
    append(pen.reset())
    return "".join(sequences)


def _cut(strip: Strip, first: int, end: int) -> tuple[int, list[tuple[str, Style | None]]]:
    """The cells ``first`` to ``end`` of ``strip`` as (text, style) runs, and the cell they
    start at: ``first``, or the start of the run that holds it when that run has wide
    characters (never cut in two). A run of one-cell characters is cut by slicing its text;
    a strip with a wide character cut at ``end`` goes through Textual's own crop."""
    out: list[tuple[str, Style | None]] = []
    start = -1
    at = 0
    for text, style, control in strip:
        if control or not text:
            continue
        width = cell_len(text)
        stop = at + width
        if stop > first and at < end:
            if width == len(text):
                a, b = max(0, first - at), min(width, end - at)
                out.append((text[a:b], style))
                if start < 0:
                    start = at + a
            elif stop <= end:
                out.append((text, style))
                if start < 0:
                    start = at
            else:  # a wide character's run crosses the end: Textual's crop
                cropped = strip.crop(0, end)
                begin = _start_cell(cropped, first)
                runs = cropped.crop(begin, cropped.cell_length) if begin else cropped
                return begin, [(t, s) for t, s, c in runs if t and not c]
        at = stop
        if at >= end:
            break
    return max(start, 0), out


def _start_cell(strip: Strip, cells: int) -> int:
    """Where a write that should start ``cells`` into ``strip`` can start: there, or at the
    start of the run that holds it when that run has wide characters."""
    done = 0
    for segment in strip:
        width = cell_len(segment.text)
        if done + width > cells:
            return cells if width == len(segment.text) else done
        done += width
    return done


def repaint_regions(widget: Widget, regions: Iterable[Region]) -> None:
    """What ``widget.refresh(*regions)`` leads to, handed to the screen at once.

    ``refresh`` only marks the widget: its own message pump then wakes (a ``Prompt``), finds
    at idle that it needs a repaint and posts an ``Update`` to the screen, which wakes in
    turn. For the GPU panels that was two messages and a task switch per panel per tick,
    a tenth of a tick's work on the UI thread, for what the screen learns here directly: the
    regions to repaint (the widget's own ``_set_dirty``) and that the widget is dirty (what
    the screen's ``Update`` handler records). Only for a widget whose size and styles stay
    as they are (what ``refresh`` also clears is for a widget laid out again).
    """
    if not widget.is_mounted or not widget.display or not enabled(DIRECT_REPAINT):
        widget.refresh(*regions)
        return
    widget._set_dirty(*regions)
    screen = widget.screen
    if screen in screen._compositor:
        screen._dirty_widgets.add(widget)
        screen.check_idle()


def render_dirty_lines_only() -> None:
    """Make a partial repaint render only the widgets, and lines of them, that changed.

    Textual renders, for a partial repaint, every line of every widget that overlaps the
    rectangle around all the changed regions: a new clock digit in the header and a value in
    the last GPU panel made every panel between them, the containers and the screen render
    all their lines again (most from their caches, but each line still cut into the screen's
    pieces). Here a widget is rendered only where a changed region covers it: the lines from
    the first to the last changed one, and nothing of a widget no change touches. What is
    written is the same (only the changed spans are written, and those are rendered).
    """
    # Deferred: Textual's private compositor, reached for once the patch applies.
    from textual._compositor import Compositor

    Compositor.render_partial_update = _render_partial_update  # type: ignore[method-assign]


def _render_partial_update(self: Compositor) -> ChopsUpdate | None:
    """``Compositor.render_partial_update`` of Textual 8.2 rendering only changed lines."""
    # Deferred: Textual's private compositor, in sys.modules since the patch was applied.
    from textual._compositor import ChopsUpdate

    regions = self._dirty_regions.copy()
    self._dirty_regions.clear()
    if not regions:
        return None
    spans = list(self._regions_to_spans(regions))
    rendered_lines = {y for y, _, _ in spans}
    cuts = self.cuts
    chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
    for band, strips in _changed_renders(self, regions):
        first_cut, last_cut = band.column_span
        render_x = band.x
        for y, strip in zip(band.line_range, strips, strict=False):
            if y not in rendered_lines:
                continue
            chops_line = chops[y]
            final_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
            offsets = [cut - render_x for cut in final_cuts[1:]]
            # A strip in one piece is its own division, and Strip.divide keeps its answer in
            # the strip: a reference cycle per line drawn, left for the collector.
            pieces = [strip] if offsets == [strip.cell_length] else strip.divide(offsets)
            # Front to back, as Textual paints: the first piece for a cut wins.
            for cut, piece in zip(final_cuts, pieces, strict=False):
                if chops_line.get(cut) is None:
                    chops_line[cut] = piece
    return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in cuts])


def _changed_renders(
    self: Compositor, regions: Iterable[Region]
) -> Iterable[tuple[Region, list[Strip]]]:
    """(band drawn, strips) of each visible widget a changed region covers,
    front to back: the band is the widget's visible part from its first to its last
    changed line."""
    # The changed regions by screen line: a tick changes a few dozen spans one line high,
    # and each of the screen's widgets looks only at the lines it covers (testing every
    # widget against every region was most of this function).
    by_line: dict[int, list[Region]] = {}
    for changed in regions:
        if changed.width > 0:
            for y in range(changed.y, changed.bottom):
                by_line.setdefault(y, []).append(changed)
    for widget, (region, clip) in self.visible_widgets.items():
        if not by_line:
            return
        visible = region.intersection(clip)
        if not visible:
            continue
        left, right = visible.x, visible.right
        top = bottom = -1
        for y in range(visible.y, visible.bottom):
            for changed in by_line.get(y, ()):
                if changed.x < right and changed.right > left:
                    if top < 0:
                        top = y
                    bottom = y + 1
                    break
        if top < 0:
            continue
        # A change inside this widget is drawn by it alone: what lies behind it (the
        # containers, the screen) would be cut into pieces that the front one's win.
        for y in range(top, bottom):
            line = by_line.get(y)
            if line:
                kept = [c for c in line if not visible.contains_region(c)]
                if kept:
                    by_line[y] = kept
                else:
                    del by_line[y]
        band = Region(visible.x, top, visible.width, bottom - top)
        lines = widget.render_lines(
            Region(band.x - region.x, band.y - region.y, band.width, band.height)
        )
        yield band, lines
