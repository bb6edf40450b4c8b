"""A plain `nvidia-smi dmon -o DT` log read column by column, in one pass, for `report`.

Read row by row (``dmon.open_monitor_log``), a log is scanned line by line into an index,
then each sample is parsed into ``GpuSample`` values: about 60 us a row, 20 s for a million
rows, where the same rows of a `--query-gpu` CSV log, read column by column, take 2 s. Most
dmon logs are plain: one ``# gpu`` header (repeated every screenful, with its units line)
whose first columns are date and time, then the same GPUs in the same order at every
sample, each row with every column. Such a log is read here in stretches of 1 MiB: each
stretch is split into cells once, the date, time and GPU columns are checked to form whole
samples (the same GPUs in the same order, one time each), and the columns the report needs
are slices of the cells, each distinct cell converted once, as the row parser converts it.

Anything else (another header, a line that fits no header, a GPU that comes or goes, a cut
last sample, a time the fast parse does not read as ``strptime`` does) raises
:class:`NotPlain`, and the report reads the log row by row: the figures are the same either
way (a test holds them equal), only the time differs.
"""

from __future__ import annotations

import functools
import gzip
import os
import re
import stat
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from itertools import product
from operator import add
from pathlib import Path
from typing import BinaryIO, TypeVar, cast

from gputop.model.columns import NAN, GpuColumns, SnapshotColumns
from gputop.sources.recordings import dmon
from gputop.sources.recordings.indexed import UTF8_BOM

_CHUNK = 1 << 20
_HEAD = 64 * 1024
_MIB = 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_CLOCK = re.compile(rb"[0-2][0-9]:[0-5][0-9]:[0-5][0-9]")
_DAY_SECONDS = 86400
_NEWLINE = b"\x00"
"""A line end, as a cell (no NUL is in a plain log: the row reader refuses those)."""
_NEWLINE_CELL = b" \x00 "


class NotPlain(Exception):
    """The log holds something only the row reader reads exactly."""


def _number(cell: bytes) -> float:
    """The row parser's value of a dmon cell: a finite number >= 0, else NaN."""
    number = dmon.cell_number(cell)
    return NAN if number is None or number < 0 else number


def _mib(cell: bytes) -> int | None:
    number = dmon.cell_number(cell)
    return None if number is None or number < 0 else int(number) * _MIB


_Value = TypeVar("_Value")


class _Cache(dict[bytes, _Value]):
    """Cell text -> its value, each distinct text converted once."""

    def __init__(self, convert: Callable[[bytes], _Value], most: int = 1 << 16) -> None:
        super().__init__()
        self._convert = convert
        self._most = most

    def __missing__(self, cell: bytes) -> _Value:
        if len(self) >= self._most:
            self.clear()
        value = self[cell] = self._convert(cell)
        return value


def _day(cell: bytes) -> int:
    """The proleptic ordinal of a ``%Y%m%d`` date, as the row reader's ``strptime`` reads it."""
    try:
        return datetime.strptime(cell.decode("ascii"), "%Y%m%d").toordinal()
    except (UnicodeDecodeError, ValueError):
        raise NotPlain from None


def _clock(cell: bytes) -> float:
    """Seconds into the day of a ``%H:%M:%S`` time. ``HH:MM:SS`` is read by hand; anything
    else (``7:05:03``, hour 24, second 60) is left to the row reader."""
    if _CLOCK.fullmatch(cell) is None or cell[:2] > b"23":
        raise NotPlain
    return float(int(cell[:2]) * 3600 + int(cell[3:5]) * 60 + int(cell[6:8]))


class _Runs:
    """The state of one pass over a plain log."""

    def __init__(self, layout: dmon.DmonLayout) -> None:
        self.layout = layout
        self.width = len(layout.columns) + 1
        """Cells a row takes: its columns, then its newline."""
        read = dict((path, position) for position, path in layout.read)
        self.utilization = read.get("utilization.gpu")
        self.power = read.get("power.draw")
        self.memory = read.get("memory.used")
        self.pattern: list[bytes] | None = None
        """The GPU cells of one sample, in the log's order."""
        self.order: list[int] = []
        """Positions in ``pattern`` by GPU index (the row reader sorts GPUs by index)."""
        self.headers: set[bytes] = set()
        """The ``#`` lines seen, each the header read or one the row reader passes over."""
        self.origin_time: datetime | None = None
        self.midnights: _Cache[int] = _Cache(_day)
        self.days = _Cache(_day)
        self.clocks = _Cache(_clock, _DAY_SECONDS)  # every second of a day: none read twice
        self.numbers = _Cache(_number)
        self.mibs = _Cache(_mib)

    def stretch(self, text: bytes) -> tuple[SnapshotColumns | None, bytes]:
        """The whole samples of ``text`` (whole lines, each ending in a newline), and the
        lines of a sample not whole yet (to go before the next stretch)."""
        if b"\x00" in text:  # the row reader refuses such a sample
            raise NotPlain
        if b"\r" in text and text.count(b"\r") != text.count(b"\r\n"):
            raise NotPlain  # a lone CR ends a line for the row reader
        if b"#" in text:
            text = self._without_headers(text)
        width = self.width
        rows = text.count(b"\n")
        # Each newline a cell of its own (one-byte bytes are shared objects: they cost no
        # memory): every line holds every column exactly when these, one a line, fall
        # where each row's cells end. (A blank line, which the row reader skips, is left to
        # it.)
        cells = text.replace(b"\n", _NEWLINE_CELL).split()
        if len(cells) != rows * width or cells[width - 1 :: width].count(_NEWLINE) != rows:
            raise NotPlain
        if self.pattern is None:
            if not rows:
                return None, text
            self._learn(cells, rows)
        pattern = self.pattern
        assert pattern is not None
        size = len(pattern)
        samples = rows // size
        rest = _last_lines(text, rows - samples * size)
        if not samples:
            return None, rest
        used = samples * size * width
        if cells[2:used:width] != pattern * samples:
            raise NotPlain  # a GPU came, went or moved: the row reader groups those rows
        dates, times = cells[0:used:width], cells[1:used:width]
        for offset in range(1, size):
            # One time per sample: a row at another time would start a sample of its own.
            if dates[offset::size] != dates[::size] or times[offset::size] != times[::size]:
                raise NotPlain
        return self._columns(cells, used, dates[::size], times[::size], samples), rest

    def _without_headers(self, text: bytes) -> bytes:
        """``text`` without its ``#`` lines, each the header already read or a units line
        (which the row reader passes over); another header is not plain."""
        kept: list[bytes] = []
        start = 0
        at = text.find(b"#")
        while at >= 0:
            begin = text.rfind(b"\n", 0, at) + 1
            end = text.find(b"\n", at)
            end = len(text) if end < 0 else end + 1
            line = text[begin:end].strip()
            if line.startswith(b"#"):
                if line not in self.headers:  # the same two lines, every screenful
                    columns = dmon.header_columns(line)
                    if columns is not None and columns != self.layout.columns:
                        raise NotPlain
                    self.headers.add(line)
                kept.append(text[start:begin])
                start = end
            at = text.find(b"#", end)
        kept.append(text[start:])
        return b"".join(kept)

    def _learn(self, cells: list[bytes], rows: int) -> None:
        """The GPUs of the first sample: its rows up to a GPU seen again or another time."""
        width = self.width
        first: list[bytes] = []
        moment = cells[0:2]
        for row in range(rows):
            at = row * width
            gpu = cells[at + 2]
            if gpu in first or cells[at : at + 2] != moment:
                break
            first.append(gpu)
        indices = [dmon.gpu_index(gpu) for gpu in first]
        if None in indices or len(set(indices)) != len(indices):
            raise NotPlain
        self.pattern = first
        self.order = sorted(range(len(first)), key=lambda position: indices[position] or 0)

    def _columns(
        self, cells: list[bytes], used: int, dates: list[bytes], times: list[bytes], samples: int
    ) -> SnapshotColumns:
        if self.origin_time is None:
            self.origin_time = self._time(dates[0], times[0])
            origin = self.origin_time
            # Seconds from the origin to each day's midnight, and into the day: their sum is
            # ``(time - origin).total_seconds()`` to the bit (whole seconds, far below 2**53).
            self.midnights = _Cache(
                lambda cell: (
                    (_day(cell) - origin.toordinal()) * _DAY_SECONDS
                    - (origin - datetime.fromordinal(origin.toordinal())).seconds
                )
            )
        offsets = self._offsets(dates, times)
        pattern = self.pattern
        assert pattern is not None
        width = self.width
        step = len(pattern) * width
        gpus = []
        for position in self.order:
            row = position * width
            gpus.append(
                GpuColumns(
                    index=int(pattern[position]),
                    name=None,
                    uuid=None,
                    utilization=self._values(cells, row, used, self.utilization, samples),
                    power=self._values(cells, row, used, self.power, samples),
                    memory_used=(
                        None
                        if self.memory is None
                        else list(
                            map(self.mibs.__getitem__, cells[row + self.memory : used : step])
                        )
                    ),
                    memory_total=None,
                    throttle_reasons=None,
                )
            )
        return SnapshotColumns(
            origin=self.origin_time,
            offsets=offsets,
            first=self._time(dates[0], times[0]),
            last=self._time(dates[-1], times[-1]),
            host=None,
            gpus=tuple(gpus),
        )

    def _offsets(self, dates: list[bytes], times: list[bytes]) -> list[float]:
        """Seconds from the origin to each sample."""
        offsets: list[float] = []
        at, count = 0, len(times)
        while at < count:
            # `dmon -d 1`: a day's consecutive seconds are told by comparing their times, as
            # one string, with the day's from the first (they are then counted, not read).
            date, start = dates[at], int(self.clocks[times[at]])
            stop = at + min(count - at, _DAY_SECONDS - start)
            if (
                dates[at:stop].count(date) != stop - at
                or b" ".join(times[at:stop]) + b" "
                != _day_clocks()[9 * start : 9 * (start + stop - at)]
            ):
                offsets.extend(
                    map(
                        add,
                        map(self.midnights.__getitem__, dates[at:]),
                        map(self.clocks.__getitem__, times[at:]),
                    )
                )
                break
            first = self.midnights[date] + start
            offsets.extend(map(float, range(first, first + stop - at)))
            at = stop
        return offsets

    def _time(self, date: bytes, time: bytes) -> datetime:
        return datetime.fromordinal(self.days[date]) + timedelta(seconds=self.clocks[time])

    def _values(
        self, cells: list[bytes], row: int, used: int, column: int | None, samples: int
    ) -> list[float]:
        """A number column of the GPU whose rows start at ``row``, sample by sample."""
        if column is None:
            return [NAN] * samples
        step = self.width * len(self.order)
        return list(map(self.numbers.__getitem__, cells[row + column : used : step]))


@functools.cache
def _day_clocks() -> bytes:
    """Every second of a day as dmon writes it, each followed by a space (778 KB)."""
    sixty = [b"%02d" % number for number in range(60)]
    return b" ".join(map(b":".join, product(sixty[:24], sixty, sixty))) + b" "


def _last_lines(text: bytes, count: int) -> bytes:
    """The last ``count`` lines of ``text`` (which ends in a newline)."""
    at = len(text) - 1
    for _ in range(count):
        at = text.rfind(b"\n", 0, at)
    return text[at + 1 :] if count else b""


def _open(path: Path) -> BinaryIO | None:
    """The log's bytes (a .gz inflated); None when it is not a regular file."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        handle: BinaryIO = path.open("rb")
    except OSError:
        return None
    if handle.read(2) == _GZIP_MAGIC:
        handle.close()
        return cast(BinaryIO, gzip.open(path, "rb"))
    handle.seek(0)
    return handle


def plain_runs(path: Path) -> Iterator[SnapshotColumns] | None:
    """The samples of the dmon log at ``path`` as runs of columns, when its first line is a
    ``-o DT`` dmon header; None when it is no such log (the row reader reads it, or says
    what is wrong with it). Iterating raises :class:`NotPlain` where the log is not plain.
    """
    handle = _open(path)
    if handle is None:
        return None
    try:
        head = handle.read(_HEAD)
    except (OSError, EOFError):
        handle.close()
        return None
    columns = dmon.first_header(head)
    layout = None if columns is None else dmon.DmonLayout(columns)
    if layout is None or layout.pmon or layout.columns[:3] != ("date", "time", "gpu"):
        handle.close()
        return None
    return _read(handle, head, _Runs(layout))


def _read(handle: BinaryIO, head: bytes, runs: _Runs) -> Iterator[SnapshotColumns]:
    with handle:
        data = head[len(UTF8_BOM) :] if head.startswith(UTF8_BOM) else head
        try:
            while True:
                more = handle.read(_CHUNK)
                data += more
                if not more:
                    # The last line counts without its line end, as the row reader counts it.
                    text = data if not data or data.endswith(b"\n") else data + b"\n"
                    data = b""
                else:
                    cut = data.rfind(b"\n") + 1
                    text, data = data[:cut], data[cut:]
                run, rest = runs.stretch(text)
                if run is not None:
                    yield run
                if not more:
                    break
                data = rest + data
        except (OSError, EOFError, gzip.BadGzipFile) as error:
            raise NotPlain from error
    if rest or runs.pattern is None:
        raise NotPlain  # a cut last sample, or no sample: the row reader says what it holds
