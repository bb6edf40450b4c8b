"""Writing a record whole or not at all, for the sinks that append to files.

A write to a full disk can fail part way: the first ``write`` call takes what fits and the
next one fails with ENOSPC. Left like that, a CSV ends mid-row and an XML stream mid-document,
and the next run appends after the fragment. So the length before the write is remembered
and, when the write fails, a regular file is cut back to it. A device or a pipe cannot be cut
back; there the failure is reported all the same.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Protocol


class RawFile(Protocol):
    """An unbuffered binary file (``open(path, "ab", buffering=0)``)."""

    def write(self, data: bytes | memoryview, /) -> int | None:
        """Write some of ``data``; how much."""
        ...

    def fileno(self) -> int:
        """The file descriptor."""
        ...


def write_whole(file: RawFile, data: bytes) -> None:
    """Append ``data`` to ``file`` completely, or leave a regular file as it was.

    Raises:
        OSError: the write failed (after the file was cut back where that is possible).
    """
    fd = file.fileno()
    info = os.fstat(fd)
    before = info.st_size if stat.S_ISREG(info.st_mode) else None
    try:
        view = memoryview(data)
        while view:
            written = file.write(view)
            view = view[written or 0 :]
    except OSError:
        if before is not None:
            # The write's own error is the one worth reporting.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, before)
        raise
