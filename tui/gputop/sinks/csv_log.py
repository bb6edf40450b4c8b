"""`gputop --log FILE.csv`: one CSV row per GPU per tick, like ``nvidia-smi --query-gpu``.

The header is written once: appending to a log gputop wrote before continues it, and a file
with other columns is refused rather than mixed. Each tick is one write, so a crash or a
``tail -f`` loses or misses at most the tick being written, and a failed write (a full disk)
leaves no half row behind. Values the GPU does not report
are empty cells, never 0.

Columns (units in the names; memory in MiB as nvidia-smi prints it):
timestamp (ISO 8601, the snapshot's local time, milliseconds), index, uuid, name,
utilization_gpu (%), utilization_memory (%), memory_used_mib, memory_total_mib,
power_draw_w, power_limit_w, temperature_c, fan_speed (%), sm_clock_mhz, mem_clock_mhz,
pstate (P0..P15), throttle_reasons (active reasons joined by ``;``, ``none`` when the GPU
reports that none is active, empty when it does not report them), processes (count), then
what GPM measures (Hopper and later, live only; empty elsewhere): activity_graphics,
activity_sm, activity_sm_occupancy, activity_tensor, activity_dram (%),
pcie_tx_bytes_per_s, pcie_rx_bytes_per_s, nvlink_tx_bytes_per_s, nvlink_rx_bytes_per_s.

A log an earlier gputop wrote, without the GPM columns, is continued with its own columns
(they came last, so its rows are the first cells of today's).
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from gputop.errors import GputopError
from gputop.model import GpuSample, Snapshot
from gputop.model.fields import CSV_LOG, CSV_LOG_BEFORE_GPM, Value
from gputop.sinks.whole import write_whole

COLUMNS: tuple[str, ...] = ("timestamp", *(field.csv for field in CSV_LOG if field.csv))
"""The header: the timestamp, then each ``CSV_LOG`` field's ``csv`` name."""

_MIB = 1024 * 1024
_HEADER = ",".join(COLUMNS)
_EARLIER_HEADERS: dict[str, int] = {
    ",".join(("timestamp", *(f.csv for f in CSV_LOG_BEFORE_GPM if f.csv))): 1
    + len(CSV_LOG_BEFORE_GPM),
}
"""Headers of logs an earlier gputop wrote, which are continued: header -> cells a row."""


class CsvLogError(GputopError):
    """The CSV log cannot be opened, continued or written."""

    exit_code = 2


def _number(value: float | None) -> str:
    if value is None:
        return ""
    text = f"{round(float(value), 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _mib(value: int | None) -> str:
    return "" if value is None else str(value // _MIB)


def _text(value: str | None) -> str:
    return value or ""


def _reasons(reasons: tuple[str, ...] | None) -> str:
    if reasons is None:
        return ""
    return ";".join(reasons) if reasons else "none"


_CELL: dict[Value, Callable[[Any], str]] = {
    Value.NUMBER: _number,
    Value.BYTES: _mib,
    Value.TEXT: _text,
    Value.NAMES: _reasons,
    Value.COUNT: str,
}
_CELLS: tuple[tuple[Callable[[Any], Any], Callable[[Any], str]], ...] = tuple(
    (field.read, _CELL[field.value]) for field in CSV_LOG
)


def gpu_row(snapshot: Snapshot, gpu: GpuSample) -> list[str]:
    """The cells of one GPU's row, in ``COLUMNS`` order."""
    stamp = snapshot.timestamp
    row = ["" if stamp is None else stamp.isoformat(timespec="milliseconds")]
    row.extend(cell(read(gpu)) for read, cell in _CELLS)
    return row


class CsvLogger:
    """Appends one row per GPU per :meth:`write`; a context manager that closes the file.

    Each tick's rows (after the header, for a new file) go out as one write to an unbuffered
    file, so nothing waits in a buffer to fail again at close; when that write fails part
    way (a full disk), a regular file is cut back to where it was: a row is in the log whole
    or not at all.

    Raises:
        CsvLogError: the file cannot be opened or written, or it already holds a CSV with
            other columns.
    """

    option = "--log"
    """The command-line option that asks for this sink (messages name it)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        needs_header, needs_newline = self._inspect()
        try:
            self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed by close()
        except OSError as error:
            raise CsvLogError(f"{self.path}: cannot open: {error.strerror or error}") from None
        # Written with the first tick's rows, in the same single write.
        self._pending = ("\n" if needs_newline else "") + (_HEADER + "\n" if needs_header else "")

    def _inspect(self) -> tuple[bool, bool]:
        """(write a header?, end a partial last line first?) for the existing file; sets
        how many cells a row has (fewer when continuing an earlier gputop's log)."""
        self._cells = len(COLUMNS)
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return True, False
        except OSError as error:
            raise CsvLogError(f"{self.path}: cannot read: {error.strerror or error}") from None
        if not stat.S_ISREG(mode):
            # A device or a pipe (/dev/stdout, /dev/full) has no earlier log to continue, and
            # reading one may never end.
            return True, False
        try:
            with open(self.path, "rb") as existing:
                first = existing.readline(len(_HEADER) + 8)
                existing.seek(0, 2)
                size = existing.tell()
                existing.seek(max(size - 1, 0))
                last = existing.read(1)
        except OSError as error:
            raise CsvLogError(f"{self.path}: cannot read: {error.strerror or error}") from None
        if size == 0:
            return True, False
        header = first.decode("utf-8", "replace").strip().lstrip("\ufeff")
        self._cells = _EARLIER_HEADERS.get(header, self._cells)
        if header != _HEADER and header not in _EARLIER_HEADERS:
            raise CsvLogError(
                f"{self.path}: exists with other columns than gputop's CSV log; choose another file"
            )
        return False, last != b"\n"

    def write(self, snapshot: Snapshot) -> None:
        """Append the snapshot's rows (one per GPU), whole, in one write.

        Raises:
            CsvLogError: the write failed (disk full, I/O error); nothing of this tick is
                left in a regular file.
        """
        rows = io.StringIO()
        cells = self._cells
        csv.writer(rows, lineterminator="\n").writerows(
            gpu_row(snapshot, gpu)[:cells] for gpu in snapshot.gpus
        )
        data = (self._pending + rows.getvalue()).encode("utf-8")
        try:
            write_whole(self._file, data)
        except OSError as error:
            raise CsvLogError(
                f"{self.option} {self.path}: write failed: {error.strerror or error}"
            ) from None
        self._pending = ""

    def close(self) -> None:
        """Close the file (idempotent); nothing is buffered, so closing writes nothing."""
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> CsvLogger:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
