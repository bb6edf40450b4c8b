"""Runs of a `--query-gpu` CSV log read column by column, for `report`.

Parsing each row into a ``GpuSample`` costs about 25 us; a two-week log of 8 GPUs has ten
million rows. A run of snapshots whose rows lie back to back, each with the header's number
of cells, as many rows in every snapshot, and the same GPU at the same place in each, is
read instead as a few lists: the run's bytes are split into cells once, each column the
report needs is a slice of them, and each distinct cell text is converted once (the
converters are the row parser's own). A run that is not so plain is left to the row parser.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import compress, islice, repeat
from operator import ne, not_, sub
from typing import Any

from gputop.model import Reason
from gputop.model.columns import NAN, GpuColumns, SnapshotColumns
from gputop.sources.csvlog.parse import (
    Column,
    Schema,
    is_header,
    parse_timestamp,
    row_values,
    throttle_reasons,
)

_SEPARATOR = b", "
_ROW_END = b"\n, "
_NEWLINE_CELL = b", \n, "
_LOWER_START = re.compile(rb"\n[a-z]")
"""A line starting with a lower-case letter (after the newline before it)."""
_MAX_CACHED = 1 << 16
"""Distinct cells remembered per column (a log's values repeat: watts, MiB, percents)."""

_NUMBERS = frozenset({"utilization.gpu", "power.draw", "power.limit", "clocks.sm"})
_BYTES = frozenset({"memory.used", "memory.total"})


class _Converted(dict[bytes, Any]):
    """Cell text -> the row parser's value for it (NaN or None where it holds none)."""

    def __init__(
        self, convert: Callable[[str], Any], missing: object, *, whole: bool = False
    ) -> None:
        super().__init__()
        self._convert = convert
        self._missing = missing
        self._whole = whole

    def __missing__(self, cell: bytes) -> Any:
        if len(self) >= _MAX_CACHED:
            self.clear()
        value = self._convert(cell.decode("utf-8", "replace").strip())
        if value.__class__ is Reason:
            value = self._missing
        elif self._whole and value.__class__ is float and value.is_integer():
            value = int(value)
        self[cell] = value
        return value


class _Reasons(dict[tuple[bytes, ...], "tuple[str, ...] | None"]):
    """The cells of a row's clock-event reason columns -> its active reasons."""

    def __init__(self, columns: Sequence[Column]) -> None:
        super().__init__()
        self._columns = tuple((n, path, convert) for n, (_, path, convert) in enumerate(columns))

    def __missing__(self, cells: tuple[bytes, ...]) -> tuple[str, ...] | None:
        if len(self) >= _MAX_CACHED:
            self.clear()
        texts = [cell.decode("utf-8", "replace") for cell in cells]
        reasons = throttle_reasons(row_values(self._columns, texts)[0])
        self[cells] = reasons
        return reasons


class RunReader:
    """Reads runs of one header's snapshots as columns (see the module's docstring)."""

    def __init__(self, schema: Schema) -> None:
        self._schema = schema
        self._where: dict[str, list[Column]] = {}
        for column in schema.columns:
            self._where.setdefault(column[1], []).append(column)
        reason_columns = [c for c in schema.columns if c[1].startswith("throttle_reasons")]
        self._reason_at = tuple(at for at, _, _ in reason_columns)
        self._reasons = _Reasons(reason_columns) if reason_columns else None
        self._caches: dict[int, _Converted] = {}

    @property
    def schema(self) -> Schema:
        """The header whose rows this reads."""
        return self._schema

    def _column(self, path: str) -> Column | None:
        """The one column of ``path``; None when the log has none. A path fed by several
        columns (``power.draw`` and ``power.draw.instant``) is read from its first, which
        must then hold a value in every row (checked by the caller)."""
        found = self._where.get(path)
        return None if not found else found[0]

    def _values(self, column: Column, cells: list[bytes]) -> list[Any]:
        at, path, convert = column
        cache = self._caches.get(at)
        if cache is None:
            missing = NAN if path in _NUMBERS else None
            # A whole utilization as an int, equal to the float the row parser gives: the
            # report looks each one up twice (its state, its count), and an int's hash is
            # a few times quicker than a float's.
            whole = path == "utilization.gpu"
            cache = self._caches[at] = _Converted(convert, missing, whole=whole)
        return list(map(cache.__getitem__, cells))

    def read(
        self,
        data: bytes,
        starts: Sequence[int],
        offsets: Sequence[float],
        origin: datetime | None,
        *,
        headers: bool = True,
        lines: Sequence[int] = (),
    ) -> SnapshotColumns | None:
        """The snapshots whose rows are ``data`` (from the first row of the first to the end
        of the last row of the last, back to back), ``starts`` the place of each one's first
        row in ``data`` and ``offsets`` its time in seconds after ``origin`` (the log's
        index); None when the run is not plain. ``headers``: a `--query-compute-apps`
        header may lie among the rows (False when the log has none). ``lines``: how
        many lines each snapshot holds, where the index counted them (0: not counted)."""
        count = len(starts)
        if origin is None or any(map(ne, offsets, offsets)):
            return None  # a snapshot without a time: the row parser says what it is
        width = self._schema.width
        # Windows' nvidia-smi ends lines with CR LF: then every line must have one (the CR
        # stays in a row's last cell, which converts stripped, as the row parser's).
        if b"\r" in data and (
            not data.endswith(b"\r") or data.count(b"\r") != data.count(b"\n") + 1
        ):
            return None
        if b"\t" in data or (headers and _has_header(data)):
            return None
        per = max(lines, default=0)
        if per and _counted(data, starts, per, lines):
            # Back to back, each of ``per`` lines: so many in all.
            rows = per * count
        else:
            rows = data.count(b"\n") + 1
            per = rows // count
            if rows % count or not _snapshots_of(data, starts, per):
                return None
        cells = _split(data + b"\n", rows, width)
        if cells is None:
            return None
        return self.columns(cells, per, offsets, origin)

    def cells(self, data: bytes) -> list[bytes] | None:
        """The whole lines of ``data`` (up to its last newline) split into cells, the
        header's number a row (a CR ending a line stays in its last cell); None when a line
        is not such a row, or holds a tab, or not every line ends in CR LF where one does:
        such lines are the row parser's. (A header may be split as a row: its cells are
        field names, never a GPU's identity, so the caller's check of those must refuse it.)"""
        end = data.rfind(b"\n") + 1
        if not end or b"\t" in data:
            return None
        # Each newline a cell of its own: one-byte bytes are shared objects, so they cost
        # no memory and are checked by identity, never touched.
        joined = data.replace(b"\n", _NEWLINE_CELL)
        lines = (len(joined) - len(data)) // 4  # counted by the replace
        if b"\r" in data:
            whole = data[:end]
            if not whole.count(b"\r\n") == whole.count(b"\r") == lines:
                return None
        width = self._schema.width + 1
        cells = joined.split(_SEPARATOR)
        # The lines are ``width`` cells each exactly when the newlines, one a line, are
        # where each line's would be.
        if cells[width - 1 : lines * width : width].count(b"\n") != lines:
            return None
        del cells[lines * width :]  # the line cut after the last newline (or the nothing)
        del cells[width - 1 :: width]
        return cells

    def columns(
        self, cells: list[bytes], per: int, offsets: Sequence[float], origin: datetime
    ) -> SnapshotColumns | None:
        """The snapshots of ``per`` rows each whose ``cells`` (as ``cells`` splits them)
        were taken ``offsets`` seconds after ``origin``; None when they are not plain."""
        stride = self._schema.width * per
        stamp = self._column("timestamp")
        if stamp is None:
            return None
        ends = (cells[stamp[0]], cells[len(cells) - stride + stamp[0]])
        first, last = (parse_timestamp(c.decode("utf-8", "replace").strip()) for c in ends)
        if (
            first is None
            or last is None
            or (first - origin).total_seconds() != offsets[0]
            or (last - origin).total_seconds() != offsets[-1]
        ):
            return None  # the index's times are not the rows' (never seen): row by row
        host = self._constant("host", cells, stride, 0)
        if host is _IRREGULAR:
            return None
        gpus = []
        for position in range(per):
            gpu = self._gpu(cells, position, per)
            if gpu is None:
                return None
            gpus.append(gpu)
        return SnapshotColumns(
            origin=origin, offsets=offsets, first=first, last=last, host=host, gpus=tuple(gpus)
        )

    def _constant(self, path: str, cells: list[bytes], stride: int, row: int) -> Any:
        """The value of ``path`` in row ``row`` of every snapshot when it is one value
        (None: no value or no column); ``_IRREGULAR`` otherwise."""
        column = self._column(path)
        if column is None:
            return None
        at = column[0]
        found = cells[row * self._schema.width + at :: stride]
        if found.count(found[0]) != len(found):
            return _IRREGULAR
        value = self._values(column, found[:1])[0]
        if value is None and len(self._where[path]) > 1:
            return _IRREGULAR  # another column of the path may hold it
        return value

    def _last_known(self, column: Column | None, cells: list[bytes]) -> Any:
        """The value of the last of ``cells`` that holds one (only the last is kept)."""
        if column is None or len(self._where[column[1]]) > 1:
            return _IRREGULAR
        for cell in reversed(cells):
            value = self._values(column, [cell])[0]
            if value is not None:
                return value
        return None

    def _gpu(self, cells: list[bytes], position: int, per: int) -> GpuColumns | None:
        width = self._schema.width
        stride = width * per
        first = position * width
        identity: dict[str, Any] = {}
        for path in ("index", "uuid", "name"):
            value = self._constant(path, cells, stride, position)
            if value is _IRREGULAR:
                return None
            identity[path] = value
        name_column = self._column("name")
        if name_column is not None and identity["name"] is None:
            # A lost GPU says so in its name: left to the row parser.
            return None
        index = identity["index"]
        values: dict[str, list[Any] | None] = {}
        for path in ("utilization.gpu", "power.draw", "memory.used"):
            column = self._column(path)
            if column is None:
                values[path] = None
                continue
            found = self._values(column, cells[first + column[0] :: stride])
            if len(self._where[path]) > 1 and (NAN in found or None in found):
                return None  # the row parser would look in the path's other columns
            values[path] = found
        reasons = None
        # What the report says of a power cap (whether it binds, the SM clocks under it):
        # read only with the reasons it is about.
        cap: dict[str, list[Any] | None] = {"power.limit": None, "clocks.sm": None}
        if self._reasons is not None:
            picked = [cells[first + at :: stride] for at in self._reason_at]
            reasons = list(map(self._reasons.__getitem__, zip(*picked, strict=True)))
            for path in cap:
                column = self._column(path)
                if column is not None and len(self._where[path]) == 1:
                    cap[path] = self._values(column, cells[first + column[0] :: stride])
        count = len(cells) // stride
        total = self._column("memory.total")
        totals = None if total is None else cells[first + total[0] :: stride]
        memory_total = None if totals is None else self._last_known(total, totals)
        if memory_total is _IRREGULAR:
            return None
        return GpuColumns(
            index=index if isinstance(index, int) else position,
            name=identity["name"],
            uuid=identity["uuid"],
            utilization=values["utilization.gpu"] or [NAN] * count,
            power=values["power.draw"] or [NAN] * count,
            memory_used=values["memory.used"],
            memory_total=memory_total,
            throttle_reasons=reasons,
            power_limit=cap["power.limit"],
            clocks_sm=cap["clocks.sm"],
        )


_IRREGULAR = object()


def _split(data: bytes, rows: int, width: int) -> list[bytes] | None:
    """``data``, ``rows`` lines each ending in a newline, split at every separator, each
    newline ending the cell before it: the rows are ``width`` cells each exactly when
    every newline is in a row's last cell (one split, one join and one count)."""
    cells = data.replace(b"\n", _ROW_END).split(_SEPARATOR)
    cells.pop()  # the nothing after the last newline
    if len(cells) != rows * width or (b"".join(cells[width - 1 :: width]).count(b"\n") != rows):
        return None
    return cells


def _counted(data: bytes, starts: Sequence[int], per: int, lines: Sequence[int]) -> bool:
    """Whether each snapshot holds ``per`` lines: as the index counted them, and those it
    did not count (0: read row by row, about one a chunk) counted here."""
    count = len(starts)
    if lines.count(per) + lines.count(0) != count:
        return False
    for at in compress(range(count), map(not_, lines)):
        last = at == count - 1
        end = len(data) if last else starts[at + 1]
        if data.count(b"\n", starts[at], end) != per - last:
            return False
    return True


def _snapshots_of(data: bytes, starts: Sequence[int], per: int) -> bool:
    """Whether each snapshot is ``per`` whole lines of ``data`` (which holds as many lines as
    all of them): one count per snapshot, not a step a row."""
    counts = map(data.count, repeat(b"\n"), starts, islice(starts, 1, None))
    if list(counts).count(per) != len(starts) - 1:
        return False
    before = bytes(map(data.__getitem__, map(sub, islice(starts, 1, None), repeat(1))))
    return before.count(b"\n") == len(starts) - 1


def _has_header(data: bytes) -> bool:
    """A header line among the rows (only a line starting in lower case can be one)."""
    if b"pid" not in data:
        # A header between back-to-back snapshots is a `--query-compute-apps` one (any
        # other ends the run): without `pid` there is none, found at memchr speed.
        return False
    begins = (match.start() + 1 for match in _LOWER_START.finditer(data))
    for start in itertools.chain((0,) if b"a" <= data[:1] <= b"z" else (), begins):
        stop = data.find(b"\n", start)
        line = data[start : None if stop < 0 else stop]
        if is_header(line.decode("utf-8", "replace")):
            return True
    return False
