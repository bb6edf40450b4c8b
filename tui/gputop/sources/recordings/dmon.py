"""`nvidia-smi dmon` and `nvidia-smi pmon` logs as recordings.

Both print a ``# gpu …`` header (repeated every screenful, and its columns depend on the
driver and on ``-s``), a units line, then one row per GPU (dmon) or per process on a GPU
(pmon) per sample; ``-o DT`` puts date and time columns first, ``-`` is a value not
reported. Rows are grouped into one snapshot per sample: a sample ends where its time
changes, where a GPU (dmon) or a GPU's process (pmon) comes round again, or at a new header
with other columns. Without ``-o T`` a log has no time: its snapshots are untimed.

What a column does not carry is None with the reason "not in this log" (dmon has no GPU
names or memory totals; pmon has no GPU values at all), never 0.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from gputop.errors import BadCapture
from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    Power,
    ProcessSample,
    Reason,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.sources.recordings.linelog import LineLog, LogIndex, open_regular

_MIB = 1024 * 1024
_MAX_COLUMNS = 64
_HEADER = re.compile(rb"^#\s*(?:date\s+)?(?:time\s+)?gpu\b", re.IGNORECASE)

DMON_COLUMNS: dict[str, str] = {
    "pwr": "power.draw",
    "gtemp": "temperature.gpu",
    "temp": "temperature.gpu",
    "mtemp": "temperature.memory",
    "sm": "utilization.gpu",
    "mem": "utilization.memory",
    "enc": "utilization.encoder",
    "dec": "utilization.decoder",
    "mclk": "clocks.memory",
    # "Proc and Mem Clocks" (`-s c`): pclk is the processor clock, the SM clock that
    # `--query-gpu=clocks.current.sm` and NVML's NVML_CLOCK_SM give (equal on the H200 log).
    "pclk": "clocks.sm",
    "fb": "memory.used",
    "sbecc": "ecc_errors.volatile_corrected",
    "dbecc": "ecc_errors.volatile_uncorrected",
}
"""dmon's columns that gputop shows, and the field each fills (the others are skipped)."""

_GPU_FIELDS = (
    "name",
    "uuid",
    "utilization.gpu",
    "utilization.memory",
    "utilization.encoder",
    "utilization.decoder",
    "memory.total",
    "memory.used",
    "memory.free",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "temperature.memory",
    "fan_speed",
    "performance_state",
    "clocks.graphics",
    "clocks.sm",
    "clocks.memory",
    "throttle_reasons",
    "mig_mode",
)


def header_columns(line: bytes) -> tuple[str, ...] | None:
    """The column names of a ``# gpu …`` header line, or None for any other line."""
    if not _HEADER.match(line):
        return None
    names = line.lstrip(b"#").decode("ascii", errors="replace").lower().split()
    return tuple(names) if 2 <= len(names) <= _MAX_COLUMNS else None


def _is_pmon(columns: tuple[str, ...]) -> bool:
    return "pid" in columns


def looks_like(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is a dmon or pmon log."""
    for line in head.lstrip(b"\xef\xbb\xbf").splitlines():
        if line.strip():
            return header_columns(line.strip()) is not None
    return False


def first_header(head: bytes) -> tuple[str, ...] | None:
    """The columns of the first non-blank line of ``head``, when it is a ``# gpu`` header."""
    for line in head.lstrip(b"\xef\xbb\xbf").splitlines():
        if line.strip():
            return header_columns(line.strip())
    return None


@dataclass(frozen=True)
class DmonLayout:
    """The columns one ``# gpu …`` header names, and which of them gputop reads."""

    columns: tuple[str, ...]

    @property
    def pmon(self) -> bool:
        return _is_pmon(self.columns)

    @functools.cached_property
    def read(self) -> tuple[tuple[int, str], ...]:
        """(position, field path) of each dmon column gputop takes (the first of two for one
        field: old drivers' `temp` and newer `gtemp` never come together)."""
        found: dict[str, int] = {}
        for position, name in enumerate(self.columns):
            path = DMON_COLUMNS.get(name)
            if path is not None and position > self.stamp_columns:
                found.setdefault(path, position)
        return tuple((position, path) for path, position in found.items())

    @functools.cached_property
    def absent(self) -> tuple[tuple[str, Reason], ...]:
        """Every field this layout has no column for: "not in this log"."""
        taken = {path for _, path in self.read}
        return tuple((path, Reason.NOT_IN_LOG) for path in _GPU_FIELDS if path not in taken)

    @property
    def stamp_columns(self) -> int:
        """How many leading columns are `-o D`/`-o T` (date, time)."""
        return sum(1 for name in self.columns[:2] if name in ("date", "time"))


def _fields(layout: DmonLayout, line: bytes) -> list[bytes] | None:
    """A row's cells, or None when it does not fit the header: pmon's last column (the
    command) keeps its spaces and may be missing; every other column is there."""
    if layout.pmon:
        fields = line.split(None, len(layout.columns) - 1)
        least = len(layout.columns) - (layout.columns[-1] == "command")
        return fields if len(fields) >= least else None
    fields = line.split()
    return fields if len(fields) == len(layout.columns) else None


def _parse_stamp(layout: DmonLayout, fields: list[bytes]) -> tuple[str, str]:
    date = time = ""
    for name, value in zip(layout.columns[:2], fields[:2], strict=False):
        if name == "date":
            date = value.decode("ascii", errors="replace")
        elif name == "time":
            time = value.decode("ascii", errors="replace")
    return date, time


_UNDATED = datetime(1900, 1, 1)
"""The day given to `-o T` times, which carry no date (a day is added past midnight)."""


class _Scanner:
    def __init__(self, index: LogIndex, layouts: list[DmonLayout], warnings: list[str]) -> None:
        self._index = index
        self._layouts = layouts
        self._warnings = warnings
        self._layout: int | None = None
        self._start: int | None = None
        self._end = 0
        self._keys: set[tuple[bytes, bytes]] = set()
        self._raw: tuple[bytes, ...] = ()
        self._stamp: datetime | None = None
        self._day = 0
        self._last_time: datetime | None = None
        self.stray = 0
        self.undated = False

    def _close(self) -> None:
        if self._start is not None and self._layout is not None:
            self._index.add(self._start, self._end, self._stamp, self._layout)
        self._start = None
        self._keys = set()

    def feed(self, offset: int, line: bytes) -> None:
        stripped = line.strip()
        if not stripped:
            return
        if stripped.startswith(b"#"):
            columns = header_columns(stripped)
            if columns is not None:
                layout = DmonLayout(columns)
                if layout not in self._layouts:
                    self._layouts.append(layout)
                number = self._layouts.index(layout)
                if number != self._layout:
                    self._close()
                    self._layout = number
            return
        if self._layout is None:
            self.stray += 1
            return
        layout = self._layouts[self._layout]
        fields = _fields(layout, stripped)
        skip = layout.stamp_columns
        if fields is None or gpu_index(fields[skip]) is None:
            self.stray += 1
            return
        # The raw cells: decoded only where a sample begins (most rows share its time).
        raw_moment = tuple(fields[:skip])
        key = (fields[skip], fields[skip + 1] if layout.pmon else b"")
        if self._start is None or key in self._keys or (skip and raw_moment != self._raw):
            self._close()
            self._start = offset
            self._raw = raw_moment
            self._stamp = self._when(_parse_stamp(layout, fields)) if skip else None
        self._keys.add(key)
        self._end = offset + len(line)

    def _when(self, moment: tuple[str, str]) -> datetime | None:
        date, time = moment
        try:
            day = datetime.strptime(date, "%Y%m%d") if date else _UNDATED
            clock = datetime.strptime(time, "%H:%M:%S") if time else _UNDATED
        except ValueError:
            return None
        if not date:
            self.undated = True
        stamp = day.replace(hour=clock.hour, minute=clock.minute, second=clock.second)
        if not date:
            stamp += timedelta(days=self._day)
            if self._last_time is not None and stamp < self._last_time:
                self._day += 1
                stamp += timedelta(days=1)
            self._last_time = stamp
        return stamp

    def finish(self, end: int) -> None:
        self._close()


def cell_number(value: bytes) -> float | None:
    """A cell's finite number; None for ``-`` or anything else that is none."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


class _Parser:
    def __init__(self, layouts: list[DmonLayout]) -> None:
        self._layouts = layouts

    def __call__(self, data: bytes, layout_number: int, stamp: datetime | None) -> Snapshot:
        layout = self._layouts[layout_number]
        if b"\x00" in data:
            raise BadCapture("binary data inside a dmon/pmon log")
        rows = []
        for line in data.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith(b"#"):
                continue
            fields = _fields(layout, stripped)
            if fields is not None:
                rows.append(fields)
        gpus = _pmon_gpus(layout, rows) if layout.pmon else _dmon_gpus(layout, rows)
        return Snapshot(timestamp=stamp, gpus=tuple(sorted(gpus, key=lambda g: g.index)))


def gpu_index(value: bytes) -> int | None:
    """The GPU index a row's ``gpu`` cell gives; None when it is no index."""
    return int(value) if value.isdigit() and len(value) < 6 else None


def _dmon_gpus(layout: DmonLayout, rows: list[list[bytes]]) -> list[GpuSample]:
    skip = layout.stamp_columns
    read = layout.read
    absent = layout.absent
    gpus: list[GpuSample] = []
    for fields in rows:
        index = gpu_index(fields[skip])
        if index is None:
            continue
        values: dict[str, float] = {}
        missing = list(absent)
        for position, path in read:
            value = fields[position]
            number = cell_number(value)
            if number is None or number < 0:
                missing.append((path, Reason.NOT_AVAILABLE if value == b"-" else Reason.INVALID))
            else:
                values[path] = number
        gpus.append(_dmon_sample(index, values, tuple(missing)))
    return gpus


def _int(values: dict[str, float], path: str, scale: int = 1) -> int | None:
    value = values.get(path)
    return None if value is None else int(value) * scale


def _dmon_sample(
    index: int, values: dict[str, float], missing: tuple[tuple[str, Reason], ...]
) -> GpuSample:
    get = values.get
    return GpuSample(
        index=index,
        utilization=Utilization(
            gpu=get("utilization.gpu"),
            memory=get("utilization.memory"),
            encoder=get("utilization.encoder"),
            decoder=get("utilization.decoder"),
        ),
        memory=Memory(used=_int(values, "memory.used", _MIB)),
        temperature=Temperature(gpu=get("temperature.gpu"), memory=get("temperature.memory")),
        power=Power(draw=get("power.draw")),
        clocks=Clocks(sm=_int(values, "clocks.sm"), memory=_int(values, "clocks.memory")),
        ecc_errors=EccErrors(
            volatile_corrected=_int(values, "ecc_errors.volatile_corrected"),
            volatile_uncorrected=_int(values, "ecc_errors.volatile_uncorrected"),
        ),
        unavailable=missing,
    )


def _pmon_gpus(layout: DmonLayout, rows: list[list[bytes]]) -> list[GpuSample]:
    skip = layout.stamp_columns
    names = layout.columns[skip:]
    processes: dict[int, list[ProcessSample]] = {}
    for fields in rows:
        index = gpu_index(fields[skip])
        if index is None:
            continue
        found = processes.setdefault(index, [])
        row = dict(zip(names, fields[skip:], strict=False))
        pid = row.get("pid", b"-")
        if not pid.isdigit() or len(pid) > 10:
            continue  # `-`: no process on this GPU in this sample
        sm = cell_number(row.get("sm", b"-"))
        fb = cell_number(row.get("fb", b"-"))
        kind = row.get("type", b"-").decode("ascii", errors="replace")
        command = row.get("command", b"-").decode("utf-8", errors="replace").strip()
        found.append(
            ProcessSample(
                pid=int(pid),
                type=None if kind == "-" else kind,
                name=None if command in ("", "-") else command,
                memory_used=None if fb is None or fb < 0 else int(fb) * _MIB,
                sm_utilization=None if sm is None or not 0 <= sm <= 100 else sm,
            )
        )
    missing = tuple((path, Reason.NOT_IN_LOG) for path in _GPU_FIELDS)
    return [
        GpuSample(index=index, processes=tuple(found), unavailable=missing)
        for index, found in processes.items()
    ]


def open_monitor_log(
    path: Path | str, *, follow: bool = False, ended: threading.Event | None = None
) -> LineLog:
    """Open a `nvidia-smi dmon` or `nvidia-smi pmon` log; ``follow``: the file is still
    being written (the first sample is waited for).

    Raises:
        BadCapture: missing, unreadable, or holding no dmon/pmon rows.
    """
    path = Path(path)
    handle = open_regular(path)
    warnings: list[str] = []
    layouts: list[DmonLayout] = []
    try:
        index = LogIndex()
        scanner = _Scanner(index, layouts, warnings)
        log = LineLog(
            path, handle, index, _Parser(layouts), warnings, scanner, follow=follow, ended=ended
        )
        if not log.wait_for(0):
            raise BadCapture(f"{path}: no dmon/pmon rows under a `# gpu …` header")
        if scanner.stray:
            lines = "line" if scanner.stray == 1 else "lines"
            warnings.append(f"{path}: skipped {scanner.stray} {lines} that fit no `# gpu` header")
        if not layouts[0].stamp_columns and not any(layout.stamp_columns for layout in layouts):
            warnings.append(
                f"{path}: no date/time columns, so no snapshot has a time (record with "
                "`-o DT` for a report over time)"
            )
        if scanner.undated:
            warnings.append(
                f"{path}: `-o T` gives times without a date: shown on {_UNDATED:%Y-%m-%d}"
            )
        log.snapshot(0)
    except BadCapture:
        handle.close()
        raise
    except OSError as error:
        handle.close()
        raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
    return log
