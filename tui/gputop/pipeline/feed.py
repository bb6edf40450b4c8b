"""Where a pipeline's snapshots come from: a feed, live or replayed.

The pipeline does the same with every snapshot whatever its origin (``--gpu``, sinks,
history, diagnosis, a tick); a feed says only what arrived and when to look again:

* ``LiveFeed``: a polled source (NVML, or a driver still starting); pausing stops polling;
* ``ReplayFeed``: a ``ReplayPlayer`` (the TUI's replay: paced, seekable, followed);
* ``DocumentFeed``: documents of a recording in order, as fast as they are read (headless
  ``--replay``: ``--once``, ``--json``, ``--count``, ``--log``, ``--pick``).

Each step answers with an ``Arrival``: snapshots to append, or an instruction to rebuild the
history from the feed's ``window`` (a replay seek), or one step back.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gputop.errors import BadCapture, Fatal, GputopError, Waiting
from gputop.model import Snapshot
from gputop.sources.base import Source

if TYPE_CHECKING:
    from gputop.pipeline.commands import Command

    # Only a replay makes these: a live start does not load the replay module.
    from gputop.sources.playback.replay import ReplayPlayer, ReplayStatus

WAITING_POLL = 1.0
"""Seconds between polls of a source that is not ready yet (``Waiting``)."""


class Move(enum.Enum):
    """What an arrival does to the history."""

    APPEND = "append"
    """The snapshots follow the current one."""
    REBUILD = "rebuild"
    """The position jumped: history and window are read again from ``Feed.window``."""
    BACK = "back"
    """One step back: the newest sample goes and the one snapshot becomes current."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """What one step of a feed brought."""

    snapshots: tuple[Snapshot | None, ...] = ()
    """Oldest first, whole (``--gpu`` is the pipeline's); None: a document that could not be
    read, shown as the current snapshot again (the feed's ``error`` says why)."""
    move: Move = Move.APPEND
    notes: tuple[str, ...] = ()
    """One-off messages from the source (``Tick.notes``): said once each."""


NOTHING = Arrival()
REBUILD = Arrival(move=Move.REBUILD)


class Feed(Protocol):
    """A pipeline's origin of snapshots. Only the poller thread (or a hand) calls it."""

    def start(self) -> Arrival:
        """The first arrival."""
        ...

    def advance(self) -> Arrival:
        """The scheduled step."""
        ...

    def apply(self, command: Command) -> Arrival:
        """A user command the feed answers (pause, replay moves); others bring nothing."""
        ...

    def next_delay(self, interval: float) -> float | None:
        """Seconds until ``advance`` is due (``interval``: the live interval); None: wait
        for a command, or the feed has ended."""
        ...

    def window(self, size: int) -> Sequence[Snapshot]:
        """Up to ``size`` snapshots ending at the current position (after a ``REBUILD``)."""
        ...

    def status(self) -> ReplayStatus | None:
        """The replay bar's state; None for a live feed."""
        ...

    @property
    def paused(self) -> bool:
        """Live polling is paused (a replay keeps its own flag in ``status``)."""
        ...

    @property
    def error(self) -> str | None:
        """The last step failed (shown; the data is stale)."""
        ...

    @property
    def waiting(self) -> str | None:
        """The source is not ready yet: what it waits for."""
        ...

    def close(self) -> None:
        """Release the source (once, whoever asks first)."""
        ...


class LiveFeed:
    """A polled source. A failed poll is an ``error`` and monitoring goes on (``tolerant``,
    the TUI), or is raised to end the run (headless: exit with the error's code)."""

    def __init__(
        self, source: Source, *, first: Snapshot | None = None, tolerant: bool = True
    ) -> None:
        """Poll ``source``; ``first`` (taken to check ``--gpu`` before anything started) is
        the first poll's answer, so nothing is sampled twice."""
        self._source = source
        self._pending = first
        self._tolerant = tolerant
        self._paused = False
        self._error: str | None = None
        self._waiting: str | None = None
        self._closed = False
        self._said: str | None = None
        """The source's last ``note`` passed on (a source may say why part of its answer
        is missing: the kubelet's PodResources cannot be asked)."""

    def start(self) -> Arrival:
        """Poll once."""
        return self.advance()

    def advance(self) -> Arrival:
        """Poll once (even paused: the loop asks only when due)."""
        if self._pending is not None:
            snapshot, self._pending = self._pending, None
        else:
            try:
                snapshot = self._source.poll()
            except Waiting as waiting:
                self._waiting = str(waiting)
                return NOTHING
            except Fatal:
                raise  # nothing can be shown: the loop ends and the app says why
            except GputopError as error:
                if not self._tolerant:
                    raise
                self._error = str(error)
                return NOTHING
            except Exception as error:  # a driver hiccup must not end monitoring
                if not self._tolerant:
                    raise
                self._error = f"{type(error).__name__}: {error}"
                return NOTHING
        self._error = self._waiting = None
        note = getattr(self._source, "note", None)
        if note != self._said:
            self._said = note
            if note:
                return Arrival((snapshot,), notes=(note,))
        return Arrival((snapshot,))

    def apply(self, command: Command) -> Arrival:
        """Pause or resume polling; nothing else concerns a live source."""
        # Deferred: no command exists before the first key press (issue 17: 21 M).
        from gputop.pipeline.commands import TogglePause

        if isinstance(command, TogglePause):
            self._paused = not self._paused
        return NOTHING

    def next_delay(self, interval: float) -> float | None:
        """The interval; while waiting for the source, at most ``WAITING_POLL`` (the header
        counts seconds); None while paused."""
        if self._waiting is not None:
            return min(interval, WAITING_POLL)
        return None if self._paused else interval

    def window(self, size: int) -> Sequence[Snapshot]:
        """Nothing: a live source has no past to read again."""
        return ()

    def status(self) -> None:
        """Live: no replay bar."""
        return None

    @property
    def paused(self) -> bool:
        """Polling is paused."""
        return self._paused

    @property
    def error(self) -> str | None:
        """The last poll's failure."""
        return self._error

    @property
    def waiting(self) -> str | None:
        """What the source waits for."""
        return self._waiting

    def close(self) -> None:
        """Close the source; later calls do nothing."""
        if not self._closed:
            self._closed = True
            self._source.close()


class ReplayFeed:
    """A ``ReplayPlayer``: documents at the recording's pace, seeks, steps and speeds."""

    def __init__(self, player: ReplayPlayer) -> None:
        """Play ``player``'s recording."""
        self._player = player
        self._error: str | None = None

    @property
    def player(self) -> ReplayPlayer:
        """The player moved."""
        return self._player

    def start(self) -> Arrival:
        """Load the window before the player's position."""
        return REBUILD

    def advance(self) -> Arrival:
        """Play forward: every document crossed."""
        return Arrival(tuple(self._read(index) for index in self._player.advance()))

    def apply(self, command: Command) -> Arrival:
        """Pause, step, seek or change speed."""
        # Deferred: no command exists before the first key press (issue 17: 21 M).
        from gputop.pipeline.commands import ChangeSpeed, Seek, SeekTime, Step, TogglePause

        player = self._player
        if isinstance(command, TogglePause):
            return REBUILD if player.toggle_pause() else NOTHING
        if isinstance(command, Step):
            before = player.position
            return self._moved(before, player.step(command.delta))
        if isinstance(command, Seek):
            before = player.position
            return self._moved(before, player.seek(command.index))
        if isinstance(command, SeekTime):
            before = player.position
            after, _exact = player.seek_time(command.moment, command.within)
            return self._moved(before, after)
        if isinstance(command, ChangeSpeed):
            player.change_speed(command.steps)
        return NOTHING

    def next_delay(self, interval: float) -> float | None:
        """The player's pace (the live interval does not apply)."""
        return self._player.next_delay()

    def window(self, size: int) -> Sequence[Snapshot]:
        """The documents before the position (damaged ones left out)."""
        snapshots = self._player.window(size)
        if snapshots:
            self._error = None
        else:
            self._read(self._player.position)  # says why in ``error``
        return snapshots

    def status(self) -> ReplayStatus:
        """Position, speed, pause."""
        return self._player.status()

    @property
    def paused(self) -> bool:
        """Never live-paused: the replay's pause is in ``status``."""
        return False

    @property
    def error(self) -> str | None:
        """The last document that could not be read."""
        return self._error

    @property
    def waiting(self) -> None:
        """A recording is open before the pipeline starts."""
        return None

    def close(self) -> None:
        """Close the recording."""
        self._player.close()

    def _moved(self, before: int, after: int) -> Arrival:
        if after == before:
            return NOTHING
        if after == before + 1:
            return Arrival((self._read(after),))
        if after == before - 1:
            return Arrival((self._read(after),), Move.BACK)
        return REBUILD

    def _read(self, index: int) -> Snapshot | None:
        try:
            snapshot = self._player.timeline.snapshot(index)
        except GputopError as error:
            self._error = f"document {index}: {error}"
            return None
        self._error = None
        return snapshot


class Documents(Protocol):
    """What ``DocumentFeed`` reads (``gputop.sources.smi.recording.Recording``)."""

    warnings: list[str]

    def snapshot(self, index: int) -> Snapshot: ...

    def wait_for(self, index: int) -> bool: ...


class DocumentFeed:
    """Documents ``indices`` of a recording, in order, one a step, as fast as they are read.

    A followed recording is waited for (``wait_for``) until the document is written or the
    writer ends. A damaged document is skipped with a warning in the recording's own
    ``warnings`` (the step brings nothing), except at ``damaged_is_error``: then its
    ``BadCapture`` is raised, as when it is the one document asked for.
    """

    def __init__(
        self,
        recording: Documents,
        indices: range,
        *,
        name: str,
        damaged_is_error: int | None = None,
    ) -> None:
        """Read ``indices`` of ``recording`` (``name`` prefixes a skip's warning)."""
        self._recording = recording
        self._indices = iter(indices)
        self._name = name
        self._fatal_index = damaged_is_error
        self._ended = False

    def start(self) -> Arrival:
        """The first document."""
        return self.advance()

    def advance(self) -> Arrival:
        """The next document; at the end (or the stream's), nothing, and ``ended``."""
        index = next(self._indices, None)
        if index is None or not self._recording.wait_for(index):
            self._ended = True
            return NOTHING
        try:
            snapshot = self._recording.snapshot(index)
        except IndexError:
            self._ended = True
            return NOTHING
        except BadCapture as error:
            if index == self._fatal_index:
                raise
            self._recording.warnings.append(f"{self._name}: skipped {error}")
            return NOTHING
        return Arrival((snapshot,))

    def apply(self, command: Command) -> Arrival:
        """No commands: nobody is at the keys."""
        return NOTHING

    def next_delay(self, interval: float) -> float | None:
        """At once; None once every document is read."""
        return None if self._ended else 0.0

    def window(self, size: int) -> Sequence[Snapshot]:
        """Never rebuilt."""
        return ()

    def status(self) -> None:
        """No replay bar."""
        return None

    @property
    def paused(self) -> bool:
        """Never paused."""
        return False

    @property
    def error(self) -> None:
        """Damage is a warning or raised, never shown as stale data."""
        return None

    @property
    def waiting(self) -> None:
        """The recording is open."""
        return None

    def close(self) -> None:
        """The recording is its opener's to close."""
