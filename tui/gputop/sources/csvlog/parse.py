"""Rows of a `--query-gpu` CSV log into model values.

nvidia-smi writes ``", "`` between cells and never quotes; units sit in the header
(``memory.used [MiB]``) and, without ``nounits``, after each value too (``1024 MiB``); a
value it cannot give is a bracketed word (``[N/A]``, ``[Not Supported]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

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
from gputop.model.health import RemappedRows, RetiredPages
from gputop.sources.csvlog.columns import (
    GPU_VALUE_PATHS,
    QUERY_APPS_FIELDS,
    QUERY_GPU_FIELDS,
    REASON_BITS,
    Kind,
)

SEPARATOR = ", "

_REASONS_BY_TEXT = {
    "n/a": Reason.NOT_AVAILABLE,
    "[n/a]": Reason.NOT_AVAILABLE,
    "[not supported]": Reason.NOT_SUPPORTED,
    "not supported": Reason.NOT_SUPPORTED,
    "[unknown error]": Reason.ERROR,
    "[insufficient permissions]": Reason.NO_PERMISSION,
    "[requested functionality has been deprecated]": Reason.DEPRECATED,
    "[gpu is lost]": Reason.GPU_LOST,
    "": Reason.NOT_AVAILABLE,
}

_HEADER_CELL = re.compile(r"[a-z_][a-zA-Z0-9_.]*( \[[^\]]*\])?")
_MIB = 1024**2
_MEMORY_UNITS = {"mib": _MIB, "gib": 1024**3, "kib": 1024, "b": 1}

Value = Any
Converter = Callable[[str], Value]


def _missing(text: str) -> Reason:
    return _REASONS_BY_TEXT.get(text.lower(), Reason.INVALID)


def _number_text(text: str) -> str:
    """``33.09 W`` -> ``33.09``."""
    space = text.find(" ")
    return text if space < 0 else text[:space]


def _to_int(text: str) -> Value:
    try:
        return int(_number_text(text))
    except ValueError:
        return _missing(text)


def _to_number(text: str) -> Value:
    try:
        value = float(_number_text(text))
    except ValueError:
        return _missing(text)
    return value if value >= 0 and value == value and value != float("inf") else Reason.INVALID


def _to_mib(text: str) -> Value:
    number, _, unit = text.partition(" ")
    try:
        value = float(number)
    except ValueError:
        return _missing(text)
    scale = _MEMORY_UNITS.get(unit.lower() or "mib")
    if scale is None or not 0 <= value < 2**50:
        return Reason.INVALID
    return int(value * scale)


def _to_text(text: str) -> Value:
    return _REASONS_BY_TEXT.get(text.lower(), text) if text[:1] in ("[", "N", "") else text


def _to_pstate(text: str) -> Value:
    return text if text[:1] == "P" and text[1:].isdigit() else _missing(text)


def _to_flag(text: str) -> Value:
    lowered = text.lower()
    if lowered in ("enabled", "yes"):
        return True
    if lowered in ("disabled", "no"):
        return False
    return _missing(text)


def _to_mask(text: str) -> Value:
    try:
        mask = int(text, 16)
    except ValueError:
        return _missing(text)
    return tuple(name for bit, name in REASON_BITS if mask & bit)


def _to_active(text: str) -> Value:
    lowered = text.lower()
    if lowered == "active":
        return True
    if lowered == "not active":
        return False
    return _missing(text)


def parse_timestamp(text: str) -> datetime | None:
    """``2024/01/04 15:02:11.123`` (nvidia-smi's, local time) or ISO; None if neither."""
    try:
        return datetime.fromisoformat(text.replace("/", "-"))
    except ValueError:
        return None


_CONVERTERS: dict[Kind, Converter] = {
    "timestamp": parse_timestamp,
    "int": _to_int,
    "number": _to_number,
    "mib": _to_mib,
    "text": _to_text,
    "pstate": _to_pstate,
    "flag": _to_flag,
    "reasons_mask": _to_mask,
    "active": _to_active,
}


def is_header(line: str) -> bool:
    """A header line: every cell a field name, with or without its ``[unit]``, one of them
    a field gputop knows (so that a stray word in a damaged log is no header)."""
    cells = line.split(SEPARATOR)
    if not all(_HEADER_CELL.fullmatch(cell.strip()) for cell in cells):
        return False
    names = header_names(line)
    return any(name in QUERY_GPU_FIELDS or name in QUERY_APPS_FIELDS for name in names)


@dataclass(frozen=True, slots=True)
class Schema:
    """What a header says: which cell holds which field."""

    header: str
    width: int
    columns: tuple[tuple[int, str, Converter], ...]
    """(cell position, model path, converter), in the table's order of preference."""
    timestamp_at: int | None
    identity_at: int | None
    """The cell that tells GPUs apart (index, else uuid, else bus id), if any."""
    index_at: int | None
    absent: tuple[tuple[str, Reason], ...]
    """The GPU values this log does not hold."""

    @classmethod
    def parse(cls, header: str) -> Schema:
        """The schema of a header line.

        Raises:
            BadCapture: no cell is a `--query-gpu` field gputop knows.
        """
        names = header_names(header)
        order = list(QUERY_GPU_FIELDS)
        known = sorted(
            (order.index(name), position, name)
            for position, name in enumerate(names)
            if name in QUERY_GPU_FIELDS
        )
        if not known:
            raise BadCapture("a CSV header with no `--query-gpu` field gputop knows")
        columns = tuple(
            (position, QUERY_GPU_FIELDS[name][0], _CONVERTERS[QUERY_GPU_FIELDS[name][1]])
            for _, position, name in known
        )
        where = {path: position for position, path, _ in reversed(columns)}
        identity = next((where[p] for p in ("index", "uuid", "pci_bus_id") if p in where), None)
        held = {"throttle_reasons" if p.startswith("throttle_reasons") else p for p in where}
        absent = tuple((path, Reason.NOT_IN_LOG) for path in GPU_VALUE_PATHS if path not in held)
        return cls(
            header=header,
            width=len(names),
            columns=columns,
            timestamp_at=where.get("timestamp"),
            identity_at=identity,
            index_at=where.get("index"),
            absent=absent,
        )

    @property
    def has_memory(self) -> bool:
        """The log holds memory used (needed to tell waiting from idle)."""
        return all(path != "memory.used" for path, _ in self.absent)


def header_names(header: str) -> list[str]:
    """The field names of a header line, without their units."""
    return [cell.strip().split(" [", 1)[0] for cell in header.split(SEPARATOR)]


def is_apps_header(header: str) -> bool:
    """A `--query-compute-apps` header (its rows are processes, not GPUs)."""
    return "pid" in header_names(header)


@dataclass(frozen=True, slots=True)
class AppsSchema:
    """What a `--query-compute-apps` header says: where each process value is."""

    width: int
    where: dict[str, tuple[int, Converter]]

    @classmethod
    def parse(cls, header: str) -> AppsSchema:
        """The schema of a `--query-compute-apps` header."""
        names = header_names(header)
        where: dict[str, tuple[int, Converter]] = {}
        for position, name in enumerate(names):
            known = QUERY_APPS_FIELDS.get(name)
            if known is not None and known[0] not in where:
                where[known[0]] = (position, _CONVERTERS[known[1]])
        return cls(width=len(names), where=where)

    def process(self, cells: Sequence[str]) -> tuple[str | None, str | None, ProcessSample] | None:
        """(GPU UUID, GPU bus id, the process) of a row; None without a readable pid."""
        values: dict[str, Any] = {}
        for path, (at, convert) in self.where.items():
            value = convert(cells[at].strip())
            values[path] = None if value.__class__ is Reason else value
        pid = values.get("pid")
        if not isinstance(pid, int):
            return None
        process = ProcessSample(
            pid=pid, type="C", name=values.get("name"), memory_used=values.get("memory_used")
        )
        return values.get("gpu_uuid"), values.get("gpu_bus_id"), process


Column = tuple[int, str, Converter]
"""(cell position, model path, converter), as in ``Schema.columns``."""


def row_values(
    columns: Sequence[Column], cells: Sequence[str] | Mapping[int, str]
) -> tuple[dict[str, Any], dict[str, Reason]]:
    """The values of a row's ``columns`` by path (the first column of a path that holds
    one wins), and why each path that none holds is missing."""
    values: dict[str, Any] = {}
    missing: dict[str, Reason] = {}
    for at, path, convert in columns:
        if path in values:
            continue
        value = convert(cells[at].strip())
        if value.__class__ is Reason:
            missing.setdefault(path, value)
        else:
            values[path] = value
            missing.pop(path, None)
    return values, missing


def throttle_reasons(values: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The active clock-event reasons of a row's values: its bitmask column, else its
    one-reason columns; None when it holds neither."""
    reasons: tuple[str, ...] | None = values.get("throttle_reasons")
    if reasons is None:
        flags = {
            path[len("throttle_reasons.") :]: on
            for path, on in values.items()
            if path.startswith("throttle_reasons.")
        }
        if flags:
            reasons = tuple(name for name, on in flags.items() if on)
    return reasons


def _gpu(schema: Schema, cells: Sequence[str], position: int) -> tuple[GpuSample, dict[str, Any]]:
    values, missing = row_values(schema.columns, cells)
    return gpu_sample(values, missing, schema.absent, position), values


def gpu_sample(
    values: Mapping[str, Any],
    missing: Mapping[str, Reason],
    absent: Sequence[tuple[str, Reason]],
    position: int,
) -> GpuSample:
    """A GPU from a row's values by model path, why the paths its cells hold no value for
    are missing, and the paths the log has no column for (``absent``); ``position``: its
    place in the snapshot, its index when the row gives none."""
    get = values.get
    reasons = throttle_reasons(values)
    unavailable: dict[str, Reason] = {}
    for path, reason in missing.items():
        if path.startswith("throttle_reasons."):
            if reasons is None:
                unavailable.setdefault("throttle_reasons", reason)
        elif path == "throttle_reasons":
            if reasons is None:
                unavailable[path] = reason
        elif path not in ("timestamp", "driver_version", "attached_gpus", "host"):
            unavailable[path] = reason
    index = get("index")
    return GpuSample(
        index=index if isinstance(index, int) else position,
        name=get("name"),
        uuid=get("uuid"),
        pci_bus_id=get("pci_bus_id"),
        serial=get("serial"),
        utilization=Utilization(
            gpu=get("utilization.gpu"),
            memory=get("utilization.memory"),
            encoder=get("utilization.encoder"),
            decoder=get("utilization.decoder"),
        ),
        memory=Memory(
            total=get("memory.total"),
            used=get("memory.used"),
            free=get("memory.free"),
            reserved=get("memory.reserved"),
        ),
        temperature=Temperature(gpu=get("temperature.gpu"), memory=get("temperature.memory")),
        power=Power(
            draw=get("power.draw"),
            limit=get("power.limit"),
            default_limit=get("power.default_limit"),
            min_limit=get("power.min_limit"),
            max_limit=get("power.max_limit"),
        ),
        fan_speed=get("fan_speed"),
        performance_state=get("performance_state"),
        clocks=Clocks(
            graphics=get("clocks.graphics"),
            sm=get("clocks.sm"),
            memory=get("clocks.memory"),
            video=get("clocks.video"),
        ),
        max_clocks=Clocks(
            graphics=get("max_clocks.graphics"),
            sm=get("max_clocks.sm"),
            memory=get("max_clocks.memory"),
        ),
        persistence_mode=get("persistence_mode"),
        compute_mode=get("compute_mode"),
        ecc_mode=get("ecc_mode"),
        ecc_errors=EccErrors(
            volatile_corrected=get("ecc_errors.volatile_corrected"),
            volatile_uncorrected=get("ecc_errors.volatile_uncorrected"),
            aggregate_corrected=get("ecc_errors.aggregate_corrected"),
            aggregate_uncorrected=get("ecc_errors.aggregate_uncorrected"),
        ),
        remapped_rows=RemappedRows(
            correctable=get("remapped_rows.correctable"),
            uncorrectable=get("remapped_rows.uncorrectable"),
            pending=get("remapped_rows.pending"),
            failure=get("remapped_rows.failure"),
        ),
        retired_pages=RetiredPages(
            single_bit=get("retired_pages.single_bit"),
            double_bit=get("retired_pages.double_bit"),
            pending=get("retired_pages.pending"),
        ),
        throttle_reasons=reasons,
        mig_mode=get("mig_mode"),
        lost=missing.get("name") is Reason.GPU_LOST,
        unavailable=(*unavailable.items(), *absent),
    )


def with_processes(
    gpus: list[GpuSample], processes: Sequence[tuple[str | None, str | None, ProcessSample]]
) -> list[GpuSample]:
    """Each GPU with the processes whose GPU UUID or bus id is its own (all of them, for
    the one GPU of a log that names neither)."""
    if not processes:
        return gpus
    placed = []
    for gpu in gpus:
        mine = tuple(
            process
            for uuid, bus, process in processes
            if (uuid is not None and uuid == gpu.uuid)
            or (bus is not None and bus == gpu.pci_bus_id)
            or (len(gpus) == 1 and gpu.uuid is None and gpu.pci_bus_id is None)
        )
        placed.append(replace(gpu, processes=mine) if mine else gpu)
    return placed


PROCESSES_NOT_IN_LOG = ("processes", Reason.NOT_IN_LOG)
"""Filed on each GPU of a `--query-gpu` log that has no process data (no
`--query-compute-apps` query with it): its process count is unknown, not 0."""


def without_processes(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with each GPU's process list said to be not in the log."""
    return replace(
        snapshot,
        gpus=tuple(
            replace(gpu, unavailable=(*gpu.unavailable, PROCESSES_NOT_IN_LOG))
            for gpu in snapshot.gpus
        ),
    )


def with_process_data(gpus: Sequence[GpuSample]) -> list[GpuSample]:
    """``gpus`` with process lists that are known (an apps log was joined to them)."""
    return [
        replace(gpu, unavailable=tuple(u for u in gpu.unavailable if u != PROCESSES_NOT_IN_LOG))
        if PROCESSES_NOT_IN_LOG in gpu.unavailable
        else gpu
        for gpu in gpus
    ]


def parse_block(
    schema: Schema,
    rows: Sequence[Sequence[str]],
    processes: Sequence[tuple[str | None, str | None, ProcessSample]] = (),
) -> Snapshot:
    """One snapshot from the rows of its GPUs (in the log's order), and the processes of a
    `--query-compute-apps` query written with them."""
    gpus = []
    first: dict[str, Any] = {}
    for position, cells in enumerate(rows):
        gpu, values = _gpu(schema, cells, position)
        gpus.append(gpu)
        if not first:
            first = values
    gpus = with_processes(gpus, processes)
    stamp = first.get("timestamp")
    return Snapshot(
        timestamp=stamp if isinstance(stamp, datetime) else None,
        gpus=tuple(gpus),
        host=first.get("host"),
        driver_version=first.get("driver_version"),
        attached_gpus=first.get("attached_gpus"),
    )
