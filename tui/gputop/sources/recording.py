"""Random access to a recording of `nvidia-smi -q -x` documents.

A recording is one document, a stream of them (`nvidia-smi -q -x -l 1 > log.xml` simply
concatenates whole documents), a gzip of either, or a directory of such files. Documents are
found by scanning for their end tag in fixed-size chunks, so memory stays bounded however long
the file; each document's offsets and timestamp go into an index (a few dozen bytes per
document), which replay uses to seek, and documents are parsed only when asked for.

A recorder killed mid-write leaves a partial last document: it is dropped with a warning and
every complete one before it stays readable.
"""

from __future__ import annotations

import bisect
import gzip
import os
import re
import shutil
import tempfile
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.sources.smi_xml import MAX_DOCUMENT_BYTES, parse_document, parse_timestamp

_CHUNK = 1 << 20
_END_TAG = b"</nvidia_smi_log>"
_ROOT_TAG = b"<nvidia_smi_log"
_NON_SPACE = re.compile(rb"[^\s\xef\xbb\xbf]")
_GZIP_MAGIC = b"\x1f\x8b"
_SUFFIXES = (".xml", ".xml.gz", ".gz", ".log")
_CACHE_SIZE = 8


@dataclass(frozen=True, slots=True)
class _DocumentRef:
    part: int
    start: int
    end: int
    timestamp: datetime | None


class _Part:
    """One file of the recording, scanned lazily for document boundaries."""

    def __init__(self, name: str, handle: BinaryIO, warnings: list[str]) -> None:
        self.name = name
        self.handle = handle
        self._warnings = warnings
        self._buffer = b""
        self._cursor = 0
        self._buffer_offset = 0
        self._read_offset = 0
        self.exhausted = False

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self.handle.fileno(), end - start, start)

    def scan(self, part_number: int) -> Iterator[_DocumentRef]:
        """Yield each complete document's reference, reading the file once, in chunks."""
        fd = self.handle.fileno()
        while True:
            found = self._buffer.find(_END_TAG, self._cursor)
            if found >= 0:
                end = found + len(_END_TAG)
                yield self._reference(part_number, self._cursor, end)
                self._cursor = end
                continue
            if len(self._buffer) - self._cursor > MAX_DOCUMENT_BYTES:
                self._warnings.append(
                    f"{self.name}: stopped at byte {self._buffer_offset + self._cursor}: "
                    f"no document end within {MAX_DOCUMENT_BYTES // 2**20} MiB"
                )
                break
            chunk = os.pread(fd, _CHUNK, self._read_offset)
            if not chunk:
                self._note_tail()
                break
            self._read_offset += len(chunk)
            # Keep only the unconsumed tail: one copy per chunk, not per document.
            self._buffer_offset += self._cursor
            self._buffer = self._buffer[self._cursor :] + chunk
            self._cursor = 0
        self.exhausted = True
        self._buffer = b""

    def _reference(self, part_number: int, start: int, end: int) -> _DocumentRef:
        first = _NON_SPACE.search(self._buffer, start, end)
        start = end if first is None else first.start()
        head = self._buffer[start : min(end, start + 2048)]
        opened = head.find(b"<timestamp>")
        closed = head.find(b"</timestamp>", opened)
        stamp = None
        if opened >= 0 and closed > opened:
            text = head[opened + len(b"<timestamp>") : closed].decode("utf-8", "replace")
            stamp = parse_timestamp(text)
        offset = self._buffer_offset
        return _DocumentRef(part_number, offset + start, offset + end, stamp)

    def _note_tail(self) -> None:
        tail = self._buffer[self._cursor :]
        if _NON_SPACE.search(tail) is None:
            return
        if _ROOT_TAG in tail or b"<?xml" in tail:
            self._warnings.append(
                f"{self.name}: ignored an incomplete last document ({len(tail)} bytes): "
                "the recording was cut off"
            )
        else:
            self._warnings.append(
                f"{self.name}: ignored {len(tail)} trailing bytes that are not an nvidia-smi "
                "document"
            )

    def close(self) -> None:
        self.handle.close()


class Recording:
    """The documents of a capture, in order, with random access by index or time."""

    def __init__(self, path: Path, parts: list[_Part], warnings: list[str]) -> None:
        self.path = path
        self.warnings = warnings
        self._parts = parts
        self._index: list[_DocumentRef] = []
        self._scanners = (part.scan(number) for number, part in enumerate(parts))
        self._current: Iterator[_DocumentRef] | None = None
        self._complete = False
        self._cache: OrderedDict[int, Snapshot] = OrderedDict()

    @classmethod
    def open(cls, path: Path | str) -> Recording:
        """Open a capture file, a .gz of one, or a directory of them.

        Raises:
            BadCapture: the path is missing, unreadable, empty or holds no nvidia-smi document.
        """
        path = Path(path)
        warnings: list[str] = []
        parts = [_open_part(file, warnings) for file in _files(path)]
        recording = cls(path, parts, warnings)
        try:
            recording._check_first()
        except BadCapture:
            recording.close()
            raise
        return recording

    def _check_first(self) -> None:
        if not self._scan_until(0):
            raise BadCapture(f"{self.path}: {_diagnose(self._parts[0], self.warnings)}")
        try:
            self.snapshot(0)
        except BadCapture as error:
            raise BadCapture(f"{self.path}: {error}") from None

    def _scan_until(self, index: int) -> bool:
        """Extend the index until it holds ``index``; False if the recording is shorter."""
        while len(self._index) <= index and not self._complete:
            if self._current is None:
                self._current = next(self._scanners, None)
                if self._current is None:
                    self._complete = True
                    break
            ref = next(self._current, None)
            if ref is None:
                self._current = None
            else:
                self._index.append(ref)
        return len(self._index) > index

    def _scan_all(self) -> None:
        self._scan_until(2**62)

    def __len__(self) -> int:
        self._scan_all()
        return len(self._index)

    def _resolve(self, index: int) -> int:
        if index < 0:
            index += len(self)
        if index < 0 or not self._scan_until(index):
            raise IndexError(f"snapshot {index} is out of range")
        return index

    def snapshot(self, index: int) -> Snapshot:
        """The snapshot at ``index`` (negative counts from the end).

        Raises:
            IndexError: no such document.
            BadCapture: the document there is malformed.
        """
        index = self._resolve(index)
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        ref = self._index[index]
        data = self._parts[ref.part].read(ref.start, ref.end)
        try:
            snapshot = parse_document(data)
        except BadCapture as error:
            raise BadCapture(f"document {index} (byte {ref.start}): {error}") from None
        self._cache[index] = snapshot
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return snapshot

    def timestamp(self, index: int) -> datetime | None:
        """The timestamp of document ``index``, read from the index without parsing it."""
        return self._index[self._resolve(index)].timestamp

    def index_at(self, moment: datetime) -> int:
        """The last document taken at or before ``moment`` (the first, if all are later)."""
        self._scan_all()
        stamps = [ref.timestamp for ref in self._index]
        known = [s for s in stamps if s is not None]
        if not known:
            return 0
        if len(known) == len(stamps) and all(a <= b for a, b in zip(known, known[1:])):
            return max(bisect.bisect_right(known, moment) - 1, 0)
        # Out of order (e.g. a directory named by host, not time): the latest not after it.
        candidates = [
            (stamp, -number)
            for number, stamp in enumerate(stamps)
            if stamp is not None and stamp <= moment
        ]
        return -max(candidates)[1] if candidates else 0

    def __iter__(self) -> Iterator[Snapshot]:
        """Every readable snapshot in order; malformed documents are skipped with a warning."""
        index = 0
        while self._scan_until(index):
            try:
                yield self.snapshot(index)
            except BadCapture as error:
                self.warnings.append(f"{self.path}: skipped {error}")
            index += 1

    def close(self) -> None:
        """Close the files (and remove a decompressed temporary copy)."""
        for part in self._parts:
            part.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _files(path: Path) -> list[Path]:
    try:
        if path.is_dir():
            files = sorted(
                child
                for child in path.iterdir()
                if child.is_file() and child.name.lower().endswith(_SUFFIXES)
            )
            if not files:
                raise BadCapture(f"{path}: directory holds no .xml or .xml.gz files")
            return files
        if not path.exists():
            raise BadCapture(f"{path}: no such file or directory")
    except PermissionError:
        raise BadCapture(f"{path}: permission denied") from None
    return [path]


def _open_part(path: Path, warnings: list[str]) -> _Part:
    try:
        handle: BinaryIO = open(path, "rb")  # noqa: SIM115 - owned by the _Part
    except PermissionError:
        raise BadCapture(f"{path}: permission denied") from None
    except OSError as error:
        raise BadCapture(f"{path}: cannot open: {error.strerror or error}") from None
    if os.pread(handle.fileno(), 2, 0) == _GZIP_MAGIC:
        handle = _decompressed(path, handle, warnings)
    return _Part(str(path), handle, warnings)


def _decompressed(path: Path, compressed: BinaryIO, warnings: list[str]) -> BinaryIO:
    """Inflate into an unnamed temporary file: seekable, and bounded in memory."""
    inflated: BinaryIO = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the _Part
    try:
        with gzip.GzipFile(fileobj=compressed) as source:
            shutil.copyfileobj(source, inflated, _CHUNK)
    except EOFError:
        warnings.append(f"{path}: compressed stream is cut off; reading what was complete")
    except (OSError, zlib.error) as error:
        if inflated.tell() == 0:
            inflated.close()
            raise BadCapture(f"{path}: not a readable gzip file ({error})") from None
        warnings.append(f"{path}: compressed data is damaged after byte {inflated.tell()}")
    finally:
        compressed.close()
    inflated.flush()
    return inflated


def _diagnose(part: _Part, warnings: list[str]) -> str:
    """Why a file holds no complete document, in words a user can act on."""
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
