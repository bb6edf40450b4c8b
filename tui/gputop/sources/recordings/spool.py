"""A stream read once (a pipe, a gzip) kept in an unnamed temporary file, so that any of its
bytes can be read again by offset; and a gzip inflated member after member. What every
recording reader that takes a pipe or a .gz shares (XML, CSV, text logs)."""

from __future__ import annotations

import os
import tempfile
import zlib

GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 31
"""zlib's window bits for a gzip member (header and trailer)."""
_HAS_PREADV = hasattr(os, "preadv")


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (one write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Fill ``view`` from ``offset`` of ``fd`` on (no copy where the system has preadv);
    the count of bytes read, 0 at the end."""
    if _HAS_PREADV:
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, len(view), offset)
    view[: len(data)] = data
    return len(data)


class Spool:
    """An unnamed temporary file, written at its end and read by offset; gone once closed."""

    def __init__(self) -> None:
        # Unbuffered: written with os.write and read back with os.pread.
        self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 - closed in close()
        self._fd = self._file.fileno()
        self.size = 0
        """Bytes written so far (counted once they are written)."""

    def append(self, data: bytes) -> None:
        write_all(self._fd, data)
        self.size += len(data)

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def read_into(self, offset: int, view: memoryview) -> int:
        return pread_into(self._fd, view, offset)

    def close(self) -> None:
        self._file.close()


class GzipMembers:
    """Inflates a gzip chunk by chunk, one member after another (`gzip -c a b`, a restarted
    writer appending to the same file)."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(_GZIP_WBITS)
        self.midway = False
        """Inside a member whose end has not come (a stream ending here is cut off)."""
        self.damaged: zlib.error | None = None
        """Why the last chunk could not be inflated whole (None: it could)."""

    def inflate(self, data: bytes) -> bytes:
        """What ``data`` inflates to; where it is damaged, what came before the damage,
        and ``damaged`` says why."""
        out: list[bytes] = []
        try:
            while data:
                out.append(self._inflate.decompress(data))
                self.midway = not self._inflate.eof
                if not self._inflate.eof:
                    break
                data = self._inflate.unused_data
                self._inflate = zlib.decompressobj(_GZIP_WBITS)
        except zlib.error as error:
            self.damaged = error
        return b"".join(out)
