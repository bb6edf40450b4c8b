"""Where to go in a recording: the one parser behind `--at` and the replay's "go to" dialog.

A target is a document index (``42``; ``-1`` is the last) or a time: ISO
(``2024-09-18 21:34:12``, ``T`` allowed) or a clock time (``21:34:12``, ``21:34``) on the date
of a reference document. A time means as much as it says: ``21:34:12`` is that second, so a
log row at 21:34:12.525 is its document (the first of that second), ``21:34`` that minute,
``21:34:12.5`` that instant (the last document at or before it). A time outside the recording
is refused at either end, with the recording's span in the message: showing the first or
last document instead would pass it off as that time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Protocol


@dataclass(frozen=True, slots=True)
class TimeTarget:
    """A time a user gave, and how long it stands for: the second of ``21:34:12``, the
    minute of ``21:34``, nothing of ``21:34:12.250`` (an instant)."""

    start: datetime
    within: timedelta = timedelta(0)

    @property
    def end(self) -> datetime:
        """Where the span it stands for ends (not in it)."""
        return self.start + self.within


class TargetError(ValueError):
    """A target that names no document; the message is fit to show the user."""


class Stamped(Protocol):
    """What finding a recording's span needs: its length and its documents' timestamps."""

    def __len__(self) -> int: ...

    def timestamp(self, index: int) -> datetime | None: ...


class Seekable(Stamped, Protocol):
    """A recording that can also find the document taken at or before a time."""

    def index_at(self, moment: datetime) -> int: ...


@dataclass(frozen=True, slots=True)
class Span:
    """How many documents a recording holds and the times of its first and last."""

    length: int
    start: datetime | None = None
    """The first timestamped document's time; None when no document has one."""
    end: datetime | None = None
    """The last timestamped document's time."""

    def describe(self) -> str:
        """``runs from 2024-09-18 21:34:12 to 21:40:00 (120 snapshots)``."""
        count = f"{self.length} snapshot{'' if self.length == 1 else 's'}"
        if self.start is None or self.end is None:
            return f"holds {count}, none with a timestamp"
        end = self.end.strftime("%H:%M:%S" if self.end.date() == self.start.date() else _STAMP)
        return f"runs from {self.start:{_STAMP}} to {end} ({count})"


_STAMP = "%Y-%m-%d %H:%M:%S"


def span_of(timeline: Stamped) -> Span:
    """The span of ``timeline``: untimed documents at either end are looked past."""
    length = len(timeline)
    start = next((s for s in (timeline.timestamp(i) for i in range(length)) if s is not None), None)
    end = None
    if start is not None:
        stamps = (timeline.timestamp(i) for i in range(length - 1, -1, -1))
        end = next(s for s in stamps if s is not None)
    return Span(length, start, end)


def time_examples(reference: datetime | None) -> str:
    """Two ways to write ``reference`` that ``parse_target`` takes; fixed ones without it."""
    if reference is None:
        return "21:34:12 or 2024-09-18 21:34:12"
    return f"{reference:%H:%M:%S} or {reference:{_STAMP}}"


def parse_target(text: str, span: Span, reference: datetime | None = None) -> int | TimeTarget:
    """What a user typed as a target: an index (``0 <= index < span.length``) or a time.

    A clock time is placed on the date of ``reference`` (the shown document's; by default
    the recording's start), or the day after or before when only that lies in the recording
    (one that runs past midnight).

    Raises:
        TargetError: not an index or a time, or one outside the recording.
    """
    text = text.strip()
    if not text:
        raise TargetError("type an index or a time")
    try:
        index = int(text)
    except ValueError:
        pass
    else:
        if not -span.length <= index < span.length:
            raise TargetError(
                f"index out of range: the recording has {span.length} snapshot(s), 0 to "
                f"{span.length - 1} (-1 is the last)"
            )
        return index % span.length
    moment = _moment(text, span, reference)
    if span.start is None or span.end is None:
        raise TargetError("this recording has no timestamps: use an index")
    target = TimeTarget(moment, _precision(text))
    if target.end <= span.start if target.within else moment < span.start:
        raise TargetError(f"{moment:{_STAMP}} is before the recording starts: it {span.describe()}")
    if moment > span.end:
        raise TargetError(f"{moment:{_STAMP}} is after the recording ends: it {span.describe()}")
    return target


def _precision(text: str) -> timedelta:
    """How long a time as written stands for: a second (``21:34:12``), a minute
    (``21:34``), a day (``2024-09-18``), or an instant (a fraction of a second given)."""
    clock = text.replace("T", " ").split(" ")[-1] if ":" in text else ""
    if not clock:
        return timedelta(days=1)
    if "." in clock or "," in clock:
        return timedelta(0)
    return timedelta(seconds=1) if clock.count(":") >= 2 else timedelta(minutes=1)


def _moment(text: str, span: Span, reference: datetime | None) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        if moment.tzinfo is not None:
            # nvidia-smi stamps are the recording machine's local time, zone unknown.
            raise TargetError("give the time without a zone, as the recording's local time")
        return moment
    try:
        clock = time.fromisoformat(text)
    except ValueError:
        raise TargetError(
            f"not an index or a time: {text!r} (try 12, -1, "
            f"{time_examples(reference or span.start)})"
        ) from None
    if clock.tzinfo is not None:
        raise TargetError("give the time without a zone, as the recording's local time")
    anchor = reference or span.start
    if anchor is None:
        raise TargetError("this recording has no timestamps: use an index")
    return _on_a_recorded_day(clock, anchor.date(), span)


def _on_a_recorded_day(clock: time, day: date, span: Span) -> datetime:
    """``clock`` on ``day``, or on the day after or before when that one is nearer to (or
    inside) the recording: ``00:00:04`` just after a recording that ended at 00:00:03 is the
    next day's, as the user meant, and the refusal says so."""
    candidates = [datetime.combine(day + timedelta(days=shift), clock) for shift in (0, 1, -1)]
    start, end = span.start, span.end
    if start is None or end is None:
        return candidates[0]

    def outside(moment: datetime) -> timedelta:
        return max(start - moment, moment - end, timedelta(0))

    return min(candidates, key=outside)  # the first of equals: ``day`` itself


_TICK = timedelta(microseconds=1)


def index_of(timeline: Seekable, target: TimeTarget) -> int:
    """The document a time names: the first taken within the span it stands for (the second
    of ``21:34:12``), else the last one taken before it."""
    if not target.within:
        return timeline.index_at(target.start)
    last = timeline.index_at(target.end - _TICK)
    stamp = timeline.timestamp(last)
    if stamp is None or not target.start <= stamp < target.end:
        return last  # none in that span: the closest before it
    before = timeline.index_at(target.start - _TICK)
    found = timeline.timestamp(before)
    first = before if found is not None and found >= target.start else before + 1
    found = timeline.timestamp(first) if first <= last else None
    return first if found is not None and target.start <= found < target.end else last


def resolve_target(timeline: Seekable, text: str) -> int:
    """The index of the document ``text`` names: at that index, or the one that time names
    (:func:`index_of`).

    Raises:
        TargetError: as :func:`parse_target`.
    """
    span = span_of(timeline)
    target = parse_target(text, span)
    if isinstance(target, int):
        return target
    return index_of(timeline, target)
