"""Telling the queries of a `--query-gpu` CSV log with no GPU identity (no index, UUID or
bus id) apart by their rows' times.

nvidia-smi stamps each GPU's row as it reads that GPU, so the rows of one query can differ
by a few milliseconds: a row stamped at most ``_QUERY_STEP`` after the row before it, and in
a quarter of the pause that came before its snapshot, is read as the next GPU of that
snapshot (see ``QueryRows.same_query``)."""

from __future__ import annotations

import math
from collections.abc import Callable

from gputop.sources.csvlog.parse import parse_timestamp
from gputop.sources.recordings.stamps import epoch_seconds

_QUERY_STEP = 0.05
"""The most, in seconds, between the stamps of two GPUs' rows of one query in a log with no
GPU identity (nvidia-smi reads a GPU in about a millisecond for a short query)."""
_QUERY_SPAN = 0.25
"""The most a query of every GPU spans: past it a row starts a new snapshot."""

UnsureRow = tuple[int, int, bytes]
"""A row's start, end and stamp, while whether it is a snapshot of its own is not known."""


class QueryRows:
    """The times of the rows read so far, and of the snapshot being read."""

    def __init__(self, split: Callable[[list[UnsureRow]], None]) -> None:
        self._split = split
        """Makes each of the rows given a snapshot of its own."""
        self._row_stamp: bytes | None = None
        self._row_at: float | None = None
        """The stamp and time of the row before."""
        self._open_at: float | None = None
        """The time of the open snapshot's first row."""
        self._open_pause = math.inf
        """The pause before the open snapshot (infinite: the log's first, not known)."""
        self._unsure: list[UnsureRow] = []
        """The open snapshot's rows while the pause before it is unknown (the log's
        first), and the longest step between them: see ``same_query``."""
        self._unsure_step = 0.0
        self._minute_head = b""
        self._minute_at = 0.0

    def same_query(self, stamp: bytes, *, open_snapshot: bool) -> bool:
        """Whether a row stamped ``stamp`` (not the open snapshot's stamp) is the next GPU
        of the open snapshot: stamped at most ``_QUERY_STEP`` after the row before it, in
        less than a quarter of the pause before the snapshot, and within ``_QUERY_SPAN``
        of its first row.

        The first snapshot has no pause before it: its rows are held as unsure until the
        row after them. If that row comes after a clear pause (four times the longest step
        between them), they were one query of several GPUs; if not (a log of one GPU
        sampled faster than ``_QUERY_STEP``), each is a snapshot of its own."""
        if stamp == self._row_stamp:
            return open_snapshot
        at = self._stamp_seconds(stamp)
        before, self._row_stamp, self._row_at = self._row_at, stamp, at
        step = None if at is None or before is None else at - before
        if (
            open_snapshot
            and step is not None
            and 0 <= step <= _QUERY_STEP
            and step * 4 < self._open_pause
            and self._open_at is not None
            and at is not None
            and at - self._open_at <= _QUERY_SPAN
        ):
            if self._open_pause == math.inf:
                self._unsure_step = max(self._unsure_step, step)
            return True
        if len(self._unsure) > 1 and not (step is not None and step > 4 * self._unsure_step):
            self._split(self._unsure.copy())
        self._open_pause = math.inf if step is None else step
        self._open_at = at
        return False

    def note(self, start: int, end: int, stamp: bytes) -> None:
        """A row of the open snapshot: held as unsure while the pause before it is not
        known."""
        if self._open_pause == math.inf:
            self._unsure.append((start, end, stamp.strip()))

    def closed(self) -> None:
        """The open snapshot is indexed: its rows are sure."""
        self._unsure = []
        self._unsure_step = 0.0

    def _stamp_seconds(self, stamp: bytes) -> float | None:
        """The time of a row's stamp in seconds (None: no time). Rows of one minute share
        the stamp's first 16 bytes (``2024/01/04 15:02``, or ISO's ``T``): only the
        seconds after it are read then, a full parse costing several times as much."""
        head = stamp[:17]
        if head == self._minute_head:
            try:
                return self._minute_at + float(stamp[17:])
            except ValueError:
                pass
        moment = parse_timestamp(stamp.decode("ascii", "replace").strip())
        if moment is None:
            return None
        at = epoch_seconds(moment)
        if head[16:] == b":":
            self._minute_head = head
            self._minute_at = at - moment.second - moment.microsecond / 1e6
        return at
