"""Random access to an `nvidia-smi --query-gpu=... --format=csv [-l N]` log.

The log is scanned once, in chunks, into an index of snapshots (``scan``, ``index``: the
byte range of each snapshot's rows, its timestamp and how many lines it holds), and rows
are parsed only when a snapshot is asked for (``snapshot``), or a run of them is read as
columns for `report` (``runs``). A pipe or a .gz is copied (inflated) into an unnamed
temporary file as it comes (``data``), so reads never block the poller and any snapshot can
be read again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.model.columns import SnapshotColumns
from gputop.sources.csvlog.data import FileData, LogData, open_data
from gputop.sources.csvlog.index import SnapshotIndex
from gputop.sources.csvlog.parse import Schema
from gputop.sources.csvlog.runs import Runs
from gputop.sources.csvlog.scan import Scanner
from gputop.sources.csvlog.snapshot import snapshot_at
from gputop.sources.csvlog.sniff import NOHEADER_HINT, query_schema
from gputop.sources.recordings.following import WAIT_SLICE, FirstWait
from gputop.sources.recordings.indexed import IndexedLog


class CsvRecording(IndexedLog):
    """The snapshots of a `--query-gpu` CSV log, in order, by index or time (a Timeline)."""

    def __init__(
        self,
        path: Path,
        data: LogData,
        warnings: list[str],
        *,
        follow: bool,
        given: Schema | None = None,
    ) -> None:
        self.path = path
        self.warnings = warnings
        self._data = data
        self._follow = follow
        self._given = given
        """The schema ``--query-gpu`` gave for a headerless log."""
        self._index = SnapshotIndex()
        self._scan = Scanner(path, data, self._index, warnings, schema=given, follow=follow)
        self._runs = Runs(data, self._index, self._scan)

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        follow: bool = False,
        waiting: Callable[[], None] | None = None,
        query: str | None = None,
    ) -> CsvRecording:
        """Open a CSV log (a file, .gz, or pipe). ``query``: the fields it holds, as given
        to `nvidia-smi --query-gpu=` (``timestamp,index,utilization.gpu``), for a log
        written with ``noheader`` (a header line in the log still says what follows it).

        Raises:
            BadCapture: missing, unreadable, or no header and snapshot could be read.
        """
        path = Path(path)
        schema = None if query is None else query_schema(query)
        warnings: list[str] = []
        data = open_data(path, follow, warnings)
        recording = cls(path, data, warnings, follow=follow, given=schema)
        try:
            recording._check_first(waiting)
        except BadCapture:
            recording.close()
            raise
        return recording

    def reopened(self) -> CsvRecording:
        """The same file opened afresh, as ``open`` opened it: nothing read past the first
        snapshot yet.

        Raises:
            BadCapture: the file can no longer be read.
        """
        warnings: list[str] = []
        data = open_data(self.path, self._follow, warnings)
        recording = type(self)(self.path, data, warnings, follow=self._follow, given=self._given)
        try:
            recording._check_first(None)
        except BadCapture:
            recording.close()
            raise
        return recording

    def _check_first(self, waiting: Callable[[], None] | None) -> None:
        first_wait = FirstWait(waiting)
        while not self._scan.until(0):
            if self._scan.complete:
                why = self._no_rows() if self._scan.schema else self._no_header()
                raise BadCapture(f"{self.path}: {why}")
            first_wait.tick()
            self._data.wait(WAIT_SLICE)
        self.snapshot(0)

    def _no_rows(self) -> str:
        given = self._given
        if given is not None and self._scan.schema is given and self._scan.bad_width is not None:
            # Every row refused for its width: the fields given do not describe this log.
            return (
                f"--query-gpu gave {given.width} names for rows of {self._scan.bad_width} "
                "columns: give the fields the log was recorded with, in their order"
            )
        return "no GPU rows after the header"

    def _no_header(self) -> str:
        if self._data.available() == 0:
            return "empty file"
        return (
            "not an `nvidia-smi --query-gpu ... --format=csv` log: its first line is not a "
            f"header of query fields ({NOHEADER_HINT})"
        )

    @property
    def following(self) -> bool:
        """True while rows may still be appended."""
        return self._follow and not self._scan.complete

    @property
    def has_memory(self) -> bool:
        """Every header of the log names memory.used (else waiting cannot be told from idle)."""
        schemas = self._index.schemas
        return bool(schemas) and all(schema.has_memory for schema in schemas)

    # -- the Timeline --------------------------------------------------------------------

    def _reach(self, index: int) -> bool:
        return self._scan.until(index)

    def _count(self) -> int:
        return len(self._index.starts)

    def _pause(self, seconds: float) -> None:
        self._data.wait(seconds)

    def snapshot(self, index: int) -> Snapshot:
        """The snapshot at ``index`` (negative counts from the end).

        Raises:
            IndexError: no such snapshot.
        """
        position = self._resolve(index)
        return snapshot_at(self._data, self._index, position, with_apps=self._scan.any_apps)

    def timestamp(self, index: int) -> datetime | None:
        """The timestamp of snapshot ``index``, from the index without parsing its rows."""
        return self._index.timestamp(self._resolve(index))

    def index_at(self, moment: datetime) -> int:
        """The last snapshot taken at or before ``moment`` (the first, if all are later)."""
        self._scan.to_end()
        return self._index.index_at(moment)

    # -- for `report` --------------------------------------------------------------------

    def runs(
        self, start: int = 0, stop: int | None = None, run_bytes: int | None = None
    ) -> Iterator[SnapshotColumns | Snapshot]:
        """Snapshots ``start`` to ``stop`` (all of them by default) in order, as
        ``snapshot`` gives them, but runs of plain snapshots of up to ``run_bytes`` (256 KiB
        by default) handed over as columns (``bulk``): what `report` reads."""
        self._scan.to_end()
        count = len(self._index.starts)
        if stop is not None:
            count = min(stop, count)
        yield from self._runs.indexed(max(start, 0), count, {}, run_bytes)

    @property
    def streamable(self) -> bool:
        """Whether ``stream`` reads this log in one pass (a plain file, not followed)."""
        return isinstance(self._data, FileData) and not self._follow

    def stream(self, run_bytes: int | None = None) -> Iterator[SnapshotColumns | Snapshot]:
        """Every snapshot in order, as ``runs`` gives them, but read in one pass over the
        file without indexing the log first: what `report` reads of a plain file.

        Rows are taken ``run_bytes`` at a time from where the scan would start its next
        snapshot. A stretch of whole rows whose identity cells are one snapshot's GPUs
        over and over (so that the scan would cut it into those very snapshots; a header
        would show a field name there), each snapshot timed, is split into cells once and
        handed over as columns; its last snapshot is read again with the next stretch,
        which tells whether more rows belong to it. Anything else is left to the scan,
        a chunk at a time, and its snapshots read as ``runs`` reads them: the index holds
        only those (afterwards, open the log again to seek in it). Needs a plain file
        (``streamable``)."""
        if not self.streamable:
            raise ValueError("stream reads a plain file that is not followed")
        yield from self._runs.stream(run_bytes)

    @property
    def origin(self) -> datetime | None:
        """The time of the first timed snapshot, which ``seconds`` count from."""
        self._scan.to_end()
        return self._index.base

    def seconds(self) -> Sequence[float]:
        """When each snapshot was taken, in seconds after the first timed one (NaN: no
        time): the offsets `report` counts from, without reading a row."""
        self._scan.to_end()
        return self._index.stamps

    def close(self) -> None:
        """Close the file (and remove a temporary copy)."""
        self._data.close()
