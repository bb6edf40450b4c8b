"""A text log of nvidia-smi output (`-q` text, `dmon`, `pmon`) as a seekable timeline.

The file is scanned once, line by line, into an index of where each snapshot's lines lie
and when it was taken (arrays: a few bytes a snapshot, however long the log); a snapshot's
lines are read back and parsed only when asked for, as ``smi.recording.Recording`` does
for XML. Readers say what the snapshots are (``LogScanner``) and how to parse one.
"""

from __future__ import annotations

import math
import os
import stat
import threading
import time
from array import array
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO, Protocol

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.sources.recordings.indexed import UTF8_BOM, IndexedLog
from gputop.sources.recordings.stamps import EPOCH, epoch_seconds, last_at_or_before

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""A `-q` log of 16 GPUs is tens of KB; a snapshot beyond this is not nvidia-smi's."""
_NO_STAMP = math.nan


class LogScanner(Protocol):
    """Fed every line of a log in order; says where snapshots begin."""

    def feed(self, offset: int, line: bytes) -> None:
        """One line (with its end) at byte ``offset``."""

    def finish(self, end: int) -> None:
        """The log ends at byte ``end``."""


class LogIndex:
    """Where each snapshot lies and when it was taken: 8 + 8 + 8 + 2 bytes a snapshot."""

    def __init__(self) -> None:
        self.starts = array("q")
        self.ends = array("q")
        self.stamps = array("d")
        self.layouts = array("H")
        """Which header (a reader's column layout) is in force for the snapshot."""

    def add(self, start: int, end: int, stamp: datetime | None, layout: int = 0) -> None:
        """Append a snapshot lying at ``start:end``."""
        self.starts.append(start)
        self.ends.append(end)
        self.stamps.append(_NO_STAMP if stamp is None else epoch_seconds(stamp))
        self.layouts.append(layout)

    def __len__(self) -> int:
        return len(self.starts)


def open_regular(path: Path) -> BinaryIO:
    """Open a log file for reading.

    Raises:
        BadCapture: missing, unreadable, or not a regular file.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
    if not stat.S_ISREG(mode):
        raise BadCapture(f"{path}: not a regular file")
    try:
        return path.open("rb")
    except OSError as error:
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None


_QUIET_S = 0.5
"""A followed log whose last sample got no line for this long has that sample whole:
nvidia-smi writes a sample's lines at once, and no line says a sample is over."""
_READ_BYTES = 1 << 20


class LineLog(IndexedLog):
    """A scanned text log: the Timeline that replay, `--once`/`--json` and `report` read.

    ``parse`` turns the bytes of snapshot ``index`` (and its layout number) into a Snapshot;
    it raises BadCapture for what it cannot read. Followed (``--follow``: the file is still
    being written), lines appended later are scanned when the length is asked for, and the
    last sample counts once nothing has been added to it for half a second.
    """

    def __init__(
        self,
        path: Path,
        handle: BinaryIO,
        index: LogIndex,
        parse: Callable[[bytes, int, datetime | None], Snapshot],
        warnings: list[str],
        scanner: LogScanner,
        *,
        follow: bool = False,
        ended: threading.Event | None = None,
    ) -> None:
        self.path = path
        self._handle = handle
        self._index = index
        self._parse = parse
        self.warnings = warnings
        self._scanner = scanner
        self._follow = follow
        self._ended = ended
        """Set once the writer is gone (a pipe spooled into the file reached its end)."""
        self._read_at = 0
        """Where the next read of the file starts."""
        self._rest = b""
        """The start of a line not yet ended (a writer caught mid-line)."""
        self._last_data = time.monotonic()
        self._flushed = False
        self._ordered = True
        self._checked = 0
        """Snapshots whose order of time has been looked at."""
        self._grow()
        if not follow:
            self._finish()

    @property
    def following(self) -> bool:
        """True while lines appended to the file are read (`--follow`)."""
        return self._follow

    def _finish(self) -> None:
        """The log is whole: its last line (even without a line end) and last sample count."""
        if self._rest:
            self._scanner.feed(self._read_at - len(self._rest), self._rest)
            self._rest = b""
        self._scanner.finish(self._read_at)
        self._note_order()

    def _grow(self) -> None:
        """Scan what was appended since the last look (the whole file, the first time)."""
        # Looked at before reading: whatever the writer wrote before it ended is read below.
        ended = self._ended is not None and self._ended.is_set()
        self._handle.seek(self._read_at)
        while True:
            data = self._handle.read(_READ_BYTES)
            if not data:
                break
            self._last_data = time.monotonic()
            self._flushed = False
            fed = self._read_at - len(self._rest)
            self._read_at += len(data)
            data = self._rest + data
            if fed == 0 and data.startswith(UTF8_BOM):
                data, fed = data[len(UTF8_BOM) :], len(UTF8_BOM)
            cut = data.rfind(b"\n") + 1
            self._rest = data[cut:]
            for line in data[:cut].splitlines(keepends=True):
                self._scanner.feed(fed, line)
                fed += len(line)
        if self._follow and ended:
            self._follow = False
            self._finish()
        elif self._follow and not self._flushed and time.monotonic() - self._last_data >= _QUIET_S:
            self._flushed = True
            self._scanner.finish(self._read_at - len(self._rest))
        self._note_order()

    def _note_order(self) -> None:
        stamps = self._index.stamps
        for position in range(self._checked, len(stamps)):
            stamp = stamps[position]
            # NaN (no time) compares False: a log with an untimed snapshot is not ordered.
            if not (position == 0 and stamp == stamp) and not (
                position > 0 and stamps[position - 1] <= stamp
            ):
                self._ordered = False
        self._checked = len(stamps)

    def _reach(self, index: int) -> bool:
        if self._follow:
            self._grow()
        return index < len(self._index)

    def _count(self) -> int:
        return len(self._index)

    def timestamp(self, index: int) -> datetime | None:
        """When snapshot ``index`` was taken (None where the log gives no time)."""
        stamp = self._index.stamps[self._resolve(index)]
        return None if math.isnan(stamp) else EPOCH + timedelta(seconds=stamp)

    def index_at(self, moment: datetime) -> int:
        """The last snapshot taken at or before ``moment`` (the first, if all are later)."""
        return last_at_or_before(self._index.stamps, epoch_seconds(moment), ordered=self._ordered)

    def snapshot(self, index: int) -> Snapshot:
        """The snapshot at ``index`` (negative counts from the end).

        Raises:
            IndexError: no such snapshot.
            BadCapture: the lines there cannot be read.
        """
        index = self._resolve(index)
        start, end = self._index.starts[index], self._index.ends[index]
        if end - start > MAX_SNAPSHOT_BYTES:
            raise BadCapture(f"snapshot {index} (byte {start}): larger than 64 MiB")
        self._handle.seek(start)
        data = self._handle.read(end - start)
        try:
            snapshot = self._parse(data, self._index.layouts[index], self.timestamp(index))
        except BadCapture as error:
            raise BadCapture(f"snapshot {index} (byte {start}): {error}") from None
        return snapshot

    def close(self) -> None:
        """Close the file."""
        self._handle.close()
