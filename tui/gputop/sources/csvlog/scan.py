"""Scanning a `--query-gpu` CSV log into its ``SnapshotIndex``, a chunk at a time.

A snapshot is the rows of one query of every GPU: a new one starts where a GPU's index,
UUID or bus id comes round again, or, in a log with none of those, where the time moves on
(``queries``; else each row is one GPU's snapshot, or the rows between two repeated headers
are one). Stretches of whole snapshots are taken a chunk at a time (``finder``); anything
else is read row by row.

Followed (``--follow``, a pipe), the last snapshot is held back until the next one begins,
the writer ends, or the log has been still for half a second: until then more of its GPUs'
rows may come.
"""

from __future__ import annotations

import itertools
import re
import time
from itertools import compress, islice, repeat
from operator import add, ne
from pathlib import Path

from gputop.errors import BadCapture
from gputop.sources.csvlog.data import LogData
from gputop.sources.csvlog.finder import SnapshotFinder
from gputop.sources.csvlog.index import SnapshotIndex
from gputop.sources.csvlog.parse import Schema, is_apps_header, is_header
from gputop.sources.csvlog.queries import QueryRows, UnsureRow
from gputop.sources.recordings.following import WAIT_SLICE
from gputop.sources.recordings.indexed import UTF8_BOM

_CHUNK = 1 << 20
_MAX_LINE = 1 << 16
"""A line longer than this is no nvidia-smi CSV row (the widest query is about 6 KB)."""
_SEPARATOR = b", "
_LOWER_LINE = re.compile(rb"\n[a-z]")
"""A line that starts with a lower-case letter (after the newline before it)."""
_SETTLE = 0.5
"""Seconds a followed log must stay still before its last snapshot is taken as whole."""


class Scanner:
    """Reads the log on from where it stopped, adding each whole snapshot to the index."""

    def __init__(
        self,
        path: Path,
        data: LogData,
        index: SnapshotIndex,
        warnings: list[str],
        *,
        schema: Schema | None,
        follow: bool,
    ) -> None:
        self._path = path
        self._data = data
        self._index = index
        self._warnings = warnings
        self._follow = follow
        self.schema = schema
        """The header in force (or the one ``--query-gpu`` gave a headerless log)."""
        self.complete = False
        """The log is read to its end, and ended."""
        self.any_apps = False
        """A `--query-compute-apps` header has been read (its rows lie inside snapshots)."""
        self.bad_width: int | None = None
        """The cells of the first row that did not match its header (None: none so far)."""
        self._scan_at = 0
        # The snapshot being read: its start, end, GPU keys, timestamp text and lines.
        self._open_start = -1
        self._open_end = -1
        self._open_keys: set[bytes] = set()
        self._open_stamp: bytes | None = None
        self._open_lines = 0
        self._first_key: bytes | None = None
        """The identity of the first GPU of the snapshot being read."""
        self._repeated = False
        self._bad_rows = 0
        self._grew_at = time.monotonic()
        self._apps = False
        """The rows being read are a `--query-compute-apps` query's."""
        self._line_end = 0
        """Where the line being read ends (a header's, in the file)."""
        self._finder = SnapshotFinder(index)
        self._queries = QueryRows(self._split)

    # -- reading on ----------------------------------------------------------------------

    def until(self, index: int) -> bool:
        """Read on until snapshot ``index`` is indexed, or nothing more has come; whether
        it is."""
        while len(self._index.starts) <= index and not self.complete:
            if not self.step():
                if self._follow:
                    # nvidia-smi writes a query's rows in one burst: once the log has been
                    # still for a moment, the snapshot being read has all its GPUs.
                    if time.monotonic() - self._grew_at >= _SETTLE and self._open_start >= 0:
                        self._close_snapshot()
                        continue
                    break  # a followed log: this is all there is for now
                self._data.wait(WAIT_SLICE)  # a gzip still being inflated: it will end
        return len(self._index.starts) > index

    def to_end(self) -> None:
        """Read all there is (a followed log: all that has come)."""
        self.until(2**62)

    def step(self) -> bool:
        """Read what has come since the last step; False when nothing new was read."""
        data = self._data
        ended = data.ended  # before available(): what came before it ended is all there is
        available = data.available()
        at = self._scan_at
        if at == 0 and available >= len(UTF8_BOM) and data.read(0, len(UTF8_BOM)) == UTF8_BOM:
            at = self._scan_at = len(UTF8_BOM)  # the first line starts after it
        if at >= available:
            if ended:
                self._finish()
            return False
        chunk = data.read(at, min(_CHUNK, available - at))
        last = chunk.rfind(b"\n")
        if last < 0:
            if not ended and len(chunk) < _MAX_LINE:
                return False  # a line still being written
            last = len(chunk) - 1
            if len(chunk) >= _MAX_LINE:
                self._warnings.append(f"{self._path}: stopped at byte {at}: a line too long")
                self._scan_at = available
                self._finish()
                return False
        body = chunk[: last + 1]
        starts = None if self._apps else self._finder.starts_in(body)
        if starts is not None:
            self._rows(body, 0, len(body), at, starts)
            self._advance(at + len(body), available, ended)
            return True
        begin = 0
        # Only a line that starts with a lower-case letter can be a header.
        lines = _LOWER_LINE.finditer(body)
        first = (0,) if b"a" <= body[:1] <= b"z" else ()
        for start in itertools.chain(first, (match.start() + 1 for match in lines)):
            stop = body.find(b"\n", start)
            stop = len(body) if stop < 0 else stop
            line = body[start:stop]
            if is_header(line.decode("ascii", "replace").rstrip("\r")):
                self._rows(body, begin, start, at)
                self._line_end = at + stop
                self._header(line)
                begin = stop + 1
        self._rows(body, begin, len(body), at)
        self._advance(at + len(body), available, ended)
        return True

    @property
    def resume_at(self) -> int:
        """Where the scan would start its next snapshot."""
        return self._open_start if self._open_start >= 0 else self._scan_at

    @property
    def plain(self) -> bool:
        """The rows being read name their GPU and time, and no processes lie among them."""
        schema = self.schema
        return (
            schema is not None
            and schema.identity_at is not None
            and schema.timestamp_at is not None
            and not self.any_apps
        )

    def skip_to(self, offset: int, available: int) -> None:
        """Go on from ``offset``: the snapshots before it were taken by another reader
        (``Runs.stream``), of a plain file that has ended at ``available``."""
        self._open_start = -1
        self._open_keys = set()
        self._open_stamp = None
        self._advance(offset, available, True)

    def _advance(self, scan_at: int, available: int, ended: bool) -> None:
        self._scan_at = scan_at
        self._grew_at = time.monotonic()
        if self._scan_at >= available and ended:
            self._finish()

    def _finish(self) -> None:
        self._close_snapshot()
        if self._bad_rows > 1:
            self._warnings.append(f"{self._path}: skipped {self._bad_rows} unreadable rows")
        self.complete = True

    # -- snapshots -------------------------------------------------------------------------

    def _close_snapshot(self) -> None:
        if self._open_start < 0:
            return
        assert self.schema is not None
        self._index.add(
            self.schema, self._open_start, self._open_end, self._open_lines, self._open_stamp
        )
        self._open_lines = 0
        if self._finder.first_rows is None and len(self._open_keys) > 0:
            self._learn(len(self._open_keys))
        self._open_start = -1
        self._open_keys = set()
        self._open_stamp = None
        self._queries.closed()

    def _learn(self, rows: int) -> None:
        """Read the following snapshots fast: each starts with the first GPU of this one."""
        schema = self.schema
        if schema is None or schema.identity_at is None or self._first_key is None:
            return
        self._finder.learn(schema, self._first_key, rows)

    def _split(self, rows: list[UnsureRow]) -> None:
        """Each of ``rows`` a snapshot of its own (see ``QueryRows.same_query``)."""
        for start, end, stamp in rows:
            self._open_start, self._open_end, self._open_stamp = start, end, stamp
            self._close_snapshot()

    # -- lines -------------------------------------------------------------------------------

    def _header(self, line: bytes) -> None:
        text = line.decode("ascii", "replace").rstrip("\r")
        if is_apps_header(text):
            # `--query-compute-apps` written with the GPU query: its processes belong to the
            # snapshot being read (its rows extend it; the snapshot's reader places them).
            self._apps = self.any_apps = True
            if self._open_start >= 0:
                self._open_end = self._line_end
            return
        self._apps = False
        if self.schema is not None and text == self.schema.header:
            self._repeated = True
            self._close_snapshot()
            return
        self._close_snapshot()
        self._finder.forget()
        try:
            self.schema = Schema.parse(text)
        except BadCapture as error:
            self._warnings.append(f"{self._path}: {error}; its rows are skipped")
            self.schema = None

    def _row(self, line: bytes, start: int, end: int) -> None:
        if self._apps:
            if self._open_start >= 0:
                self._open_end = end
            return
        schema = self.schema
        if schema is None:
            self._bad_rows += 1
            return
        if line.count(_SEPARATOR) + 1 != schema.width:
            if self.bad_width is None:
                self.bad_width = line.count(_SEPARATOR) + 1
            self._bad_row(start)
            return
        identity = schema.identity_at
        stamp_at = schema.timestamp_at
        if identity is not None:
            key = line.split(_SEPARATOR, identity + 1)[identity]
            if key in self._open_keys:
                self._close_snapshot()
            if not self._open_keys:
                self._first_key = key
            self._open_keys.add(key)
        elif stamp_at is not None:
            stamp = line.split(_SEPARATOR, stamp_at + 1)[stamp_at]
            if stamp != self._open_stamp and not self._queries.same_query(
                stamp, open_snapshot=self._open_start >= 0
            ):
                self._close_snapshot()
            self._queries.note(start, end, stamp)
        elif not self._repeated:
            self._close_snapshot()
        if self._open_start < 0:
            self._open_start = start
            if stamp_at is not None:
                self._open_stamp = line.split(_SEPARATOR, stamp_at + 1)[stamp_at].strip()
        self._open_end = end

    def _bad_row(self, start: int) -> None:
        self._bad_rows += 1
        if self._bad_rows == 1:
            self._warnings.append(
                f"{self._path}: skipped a row at byte {start} whose cells do not match its header"
            )

    def _lines(self, body: bytes, begin: int, end: int, at: int) -> None:
        """The rows of ``body[begin:end]`` one by one (``at``: the file offset of body)."""
        position = begin
        for line in body[begin:end].split(b"\n"):
            start = position
            position += len(line) + 1
            if line and not line.isspace():
                self._row(line, at + start, at + min(position - 1, end))

    def _rows(
        self, body: bytes, begin: int, end: int, at: int, found: list[int] | None = None
    ) -> None:
        """The data rows of ``body[begin:end]``, a whole snapshot at a time where it can.

        Once a snapshot has been read row by row, the rows of the next ones are found by
        the first GPU's identity alone, with one regular expression over the chunk: a span
        from one such row to the next holding as many rows as that snapshot had is a
        snapshot. Anything else (a GPU missing, a stray line) is read row by row.
        ``found``: those rows' places, when ``SnapshotFinder.starts_in`` found them already.
        """
        finder = self._finder
        if finder.first_rows is None or self._apps:
            self._lines(body, begin, end, at)
            return
        # Each match starts at the newline before the row.
        starts = found
        if starts is None:
            starts = finder.starts_between(body, begin, end)
        if not starts:
            self._lines(body, begin, end, at)
            return
        self._lines(body, begin, starts[0], at)
        self._close_snapshot()
        rows = finder.rows
        # The spans that hold as many rows as the learned snapshot are snapshots, taken a
        # stretch at a time; any other is read row by row.
        counts = map(body.count, repeat(b"\n"), starts, islice(starts, 1, None))
        odd = list(compress(itertools.count(), map(ne, counts, repeat(rows))))
        done = 0
        for stop in [*odd, len(starts) - 1]:
            if done < stop:
                self._snapshots(body, at, starts[done : stop + 1])
            if stop < len(starts) - 1:
                self._lines(body, starts[stop], starts[stop + 1], at)
                self._close_snapshot()
            done = stop + 1
        self._lines(body, starts[-1], end, at)

    def _snapshots(self, body: bytes, at: int, starts: list[int]) -> None:
        """One snapshot from each of ``starts`` (but the last) to the next, known whole."""
        firsts = starts[:-1]
        seconds = self._finder.stamps_at(body, firsts)
        if seconds is None:
            for start, stop in itertools.pairwise(starts):
                self._snapshot(body, at, start, stop)
            return
        self._index.extend(
            map(add, firsts, repeat(at)),
            map(add, islice(starts, 1, None), repeat(at - 1)),
            self._finder.lines,
            seconds,
        )

    def _snapshot(self, body: bytes, at: int, start: int, stop: int) -> None:
        """The snapshot from ``start`` to ``stop``, known whole: its first row's time."""
        schema = self.schema
        assert schema is not None
        stamp_at = schema.timestamp_at
        if stamp_at is not None:
            line = body[start : body.find(b"\n", start)]
            self._open_stamp = line.split(_SEPARATOR, stamp_at + 1)[stamp_at].strip()
        self._open_start = at + start
        self._open_end = at + stop - 1
        self._open_lines = self._finder.lines
        self._close_snapshot()
