"""The index of a `--query-gpu` CSV log: where each snapshot's rows lie, how many lines they
hold and when it was taken (26 bytes a snapshot, in arrays), and the header each is read by.

Times are kept as seconds after the log's first time (NaN: no time), so that a snapshot's
time needs no parse and finding a moment is a bisection of floats."""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Iterable
from datetime import datetime, timedelta
from itertools import chain, repeat
from operator import le, sub

from gputop.sources.csvlog.parse import Schema, parse_timestamp
from gputop.sources.recordings.stamps import last_at_or_before

_NO_STAMP = math.nan


class SnapshotIndex:
    """Every snapshot found so far, in the order of the log."""

    def __init__(self) -> None:
        self.starts = array("q")
        self.ends = array("q")
        """Where each snapshot's last line ends (its newline excluded)."""
        self.line_counts = array("H")
        """How many lines each snapshot's bytes hold, when the scan counted them (0: not
        counted; a run counts them then)."""
        self.stamps = array("d")
        self.base: datetime | None = None
        """The log's first time, which ``stamps`` count from."""
        self.ordered = True
        """Every snapshot timed, none earlier than the one before: ``index_at`` bisects."""
        self.schema_firsts: list[int] = []
        """The first snapshot read by each of ``schemas``."""
        self.schemas: list[Schema] = []

    def __len__(self) -> int:
        return len(self.starts)

    def add(self, schema: Schema, start: int, end: int, lines: int, stamp: bytes | None) -> None:
        """One snapshot read by ``schema``, at ``start:end``, stamped ``stamp`` (its first
        row's timestamp cell; None: no time)."""
        count = len(self.starts)
        if not self.schema_firsts or self.schemas[-1] is not schema:
            self.schema_firsts.append(count)
            self.schemas.append(schema)
        self.starts.append(start)
        self.ends.append(end)
        self.line_counts.append(lines)
        moment = None if stamp is None else parse_timestamp(stamp.decode("ascii", "replace"))
        if moment is None:
            self.stamps.append(_NO_STAMP)
            self.ordered = False
        else:
            if self.base is None:
                self.base = moment
            seconds = (moment - self.base).total_seconds()
            if self.ordered and count and not self.stamps[count - 1] <= seconds:
                self.ordered = False
            self.stamps.append(seconds)

    def extend(
        self, starts: Iterable[int], ends: Iterable[int], lines: int, seconds: list[float]
    ) -> None:
        """Snapshots read by the last schema, each of ``lines`` lines, timed ``seconds``
        (as ``seconds_of`` gives them): a stretch taken at once, in C loops."""
        count = len(self.stamps)
        if self.ordered:
            before = self.stamps[count - 1] if count else seconds[0]
            self.ordered = all(map(le, chain((before,), seconds), seconds))
        self.starts.extend(starts)
        self.ends.extend(ends)
        self.line_counts.extend(repeat(lines, len(seconds)))
        self.stamps.extend(seconds)

    def seconds_of(self, stamps: list[bytes]) -> list[float] | None:
        """The seconds after the log's first time of the stamp cells ``stamps`` (stripped),
        as ``add`` keeps them, the first of them the log's first time when it has none
        yet; None when one is not a time."""
        base = self.base
        if base is None:
            base = parse_timestamp(stamps[0].decode("ascii", "replace"))
            if base is None:
                return None
        try:
            joined = b"\0".join(stamps).decode("ascii").replace("/", "-").split("\0")
            if len(joined) != len(stamps):
                return None
            moments = list(map(datetime.fromisoformat, joined))
            seconds = list(map(timedelta.total_seconds, map(sub, moments, repeat(base))))
        except (ValueError, TypeError):
            return None
        self.base = base
        return seconds

    def schema_of(self, index: int) -> Schema:
        """The schema snapshot ``index`` is read by."""
        return self.schemas[bisect.bisect_right(self.schema_firsts, index) - 1]

    def timestamp(self, index: int) -> datetime | None:
        """When snapshot ``index`` (>= 0) was taken (None: no time)."""
        seconds = self.stamps[index]
        if seconds != seconds or self.base is None:
            return None
        return self.base + timedelta(microseconds=round(seconds * 1e6))

    def index_at(self, moment: datetime) -> int:
        """The last snapshot taken at or before ``moment`` (the first, if all are later)."""
        if self.base is None or not self.starts:
            return 0
        seconds = (moment - self.base).total_seconds()
        return last_at_or_before(self.stamps, seconds, ordered=self.ordered)
