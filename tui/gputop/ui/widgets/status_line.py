"""One-line bars: the header (host, driver, CUDA, mode) and the replay timeline bar.

Both draw left and right halves into their width and repaint only when the text changed.
"""

from __future__ import annotations

import platform
from pathlib import PurePath
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from gputop.model.units import NA
from gputop.pipeline.tick import SinkStatus, Tick
from gputop.ui.render.panel_lines import ELLIPSIS, fit_line
from gputop.ui.widgets.line_strip import line_strip, role_styles

if TYPE_CHECKING:
    from gputop.sources.playback.replay import ReplayStatus

Segment = tuple[str, str]
"""(text, role); role names a ``bar--<role>`` component style."""

BAR_ROLES = ("title", "text", "dim", "accent", "warn", "error", "track", "done")
GAP = 2
"""Spaces kept between the left and the right half, so they never run together."""
MIN_LEFT = 8
"""Fewest cells of the left half worth keeping when it is cut to make room for the right."""


class Bar(Widget):
    """A line of left-aligned and right-aligned segments."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"bar--{role}" for role in BAR_ROLES}
    """``--title`` the app name, ``--text``/``--dim`` ordinary parts, ``--accent`` the mode,
    ``--warn``/``--error`` problems, ``--track``/``--done`` the replay progress track."""

    def __init__(self, *, id: str | None = None) -> None:
        """An empty bar."""
        super().__init__(id=id)
        self._left: tuple[Segment, ...] = ()
        self._right: tuple[Segment, ...] = ()
        self._role_styles: dict[str, Style] = {}
        self._shown_cells: tuple[int, list[tuple[str, str]]] = (-1, [])
        """(width, cells) as last laid out, to compare the next content with."""

    def set_segments(self, left: tuple[Segment, ...], right: tuple[Segment, ...]) -> None:
        """Replace the content; repaints only if it differs, and only the cells that changed
        (``compat.write_changed_spans_only`` sends no more): the header's clock costs a few
        cells on the wire instead of the whole line.
        """
        if (left, right) == (self._left, self._right):
            return
        width = self.content_size.width
        shown_width, shown = self._shown_cells
        before = shown if shown_width == width else self._cells(width)
        self._left, self._right = left, right
        after = self._cells(width)
        self._shown_cells = (width, after)
        if width <= 0 or len(before) != len(after):
            self.refresh()
            return
        changed = [x for x, cell in enumerate(after) if before[x] != cell]
        if changed:
            self.refresh(Region(changed[0], 0, changed[-1] + 1 - changed[0], 1))

    @property
    def plain(self) -> str:
        """The text without styles (tests read it)."""
        return "".join(t for t, _ in self._left) + " " + "".join(t for t, _ in self._right)

    def fill(self, room: int) -> tuple[Segment, ...]:
        """Segments that stretch into ``room`` spare cells (none by default)."""
        return ()

    def fit_left(self, left: tuple[Segment, ...], width: int) -> tuple[Segment, ...]:
        """The left half cut to ``width`` cells."""
        return fit_line(left, width)

    def notify_style_update(self) -> None:
        """Styles changed (theme, classes): resolve the component styles again."""
        self._role_styles = {}
        super().notify_style_update()

    def _parts(self, width: int) -> tuple[Segment, ...]:
        """Everything drawn at ``width``: left, fill, padding, right.

        When both halves do not fit, the left one is cut, ending in "…": the right half
        says live or replay, which matters more than the tail of the left one (an error,
        the GPU count). When the right half would leave the left too little room, it is
        left out and the left one is cut to the whole width instead.
        """
        left, right = self._left, self._right
        right_len = sum(len(t) for t, _ in right)
        left_len = sum(len(t) for t, _ in left)
        if right and left_len + GAP + right_len > width:
            room = width - right_len - GAP
            if room < MIN_LEFT:
                return self.fit_left(left, width)
            left = self.fit_left(left, room)
            left_len = sum(len(t) for t, _ in left)
        elif left_len > width:
            return self.fit_left(left, width)
        room = max(0, width - right_len - left_len)
        middle = self.fill(room)
        used = sum(len(t) for t, _ in middle)
        return (*left, *middle, (" " * max(0, room - used), "text"), *right)

    def _cells(self, width: int) -> list[tuple[str, str]]:
        """(character, role) of each of the ``width`` cells drawn.

        Exactly ``width`` of them, padded as ``render_line`` pads: a line cut at a word
        ends short of the width, and the comparison in ``set_segments`` walks every cell.
        """
        cells = [(char, role) for part, role in self._parts(width) for char in part][:width]
        return cells + [(" ", "")] * (width - len(cells))

    def render_line(self, y: int) -> Strip:
        """The bar drawn straight to segments (Line API)."""
        width = self.size.width
        styles = self._role_styles
        if not styles:
            styles = self._role_styles = role_styles(self, "bar", BAR_ROLES)
        if y != 0:
            return Strip.blank(width, styles[""])
        return line_strip(self._parts(width), styles, width, styles[""])


class StatusHeader(Bar):
    """gputop · time · host · driver · CUDA · GPUs ........ mode · interval."""

    def __init__(
        self, *, show_host: bool = True, show_clock: bool = True, id: str | None = None
    ) -> None:
        """Create the header; tests turn host and clock off so screenshots stay the same."""
        super().__init__(id=id)
        self.show_host = show_host
        self.show_clock = show_clock

    def fit_left(self, left: tuple[Segment, ...], width: int) -> tuple[Segment, ...]:
        """Cut at a word: the left half ends in errors (a sink's, a poll's)."""
        return fit_at_word(left, width)

    def show(self, tick: Tick, source_label: str) -> None:
        """Describe ``tick``'s snapshot and how it was obtained."""
        snapshot = tick.snapshot
        left: list[Segment] = [(" gputop", "title")]
        if tick.live and self.show_clock and snapshot.timestamp is not None:
            # On the left, like top(1): the one part that changes every tick is then the
            # only part sent again.
            left += [(" ", "dim"), (f"{snapshot.timestamp:%H:%M:%S}", "text")]
        # A stopped sink's file and reason come before the host and the driver, which stay
        # the same all the while and are what a narrow header can best do without.
        for sink in tick.sinks:
            if sink.error is not None:
                left += [("  ⚠ ", "error"), (sink_failure(sink), "error")]
        if self.show_host:
            host = snapshot.host or (platform.node() if tick.live else None)
            if host:
                left += [("  ", "dim"), (host, "text")]
        if tick.waiting:
            # Nothing is known of the driver yet: say what is awaited, not three n/a.
            left += [("  ", "dim"), (tick.waiting, "warn")]
        else:
            left += [
                ("  driver ", "dim"),
                (snapshot.driver_version or NA, "text"),
                ("  CUDA ", "dim"),
                (snapshot.cuda_version or NA, "text"),
                ("  GPUs ", "dim"),
                (str(len(snapshot.gpus)), "text"),
            ]
        if tick.error:
            left += [("  ⚠ ", "error"), (tick.error, "error")]
        right: list[Segment] = []
        for sink in tick.sinks:
            # On the right, which is cut last: that a recording runs, or has stopped, is
            # worth more than the tail of the left half. The whole error goes on the left.
            right += sink_segments(sink)
        if tick.live:
            right.append(("live", "accent"))
            if tick.paused:
                right += [(" · ", "dim"), ("paused", "warn")]
            else:
                right += [(" · every ", "dim"), (f"{tick.interval:g}s", "text")]
        else:
            right += [("replay", "accent"), (" · ", "dim"), (source_label, "text")]
        right.append((" ", "text"))
        self.set_segments(tuple(left), tuple(right))


SINK_WORDS = {"--record": "rec", "--log": "log"}
"""What the header calls each sink."""


def sink_segments(sink: SinkStatus) -> list[Segment]:
    """``● rec gpus.xml`` while a sink writes, ``⚠ log stopped`` once it failed (the left
    half names the file and says why, once: ``sink_failure``)."""
    word = SINK_WORDS.get(sink.option, sink.option.lstrip("-"))
    name = PurePath(sink.path).name or sink.path
    if sink.error is None:
        return [("● ", "accent"), (f"{word} ", "dim"), (name, "text"), ("  ", "dim")]
    return [("⚠ ", "error"), (f"{word} stopped", "error"), ("  ", "dim")]


def sink_failure(sink: SinkStatus) -> str:
    """``log gpus.csv: No space left on device``: which sink, its file, and why it stopped."""
    word = SINK_WORDS.get(sink.option, sink.option.lstrip("-"))
    name = PurePath(sink.path).name or sink.path
    reason = (sink.error or "").removeprefix(f"{sink.option} {sink.path}: ")
    return f"{word} {name}: {reason.removeprefix('write failed: ')}"


_WORD_CUT = ("error",)
"""Roles cut at a word (elsewhere the bar cuts as every bar does)."""


def _role_at(parts: tuple[Segment, ...], cell: int) -> str:
    """The role of the segment that cell ``cell`` of ``parts`` falls in."""
    for text, role in parts:
        if cell < len(text):
            return role
        cell -= len(text)
    return ""


def fit_at_word(parts: tuple[Segment, ...], width: int) -> tuple[Segment, ...]:
    """``fit_line``, but a cut inside an error's words backs up to a word's start ("No
    space…", not "No space lef…"): an error cut mid-word reads as a different one. The
    rest is cut as every bar cuts it."""
    fitted = fit_line(parts, width)
    line = "".join(text for text, _ in parts)
    kept = sum(len(text) for text, _ in fitted) - len(ELLIPSIS)
    if (
        fitted == tuple(parts)
        or kept <= 0
        or kept >= len(line)
        or _role_at(parts, kept) not in _WORD_CUT
    ):
        return fitted
    text = line[:kept]
    if line[kept] != " " and line[kept - 1] != " ":
        start = line.rfind(" ", 0, kept)
        if start <= 0:
            return fitted
        text = line[:start]
    # A warning sign left without its words says nothing: it goes with them.
    text = text.rstrip(" ·⚠")
    if len(text) == kept or not text:
        return fitted
    return fit_line(parts, len(text) + len(ELLIPSIS))


def replay_state(status: ReplayStatus) -> Segment:
    """The state word of the replay bar."""
    if status.still:
        return ("■ still", "accent")
    if status.following and status.at_end and not status.paused:
        return ("● following", "accent")
    if status.at_end and not status.following:
        return ("■ end", "warn")
    if status.paused:
        return ("‖ paused", "warn")
    return ("▶ playing", "accent")


class ReplayBar(Bar):
    """▶/⏸ · timestamp · position i/n · speed ····track···· note."""

    def __init__(self, *, id: str | None = None) -> None:
        """An empty bar; ``show`` fills it."""
        super().__init__(id=id)
        self._status: ReplayStatus | None = None

    def show(self, status: ReplayStatus) -> None:
        """Describe the replay position."""
        # Deferred: the replay's module, which a live start does not load (test_live_imports).
        from gputop.sources.playback.replay import speed_label

        self._status = status
        stamp = NA if status.timestamp is None else f"{status.timestamp:%Y-%m-%d %H:%M:%S}"
        left: list[Segment] = [
            (" ", "text"),
            replay_state(status),
            ("  ", "dim"),
            (stamp, "text"),
            ("  ", "dim"),
            (f"{status.position + 1}/{status.length}", "text"),
            ("  speed ", "dim"),
            (speed_label(status.speed), "text"),
            ("  ", "dim"),
        ]
        right: list[Segment] = []
        if status.note:
            right += [("  ", "dim"), (status.note, "warn")]
        if status.warnings:
            count = len(status.warnings)
            right += [("  ⚠ ", "warn"), (f"{count} warning{'s' if count > 1 else ''}", "warn")]
        right.append((" ", "text"))
        self.set_segments(tuple(left), tuple(right))

    def fill(self, room: int) -> tuple[Segment, ...]:
        """A progress track: done part, a marker at the position, the rest."""
        status = self._status
        if status is None or room < 8 or status.length <= 1:
            return ()
        cells = room - 1
        done = round(status.position / (status.length - 1) * (cells - 1))
        return (("━" * done, "done"), ("●", "done"), ("─" * (cells - 1 - done), "track"))
