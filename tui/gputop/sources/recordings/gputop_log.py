"""gputop's own `--log` CSV as a recording, so that a log gputop wrote replays and reports.

``gputop --replay run.xml --count N --log run.csv`` is how the README converts a recording;
this reads the result back. The header is the timestamp, then field-table columns named by
their ``csv`` names (``model/fields.py``: ``index,uuid,name,utilization_gpu,…``), so a column
added to the table later is read too. Rows of one snapshot share their timestamp; a GPU's
index coming round again also starts a new one.

What the log does not hold reads n/a with the reason "not in this log" (the processes
column is a count, so the process list is unknown, not empty); an empty cell is a value the
GPU did not report; ``none`` in ``throttle_reasons`` says no reason was active.
"""

from __future__ import annotations

import csv
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from gputop.errors import BadCapture
from gputop.model import GpuSample, Reason, Snapshot
from gputop.model.fields import GPU_FIELDS, Field, Value
from gputop.sources.csvlog.columns import GPU_VALUE_PATHS
from gputop.sources.csvlog.parse import gpu_sample
from gputop.sources.recordings.linelog import LineLog, LogIndex, open_regular

_MIB = 1024 * 1024
_MAX_COLUMNS = 256
_BY_CSV: dict[str, Field] = {field.csv: field for field in GPU_FIELDS if field.csv}
"""Each ``--log`` column's field (the timestamp aside)."""
_DERIVED = frozenset({Value.COUNT})
"""Columns that count what the model lists (processes): not read back as values."""


def _header(line: bytes) -> tuple[str, ...] | None:
    """The columns of a gputop `--log` header line, or None for any other line."""
    try:
        text = line.decode("ascii").strip().lstrip("\ufeff")
    except UnicodeDecodeError:
        return None
    names = tuple(text.split(","))
    if not 3 <= len(names) <= _MAX_COLUMNS or names[0] != "timestamp":
        return None
    known = [name for name in names[1:] if name in _BY_CSV]
    # The index, and most columns gputop's: a CSV that merely starts with a timestamp is not.
    if "index" not in known or len(known) * 2 < len(names) - 1:
        return None
    return names


def looks_like(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts a gputop `--log` CSV."""
    for line in head.lstrip(b"\xef\xbb\xbf").splitlines():
        if line.strip():
            return _header(line) is not None
    return False


def _cells(line: bytes) -> list[str] | None:
    try:
        return next(csv.reader([line.decode("utf-8", errors="replace")]))
    except (csv.Error, StopIteration):
        return None


def _convert(field: Field, cell: str) -> Any:
    """The model's value of a cell; a Reason where it holds none."""
    if cell == "":
        return Reason.NOT_AVAILABLE
    kind = field.value
    if kind is Value.TEXT:
        return cell
    if kind is Value.NAMES:
        return () if cell == "none" else tuple(name for name in cell.split(";") if name)
    try:
        number = float(cell)
    except ValueError:
        return Reason.INVALID
    if number != number or number < 0 or number == float("inf"):
        return Reason.INVALID
    if kind is Value.BYTES:
        return int(number * _MIB)
    if field.unit in ("", "MHz"):
        return int(number)
    return number


class _Layout:
    """What a header says: the timestamp's cell, and each other column's field."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.width = len(names)
        self.fields = tuple(
            (position, _BY_CSV[name])
            for position, name in enumerate(names)
            if position and name in _BY_CSV and _BY_CSV[name].value not in _DERIVED
        )
        held = {field.path for _, field in self.fields}
        self.absent = tuple(
            (path, Reason.NOT_IN_LOG)
            for path in (*GPU_VALUE_PATHS, "processes")
            if path not in held
        )
        self.index_at = next(
            (position for position, field in self.fields if field.path == "index"), None
        )


class _Scanner:
    """Where each snapshot's rows lie: rows share a timestamp, and no GPU twice."""

    def __init__(self, index: LogIndex, layouts: list[_Layout]) -> None:
        self._index = index
        self._layouts = layouts
        self._layout: int | None = None
        self._start: int | None = None
        self._end = 0
        self._stamp_cell = ""
        self._stamp: datetime | None = None
        self._seen: set[str] = set()
        self.stray = 0

    def _close(self) -> None:
        if self._start is not None and self._layout is not None:
            self._index.add(self._start, self._end, self._stamp, self._layout)
        self._start = None
        self._seen = set()

    def feed(self, offset: int, line: bytes) -> None:
        if not line.strip():
            return
        names = _header(line)
        if names is not None:
            self._close()
            self._layouts.append(_Layout(names))
            self._layout = len(self._layouts) - 1
            return
        if self._layout is None:
            self.stray += 1
            return
        layout = self._layouts[self._layout]
        cells = _cells(line)
        if cells is None or len(cells) != layout.width:
            self.stray += 1
            return
        gpu = cells[layout.index_at] if layout.index_at is not None else ""
        if self._start is None or cells[0] != self._stamp_cell or gpu in self._seen:
            self._close()
            self._start = offset
            self._stamp_cell = cells[0]
            self._stamp = _stamp(cells[0])
        self._seen.add(gpu)
        self._end = offset + len(line)

    def finish(self, end: int) -> None:
        self._close()


def _stamp(cell: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(cell.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=None) if moment.tzinfo is not None else moment


class _Parser:
    def __init__(self, layouts: Sequence[_Layout]) -> None:
        self._layouts = layouts

    def __call__(self, data: bytes, layout_number: int, stamp: datetime | None) -> Snapshot:
        layout = self._layouts[layout_number]
        if b"\x00" in data:
            raise BadCapture("binary data inside a gputop CSV log")
        gpus: list[GpuSample] = []
        for line in data.splitlines():
            cells = _cells(line) if line.strip() else None
            if cells is None or len(cells) != layout.width:
                continue
            values: dict[str, Any] = {}
            missing: dict[str, Reason] = {}
            for position, field in layout.fields:
                value = _convert(field, cells[position].strip())
                if isinstance(value, Reason):
                    missing[field.path] = value
                else:
                    values[field.path] = value
            gpus.append(gpu_sample(values, missing, layout.absent, len(gpus)))
        return Snapshot(timestamp=stamp, gpus=tuple(sorted(gpus, key=lambda g: g.index)))


def open_gputop_log(
    path: Path | str, *, follow: bool = False, ended: threading.Event | None = None
) -> LineLog:
    """Open a CSV log gputop wrote with `--log`; ``follow``: it is still being written.

    Raises:
        BadCapture: missing, unreadable, or holding no row under gputop's header.
    """
    path = Path(path)
    handle = open_regular(path)
    warnings: list[str] = []
    layouts: list[_Layout] = []
    try:
        index = LogIndex()
        scanner = _Scanner(index, layouts)
        log = LineLog(
            path, handle, index, _Parser(layouts), warnings, scanner, follow=follow, ended=ended
        )
        if not log.wait_for(0):
            raise BadCapture(f"{path}: no rows under gputop's `--log` header")
        if scanner.stray:
            lines = "line" if scanner.stray == 1 else "lines"
            warnings.append(f"{path}: skipped {scanner.stray} {lines} that fit no header")
        log.snapshot(0)
    except BadCapture:
        handle.close()
        raise
    except OSError as error:
        handle.close()
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
    return log
