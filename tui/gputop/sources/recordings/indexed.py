"""What every recording read through an index of its snapshots shares (a text log, a CSV
log): counting, negative indices, waiting for a followed file to grow, reading in order,
closing.

A reader says how to read on until a snapshot exists (``_reach``), how many it has indexed
(``_count``), whether more may come (``following``), how to wait for it (``_pause``) and
how to read one (``snapshot``); the rest is here once.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.sources.recordings.following import wait_until

UTF8_BOM = b"\xef\xbb\xbf"
"""What Windows tools (Notepad, PowerShell's ``Out-File``) write before a UTF-8 text: a
log's first line starts after it."""

_EVERY = 2**62
"""An index past any snapshot: reaching for it reads the whole file."""
_Log = TypeVar("_Log", bound="IndexedLog")


class IndexedLog(ABC):
    """A recording whose snapshots are found by scanning it into an index."""

    path: Path
    warnings: list[str]

    @abstractmethod
    def _reach(self, index: int) -> bool:
        """Read on until snapshot ``index`` (>= 0) is indexed, or nothing more has come;
        whether it is."""

    @abstractmethod
    def _count(self) -> int:
        """How many snapshots are indexed so far."""

    @property
    @abstractmethod
    def following(self) -> bool:
        """True while snapshots may still be appended."""

    @abstractmethod
    def snapshot(self, index: int) -> Snapshot:
        """The snapshot at ``index`` (negative counts from the end)."""

    @abstractmethod
    def timestamp(self, index: int) -> datetime | None:
        """When snapshot ``index`` was taken, from the index (None: no time)."""

    @abstractmethod
    def index_at(self, moment: datetime) -> int:
        """The last snapshot taken at or before ``moment`` (the first, if all are later)."""

    @abstractmethod
    def close(self) -> None:
        """Close the file."""

    def _pause(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the file to grow."""
        time.sleep(seconds)

    def __len__(self) -> int:
        self._reach(_EVERY)
        return self._count()

    def _resolve(self, index: int) -> int:
        """``index`` as a position from the start.

        Raises:
            IndexError: no such snapshot.
        """
        if index < 0:
            index += len(self)
        if index < 0 or not self._reach(index):
            raise IndexError(f"snapshot {index} is out of range")
        return index

    def wait_for(self, index: int, timeout: float | None = None) -> bool:
        """Whether snapshot ``index`` exists, waiting (followed) up to ``timeout`` seconds
        for it to be written; a negative ``index`` counts from the end and is not waited
        for."""
        if index < 0:
            return -index <= len(self)
        return wait_until(
            lambda: self._reach(index),
            following=lambda: self.following,
            pause=self._pause,
            timeout=timeout,
        )

    def __iter__(self) -> Iterator[Snapshot]:
        """Every readable snapshot in order; unreadable ones are skipped with a warning."""
        index = 0
        while self._reach(index):
            try:
                yield self.snapshot(index)
            except BadCapture as error:
                self.warnings.append(f"{self.path}: skipped {error}")
            index += 1

    def __enter__(self: _Log) -> _Log:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
