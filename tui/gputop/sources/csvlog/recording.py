"""Random access to an `nvidia-smi --query-gpu=... --format=csv [-l N]` log.

The log is scanned once, in chunks, into an index of snapshots (the byte range of each
snapshot's rows, its timestamp and how many lines it holds: 26 bytes a snapshot, in arrays;
stretches of whole snapshots are taken a chunk at a time, in C loops), and rows are parsed
only when a snapshot is asked for. A snapshot is the rows of one query of every GPU: a new
one starts where a GPU's index, UUID or bus id comes round again, or, in a log with none of
those, where the time moves on (else each row is one GPU's snapshot, or the rows between
two repeated headers are one). nvidia-smi stamps each GPU's row as it reads that GPU, so
the rows of one query can differ by a few milliseconds: a row stamped at most
``_QUERY_STEP`` after the row before it, and in a quarter of the pause that came before its
snapshot, is read as the next GPU of that snapshot (see ``_same_query``).

A pipe or a .gz is copied (inflated) into an unnamed temporary file by a thread as it comes,
so reads never block the poller and any snapshot can be read again. Followed (``--follow``,
a pipe), the last snapshot is held back until the next one begins, the writer ends, or the
log has been still for half a second: until then more of its GPUs' rows may come.
"""

from __future__ import annotations

import bisect
import gzip
import itertools
import math
import os
import re
import stat
import tempfile
import threading
import time
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from itertools import compress, islice, repeat
from operator import add, le, ne, sub
from pathlib import Path
from typing import BinaryIO, cast

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.model.columns import SnapshotColumns
from gputop.sources.csvlog.bulk import RunReader
from gputop.sources.csvlog.parse import (
    AppsSchema,
    Schema,
    is_apps_header,
    is_header,
    parse_block,
    parse_timestamp,
    without_processes,
)
from gputop.sources.recordings.following import WAIT_SLICE
from gputop.sources.recordings.indexed import UTF8_BOM, IndexedLog
from gputop.sources.recordings.stamps import last_at_or_before

_CHUNK = 1 << 20
_MAX_LINE = 1 << 16
"""A line longer than this is no nvidia-smi CSV row (the widest query is about 6 KB)."""
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 31
_NO_STAMP = math.nan
_SEPARATOR = b", "
_LOWER_LINE = re.compile(rb"\n[a-z]")
_LOWER = re.compile(rb"[a-z]")
"""A line that starts with a lower-case letter (after the newline before it)."""
_CELL = rb"[^,\n]*+, "
"""A cell and the separator after it (possessive: a cell never gives back)."""
_NAME_CELL = re.compile(rb"\s*[a-z_]").match
"""A cell that may be a header's field name (never a GPU's index, UUID or bus id)."""
_RUN_BYTES = 1 << 18
"""How much of the log `runs` and `stream` read at once. The cells of 256 KiB (about
1.3 MB of objects, each touched four or five times: split, checked, converted, freed) stay
in the processor's cache, and their memory is reused by the next run; those of 1 MiB made
the allocator hand memory back and fault it in again each time (0.6 page faults a KB)
and were 10-20% slower over all. Smaller runs cost more in steps per run."""
_SMALLEST_RUN = 16
_SETTLE = 0.5
_QUERY_STEP = 0.05
"""The most, in seconds, between the stamps of two GPUs' rows of one query in a log with no
GPU identity (nvidia-smi reads a GPU in about a millisecond for a short query)."""
_QUERY_SPAN = 0.25
"""The most a query of every GPU spans: past it a row starts a new snapshot."""
"""Seconds a followed log must stay still before its last snapshot is taken as whole."""


def looks_like(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts a `--query-gpu` CSV log: its first
    non-blank line is a header of query fields, at least one of which gputop knows."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        line = text.decode("ascii").rstrip("\r")
    except UnicodeDecodeError:
        return False
    if not line or not is_header(line):
        return False
    try:
        Schema.parse(line)
    except BadCapture:
        return False
    return True


NOHEADER_HINT = (
    "a log written with `noheader` is read when its fields are named as they were given "
    "to nvidia-smi: --query-gpu timestamp,index,utilization.gpu,memory.used"
)

_QUERY_NAME = re.compile(r"[a-z_][a-zA-Z0-9_.]*")
_NUMBER_CELL = re.compile(r"-?[0-9]+(\.[0-9]+)? ?(%|MiB|W|MHz|C)?")


def query_schema(query: str) -> Schema:
    """The columns of a `noheader` log, from the fields given to `--query-gpu=`.

    Raises:
        BadCapture: not a comma list of field names, or none that gputop reads.
    """
    names = [name.strip() for name in query.split(",")]
    bad = next((name for name in names if not _QUERY_NAME.fullmatch(name)), None)
    if bad is not None:
        raise BadCapture(
            f"--query-gpu {query}: {bad!r} is not a field name (give them as to nvidia-smi: "
            "timestamp,index,utilization.gpu)"
        )
    try:
        return Schema.parse(", ".join(names))
    except BadCapture:
        raise BadCapture(
            f"--query-gpu {query}: names no field gputop reads (see `nvidia-smi "
            "--help-query-gpu`; gputop reads e.g. timestamp, index, utilization.gpu, "
            "memory.used, power.draw)"
        ) from None


def looks_like_noheader(head: bytes) -> bool:
    """Whether ``head`` starts a `--query-gpu` CSV log written with ``noheader``: its first
    line is cells of values (a time, numbers with or without their unit, `[N/A]`), no
    header."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        line = text.decode("ascii").rstrip("\r")
    except UnicodeDecodeError:
        return False
    cells = line.split(", ")
    if len(cells) < 2 or is_header(line):
        return False
    return any(
        parse_timestamp(cell) is not None
        or _NUMBER_CELL.fullmatch(cell)
        or (cell.startswith("[") and cell.endswith("]"))
        for cell in cells
    )


class _Data:
    """The log's bytes by offset: how many have come, and whether more may."""

    def read(self, offset: int, size: int) -> bytes:
        raise NotImplementedError

    def available(self) -> int:
        raise NotImplementedError

    @property
    def ended(self) -> bool:
        raise NotImplementedError

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self) -> None:
        raise NotImplementedError


class _FileData(_Data):
    """A regular file, read in place (followed: its size is where the writer is now)."""

    def __init__(self, handle: BinaryIO, *, follow: bool) -> None:
        self._handle = handle
        self._follow = follow

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self._handle.fileno(), size, offset)

    def available(self) -> int:
        return os.fstat(self._handle.fileno()).st_size

    @property
    def ended(self) -> bool:
        return not self._follow

    def close(self) -> None:
        self._handle.close()


class _SpooledData(_Data):
    """A pipe or a gzip, copied into an unnamed temporary file by a daemon thread."""

    def __init__(self, name: str, stream: BinaryIO, warnings: list[str]) -> None:
        self._name = name
        self._stream = stream
        self._warnings = warnings
        # Unbuffered: written with os.write and read back with os.pread.
        self._spool = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 - closed in close()
        self._size = 0
        self._done = threading.Event()
        self._grew = threading.Event()
        self._inflate: zlib._Decompress | None = None
        threading.Thread(target=self._copy, name="gputop-csv-spool", daemon=True).start()

    def _copy(self) -> None:
        # A gzip's read1 returns what one step inflates; a raw pipe's read what has come.
        read = getattr(self._stream, "read1", self._stream.read)
        first = True
        try:
            while True:
                chunk = read(_CHUNK)
                if not chunk:
                    break
                if first and chunk.startswith(_GZIP_MAGIC):  # a gzip piped in
                    self._inflate = zlib.decompressobj(_GZIP_WBITS)
                first = False
                self._append(chunk if self._inflate is None else self._inflated(chunk))
        except (OSError, EOFError, ValueError, zlib.error) as error:
            self._warnings.append(f"{self._name}: the data stopped early ({error or 'cut off'})")
        finally:
            self._done.set()
            self._grew.set()

    def _inflated(self, chunk: bytes) -> bytes:
        assert self._inflate is not None
        out = self._inflate.decompress(chunk)
        while self._inflate.eof and self._inflate.unused_data:  # the next gzip member
            rest = self._inflate.unused_data
            self._inflate = zlib.decompressobj(_GZIP_WBITS)
            out += self._inflate.decompress(rest)
        return out

    def _append(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            view = view[os.write(self._spool.fileno(), view) :]
        self._size += len(chunk)
        self._grew.set()

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self._spool.fileno(), size, offset)

    def available(self) -> int:
        return self._size

    @property
    def ended(self) -> bool:
        return self._done.is_set()

    def wait(self, seconds: float) -> None:
        self._grew.wait(seconds)
        self._grew.clear()

    def close(self) -> None:
        self._stream.close()
        self._spool.close()


def _open_data(path: Path, follow: bool, warnings: list[str]) -> _Data:
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise BadCapture(f"{path}: a directory; name the CSV log")
        handle = path.open("rb", buffering=0)
    except OSError as error:
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
    name = str(path)
    if not stat.S_ISREG(mode):
        return _SpooledData(name, handle, warnings)
    if os.pread(handle.fileno(), 2, 0) == _GZIP_MAGIC:
        return _SpooledData(name, gzip.GzipFile(fileobj=handle), warnings)  # type: ignore[arg-type]
    return _FileData(handle, follow=follow)


_EPOCH = datetime(1970, 1, 1)


def _seconds(moment: datetime) -> float:
    """``moment`` as seconds on one scale, whether it has a time zone or not (only the
    differences between rows of one log are used)."""
    return (moment.replace(tzinfo=None) - _EPOCH).total_seconds()


class CsvRecording(IndexedLog):
    """The snapshots of a `--query-gpu` CSV log, in order, by index or time (a Timeline)."""

    def __init__(self, path: Path, data: _Data, warnings: list[str], *, follow: bool) -> None:
        self.path = path
        self.warnings = warnings
        self._data = data
        self._follow = follow
        self._starts = array("q")
        self._ends = array("q")
        self._line_counts = array("H")
        """How many lines each snapshot's bytes hold, when the scan counted them (0: not
        counted; a run counts them then)."""
        self._open_lines = 0
        self._stamps = array("d")
        self._base: datetime | None = None
        self._ordered = True
        self._schema_firsts: list[int] = []
        self._schemas: list[Schema] = []
        self._schema: Schema | None = None
        self._scan_at = 0
        self._complete = False
        # The block being read: its start, end, GPU keys and timestamp text.
        self._open_start = -1
        self._open_end = -1
        self._open_keys: set[bytes] = set()
        self._open_stamp: bytes | None = None
        # In a log with no GPU identity: the stamp and time of the row before, the time of
        # the open snapshot's first row, and the pause before it.
        self._row_stamp: bytes | None = None
        self._row_at: float | None = None
        self._open_at: float | None = None
        self._open_pause = math.inf
        # The open snapshot's rows (start, end, stamp) while the pause before it is unknown
        # (the log's first), and the longest step between them: see ``_same_query``.
        self._unsure: list[tuple[int, int, bytes]] = []
        self._unsure_step = 0.0
        self._minute_head = b""
        self._minute_at = 0.0
        self._repeated = False
        self._bad_rows = 0
        self._bad_width: int | None = None
        """The cells of the first row that did not match its header (None: none so far)."""
        self._given: Schema | None = None
        """The schema ``--query-gpu`` gave for a headerless log."""
        self._grew_at = time.monotonic()
        self._first_key: bytes | None = None
        """The identity of the first GPU of the snapshot being read."""
        self._fast: re.Pattern[bytes] | None = None
        """Finds the first row of each snapshot (see ``_rows``)."""
        self._fast_or_lower: re.Pattern[bytes] | None = None
        self._fast_rows = 0
        self._stamp_cell: Callable[[bytes, int], re.Match[bytes] | None] | None = None
        """The timestamp cell of the row at a place (see ``_learn``)."""
        self._apps = False
        """The rows being read are a `--query-compute-apps` query's."""
        self._any_apps = False
        """A `--query-compute-apps` header has been read (its rows lie inside snapshots)."""
        self._scan_line_end = 0
        self._reader: RunReader | None = None
        """What ``stream`` reads plain stretches with (for the schema it was made for)."""

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        follow: bool = False,
        waiting: Callable[[], None] | None = None,
        query: str | None = None,
    ) -> CsvRecording:
        """Open a CSV log (a file, .gz, or pipe). ``query``: the fields it holds, as given
        to `nvidia-smi --query-gpu=` (``timestamp,index,utilization.gpu``), for a log
        written with ``noheader`` (a header line in the log still says what follows it).

        Raises:
            BadCapture: missing, unreadable, or no header and snapshot could be read.
        """
        path = Path(path)
        schema = None if query is None else query_schema(query)
        warnings: list[str] = []
        recording = cls(path, _open_data(path, follow, warnings), warnings, follow=follow)
        recording._schema = recording._given = schema
        try:
            recording._check_first(waiting)
        except BadCapture:
            recording.close()
            raise
        return recording

    def reopened(self) -> CsvRecording:
        """The same file opened afresh, as ``open`` opened it: nothing read past the first
        snapshot yet.

        Raises:
            BadCapture: the file can no longer be read.
        """
        warnings: list[str] = []
        recording = type(self)(
            self.path, _open_data(self.path, self._follow, warnings), warnings, follow=self._follow
        )
        recording._schema = recording._given = self._given
        try:
            recording._check_first(None)
        except BadCapture:
            recording.close()
            raise
        return recording

    def _check_first(self, waiting: Callable[[], None] | None) -> None:
        started = time.monotonic()
        said = waiting is None
        while not self._scan_until(0):
            if self._complete:
                why = self._no_rows() if self._schema else self._no_header()
                raise BadCapture(f"{self.path}: {why}")
            if not said and time.monotonic() - started >= 1.0:
                said = True
                assert waiting is not None
                waiting()
            self._data.wait(WAIT_SLICE)
        self.snapshot(0)

    def _no_rows(self) -> str:
        given = self._given
        if given is not None and self._schema is given and self._bad_width is not None:
            # Every row refused for its width: the fields given do not describe this log.
            return (
                f"--query-gpu gave {given.width} names for rows of {self._bad_width} columns: "
                "give the fields the log was recorded with, in their order"
            )
        return "no GPU rows after the header"

    def _no_header(self) -> str:
        if self._data.available() == 0:
            return "empty file"
        return (
            "not an `nvidia-smi --query-gpu ... --format=csv` log: its first line is not a "
            f"header of query fields ({NOHEADER_HINT})"
        )

    @property
    def following(self) -> bool:
        """True while rows may still be appended."""
        return self._follow and not self._complete

    @property
    def has_memory(self) -> bool:
        """Every header of the log names memory.used (else waiting cannot be told from idle)."""
        return bool(self._schemas) and all(schema.has_memory for schema in self._schemas)

    # -- scanning ------------------------------------------------------------------------

    def _close_block(self) -> None:
        if self._open_start < 0:
            return
        assert self._schema is not None
        count = len(self._starts)
        if not self._schema_firsts or self._schemas[-1] is not self._schema:
            self._schema_firsts.append(count)
            self._schemas.append(self._schema)
        self._starts.append(self._open_start)
        self._ends.append(self._open_end)
        self._line_counts.append(self._open_lines)
        self._open_lines = 0
        stamp = self._open_stamp
        moment = None if stamp is None else parse_timestamp(stamp.decode("ascii", "replace"))
        if moment is None:
            self._stamps.append(_NO_STAMP)
            self._ordered = False
        else:
            if self._base is None:
                self._base = moment
            seconds = (moment - self._base).total_seconds()
            if self._ordered and count and not self._stamps[count - 1] <= seconds:
                self._ordered = False
            self._stamps.append(seconds)
        if self._fast is None and len(self._open_keys) > 0:
            self._learn(len(self._open_keys))
        self._open_start = -1
        self._open_keys = set()
        self._open_stamp = None
        self._unsure = []
        self._unsure_step = 0.0

    def _header(self, line: bytes) -> None:
        text = line.decode("ascii", "replace").rstrip("\r")
        if is_apps_header(text):
            # `--query-compute-apps` written with the GPU query: its processes belong to the
            # snapshot being read (its rows extend it; ``snapshot`` places them).
            self._apps = self._any_apps = True
            if self._open_start >= 0:
                self._open_end = self._scan_line_end
            return
        self._apps = False
        if self._schema is not None and text == self._schema.header:
            self._repeated = True
            self._close_block()
            return
        self._close_block()
        self._fast = self._fast_or_lower = None
        try:
            self._schema = Schema.parse(text)
        except BadCapture as error:
            self.warnings.append(f"{self.path}: {error}; its rows are skipped")
            self._schema = None

    def _row(self, line: bytes, start: int, end: int) -> None:
        if self._apps:
            if self._open_start >= 0:
                self._open_end = end
            return
        schema = self._schema
        if schema is None:
            self._bad_rows += 1
            return
        if line.count(_SEPARATOR) + 1 != schema.width:
            if self._bad_width is None:
                self._bad_width = line.count(_SEPARATOR) + 1
            self._bad_row(start)
            return
        identity = schema.identity_at
        stamp_at = schema.timestamp_at
        if identity is not None:
            key = line.split(_SEPARATOR, identity + 1)[identity]
            if key in self._open_keys:
                self._close_block()
            if not self._open_keys:
                self._first_key = key
            self._open_keys.add(key)
        elif stamp_at is not None:
            stamp = line.split(_SEPARATOR, stamp_at + 1)[stamp_at]
            if stamp != self._open_stamp and not self._same_query(stamp):
                self._close_block()
            if self._open_pause == math.inf:
                self._unsure.append((start, end, stamp.strip()))
        elif not self._repeated:
            self._close_block()
        if self._open_start < 0:
            self._open_start = start
            if stamp_at is not None:
                self._open_stamp = line.split(_SEPARATOR, stamp_at + 1)[stamp_at].strip()
        self._open_end = end

    def _same_query(self, stamp: bytes) -> bool:
        """Whether a row of a log with no GPU identity, stamped ``stamp`` (not the open
        snapshot's stamp), is the next GPU of the open snapshot: stamped at most
        ``_QUERY_STEP`` after the row before it, in less than a quarter of the pause before
        the snapshot, and within ``_QUERY_SPAN`` of its first row.

        The first snapshot has no pause before it: its rows are held as unsure until the
        row after them. If that row comes after a clear pause (four times the longest step
        between them), they were one query of several GPUs; if not (a log of one GPU
        sampled faster than ``_QUERY_STEP``), each is a snapshot of its own."""
        if stamp == self._row_stamp:
            return self._open_start >= 0
        at = self._stamp_seconds(stamp)
        before, self._row_stamp, self._row_at = self._row_at, stamp, at
        step = None if at is None or before is None else at - before
        if (
            self._open_start >= 0
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
            self._split_unsure()
        self._open_pause = math.inf if step is None else step
        self._open_at = at
        return False

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
        at = _seconds(moment)
        if head[16:] == b":":
            self._minute_head = head
            self._minute_at = at - moment.second - moment.microsecond / 1e6
        return at

    def _split_unsure(self) -> None:
        """The open snapshot's rows, each a snapshot of its own (see ``_same_query``)."""
        for start, end, stamp in self._unsure.copy():
            self._open_start, self._open_end, self._open_stamp = start, end, stamp
            self._close_block()

    def _bad_row(self, start: int) -> None:
        self._bad_rows += 1
        if self._bad_rows == 1:
            self.warnings.append(
                f"{self.path}: skipped a row at byte {start} whose cells do not match its header"
            )

    def _scan_step(self) -> bool:
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
                self.warnings.append(f"{self.path}: stopped at byte {at}: a line too long")
                self._scan_at = available
                self._finish()
                return False
        body = chunk[: last + 1]
        starts = self._starts_in(body)
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
                self._scan_line_end = at + stop
                self._header(line)
                begin = stop + 1
        self._rows(body, begin, len(body), at)
        self._advance(at + len(body), available, ended)
        return True

    def _advance(self, scan_at: int, available: int, ended: bool) -> None:
        self._scan_at = scan_at
        self._grew_at = time.monotonic()
        if self._scan_at >= available and ended:
            self._finish()

    def _starts_in(self, body: bytes) -> list[int] | None:
        """Where each snapshot's first row starts in ``body``, found by the snapshot finder
        in the same pass that looks for headers; None when a line may be a header (or no
        finder is learned yet): then ``body`` is read the careful way."""
        finder = self._fast_or_lower
        if finder is None or self._apps or b"a" <= body[:1] <= b"z":
            return None
        starts = [match.start() + 1 for match in finder.finditer(body)]
        if _LOWER.search(bytes(map(body.__getitem__, starts))):
            return None
        return starts

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
        ``found``: those rows' places, when ``_starts_in`` found them already.
        """
        fast = self._fast
        if fast is None or self._apps:
            self._lines(body, begin, end, at)
            return
        # Each match starts at the newline before the row.
        starts = found
        if starts is None:
            starts = [match.start() + 1 for match in fast.finditer(body, begin, end)]
        if not starts:
            self._lines(body, begin, end, at)
            return
        self._lines(body, begin, starts[0], at)
        self._close_block()
        rows = self._fast_rows
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
                self._close_block()
            done = stop + 1
        self._lines(body, starts[-1], end, at)

    def _snapshots(self, body: bytes, at: int, starts: list[int]) -> None:
        """One snapshot from each of ``starts`` (but the last) to the next, known whole."""
        firsts = starts[:-1]
        seconds = self._stamps_at(body, firsts)
        if seconds is None:
            for start, stop in itertools.pairwise(starts):
                self._snapshot(body, at, start, stop)
            return
        count = len(self._stamps)
        if self._ordered:
            before = self._stamps[count - 1] if count else seconds[0]
            self._ordered = all(map(le, itertools.chain((before,), seconds), seconds))
        self._starts.extend(map(add, firsts, repeat(at)))
        self._ends.extend(map(add, islice(starts, 1, None), repeat(at - 1)))
        self._line_counts.extend(
            repeat(self._fast_rows if self._fast_rows < 2**16 else 0, len(firsts))
        )
        self._stamps.extend(seconds)

    def _snapshot(self, body: bytes, at: int, start: int, stop: int) -> None:
        """The snapshot from ``start`` to ``stop``, known whole: its first row's time."""
        schema = self._schema
        assert schema is not None
        stamp_at = schema.timestamp_at
        if stamp_at is not None:
            line = body[start : body.find(b"\n", start)]
            self._open_stamp = line.split(_SEPARATOR, stamp_at + 1)[stamp_at].strip()
        self._open_start = at + start
        self._open_end = at + stop - 1
        self._open_lines = self._fast_rows if self._fast_rows < 2**16 else 0
        self._close_block()

    def _stamps_at(self, body: bytes, starts: list[int]) -> list[float] | None:
        """The seconds after the log's first time of the rows at ``starts``, as
        ``_close_block`` gives them; None when one of them is not a time (or the log has
        none yet): those are read one by one."""
        find = self._stamp_cell
        if find is None or self._base is None:
            return None
        found = list(map(find, repeat(body), starts))
        if None in found:
            return None
        cells = map(re.Match.group, cast("list[re.Match[bytes]]", found), repeat(1))
        return self._seconds_of(list(map(bytes.strip, cells)))

    def _learn(self, rows: int) -> None:
        """Read the following snapshots fast: each starts with the first GPU of this one."""
        schema = self._schema
        if schema is None or schema.identity_at is None or self._first_key is None:
            return
        self._fast_rows = rows
        stamp_at = schema.timestamp_at
        self._stamp_cell = (
            None
            if stamp_at is None
            else re.compile(_CELL * stamp_at + rb"([^,\n]*+)(?=, |\r?\n|$)").match
        )
        # A literal newline first, and possessive cells: about 7x quicker than `(?m)^`, and
        # the cells spelled out rather than repeated as a group: 1.5x quicker again.
        first_row = _CELL * schema.identity_at + re.escape(self._first_key) + rb"(?=, |\r?\n)"
        self._fast = re.compile(rb"\n" + first_row)
        # The same, and any line that starts in lower case (a header, maybe): one pass for both.
        self._fast_or_lower = re.compile(rb"\n(?:[a-z]|" + first_row + rb")")

    def _finish(self) -> None:
        self._close_block()
        if self._bad_rows > 1:
            self.warnings.append(f"{self.path}: skipped {self._bad_rows} unreadable rows")
        self._complete = True

    def _scan_until(self, index: int) -> bool:
        while len(self._starts) <= index and not self._complete:
            if not self._scan_step():
                if self._follow:
                    # nvidia-smi writes a query's rows in one burst: once the log has been
                    # still for a moment, the snapshot being read has all its GPUs.
                    if time.monotonic() - self._grew_at >= _SETTLE and self._open_start >= 0:
                        self._close_block()
                        continue
                    break  # a followed log: this is all there is for now
                self._data.wait(WAIT_SLICE)  # a gzip still being inflated: it will end
        return len(self._starts) > index

    def _scan_all(self) -> None:
        self._scan_until(2**62)

    # -- the Timeline --------------------------------------------------------------------

    def _reach(self, index: int) -> bool:
        return self._scan_until(index)

    def _count(self) -> int:
        return len(self._starts)

    def _pause(self, seconds: float) -> None:
        self._data.wait(seconds)

    def snapshot(self, index: int) -> Snapshot:
        """The snapshot at ``index`` (negative counts from the end).

        Raises:
            IndexError: no such snapshot.
        """
        index = self._resolve(index)
        start = self._starts[index]
        data = self._data.read(start, self._ends[index] - start)
        schema = self._schemas[bisect.bisect_right(self._schema_firsts, index) - 1]
        width = schema.width
        rows = []
        processes = []
        apps: AppsSchema | None = None
        for line in data.decode("utf-8", "replace").split("\n"):
            line = line.rstrip("\r")
            if "a" <= line[:1] <= "z" and is_header(line):
                apps = AppsSchema.parse(line) if is_apps_header(line) else None
                continue
            cells = line.split(", ")
            if apps is not None:
                process = apps.process(cells) if len(cells) == apps.width else None
                if process is not None:
                    processes.append(process)
            elif len(cells) == width:
                rows.append(cells)
        snapshot = parse_block(schema, rows, processes)
        if not self._any_apps:
            return without_processes(snapshot)
        return snapshot

    def timestamp(self, index: int) -> datetime | None:
        """The timestamp of snapshot ``index``, from the index without parsing its rows."""
        seconds = self._stamps[self._resolve(index)]
        if seconds != seconds or self._base is None:
            return None
        return self._base + timedelta(microseconds=round(seconds * 1e6))

    def index_at(self, moment: datetime) -> int:
        """The last snapshot taken at or before ``moment`` (the first, if all are later)."""
        self._scan_all()
        count = len(self._starts)
        if self._base is None or count == 0:
            return 0
        seconds = (moment - self._base).total_seconds()
        return last_at_or_before(self._stamps, seconds, ordered=self._ordered)

    def runs(
        self, start: int = 0, stop: int | None = None, run_bytes: int = _RUN_BYTES
    ) -> Iterator[SnapshotColumns | Snapshot]:
        """Snapshots ``start`` to ``stop`` (all of them by default) in order, as
        ``snapshot`` gives them, but runs of plain snapshots of up to ``run_bytes`` handed
        over as columns (``bulk``): what `report` reads."""
        self._scan_all()
        count = len(self._starts) if stop is None else min(stop, len(self._starts))
        yield from self._indexed_runs(max(start, 0), count, {}, run_bytes)

    def _indexed_runs(
        self, index: int, count: int, readers: dict[int, RunReader], run_bytes: int
    ) -> Iterator[SnapshotColumns | Snapshot]:
        """``runs`` of the indexed snapshots ``index`` to ``count``."""
        starts, ends, firsts = self._starts, self._ends, self._schema_firsts
        # Where runs must end: a new header, or anything between two snapshots.
        breaks = [spot for spot in firsts[1:] if index < spot < count]
        breaks.extend(
            itertools.compress(
                range(index + 1, count),
                map(
                    ne,
                    islice(starts, index + 1, count),
                    map(add, islice(ends, index, count - 1), itertools.repeat(1)),
                ),
            )
        )
        breaks = [*sorted(set(breaks)), count]
        while index < count:
            layout = bisect.bisect_right(firsts, index) - 1
            limit = breaks[bisect.bisect_right(breaks, index)]
            begin = starts[index]
            end = min(limit, max(bisect.bisect_right(starts, begin + run_bytes), index + 1))
            reader = readers.get(layout)
            if reader is None:
                reader = readers[layout] = RunReader(self._schemas[layout])
            yield from self._run(reader, index, end)
            index = end

    @property
    def streamable(self) -> bool:
        """Whether ``stream`` reads this log in one pass (a plain file, not followed)."""
        return isinstance(self._data, _FileData) and not self._follow

    def stream(self, run_bytes: int | None = None) -> Iterator[SnapshotColumns | Snapshot]:
        """Every snapshot in order, as ``runs`` gives them, but read in one pass over the
        file without indexing the log first: what `report` reads of a plain file.

        Rows are taken ``run_bytes`` at a time from where the scan would start its next
        snapshot. A stretch of whole rows whose identity cells are one snapshot's GPUs
        over and over (so that the scan would cut it into those very snapshots; a header
        would show a field name there), each snapshot timed, is split into cells once and
        handed over as columns; its last snapshot is read again with the next stretch,
        which tells whether more rows belong to it. Anything else is left to the scan,
        a chunk at a time, and its snapshots read as ``runs`` reads them: the index holds
        only those (afterwards, open the log again to seek in it). Needs a plain file
        (``streamable``)."""
        if not self.streamable:
            raise ValueError("stream reads a plain file that is not followed")
        run_bytes = run_bytes or _RUN_BYTES
        readers: dict[int, RunReader] = {}
        done = 0  # index entries handed over
        wait = backoff = 0  # scan steps before the next stretch is tried, and the next wait
        while True:
            if done < len(self._starts):
                yield from self._indexed_runs(done, len(self._starts), readers, run_bytes)
                done = len(self._starts)
            if self._complete:
                return
            if wait == 0 and self._plain_schema():
                taken = self._plain_stretch(run_bytes)
                if taken is not None:
                    backoff = 0
                    yield taken
                    continue
                # An odd stretch: the scan reads it; the next tries wait longer each time
                # one fails (a log odd all along costs little more than the scan's reading).
                backoff = min(2 * backoff or 1, 64)
                wait = backoff
            wait = max(wait - 1, 0)
            self._scan_step()

    def _plain_schema(self) -> bool:
        schema = self._schema
        return (
            schema is not None
            and schema.identity_at is not None
            and schema.timestamp_at is not None
            and not self._any_apps
        )

    def _plain_stretch(self, run_bytes: int) -> SnapshotColumns | None:
        """The snapshots from where the scan would start the next one, up to ``run_bytes``
        of them, as columns (the scan moved on past them); None when they are not plain."""
        schema = self._schema
        assert schema is not None and schema.identity_at is not None
        stamp_at = schema.timestamp_at
        assert stamp_at is not None
        at = self._open_start if self._open_start >= 0 else self._scan_at
        available = self._data.available()
        data = self._data.read(at, min(run_bytes, available - at))
        whole = at + len(data) >= available and data.endswith(b"\n")
        reader = self._reader
        if reader is None or reader.schema is not schema:
            reader = self._reader = RunReader(schema)
        cells = reader.cells(data)
        if cells is None:
            return None
        width = schema.width
        ids = cells[schema.identity_at :: width]
        rows = len(ids)
        # The scan cuts a snapshot where a GPU's identity comes round again.
        try:
            per = ids.index(ids[0], 1)
        except ValueError:
            if not whole:
                return None  # whether more rows belong to this snapshot is not known
            per = rows
        pattern = ids[:per]
        expected = pattern * (rows // per + 1)
        del expected[rows:]
        if len(set(pattern)) != per or expected != ids or any(map(_NAME_CELL, pattern)):
            # (A header line as wide as the rows would have a field name for identity.)
            return None
        # The last whole snapshot is taken only when a row comes after it, or the file ends.
        count = rows // per if whole or rows % per else rows // per - 1
        if not count:
            return None
        stride = width * per
        stamps = list(map(bytes.strip, cells[stamp_at : count * stride : stride]))
        seconds = self._seconds_of(stamps)
        if seconds is None:
            return None
        del cells[count * stride :]
        assert self._base is not None
        run = reader.columns(cells, per, seconds, self._base)
        if run is None:
            return None
        # Past the rows taken: the rows left over are read again from their start.
        taken = data.rfind(b"\n") + 1
        for _ in range(rows - count * per):
            taken = data.rfind(b"\n", 0, taken - 1) + 1
        self._open_start = -1
        self._open_keys = set()
        self._open_stamp = None
        self._advance(at + taken, available, True)
        return run

    def _seconds_of(self, stamps: list[bytes]) -> list[float] | None:
        """The seconds after the log's first time of the stamp cells ``stamps`` (stripped),
        as ``_close_block`` gives them, the first of them the log's first time when it has
        none yet; None when one is not a time."""
        base = self._base
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
        self._base = base
        return seconds

    def _run(
        self, reader: RunReader, index: int, stop: int
    ) -> Iterator[SnapshotColumns | Snapshot]:
        """Snapshots ``index`` to ``stop`` (back to back), as columns where they are plain."""
        begin = self._starts[index]
        data = self._data.read(begin, self._ends[stop - 1] - begin)
        offsets = list(map(sub, self._starts[index:stop], itertools.repeat(begin)))
        run = reader.read(
            data,
            offsets,
            self._stamps[index:stop],
            self._base,
            headers=self._any_apps,
            lines=self._line_counts[index:stop],
        )
        if run is not None:
            yield run
        elif stop - index > _SMALLEST_RUN:
            # Halves: one odd snapshot costs only the rows around it.
            middle = (index + stop) // 2
            yield from self._run(reader, index, middle)
            yield from self._run(reader, middle, stop)
        else:
            for position in range(index, stop):
                yield self.snapshot(position)

    @property
    def origin(self) -> datetime | None:
        """The time of the first timed snapshot, which ``seconds`` count from."""
        self._scan_all()
        return self._base

    def seconds(self) -> Sequence[float]:
        """When each snapshot was taken, in seconds after the first timed one (NaN: no
        time): the offsets `report` counts from, without reading a row."""
        self._scan_all()
        return self._stamps

    def close(self) -> None:
        """Close the file (and remove a temporary copy)."""
        self._data.close()
