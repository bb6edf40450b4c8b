"""What every source of snapshots offers."""

from __future__ import annotations

from typing import Protocol

from gputop.model import Snapshot


class Source(Protocol):
    """Something that yields a snapshot each time it is asked.

    ``poll`` does blocking I/O (NVML calls, file reads) and so runs in a worker thread,
    never on the UI thread.
    """

    def poll(self) -> Snapshot:
        """Take (or read) the next snapshot."""
        ...

    def close(self) -> None:
        """Release what the source holds (NVML handle, open files)."""
        ...
