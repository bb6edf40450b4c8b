"""The replay player: a recording turned into a seekable, pausable, speed-scaled source.

The player owns only the timeline position and the playback settings; it knows nothing of
history or of Textual. The pipeline asks it where to go (``advance``, ``step``, ``seek``) and
reads the crossed documents from the recording. All calls come from the poller thread.

A recording that is still being written (``--follow``, a pipe) is played like live at its
end: the player starts on the newest document and, while it sits on the last one unpaused,
each ``advance`` moves onto whatever has been appended since. Stepping back pauses as ever;
``End`` returns to the newest and follows again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.model.machine import Machines
from gputop.sources.playback.seek import Span, TimeTarget, index_of, span_of

SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
"""The speeds ``[`` and ``]`` move through; 1.0 plays at the recording's own pace."""

MIN_TICK = 0.25
"""Seconds between screen updates at most speeds: faster play skips documents instead."""

MAX_GAP = 60.0
"""A gap between documents longer than this (a recorder restarted, or the next capture of a
directory is of another machine, years apart) is skipped: it plays as one interval, with a
note saying how long it was, instead of keeping playback waiting."""

NOTE_HOLD = 4
"""Further advances a "skipped a gap" note stays on the bar for."""

SURVEY_DOCUMENTS = 64
"""How many documents, spread over a recording, are read to tell which machines it holds."""

FOLLOW_POLL = 0.25
"""Seconds between looks for new documents while following at the end (new ones show
within this of arriving)."""

FOLLOW_POLL_PAUSED = 1.0
"""Seconds between looks while following is paused or behind: only the length shown moves."""

FOLLOW_CATCH_UP = 160
"""New documents read into history at most in one look (a burst, e.g. `cat log | gputop
--replay -`): enough to fill every sparkline, without parsing thousands in one tick."""


class Timeline(Protocol):
    """What the player needs of a recording (``gputop.sources.smi.recording.Recording``)."""

    warnings: list[str]

    def __len__(self) -> int: ...

    def snapshot(self, index: int) -> Snapshot: ...

    def timestamp(self, index: int) -> datetime | None: ...

    def index_at(self, moment: datetime) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class GrowingTimeline(Timeline, Protocol):
    """A timeline that may still grow (a followed ``Recording``): its length is read again."""

    @property
    def following(self) -> bool:
        """True while documents may still be appended."""
        ...


@dataclass(frozen=True, slots=True)
class ReplayStatus:
    """Where playback is, for the replay bar; travels inside each tick."""

    position: int
    """0-based index of the shown document."""
    length: int
    timestamp: datetime | None
    speed: float
    paused: bool
    note: str | None = None
    """The outcome of the last seek when it was not exact, or why playback stopped."""
    warnings: tuple[str, ...] = ()
    start: datetime | None = None
    """The recording's first timestamp (None when no document has one)."""
    end: datetime | None = None
    """The recording's last timestamp."""

    @property
    def span(self) -> Span:
        """What "go to" checks a target against."""
        return Span(self.length, self.start, self.end)

    following: bool = False
    """The recording is still being written; at its end, new documents show as they come."""

    @property
    def still(self) -> bool:
        """A single-document capture: nothing to play (a followed one may yet grow)."""
        return self.length <= 1 and not self.following

    @property
    def at_end(self) -> bool:
        """The last document is shown."""
        return self.position >= self.length - 1


def speed_label(speed: float) -> str:
    """``0.25x``, ``1x``, ``16x``."""
    return f"{speed:g}x"


class ReplayPlayer:
    """Position and playback state over a :class:`Timeline`."""

    def __init__(
        self,
        timeline: Timeline,
        *,
        interval: float = 1.0,
        speed: float = 1.0,
        paused: bool = False,
    ) -> None:
        """Start at the first document.

        Args:
            timeline: the recording.
            interval: seconds assumed between documents that carry no usable timestamps.
            speed: initial speed (snapped to the nearest of ``SPEEDS``).
            paused: start paused.
        """
        self._timeline = timeline
        self._growing = timeline if isinstance(timeline, GrowingTimeline) else None
        self._length = len(timeline)
        self._interval = interval
        self._speed_index = _nearest_speed(speed)
        self._note: str | None = None
        self._note_holds = 0
        """Advances a skipped gap's note stays for (one interval is too short to read it)."""
        self._span: Span | None = None
        self._followed = self.following
        # Following starts on the newest document, as a live view would (the window before
        # it fills the history); Home goes back to the first.
        self._position = self._length - 1 if self._followed else 0
        self._paused = paused or (self._length <= 1 and not self._followed)

    @property
    def timeline(self) -> Timeline:
        """The recording played."""
        return self._timeline

    @property
    def position(self) -> int:
        """Index of the current document."""
        return self._position

    @property
    def length(self) -> int:
        """How many documents the recording holds."""
        return self._length

    @property
    def speed(self) -> float:
        """Playback speed, 1.0 being the recording's pace."""
        return SPEEDS[self._speed_index]

    @property
    def paused(self) -> bool:
        """True while playback is stopped."""
        return self._paused

    def span(self) -> Span:
        """The recording's length and first and last times (worked out once per length)."""
        if self._span is None or self._span.length != self._length:
            self._span = span_of(self._timeline)
        return self._span

    @property
    def following(self) -> bool:
        """True while the recording is still being written."""
        return self._growing is not None and self._growing.following

    def _refresh(self) -> list[int]:
        """Take in documents appended since the last look; at the end, unpaused, move onto
        them and return their indices (all of them: history keeps every sample)."""
        if not self._followed:
            return []
        at_end = self._position >= self._length - 1
        self._length = len(self._timeline)
        self._followed = self.following
        if not self._followed and self._note is None:
            self._note = "the stream ended"
        if self._paused or not at_end or self._position >= self._length - 1:
            return []
        crossed = list(range(max(self._position + 1, self._length - FOLLOW_CATCH_UP), self._length))
        self._position = self._length - 1
        return crossed

    def status(self) -> ReplayStatus:
        """The current position and settings as a value."""
        span = self.span()
        return ReplayStatus(
            position=self._position,
            length=self._length,
            timestamp=self._timeline.timestamp(self._position),
            speed=self.speed,
            paused=self._paused,
            note=self._note,
            warnings=tuple(self._timeline.warnings),
            start=span.start,
            end=span.end,
            following=self._followed,
        )

    def snapshot(self) -> Snapshot:
        """The current document, parsed."""
        return self._timeline.snapshot(self._position)

    def gap(self, index: int) -> float:
        """Recorded seconds from document ``index`` to the next one (a skipped gap: the
        interval)."""
        skipped = self.skipped_gap(index)
        if skipped is not None:
            return self._interval
        return self._recorded_gap(index)

    def skipped_gap(self, index: int) -> float | None:
        """The recorded seconds after document ``index`` when that gap is too long to wait
        out (over ``MAX_GAP``), else None."""
        seconds = self._recorded_gap(index)
        return seconds if seconds > MAX_GAP else None

    def _recorded_gap(self, index: int) -> float:
        if index + 1 >= self._length:
            return self._interval
        first = self._timeline.timestamp(index)
        second = self._timeline.timestamp(index + 1)
        if first is None or second is None:
            return self._interval
        seconds = (second - first).total_seconds()
        # nvidia-smi stamps whole seconds, and `-l` can print two documents in one second:
        # a zero or negative gap is still one document later, so it costs a sliver of time.
        if seconds <= 0:
            return 0.001
        return seconds

    def next_delay(self) -> float | None:
        """Seconds until ``advance`` should be called; None while paused or at the end.

        A followed recording is looked at again even then: new documents are shown (at the
        end) or counted (paused) as they arrive.
        """
        if self._followed:
            if self._paused:
                return FOLLOW_POLL_PAUSED
            if self._position >= self._length - 1:
                return FOLLOW_POLL
        if self._paused or self._position >= self._length - 1:
            return None
        return max(MIN_TICK, self.gap(self._position) / self.speed)

    def advance(self) -> list[int]:
        """Play forward by one tick's worth; returns the indices moved onto, in order.

        At 1x that is one document per recorded gap; when the recorded gaps are shorter
        than a tick allows, several documents are crossed so playback keeps its pace.
        Reaching the end pauses, unless the recording is followed: then the end waits for
        the next document, and moves onto new ones as they come.
        """
        caught_up = self._refresh()
        if caught_up or self._paused or self._position >= self._length - 1:
            return caught_up
        if self._note_holds > 0:
            self._note_holds -= 1
        else:
            self._note = None
        budget = max(MIN_TICK * self.speed, self.gap(self._position))
        crossed: list[int] = []
        covered = 0.0
        while self._position < self._length - 1 and covered < budget:
            skipped = self.skipped_gap(self._position)
            if skipped is not None:
                self._note = f"skipped a gap of {_duration(skipped)}"
                self._note_holds = NOTE_HOLD
            covered += self.gap(self._position)
            self._position += 1
            crossed.append(self._position)
        if self._position >= self._length - 1 and not self._followed:
            self._paused = True
            self._note = "end of recording"
        return crossed

    def toggle_pause(self) -> bool:
        """Pause or resume; resuming at the end starts over. Returns True when it moved.

        Following, the end is not an end: resuming there waits for new documents.
        """
        if self._followed:
            self._paused = not self._paused
            self._note = None
            return False
        if self._length <= 1:
            return False
        if self._position >= self._length - 1:
            self._position = 0
            self._paused = False
            self._note = None
            return True
        self._paused = not self._paused
        self._note = None
        return False

    def step(self, delta: int) -> int:
        """Pause and move ``delta`` documents (clamped); returns the new position."""
        target = max(0, min(self._position + delta, self._length - 1))
        return self.seek(target, pause=True)

    def seek(self, index: int, *, pause: bool | None = None) -> int:
        """Go to document ``index`` (negative counts from the end, clamped to the recording).

        Following, going to the last document (``End``) follows again from there, and going
        anywhere else pauses, as stepping back does: a look back, not a replay at 1x.
        """
        if self._followed:
            self._length = len(self._timeline)
        if index < 0:
            index += self._length
        self._position = max(0, min(index, self._length - 1))
        self._note = None
        if pause is not None:
            self._paused = pause or (self._length <= 1 and not self._followed)
        if self._followed and pause is None:
            self._paused = self._position < self._length - 1
        return self._position

    def seek_time(self, moment: datetime, within: timedelta = timedelta(0)) -> tuple[int, bool]:
        """Go to the document the time names (``seek.index_of``: the first taken within
        ``within`` of ``moment``, the second a time given to the second stands for, else the
        last one taken at or before it); True when one was taken in that span (at
        ``moment`` itself, for an instant)."""
        target = TimeTarget(moment, within)
        index = index_of(self._timeline, target)
        self.seek(index)
        found = self._timeline.timestamp(index)
        exact = found is not None and (moment <= found < target.end if within else found == moment)
        if not exact:
            shown = "no timestamp" if found is None else found.strftime("%Y-%m-%d %H:%M:%S")
            where = "closest before" if found is not None and found <= moment else "nearest"
            self._note = f"no document at {moment:%H:%M:%S}; showing the {where} ({shown})"
        return index, exact

    def change_speed(self, steps: int) -> float:
        """Move ``steps`` along ``SPEEDS`` (clamped); returns the new speed."""
        self._speed_index = max(0, min(self._speed_index + steps, len(SPEEDS) - 1))
        return self.speed

    def window(self, size: int) -> Sequence[Snapshot]:
        """Up to ``size`` documents ending at the current one, oldest first.

        Malformed documents inside the window are left out rather than ending playback.
        """
        start = max(0, self._position - size + 1)
        found: list[Snapshot] = []
        for index in range(start, self._position + 1):
            try:
                found.append(self._timeline.snapshot(index))
            except BadCapture:
                continue
        return found

    def close(self) -> None:
        """Close the recording."""
        self._timeline.close()


def _duration(seconds: float) -> str:
    """``1h03m``, ``6y112d``: how long a skipped gap was, roughly."""
    minutes = round(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    years, days = divmod(days, 365)
    if years:
        return f"{years}y{days}d"
    if days:
        return f"{days}d{rest // 60:02d}h"
    return f"{rest // 60}h{rest % 60:02d}m"


def machines_warning(timeline: Timeline, name: str) -> str | None:
    """A warning when ``timeline`` holds captures of several machines (told apart by host
    and GPU UUIDs, ``model.machine``), else None.

    Up to ``SURVEY_DOCUMENTS`` documents spread over the recording are read (all of a
    directory of captures, first and last of a long one), so it costs little on any size.
    """
    length = len(timeline)
    if length <= 1:
        return None
    if length <= SURVEY_DOCUMENTS:
        indices: Sequence[int] = range(length)
    else:
        step = (length - 1) / (SURVEY_DOCUMENTS - 1)
        indices = sorted({round(k * step) for k in range(SURVEY_DOCUMENTS)})
    machines = Machines()
    for index in indices:
        try:
            machines.add(timeline.snapshot(index))
        except BadCapture:
            continue  # said when it is played
    found = machines.machines
    if len(found) <= 1:
        return None
    shown = "; ".join(machine.describe() for machine in found[:3])
    more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
    return (
        f"{name}: holds captures of {len(found)} different machines ({shown}{more}; told "
        "apart by host and GPU UUIDs): each is shown as captured, one after another, not "
        f"as one timeline; gaps over {MAX_GAP:g}s are skipped in playback"
    )


def _nearest_speed(speed: float) -> int:
    if not math.isfinite(speed) or speed <= 0:
        return SPEEDS.index(1.0)
    return min(range(len(SPEEDS)), key=lambda i: abs(math.log(SPEEDS[i] / speed)))
