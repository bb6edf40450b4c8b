"""Random access to a recording of `nvidia-smi -q -x` documents.

A recording is one document, a stream of them (`nvidia-smi -q -x -l 1 > log.xml` simply
concatenates whole documents), a gzip of either, or a directory of such files. Documents are
found by scanning for their end tag in fixed-size chunks, so memory stays bounded however long
the file; each document's offsets and timestamp go into an index (16 bytes per document, in
arrays: see ``_DocumentIndex``), which replay uses to seek, and documents are parsed only
when asked for.

A recorder killed mid-write leaves a partial last document: it is dropped with a warning and
every complete one before it stays readable. Restarted appending to the same file, it leaves
a partial document glued to the next whole one, which is recovered when it fails to parse.

Files are opened when first needed and at most ``_OPEN_FILES`` at a time (a directory of
per-minute captures holds thousands; a gzip being inflated holds two descriptors). A gzip,
or a pipe such as ``/dev/stdin``, is inflated (copied) into an unnamed temporary file as the
scan advances, so the first snapshot does not wait for the whole file and any earlier
document can be read again.

A recording opened to follow (``--follow``: ``nvidia-smi -q -x -l 1 > f`` still writing, or
a pipe from ``ssh host nvidia-smi -q -x -l 1``) never waits inside a read: the scan takes
what has arrived and stops at a partly written last document, which is no error; later
scans pick up from there. Only ``wait_for`` waits, and only when asked to.
"""

from __future__ import annotations

import bisect
import errno
import gzip
import math
import os
import re
import select
import stat
import time
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO, NamedTuple, Protocol, overload

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.sources.recordings.following import WAIT_SLICE, FirstWait
from gputop.sources.recordings.indexed import IndexedLog
from gputop.sources.recordings.spool import GZIP_MAGIC, GzipMembers, Spool, pread_into
from gputop.sources.recordings.stamps import last_at_or_before
from gputop.sources.smi.xml import MAX_DOCUMENT_BYTES, parse_document, parse_timestamp

_CHUNK = 1 << 20
_END_TAG = b"</nvidia_smi_log>"
_ROOT_TAG = b"<nvidia_smi_log"
_NON_SPACE = re.compile(rb"[^\s\xef\xbb\xbf]")
_SUFFIXES = (".xml", ".xml.gz", ".gz", ".log")
_OPEN_FILES = 32
_FIRST_TRIES = 16
"""Documents tried at open before a capture whose first ones are all unreadable is refused."""
_TAKE_CHUNKS = 8
"""Chunks a followed source copies per read at most, so one scan step stays short."""


class _DocumentRef(NamedTuple):
    """Where one document lies, and when it was taken (a tuple: cheap, one per document)."""

    part: int
    start: int
    end: int
    timestamp: datetime | None


_MORE_LATER = _DocumentRef(-1, -1, -1, None)
"""Yielded by a followed file's scan where the data ends for now; compared by identity."""


_NO_STAMP = -(2**31)
"""A document without a readable timestamp, in ``_DocumentIndex``'s seconds."""
_STAMP_DAYS = (2**31 - 1) // 86400
"""Days either side of the base whose seconds an int32 holds; a stamp farther off is kept
aside."""
_SECOND = timedelta(seconds=1)


class _DocumentIndex:
    """Every document's ``_DocumentRef``, kept in arrays: 16 bytes a document.

    A list of NamedTuples took about 155 bytes a document (the tuple, two ints, a datetime):
    896 MB for a stream of 5.9 M tiny documents. Here a document is its start (int64), its
    length (uint32: a document is at most ``MAX_DOCUMENT_BYTES``) and its timestamp as whole
    seconds from the first one seen (int32); the file it lies in is found from where each
    file's documents begin. The few stamps that do not fit (fractions of a second, or more
    than 68 years from the first) are kept in a dict.
    """

    __slots__ = (
        "_base",
        "_last",
        "_lengths",
        "_odd",
        "_ordered",
        "_part",
        "_part_firsts",
        "_parts",
        "_stamps",
        "_starts",
        "count",
    )

    def __init__(self) -> None:
        self._starts = array("q")
        self._lengths = array("I")
        self._stamps = array("i")
        self._odd: dict[int, datetime] = {}
        """Timestamps that do not fit ``_stamps`` (which holds ``_NO_STAMP`` for them)."""
        self._part_firsts: list[int] = []
        """The index of the first document of each file that has any, in order."""
        self._parts: list[int] = []
        """The part number of each of those files."""
        self._base: datetime | None = None
        self._ordered = True
        """Every document stamped, none earlier than the one before: ``index_at`` bisects."""
        self._last: datetime | None = None
        """The timestamp of the last document appended."""
        self._part = -1
        """The part number of the last document appended."""
        self.count = 0
        """Documents in the index (``len``, without a Python call per scanned document)."""

    def __len__(self) -> int:
        return self.count

    def _seconds(self, stamp: datetime) -> int | None:
        """``stamp`` as seconds from the base, or None when it does not fit ``_stamps``."""
        base = self._base
        if base is None:
            base = self._base = stamp.replace(microsecond=0)
        delta = stamp - base
        days = delta.days
        if delta.microseconds or not -_STAMP_DAYS < days < _STAMP_DAYS:
            return None
        return days * 86400 + delta.seconds

    def append(self, ref: _DocumentRef) -> None:
        # Called once per document of the scan: kept to plain appends and one subtraction.
        index = self.count
        part = ref.part
        if part != self._part:
            self._part_firsts.append(index)
            self._parts.append(part)
            self._part = part
        stamp = ref.timestamp
        if self._ordered:
            last = self._last
            self._ordered = stamp is not None and (last is None or last <= stamp)
        self._last = stamp
        start = ref.start
        self._starts.append(start)
        self._lengths.append(ref.end - start)
        seconds = None if stamp is None else self._seconds(stamp)
        if seconds is None:
            self._stamps.append(_NO_STAMP)
            if stamp is not None:
                self._odd[index] = stamp
        else:
            self._stamps.append(seconds)
        self.count = index + 1

    def timestamp(self, index: int) -> datetime | None:
        seconds = self._stamps[index]
        if seconds == _NO_STAMP:
            return self._odd.get(index)
        assert self._base is not None
        return self._base + seconds * _SECOND

    def __getitem__(self, index: int) -> _DocumentRef:
        start = self._starts[index]
        at = bisect.bisect_right(self._part_firsts, index) - 1
        return _DocumentRef(
            self._parts[at], start, start + self._lengths[index], self.timestamp(index)
        )

    def move(self, index: int, start: int, stamp: datetime | None) -> None:
        """Document ``index`` begins later (a cut-off head dropped) and is stamped ``stamp``."""
        end = self._starts[index] + self._lengths[index]
        self._starts[index] = start
        self._lengths[index] = end - start
        seconds = None if stamp is None else self._seconds(stamp)
        self._stamps[index] = _NO_STAMP if seconds is None else seconds
        self._odd.pop(index, None)
        if seconds is None and stamp is not None:
            self._odd[index] = stamp
        count = len(self._starts)
        if index == count - 1:
            self._last = stamp
        if self._ordered:
            before = self.timestamp(index - 1) if index else stamp
            after = self.timestamp(index + 1) if index + 1 < count else stamp
            self._ordered = (
                stamp is not None
                and before is not None
                and after is not None
                and before <= stamp <= after
            )

    def index_at(self, moment: datetime) -> int:
        """The last document taken at or before ``moment`` (the first, if all are later)."""
        if self._base is None:
            return 0  # no document is stamped
        target = (moment - self._base).total_seconds()
        return last_at_or_before(_Seconds(self), target, ordered=self._ordered)

    def seconds(self, index: int) -> float:
        """When document ``index`` was taken, in seconds after the base (NaN: no time)."""
        seconds = self._stamps[index]
        if seconds != _NO_STAMP:
            return float(seconds)
        stamp = self._odd.get(index)
        if stamp is None:
            return math.nan
        assert self._base is not None
        return (stamp - self._base).total_seconds()


class _Seconds(Sequence[float]):
    """Every document's time, in seconds after the index's base, one at a time (never a
    list of them all): what ``last_at_or_before`` searches."""

    def __init__(self, index: _DocumentIndex) -> None:
        self._index = index

    def __len__(self) -> int:
        return self._index.count

    @overload
    def __getitem__(self, position: int) -> float: ...

    @overload
    def __getitem__(self, position: slice) -> Sequence[float]: ...

    def __getitem__(self, position: int | slice) -> float | Sequence[float]:
        if isinstance(position, slice):
            return [self[at] for at in range(*position.indices(len(self)))]
        if not 0 <= position < self._index.count:
            raise IndexError(position)
        return self._index.seconds(position)


class _Stream(Protocol):
    """What is read sequentially: a gzip.GzipFile or a pipe's buffered reader."""

    def read1(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class _Source:
    """The bytes of one file by offset."""

    def read(self, offset: int, size: int) -> bytes:
        raise NotImplementedError

    def read_into(self, offset: int, view: memoryview) -> int:
        """Fill ``view`` from ``offset`` on; the count of bytes read, 0 at the end."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _FileSource(_Source):
    """A regular file, read with pread (no shared file position, no buffering)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self._handle.fileno(), size, offset)

    def read_into(self, offset: int, view: memoryview) -> int:
        return pread_into(self._handle.fileno(), view, offset)

    def close(self) -> None:
        self._handle.close()


class _SpooledSource(_Source):
    """A stream read once (gzip, pipe), copied into an unnamed temporary file as it is read."""

    def __init__(
        self, name: str, handle: BinaryIO, stream: _Stream, warnings: list[str] | None
    ) -> None:
        self._name = name
        self._handle = handle  # GzipFile.close() leaves the file it reads open
        self._stream: _Stream | None = stream
        self._spool = Spool()
        self._warnings = warnings
        self.failure: str | None = None

    def read(self, offset: int, size: int) -> bytes:
        while self._stream is not None and self._spool.size < offset + size:
            self._spool_chunk()
        return self._spool.read(offset, size)

    def read_into(self, offset: int, view: memoryview) -> int:
        while self._stream is not None and self._spool.size < offset + len(view):
            self._spool_chunk()
        return self._spool.read_into(offset, view)

    def _spool_chunk(self) -> None:
        assert self._stream is not None
        problem = None
        try:
            # read1: a cut-off gzip raises EOFError, and read(n) would drop the data it had
            # inflated before; read1 returns what one step inflates, so little is lost.
            chunk = self._stream.read1(_CHUNK)
        except (EOFError, OSError, zlib.error) as error:
            chunk = b""
            if self._spool.size == 0:
                self.failure = f"not a readable gzip file ({error or 'cut off'})"
                problem = f"{self.failure}; skipped"
            elif isinstance(error, EOFError):
                problem = "compressed stream is cut off; reading what was complete"
            else:
                problem = f"compressed data is damaged after byte {self._spool.size}"
        if chunk:
            self._spool.append(chunk)
            return
        self._stream.close()
        self._handle.close()
        self._stream = None
        if problem is not None and self._warnings is not None:
            self._warnings.append(f"{self._name}: {problem}")

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._handle.close()
        self._spool.close()


class _GrowingSource(_Source):
    """A file or pipe still being written (``--follow``): what has arrived, never waiting.

    A plain regular file is read in place: its size is where the writer is now. A pipe, or a
    gzip, is copied (inflated) into an unnamed temporary file as its bytes arrive. A pipe is
    read only when ``select`` says it holds data, so no read blocks the thread that scans
    (the poller, which must stay free to answer keys); whether a pipe is gzip is known from
    its first two bytes, once they have come (a file just created may still be empty).
    """

    def __init__(
        self, name: str, handle: BinaryIO, *, pipe: bool, warnings: list[str] | None
    ) -> None:
        self._name = name
        self._handle = handle
        self._fd = handle.fileno()
        self._pipe = pipe
        self._warnings = warnings
        self._gzip: bool | None = None  # known from the first two bytes
        self._members: GzipMembers | None = None
        self._head = b""  # a pipe's first byte, while its second has not come
        self._spool: Spool | None = None
        self._raw_at = 0  # bytes of a regular gzip file inflated so far
        self.ended = False
        """The writer closed the pipe (a regular file never ends: it may grow again)."""
        if pipe:
            self._spooled()

    def _spooled(self) -> Spool:
        if self._spool is None:
            self._spool = Spool()
        return self._spool

    def _known(self) -> bool:
        """Whether it is gzip is known; a regular file is looked at for its first bytes."""
        if self._gzip is None and not self._pipe:
            head = os.pread(self._fd, 2, 0)
            if len(head) == 2:
                self._gzip = head == GZIP_MAGIC
                if self._gzip:
                    self._members = GzipMembers()
                    self._spooled()
        return self._gzip is not None or self._pipe

    def read(self, offset: int, size: int) -> bytes:
        buffer = bytearray(size)
        with memoryview(buffer) as view:
            count = self.read_into(offset, view)
        return bytes(buffer[:count])

    def read_into(self, offset: int, view: memoryview) -> int:
        if not self._known():
            return 0
        if self._spool is None:
            return pread_into(self._fd, view, offset)
        self._take()
        return self._spool.read_into(offset, view)

    def wait(self, timeout: float) -> None:
        """Return when a pipe has data (or ends), or after ``timeout`` seconds."""
        if self._pipe and not self.ended:
            select.select([self._fd], [], [], timeout)
        else:
            time.sleep(timeout)

    def _take(self) -> None:
        """Copy into the spool what has arrived, a few chunks at most."""
        spool = self._spooled()
        for _ in range(_TAKE_CHUNKS):
            if self.ended:
                return
            raw = self._raw()
            if raw is None:
                return
            spool.append(self._decoded(raw))

    def _raw(self) -> bytes | None:
        """The next bytes of the file or pipe; None when none have come yet."""
        if not self._pipe:
            data = os.pread(self._fd, _CHUNK, self._raw_at)
            self._raw_at += len(data)
            return data or None
        if not select.select([self._fd], [], [], 0)[0]:
            return None
        try:
            # read1 with a size above the buffer's: one read of the pipe, straight through.
            data = self._handle.read1(_CHUNK)  # type: ignore[attr-defined]
        except OSError as error:
            self._end(f"cannot read: {error.strerror or error}")
            return b""
        if not data:
            self._end(None)
        return bytes(data)

    def _decoded(self, raw: bytes) -> bytes:
        if self._gzip is None:
            self._head += raw
            if len(self._head) < 2 and not self.ended:
                return b""
            raw, self._head = self._head, b""
            self._gzip = raw[:2] == GZIP_MAGIC
            self._members = GzipMembers() if self._gzip else None
        if self._members is None:
            return raw
        data = self._members.inflate(raw)
        if self._members.damaged is not None:
            self._end("compressed data is damaged; reading what came before")
        return data

    def _end(self, problem: str | None) -> None:
        self.ended = True
        if problem is None and self._members is not None and self._members.midway:
            problem = "compressed stream is cut off; reading what was complete"
        if problem is not None and self._warnings is not None:
            self._warnings.append(f"{self._name}: {problem}")

    def close(self) -> None:
        self._handle.close()
        if self._spool is not None:
            self._spool.close()


def _open_source(path: Path, warnings: list[str] | None, *, follow: bool = False) -> _Source:
    """Open one file of a recording; ``warnings`` None on a re-open, to warn only once.

    Raises:
        BadCapture: the file cannot be opened.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - owned by the source
    except PermissionError:
        raise BadCapture(f"{path}: permission denied") from None
    except OSError as error:
        raise BadCapture(f"{path}: cannot open: {error.strerror or error}") from None
    try:
        if follow:
            pipe = not stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
            return _GrowingSource(str(path), handle, pipe=pipe, warnings=warnings)
        stream: _Stream
        if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            if os.pread(handle.fileno(), 2, 0) != GZIP_MAGIC:
                return _FileSource(handle)
            stream = gzip.GzipFile(fileobj=handle)
        elif handle.peek(2)[:2] == GZIP_MAGIC:  # a pipe or device: read once, in order
            stream = gzip.GzipFile(fileobj=handle)
        else:
            stream = handle
    except OSError as error:
        handle.close()
        raise BadCapture(f"{path}: cannot read: {error.strerror or error}") from None
    return _SpooledSource(str(path), handle, stream, warnings)


class _OpenFiles:
    """Keeps the files of at most ``limit`` parts open, closing the least recently used."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._open: OrderedDict[int, _Part] = OrderedDict()

    def touch(self, part: _Part) -> None:
        key = id(part)
        if key in self._open:
            self._open.move_to_end(key)
            return
        self._open[key] = part
        while len(self._open) > self._limit:
            _, oldest = self._open.popitem(last=False)
            oldest.release()

    def forget(self, part: _Part) -> None:
        self._open.pop(id(part), None)


class _Part:
    """One file of the recording, scanned lazily for document boundaries."""

    def __init__(
        self, path: Path, warnings: list[str], open_files: _OpenFiles, *, follow: bool = False
    ) -> None:
        self.path = path
        self.name = str(path)
        self._warnings = warnings
        self._open_files = open_files
        self._follow = follow
        self._source: _Source | None = None
        self._opened = False
        self.failure: str | None = None
        self.exhausted = False

    def _data(self) -> _Source:
        if self._source is None:
            self._source = _open_source(
                self.path, None if self._opened else self._warnings, follow=self._follow
            )
            self._opened = True
        self._open_files.touch(self)
        return self._source

    def read(self, start: int, end: int) -> bytes:
        return self._data().read(start, end - start)

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a followed file or pipe to grow."""
        if isinstance(self._source, _GrowingSource):
            self._source.wait(timeout)
        else:
            time.sleep(timeout)

    def release(self) -> None:
        """Close the file; it is opened again when next read."""
        if self._source is not None:
            self._source.close()
            self._source = None

    def close(self) -> None:
        self.release()
        self._open_files.forget(self)

    def scan(self, part_number: int) -> Iterator[_DocumentRef]:
        """Yield each complete document's reference, reading the file once, in chunks.

        The chunks are read in place into one buffer (no copy per chunk); only the part of
        a document that straddles two chunks is moved to the front before the next read.
        A followed file yields ``_MORE_LATER`` where its data ends for now (a partly written
        document stays in the buffer), and goes on from there when next asked.
        """
        try:
            source = self._data()
        except BadCapture as error:
            # Only the message: the path is already in it.
            self.failure = str(error).removeprefix(f"{self.path}: ")
            self._warnings.append(f"{error}; skipped")
            self.exhausted = True
            return
        buffer = bytearray(2 * _CHUNK)
        valid = 0  # bytes of the buffer holding data
        cursor = 0  # where the next document starts
        searched = 0  # the buffer before this holds no end tag
        buffer_at = 0  # file offset of buffer[0]
        read_at = 0  # file offset of the next read
        while True:
            found = buffer.find(_END_TAG, max(cursor, searched), valid)
            if found >= 0:
                end = found + len(_END_TAG)
                yield self._reference(buffer, buffer_at, part_number, cursor, end)
                cursor = end
                continue
            if valid - cursor > MAX_DOCUMENT_BYTES:
                self._warnings.append(
                    f"{self.name}: stopped at byte {buffer_at + cursor}: "
                    f"no document end within {MAX_DOCUMENT_BYTES // 2**20} MiB"
                )
                break
            if cursor:
                buffer[: valid - cursor] = buffer[cursor:valid]
                buffer_at += cursor
                valid -= cursor
                cursor = 0
            if len(buffer) - valid < _CHUNK:  # a document larger than the buffer
                buffer.extend(bytes(max(_CHUNK, len(buffer) // 2)))
            if self._source is None:  # closed to keep few files open while others were read
                source = self._data()
            self._open_files.touch(self)
            view = memoryview(buffer)[valid : valid + _CHUNK]
            try:
                count = source.read_into(read_at, view)
            finally:
                view.release()
            if not count:
                if isinstance(source, _GrowingSource) and not source.ended:
                    yield _MORE_LATER
                    continue
                if isinstance(source, _SpooledSource) and source.failure is not None:
                    self.failure = source.failure
                self._note_tail(bytes(buffer[cursor:valid]))
                break
            read_at += count
            # Search only the new bytes (and an end tag cut by the chunk boundary): a large
            # document spans many chunks and must not be searched again for each.
            searched = max(0, valid - len(_END_TAG) + 1)
            valid += count
        self.exhausted = True

    @staticmethod
    def _reference(
        buffer: bytearray, buffer_at: int, part_number: int, start: int, end: int
    ) -> _DocumentRef:
        first = _NON_SPACE.search(buffer, start, end)
        start = end if first is None else first.start()
        # The timestamp is the root's first child; an inline DTD (old drivers) can put the
        # root several KB in, so look from the root tag on.
        root = buffer.find(_ROOT_TAG, start, end)
        head_at = start if root < 0 else root
        opened = buffer.find(b"<timestamp>", head_at, min(end, head_at + 2048))
        stamp = None
        if opened >= 0:
            opened += len(b"<timestamp>")
            closed = buffer.find(b"</timestamp>", opened, min(end, opened + 256))
            if closed >= 0:
                stamp = parse_timestamp(buffer[opened:closed].decode("utf-8", "replace"))
        return _DocumentRef(part_number, buffer_at + start, buffer_at + end, stamp)

    def _note_tail(self, tail: bytes) -> None:
        if _NON_SPACE.search(tail) is None:
            return
        if _ROOT_TAG in tail or b"<?xml" in tail:
            # A file still being written looks just like this: say how to read it whole.
            hint = "" if self._follow else " (if it is still being written, add --follow)"
            self._warnings.append(
                f"{self.name}: ignored an incomplete last document ({len(tail)} bytes): "
                f"the recording was cut off{hint}"
            )
        else:
            self._warnings.append(
                f"{self.name}: ignored {len(tail)} trailing bytes that are not an nvidia-smi "
                "document"
            )


class Recording(IndexedLog):
    """The documents of a capture, in order, with random access by index or time."""

    def __init__(
        self, path: Path, parts: list[_Part], warnings: list[str], *, follow: bool = False
    ) -> None:
        self.path = path
        self.warnings = warnings
        self._follow = follow
        self._parts = parts
        self._index = _DocumentIndex()
        self._scanners = (part.scan(number) for number, part in enumerate(parts))
        self._current: Iterator[_DocumentRef] | None = None
        self._complete = False

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        follow: bool = False,
        waiting: Callable[[], None] | None = None,
    ) -> Recording:
        """Open a capture file, a .gz of one, or a directory of them.

        Args:
            path: the capture.
            follow: the file (or pipe) is still being written: documents appended later
                are read as they arrive, and a partly written last one is no error. The
                first document is waited for.
            waiting: called once if the first document of a followed file has not come
                within a second (to tell the user what is being waited for).

        Raises:
            BadCapture: the path is missing, unreadable, empty or holds no nvidia-smi
                document (a followed file: once its writer has closed it), or ``follow``
                names a directory.
        """
        path = Path(path)
        warnings: list[str] = []
        open_files = _OpenFiles(_OPEN_FILES)
        files = _files(path)
        if follow and path.is_dir():
            raise BadCapture(f"{path}: a directory cannot be followed; name the file being written")
        parts = [_Part(file, warnings, open_files, follow=follow) for file in files]
        recording = cls(path, parts, warnings, follow=follow)
        try:
            recording._check_first(waiting)
        except BadCapture:
            recording.close()
            raise
        return recording

    @property
    def following(self) -> bool:
        """True while documents may still be appended (followed, and the writer is not gone)."""
        return self._follow and not self._complete

    def _wait_for_first(self, waiting: Callable[[], None] | None) -> None:
        """Wait for a followed file's first document, unless what came is no capture at all.

        Raises:
            BadCapture: the first bytes are not XML, or an HTML page: no document will come.
        """
        first_wait = FirstWait(waiting)
        while not self.wait_for(0, timeout=WAIT_SLICE) and self.following:
            why = _diagnose(self._parts[0], self.warnings)
            if why.startswith(("not XML", "an HTML page")):
                raise BadCapture(f"{self.path}: {why}")
            first_wait.tick()

    def _check_first(self, waiting: Callable[[], None] | None = None) -> None:
        """Refuse a capture none of whose first documents is readable.

        A log cut from the front (``tail -c``) starts with the end of a document: that one
        is skipped like any malformed document, as long as one of the next ones reads.
        """
        if self._follow:
            self._wait_for_first(waiting)
        if not self._scan_until(0):
            raise BadCapture(f"{self.path}: {_diagnose(self._parts[0], self.warnings)}")
        first_error: BadCapture | None = None
        index = 0
        while index < _FIRST_TRIES and self.wait_for(index):
            try:
                self.snapshot(index)
            except BadCapture as error:
                first_error = first_error or error
                index += 1
                continue
            return  # iteration warns about the skipped ones
        raise BadCapture(f"{self.path}: {first_error}")

    def _scan_until(self, index: int) -> bool:
        """Extend the index until it holds ``index``; False if the recording is shorter."""
        while self._index.count <= index and not self._complete:
            if self._current is None:
                self._current = next(self._scanners, None)
                if self._current is None:
                    self._complete = True
                    break
            ref = next(self._current, None)
            if ref is None:
                self._current = None
            elif ref is _MORE_LATER:
                break  # a followed file: this is all there is for now
            else:
                self._index.append(ref)
        return len(self._index) > index

    def _scan_all(self) -> None:
        self._scan_until(2**62)

    # -- the Timeline --------------------------------------------------------------------

    def _reach(self, index: int) -> bool:
        return self._scan_until(index)

    def _count(self) -> int:
        return self._index.count

    def _pause(self, seconds: float) -> None:
        self._parts[-1].wait(seconds)

    def snapshot(self, index: int) -> Snapshot:
        """The snapshot at ``index`` (negative counts from the end).

        Raises:
            IndexError: no such document.
            BadCapture: the document there is malformed.
        """
        index = self._resolve(index)
        ref = self._index[index]
        data = self._parts[ref.part].read(ref.start, ref.end)
        try:
            snapshot = parse_document(data)
        except BadCapture as error:
            recovered = self._recover(index, ref, data)
            if recovered is None:
                raise BadCapture(f"document {index} (byte {ref.start}): {error}") from None
            snapshot = recovered
        return snapshot

    def _recover(self, index: int, ref: _DocumentRef, data: bytes) -> Snapshot | None:
        """The whole document after a cut-off one, when they were read as one.

        A recorder killed mid-document and restarted appending (``>>``) leaves the head of
        a document glued to the next whole one. Looked for only when a document fails to
        parse, so it costs nothing on the common path.
        """
        restart = data.rfind(b"<?xml")
        if restart <= 0:
            return None
        try:
            snapshot = parse_document(data[restart:])
        except BadCapture:
            return None
        self._index.move(index, ref.start + restart, snapshot.timestamp)
        self.warnings.append(
            f"{self.path}: ignored {restart} bytes of a cut-off document at byte {ref.start}"
        )
        return snapshot

    def timestamp(self, index: int) -> datetime | None:
        """The timestamp of document ``index``, read from the index without parsing it."""
        return self._index.timestamp(self._resolve(index))

    def index_at(self, moment: datetime) -> int:
        """The last document taken at or before ``moment`` (the first, if all are later)."""
        self._scan_all()
        return self._index.index_at(moment)

    def close(self) -> None:
        """Close the files (and remove a decompressed temporary copy)."""
        for part in self._parts:
            part.close()


def _files(path: Path) -> list[Path]:
    try:
        # os.stat, not Path.exists(): exists() says False for a loop of symbolic links too.
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.EACCES:
            raise BadCapture(f"{path}: permission denied") from None
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
    try:
        if stat.S_ISDIR(mode):
            files = sorted(
                child
                for child in path.iterdir()
                if child.is_file() and child.name.lower().endswith(_SUFFIXES)
            )
            if not files:
                raise BadCapture(f"{path}: directory holds no .xml or .xml.gz files")
            return files
    except PermissionError:
        raise BadCapture(f"{path}: permission denied") from None
    return [path]


def _diagnose(part: _Part, warnings: list[str]) -> str:
    """Why a file holds no complete document, in words a user can act on."""
    if part.failure is not None:
        return part.failure
    head = part.read(0, 4096)
    stripped = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    if not stripped:
        return "empty file" if not head else "file holds only white space"
    if b"\x00" in head or not stripped.startswith(b"<"):
        return "not XML: this is not an `nvidia-smi -q -x` capture"
    lowered = stripped[:512].lower()
    if lowered.startswith(b"<!doctype html") or lowered.startswith(b"<html"):
        return "an HTML page, not an `nvidia-smi -q -x` capture"
    if _ROOT_TAG in head:
        return "truncated: no complete <nvidia_smi_log> document"
    return "XML, but not an nvidia-smi log (no <nvidia_smi_log> element)"
