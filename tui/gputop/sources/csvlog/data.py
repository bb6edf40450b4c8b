"""A `--query-gpu` CSV log's bytes by offset: a regular file read in place, or a pipe or a
.gz copied (inflated) into an unnamed temporary file by a thread as it comes, so that reads
never block the poller and any snapshot can be read again."""

from __future__ import annotations

import gzip
import os
import stat
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import BinaryIO

from gputop.errors import BadCapture

_COPY_BYTES = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 31


class LogData:
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


class FileData(LogData):
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


class SpooledData(LogData):
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
                chunk = read(_COPY_BYTES)
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


def open_data(path: Path, follow: bool, warnings: list[str]) -> LogData:
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise BadCapture(f"{path}: a directory; name the CSV log")
        handle = path.open("rb", buffering=0)
    except OSError as error:
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
    name = str(path)
    if not stat.S_ISREG(mode):
        return SpooledData(name, handle, warnings)
    if os.pread(handle.fileno(), 2, 0) == _GZIP_MAGIC:
        return SpooledData(name, gzip.GzipFile(fileobj=handle), warnings)  # type: ignore[arg-type]
    return FileData(handle, follow=follow)
