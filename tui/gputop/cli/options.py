"""What the user asked for on the command line, as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Options:
    """Parsed command-line options shared by the headless paths and the TUI."""

    replay: Path | None = None
    """An nvidia-smi XML capture (file, stream, .gz or directory) to play instead of NVML."""
    once: bool = False
    """Print one compact summary and exit."""
    json: bool = False
    """Print snapshot(s) as JSON and exit."""
    at: str | None = None
    """Which snapshot of a stream --once/--json prints: an index or a time."""
    gpu: str | None = None
    """--gpu SPEC: indices, UUIDs, MIG UUIDs or PCI bus ids, comma separated."""
    interval: float = 1.0
    record: Path | None = None
    count: int | None = None
    """Headless: take this many snapshots, then stop."""
    pick: int | None = None
    readonly: bool = False
    theme: str | None = None
    log: Path | None = None
    """CSV log of one row per GPU per tick."""
    format: str | None = None
    """--format NAME: read the recording as this format instead of telling it by content."""
    follow: bool = False
    """--follow: read documents appended to the replayed file as they arrive (a pipe or
    `--replay -` is followed whatever this says)."""
    query_gpu: str | None = None
    """--query-gpu FIELDS: the columns of a `noheader` CSV log, as given to nvidia-smi."""
    apps: Path | None = None
    """--apps FILE: a `--query-compute-apps` CSV log beside the replayed `--query-gpu` one."""
    hide_commands: bool = False
    """`gputop serve --hide-commands`: processes' command lines are left out of the view."""
    served: bool = False
    """A `gputop serve` browser viewer: read-only whatever the other options say."""

    @property
    def headless(self) -> bool:
        """True when no TUI is wanted."""
        return self.once or self.json or self.count is not None or self.pick is not None
