"""A `--query-gpu` CSV log read in order for `report`: runs of plain snapshots handed over as
columns (``bulk``), the rest as the recording's snapshots.

``indexed`` reads what the index holds; ``stream`` reads a plain file in one pass without
indexing it first, taking stretches of rows whose identity cells repeat one snapshot's GPUs
and leaving anything else to the scan."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from itertools import islice
from operator import add, ne, sub

from gputop.model import Snapshot
from gputop.model.columns import SnapshotColumns
from gputop.sources.csvlog.bulk import RunReader
from gputop.sources.csvlog.data import LogData
from gputop.sources.csvlog.index import SnapshotIndex
from gputop.sources.csvlog.scan import Scanner
from gputop.sources.csvlog.snapshot import snapshot_at

_RUN_BYTES = 1 << 18
"""How much of the log `runs` and `stream` read at once. The cells of 256 KiB (about
1.3 MB of objects, each touched four or five times: split, checked, converted, freed) stay
in the processor's cache, and their memory is reused by the next run; those of 1 MiB made
the allocator hand memory back and fault it in again each time (0.6 page faults a KB)
and were 10-20% slower over all. Smaller runs cost more in steps per run."""
_SMALLEST_RUN = 16
_NAME_CELL = re.compile(rb"\s*[a-z_]").match
"""A cell that may be a header's field name (never a GPU's index, UUID or bus id)."""


class Runs:
    """The snapshots of one log, a run at a time."""

    def __init__(
        self,
        data: LogData,
        index: SnapshotIndex,
        scanner: Scanner,
    ) -> None:
        self._data = data
        self._index = index
        self._scanner = scanner
        self._reader: RunReader | None = None
        """What ``stream`` reads plain stretches with (for the schema it was made for)."""

    def indexed(
        self, index: int, count: int, readers: dict[int, RunReader], run_bytes: int | None
    ) -> Iterator[SnapshotColumns | Snapshot]:
        """The indexed snapshots ``index`` to ``count``, in runs of up to ``run_bytes``
        (None: 256 KiB; ``readers``: the reader of each schema, made as needed)."""
        run_bytes = run_bytes or _RUN_BYTES
        starts, ends, firsts = self._index.starts, self._index.ends, self._index.schema_firsts
        # Where runs must end: a new header, or anything between two snapshots.
        breaks = [spot for spot in firsts[1:] if index < spot < count]
        breaks.extend(
            itertools.compress(
                range(index + 1, count),
                map(
                    ne,
                    islice(starts, index + 1, count),
                    map(add, islice(ends, index, count - 1), itertools.repeat(1)),
                ),
            )
        )
        breaks = [*sorted(set(breaks)), count]
        while index < count:
            layout = bisect.bisect_right(firsts, index) - 1
            limit = breaks[bisect.bisect_right(breaks, index)]
            begin = starts[index]
            end = min(limit, max(bisect.bisect_right(starts, begin + run_bytes), index + 1))
            reader = readers.get(layout)
            if reader is None:
                reader = readers[layout] = RunReader(self._index.schemas[layout])
            yield from self._run(reader, index, end)
            index = end

    def _run(
        self, reader: RunReader, index: int, stop: int
    ) -> Iterator[SnapshotColumns | Snapshot]:
        """Snapshots ``index`` to ``stop`` (back to back), as columns where they are plain."""
        starts = self._index.starts
        begin = starts[index]
        data = self._data.read(begin, self._index.ends[stop - 1] - begin)
        offsets = list(map(sub, starts[index:stop], itertools.repeat(begin)))
        run = reader.read(
            data,
            offsets,
            self._index.stamps[index:stop],
            self._index.base,
            headers=self._scanner.any_apps,
            lines=self._index.line_counts[index:stop],
        )
        if run is not None:
            yield run
        elif stop - index > _SMALLEST_RUN:
            # Halves: one odd snapshot costs only the rows around it.
            middle = (index + stop) // 2
            yield from self._run(reader, index, middle)
            yield from self._run(reader, middle, stop)
        else:
            for position in range(index, stop):
                yield snapshot_at(
                    self._data, self._index, position, with_apps=self._scanner.any_apps
                )

    def stream(self, run_bytes: int | None = None) -> Iterator[SnapshotColumns | Snapshot]:
        """Every snapshot in order, as ``indexed`` gives them, but read in one pass over a
        plain file without indexing the log first (see ``CsvRecording.stream``)."""
        run_bytes = run_bytes or _RUN_BYTES
        readers: dict[int, RunReader] = {}
        index = self._index
        scanner = self._scanner
        done = 0  # index entries handed over
        wait = backoff = 0  # scan steps before the next stretch is tried, and the next wait
        while True:
            if done < len(index.starts):
                yield from self.indexed(done, len(index.starts), readers, run_bytes)
                done = len(index.starts)
            if scanner.complete:
                return
            if wait == 0 and scanner.plain:
                taken = self._plain_stretch(run_bytes)
                if taken is not None:
                    backoff = 0
                    yield taken
                    continue
                # An odd stretch: the scan reads it; the next tries wait longer each time
                # one fails (a log odd all along costs little more than the scan's reading).
                backoff = min(2 * backoff or 1, 64)
                wait = backoff
            wait = max(wait - 1, 0)
            scanner.step()

    def _plain_stretch(self, run_bytes: int) -> SnapshotColumns | None:
        """The snapshots from where the scan would start the next one, up to ``run_bytes``
        of them, as columns (the scan moved on past them); None when they are not plain."""
        schema = self._scanner.schema
        assert schema is not None and schema.identity_at is not None
        stamp_at = schema.timestamp_at
        assert stamp_at is not None
        at = self._scanner.resume_at
        available = self._data.available()
        data = self._data.read(at, min(run_bytes, available - at))
        whole = at + len(data) >= available and data.endswith(b"\n")
        reader = self._reader
        if reader is None or reader.schema is not schema:
            reader = self._reader = RunReader(schema)
        cells = reader.cells(data)
        if cells is None:
            return None
        width = schema.width
        ids = cells[schema.identity_at :: width]
        rows = len(ids)
        # The scan cuts a snapshot where a GPU's identity comes round again.
        try:
            per = ids.index(ids[0], 1)
        except ValueError:
            if not whole:
                return None  # whether more rows belong to this snapshot is not known
            per = rows
        pattern = ids[:per]
        expected = pattern * (rows // per + 1)
        del expected[rows:]
        if len(set(pattern)) != per or expected != ids or any(map(_NAME_CELL, pattern)):
            # (A header line as wide as the rows would have a field name for identity.)
            return None
        # The last whole snapshot is taken only when a row comes after it, or the file ends.
        count = rows // per if whole or rows % per else rows // per - 1
        if not count:
            return None
        stride = width * per
        stamps = list(map(bytes.strip, cells[stamp_at : count * stride : stride]))
        seconds = self._index.seconds_of(stamps)
        if seconds is None:
            return None
        del cells[count * stride :]
        assert self._index.base is not None
        run = reader.columns(cells, per, seconds, self._index.base)
        if run is None:
            return None
        # Past the rows taken: the rows left over are read again from their start.
        taken = data.rfind(b"\n") + 1
        for _ in range(rows - count * per):
            taken = data.rfind(b"\n", 0, taken - 1) + 1
        self._scanner.skip_to(at + taken, available)
        return run
