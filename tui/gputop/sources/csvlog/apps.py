"""A `nvidia-smi --query-compute-apps=timestamp,gpu_uuid,pid,process_name,used_memory
--format=csv -l 1` log kept beside a `--query-gpu` log: the processes of each snapshot.

nvidia-smi runs the two queries on their own clocks and writes nothing for a query that
finds no process, so the logs are joined by time: a GPU snapshot takes the processes of
the apps query nearest to it, within one sampling interval of the GPU log (none when no
query is that near: nothing ran), each on the GPU its UUID (or bus id) names.
"""

from __future__ import annotations

import bisect
import gzip
import itertools
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from gputop.errors import BadCapture
from gputop.model import ProcessSample, Snapshot
from gputop.sources.csvlog.parse import (
    SEPARATOR,
    AppsSchema,
    is_apps_header,
    is_header,
    parse_timestamp,
    with_process_data,
    with_processes,
)
from gputop.sources.recordings.indexed import IndexedLog

_MAX_BYTES = 1 << 30
"""An apps log is a few rows a second; beyond this it is not one."""

Placed = tuple[str | None, str | None, ProcessSample]
"""(GPU UUID, GPU bus id, the process)."""


class AppsLog:
    """The processes of each query of a `--query-compute-apps` log, by time."""

    def __init__(self, times: list[datetime], queries: list[tuple[Placed, ...]]) -> None:
        self._times = times
        self._queries = queries

    @classmethod
    def read(cls, path: Path) -> AppsLog:
        """Read the log at ``path`` (plain or .gz).

        Raises:
            BadCapture: unreadable, not a `--query-compute-apps` log, or without times.
        """
        try:
            with path.open("rb") as handle:
                data = handle.read(_MAX_BYTES + 1)
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
        except OSError as error:
            # Worded as --replay's own file is ("no such file or directory").
            raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
        except (EOFError, ValueError) as error:
            raise BadCapture(f"{path}: {error}") from None
        text = data.decode("utf-8-sig", "replace")  # a BOM first is not in the header
        first = next((line for line in text.splitlines() if line.strip()), "")
        if not (is_header(first.strip()) and is_apps_header(first.strip())):
            raise BadCapture(
                f"{path}: not an `nvidia-smi --query-compute-apps=... --format=csv` log "
                "(its first line is not a header naming pid)"
            )
        by_time: dict[datetime, list[Placed]] = {}
        schema: AppsSchema | None = None
        stamp_at: int | None = None
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if "a" <= line[:1] <= "z" and is_header(line):
                schema = AppsSchema.parse(line) if is_apps_header(line) else None
                names = [cell.split(" [", 1)[0] for cell in line.split(SEPARATOR)]
                stamp_at = names.index("timestamp") if "timestamp" in names else None
                continue
            cells = line.split(SEPARATOR)
            if schema is None or stamp_at is None or len(cells) != schema.width:
                continue
            moment = parse_timestamp(cells[stamp_at].strip())
            placed = schema.process(cells)
            if moment is not None and placed is not None:
                by_time.setdefault(moment, []).append(placed)
        if stamp_at is None:
            raise BadCapture(
                f"{path}: a `--query-compute-apps` log without a timestamp column cannot be "
                "joined to a GPU log (record it with --query-compute-apps=timestamp,...)"
            )
        times = sorted(by_time)
        return cls(times, [tuple(by_time[moment]) for moment in times])

    def __len__(self) -> int:
        return len(self._queries)

    def near(self, moment: datetime, window_s: float) -> tuple[Placed, ...]:
        """The processes of the query nearest to ``moment``, if within ``window_s``."""
        times = self._times
        at = bisect.bisect_left(times, moment)
        best: int | None = None
        for candidate in (at - 1, at):
            if 0 <= candidate < len(times):
                gap = abs((times[candidate] - moment).total_seconds())
                if gap <= window_s and (
                    best is None or gap < abs((times[best] - moment).total_seconds())
                ):
                    best = candidate
        return () if best is None else self._queries[best]


class WithApps(IndexedLog):
    """A `--query-gpu` CSV log whose snapshots take their processes from an apps log."""

    def __init__(self, gpus: IndexedLog, apps: AppsLog, window_s: float) -> None:
        self._gpus = gpus
        self._apps = apps
        self._window_s = window_s
        self.path = gpus.path
        self.warnings = gpus.warnings

    def _reach(self, index: int) -> bool:
        return self._gpus._reach(index)

    def _count(self) -> int:
        return self._gpus._count()

    @property
    def following(self) -> bool:
        return self._gpus.following

    def _pause(self, seconds: float) -> None:
        self._gpus._pause(seconds)

    def snapshot(self, index: int) -> Snapshot:
        """The GPU log's snapshot ``index`` with the processes running then."""
        snapshot = self._gpus.snapshot(index)
        if snapshot.timestamp is None:
            return snapshot
        placed = self._apps.near(snapshot.timestamp, self._window_s)
        gpus = with_process_data(snapshot.gpus)
        return replace(snapshot, gpus=tuple(with_processes(gpus, placed)))

    def timestamp(self, index: int) -> datetime | None:
        return self._gpus.timestamp(index)

    def index_at(self, moment: datetime) -> int:
        return self._gpus.index_at(moment)

    def close(self) -> None:
        self._gpus.close()


def sampling_interval(seconds: Sequence[float], floor: float = 1.0) -> float:
    """The median interval of a log's timed snapshots (at least ``floor``)."""
    start = list(seconds[:1001])  # the start of the log tells its pace
    steps = sorted(b - a for a, b in itertools.pairwise(start) if b == b and a == a and b > a)
    return max(floor, steps[len(steps) // 2]) if steps else floor
