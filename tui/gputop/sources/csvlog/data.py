"""A `--query-gpu` CSV log's bytes by offset: a regular file read in place, or a pipe or a
.gz copied (inflated) into an unnamed temporary file by a thread as it comes, so that reads
never block the poller and any snapshot can be read again."""

from __future__ import annotations

import gzip
import os
import stat
import threading
import time
import zlib
from pathlib import Path
from typing import BinaryIO

from gputop.errors import BadCapture
from gputop.sources.recordings.spool import GZIP_MAGIC, GzipMembers, Spool

_COPY_BYTES = 1 << 20


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
        self._spool = Spool()
        self._done = threading.Event()
        self._grew = threading.Event()
        self._gzip: GzipMembers | None = None
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
                if first and chunk.startswith(GZIP_MAGIC):  # a gzip piped in
                    self._gzip = GzipMembers()
                first = False
                if self._gzip is not None:
                    chunk = self._gzip.inflate(chunk)
                    if self._gzip.damaged is not None:
                        raise self._gzip.damaged
                self._spool.append(chunk)
                self._grew.set()
        except (OSError, EOFError, ValueError, zlib.error) as error:
            self._warnings.append(f"{self._name}: the data stopped early ({error or 'cut off'})")
        finally:
            self._done.set()
            self._grew.set()

    def read(self, offset: int, size: int) -> bytes:
        return self._spool.read(offset, size)

    def available(self) -> int:
        return self._spool.size

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
    if os.pread(handle.fileno(), 2, 0) == GZIP_MAGIC:
        return SpooledData(name, gzip.GzipFile(fileobj=handle), warnings)  # type: ignore[arg-type]
    return FileData(handle, follow=follow)
