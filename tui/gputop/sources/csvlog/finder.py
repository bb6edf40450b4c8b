"""Finding whole snapshots of a `--query-gpu` CSV log in a chunk, without a Python step per
row: once one snapshot has been read row by row, the first row of each following one is
found by its first GPU's identity alone, with one regular expression over the chunk."""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import repeat
from typing import cast

from gputop.sources.csvlog.index import SnapshotIndex
from gputop.sources.csvlog.parse import Schema

_CELL = rb"[^,\n]*+, "
"""A cell and the separator after it (possessive: a cell never gives back)."""
_LOWER = re.compile(rb"[a-z]")
_MOST_LINES = 2**16
"""``SnapshotIndex.line_counts`` holds fewer lines than this (more: not counted)."""


class SnapshotFinder:
    """Where the snapshots of a chunk start, once the rows of one snapshot are known."""

    def __init__(self, index: SnapshotIndex) -> None:
        self._index = index
        self.first_rows: re.Pattern[bytes] | None = None
        """Finds the first row of each snapshot (at the newline before it); None: nothing
        learned (yet, or since the last header)."""
        self._first_or_lower: re.Pattern[bytes] | None = None
        """The same, and any line that starts in lower case (a header, maybe)."""
        self.rows = 0
        """The rows of each snapshot found."""
        self._stamp_cell: Callable[[bytes, int], re.Match[bytes] | None] | None = None
        """The timestamp cell of the row at a place."""

    @property
    def lines(self) -> int:
        """What the index keeps as the line count of a snapshot found (0: not counted)."""
        return self.rows if self.rows < _MOST_LINES else 0

    def learn(self, schema: Schema, first_key: bytes, rows: int) -> None:
        """Find the following snapshots by ``first_key``, the identity of the first of the
        ``rows`` GPUs of a snapshot just read row by row."""
        assert schema.identity_at is not None
        self.rows = rows
        stamp_at = schema.timestamp_at
        self._stamp_cell = (
            None
            if stamp_at is None
            else re.compile(_CELL * stamp_at + rb"([^,\n]*+)(?=, |\r?\n|$)").match
        )
        # A literal newline first, and possessive cells: about 7x quicker than `(?m)^`, and
        # the cells spelled out rather than repeated as a group: 1.5x quicker again.
        first_row = _CELL * schema.identity_at + re.escape(first_key) + rb"(?=, |\r?\n)"
        self.first_rows = re.compile(rb"\n" + first_row)
        # The same, and any line that starts in lower case (a header, maybe): one pass for both.
        self._first_or_lower = re.compile(rb"\n(?:[a-z]|" + first_row + rb")")

    def forget(self) -> None:
        """A new header: its rows are read row by row until a snapshot of them is learned."""
        self.first_rows = self._first_or_lower = None

    def starts_in(self, body: bytes) -> list[int] | None:
        """Where each snapshot's first row starts in ``body``, found in the same pass that
        looks for headers; None when a line may be a header (or nothing is learned yet):
        then ``body`` is read the careful way."""
        finder = self._first_or_lower
        if finder is None or b"a" <= body[:1] <= b"z":
            return None
        starts = [match.start() + 1 for match in finder.finditer(body)]
        if _LOWER.search(bytes(map(body.__getitem__, starts))):
            return None
        return starts

    def starts_between(self, body: bytes, begin: int, end: int) -> list[int]:
        """Where each snapshot's first row starts in ``body[begin:end]``."""
        assert self.first_rows is not None
        return [match.start() + 1 for match in self.first_rows.finditer(body, begin, end)]

    def stamps_at(self, body: bytes, starts: list[int]) -> list[float] | None:
        """The seconds after the log's first time of the rows at ``starts``, as the index
        keeps them; None when one of them is not a time (or the log has none yet): those
        are read one by one."""
        find = self._stamp_cell
        if find is None or self._index.base is None:
            return None
        found = list(map(find, repeat(body), starts))
        if None in found:
            return None
        cells = map(re.Match.group, cast("list[re.Match[bytes]]", found), repeat(1))
        return self._index.seconds_of(list(map(bytes.strip, cells)))
