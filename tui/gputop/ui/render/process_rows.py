"""Rows of the process table as plain values: building, filtering, sorting and details.

Nothing here imports Textual, so every rule of the table is tested without running an app. A
row is keyed by (GPU index, PID): that is what the table diffs on from one tick to the next.
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gputop.model import ProcessSample, Snapshot
from gputop.model.fields import PROCESS_BY_PATH
from gputop.model.units import NA, fmt_bytes, fmt_percent, fmt_text

FOREIGN_USER = "(other ns)"
"""The user cell of a process whose PID does not resolve in this PID namespace."""

COMMAND_WIDTH = 512
"""Characters of a command line a row keeps; the table cuts it further to the room it has
(``fit_command``), the details show all of it."""

ELLIPSIS = "…"

RowKey = tuple[int, int]
"""(GPU index, PID as the driver reports it)."""

Kill = Callable[[int, int], None]
"""``os.kill``'s shape: (pid, signal number)."""

SortValue = tuple[float | str, ...]
"""What a row sorts by in one column; rows with no value sort last either way."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the process table."""

    key: str
    """Stable identifier, also the DataTable column key."""
    label: str
    right: bool
    """Right-aligned (numbers)."""
    descending: bool
    """Sorted largest first when the column is first chosen (amounts, not identifiers)."""


COLUMNS: tuple[Column, ...] = (
    Column("gpu", "GPU", right=False, descending=False),
    Column("pid", "PID", right=True, descending=False),
    Column("user", "USER", right=False, descending=False),
    Column("type", "TYPE", right=False, descending=False),
    Column("gpu_memory", "GPU MEM", right=True, descending=True),
    Column("sm", "SM%", right=True, descending=True),
    Column("cpu", "CPU%", right=True, descending=True),
    Column("host_memory", "HOST MEM", right=True, descending=True),
    Column("time", "TIME", right=True, descending=True),
    Column("command", "COMMAND", right=False, descending=False),
)

COLUMN_INDEX = {column.key: index for index, column in enumerate(COLUMNS)}


class TypeFilter(enum.Enum):
    """Which process types the table shows; ``t`` cycles through them in this order."""

    ALL = "all"
    COMPUTE = "compute"
    GRAPHICS = "graphics"

    def next(self) -> TypeFilter:
        """The filter after this one."""
        members = list(TypeFilter)
        return members[(members.index(self) + 1) % len(members)]

    def admits(self, kind: str | None) -> bool:
        """Whether a process of type ``kind`` ("C", "G", "C+G", "M+C", ...) passes."""
        if self is TypeFilter.ALL:
            return True
        if kind is None:
            return False
        parts = {part.strip().upper() for part in kind.split("+")}
        # "M" is an MPS compute context: compute work for this purpose.
        wanted = {"C", "M"} if self is TypeFilter.COMPUTE else {"G"}
        return bool(parts & wanted)


@dataclass(frozen=True, slots=True)
class ProcessRow:
    """A process on one GPU, with its cells formatted and its sort values worked out."""

    gpu_index: int
    process: ProcessSample
    cells: tuple[str, ...]
    """Display text per column of ``COLUMNS``."""
    sort_values: tuple[SortValue | None, ...]
    """Sort value per column of ``COLUMNS``; None when unknown."""

    @property
    def key(self) -> RowKey:
        """(GPU index, PID): unique within a snapshot."""
        return (self.gpu_index, self.process.pid)

    @property
    def key_text(self) -> str:
        """The key as a string, for widgets that key rows by text."""
        return f"{self.gpu_index}:{self.process.pid}"

    @property
    def foreign(self) -> bool:
        """The PID is not in this PID namespace."""
        return self.process.foreign

    def cell(self, column_key: str) -> str:
        """The display text of one column."""
        return self.cells[COLUMN_INDEX[column_key]]


def gpu_label(gpu_index: int, process: ProcessSample) -> str:
    """``"0"``, or ``"0:3/0"`` (GPU:GPU instance/compute instance) for a MIG process."""
    gi, ci = process.gpu_instance_id, process.compute_instance_id
    if gi is None:
        return str(gpu_index)
    if ci is None:
        return f"{gpu_index}:{gi}"
    return f"{gpu_index}:{gi}/{ci}"


def format_elapsed(seconds: float | None) -> str:
    """A running time: ``"4:05"``, ``"1:02:03"``, ``"3d04h"``; n/a when unknown."""
    if seconds is None:
        return NA
    # A start time slightly in the future (clock skew between sampler and UI) reads as 0.
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_running(seconds: float | None) -> str:
    """The TIME cell: a running time whose resolution falls with age, ``"42s"``, ``"17m"``,
    ``"3h05m"``, ``"3d04h"``; n/a when unknown.

    Seconds only in the first minute: past it a cell changes once a minute (then once an
    hour), not every second in every row, which was most of what a tick redrew and sent to
    the terminal. The details (Enter) keep the exact time (:func:`format_elapsed`).
    """
    if seconds is None:
        return NA
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    minutes = total // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def _started_first(process: ProcessSample) -> SortValue | None:
    """TIME's sort value: the earlier the start, the longer it has run. Taken from the start
    time, not the running time, so that it stays put from tick to tick."""
    return None if process.start_time is None else (-process.start_time,)


def elapsed(process: ProcessSample, now: float) -> float | None:
    """Seconds the process has run at ``now`` (epoch seconds); None without a start time."""
    if process.start_time is None:
        return None
    return max(0.0, now - process.start_time)


def command_text(process: ProcessSample) -> str:
    """The full command line, else the driver's process name, else n/a."""
    return fmt_text(process.command or process.name)


def user_text(process: ProcessSample) -> str:
    """The user, or a plain label for a process of another PID namespace."""
    if process.user:
        return process.user
    return FOREIGN_USER if process.foreign else NA


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


_WINDOWS_PROGRAM = re.compile(r"(?i)^(?:[a-z]:|\\\\)\\.*?\.(?:exe|com|bat|cmd)\b")
"""A Windows program path at the start of a command line (it may hold spaces)."""


def _split_program(command: str) -> tuple[str, str, str]:
    """(directory with its trailing separator, program name, the rest of the line)."""
    if command.startswith('"'):
        end = command.find('"', 1)
        program = command if end < 0 else command[: end + 1]
    else:
        found = _WINDOWS_PROGRAM.match(command)
        program = found.group(0) if found else command.split(" ", 1)[0]
    cut = max(program.rfind("\\"), program.rfind("/")) + 1
    return program[:cut], program[cut:], command[len(program) :]


def fit_command(command: str, width: int) -> str:
    """``command`` in at most ``width`` characters, every cut marked with an ellipsis.

    The program's directory goes first, from the left and a whole directory at a time
    (``…\\Python311\\python.exe train.py``), so the program name and its arguments stay;
    then the arguments are cut from the right.
    """
    if len(command) <= width:
        return command
    if width <= len(ELLIPSIS):
        return ELLIPSIS[:width]
    directory, name, rest = _split_program(command)
    # Split before each separator: dropping parts from the left keeps "…\\Python311\\".
    parts = [part for part in re.split(r"(?=[\\/])", directory) if part]
    for first in range(1, len(parts)):
        shortened = ELLIPSIS + "".join(parts[first:]) + name + rest
        if len(shortened) <= width:
            return shortened
    head = ELLIPSIS + directory[-1:] + name if directory else name
    if len(head) >= width:
        # Not even the program name fits: keep its end, where the name is.
        return ELLIPSIS + head[len(head) - width + len(ELLIPSIS) :]
    return _truncate(head + rest, width)


def _number(value: float | None) -> SortValue | None:
    return None if value is None else (value,)


def _text(value: str | None) -> SortValue | None:
    return None if not value else (value.casefold(),)


def build_row(gpu_index: int, process: ProcessSample, now: float) -> ProcessRow:
    """Format one process of GPU ``gpu_index`` as seen at ``now`` (epoch seconds)."""
    running = elapsed(process, now)
    gi, ci = process.gpu_instance_id, process.compute_instance_id
    cells = (
        gpu_label(gpu_index, process),
        str(process.pid),
        user_text(process),
        fmt_text(process.type),
        fmt_bytes(process.memory_used),
        fmt_percent(process.sm_utilization),
        fmt_percent(process.cpu_percent),
        fmt_bytes(process.host_memory),
        format_running(running),
        _truncate(command_text(process), COMMAND_WIDTH),
    )
    sort_values = (
        (gpu_index, -1 if gi is None else gi, -1 if ci is None else ci),
        (process.pid,),
        _text(process.user),
        _text(process.type),
        _number(process.memory_used),
        _number(process.sm_utilization),
        _number(process.cpu_percent),
        _number(process.host_memory),
        _started_first(process),
        _text(process.command or process.name),
    )
    return ProcessRow(gpu_index, process, cells, sort_values)


_TIME = COLUMN_INDEX["time"]

RowCache = dict[tuple[int, ProcessSample], ProcessRow]
"""The last tick's rows by (GPU index, process sample), for :func:`build_rows` to reuse."""


def _rerun(row: ProcessRow, now: float) -> ProcessRow:
    """``row`` (of an unchanged process) with its running time as at ``now``: the same row
    while the TIME cell reads the same."""
    text = format_running(elapsed(row.process, now))
    if row.cells[_TIME] == text:
        return row
    cells = (*row.cells[:_TIME], text, *row.cells[_TIME + 1 :])
    return ProcessRow(row.gpu_index, row.process, cells, row.sort_values)


def build_rows(
    snapshot: Snapshot | None, now: float, cache: RowCache | None = None
) -> list[ProcessRow]:
    """Every process of every GPU, in snapshot order, one row per (GPU, PID).

    Sources already merge a PID's compute and graphics entries; should one still be listed
    twice on a GPU, the first entry wins so that row keys stay unique. With ``cache`` (the
    caller's, kept from tick to tick), a process whose sample equals the last tick's is not
    formatted again, only its running time: on a box of a thousand mostly idle processes,
    formatting every cell of every row was a quarter of a tick.
    """
    if snapshot is None:
        if cache is not None:
            cache.clear()
        return []
    rows: list[ProcessRow] = []
    seen: set[RowKey] = set()
    fresh: RowCache = {}
    for gpu in snapshot.gpus:
        for process in gpu.processes:
            key = (gpu.index, process.pid)
            if key in seen:
                continue
            seen.add(key)
            found = None if cache is None else cache.get((gpu.index, process))
            row = build_row(gpu.index, process, now) if found is None else _rerun(found, now)
            fresh[(gpu.index, process)] = row
            rows.append(row)
    if cache is not None:
        cache.clear()
        cache.update(fresh)
    return rows


def matches(row: ProcessRow, text: str) -> bool:
    """Whether every word of ``text`` occurs (case-insensitively) in the row's user, command
    or process name, PID, or GPU label."""
    terms = text.casefold().split()
    if not terms:
        return True
    process = row.process
    fields = [row.cell("gpu"), str(process.pid), user_text(process), command_text(process)]
    if process.name:
        fields.append(process.name)
    if process.local_pid is not None:
        fields.append(str(process.local_pid))
    haystack = [field.casefold() for field in fields]
    return all(any(term in field for field in haystack) for term in terms)


def visible_rows(
    rows: Iterable[ProcessRow], text: str, type_filter: TypeFilter
) -> list[ProcessRow]:
    """The rows that pass both the type filter and the text filter, in their order."""
    return [row for row in rows if type_filter.admits(row.process.type) and matches(row, text)]


def sort_rows(rows: Sequence[ProcessRow], column: int, reverse: bool) -> list[ProcessRow]:
    """Rows ordered by ``COLUMNS[column]``; ties by key; unknown values last either way."""
    by_key = sorted(rows, key=lambda row: row.key)
    known = [row for row in by_key if row.sort_values[column] is not None]
    unknown = [row for row in by_key if row.sort_values[column] is None]

    def value(row: ProcessRow) -> SortValue:
        found = row.sort_values[column]
        assert found is not None
        return found

    # sorted() is stable with reverse=True too, so equal values keep key order.
    return sorted(known, key=value, reverse=reverse) + unknown


_DETAIL_ORDER = (
    "pid",
    "local_pid",
    "foreign",
    "type",
    "name",
    "command",
    "user",
    "memory_used",
    "gpu_instance_id",
    "compute_instance_id",
    "sm_utilization",
    "cpu_percent",
    "host_memory",
    "start_time",
    "owner",
)
FIELD_LABELS: dict[str, str] = {path: PROCESS_BY_PATH[path].label for path in _DETAIL_ORDER}
"""A label (the field table's) for every field of ``ProcessSample``, in the order the details
list them."""


def _started(start_time: float | None) -> str:
    if start_time is None:
        return NA
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start_time))


def _optional_int(value: int | None) -> str:
    return NA if value is None else str(value)


def _owner_text(process: ProcessSample) -> str:
    owner = process.owner
    if owner is None or not owner.is_known:
        return NA
    parts: list[str] = []
    if owner.pod is not None:
        where = f"{owner.namespace}/" if owner.namespace else ""
        parts.append(f"pod {where}{owner.pod}")
    elif owner.pod_uid is not None:
        parts.append(f"pod uid {owner.pod_uid}")
    if owner.container is not None:
        parts.append(f"container {owner.container}")
    if owner.container_id is not None:
        parts.append(f"id {owner.container_id[:12]}")
    if owner.slurm_job is not None:
        parts.append(f"Slurm job {owner.slurm_job}")
    if owner.runtime is not None:
        parts.append(f"({owner.runtime})")
    return " ".join(parts) or NA


def detail_fields(row: ProcessRow, now: float) -> list[tuple[str, str]]:
    """(label, value) for the GPU and every field of the row's process, for a details view."""
    process = row.process
    if process.foreign:
        local = "not in this PID namespace"
    else:
        local = str(process.pid if process.local_pid is None else process.local_pid)
    values: dict[str, str] = {
        "pid": str(process.pid),
        "local_pid": local,
        "foreign": "another (a different container)" if process.foreign else "this one",
        "type": fmt_text(process.type),
        "name": fmt_text(process.name),
        "command": fmt_text(process.command),
        "user": user_text(process),
        "memory_used": fmt_bytes(process.memory_used),
        "gpu_instance_id": _optional_int(process.gpu_instance_id),
        "compute_instance_id": _optional_int(process.compute_instance_id),
        "sm_utilization": fmt_percent(process.sm_utilization),
        "cpu_percent": fmt_percent(process.cpu_percent),
        "host_memory": fmt_bytes(process.host_memory),
        "start_time": _started(process.start_time),
        "owner": _owner_text(process),
    }
    fields = [("GPU", row.cell("gpu"))]
    fields.extend((label, values[name]) for name, label in FIELD_LABELS.items())
    fields.append(("Running for", format_elapsed(elapsed(process, now))))
    return fields


def target_pid(process: ProcessSample) -> int:
    """The PID to signal in this PID namespace (the driver reports host PIDs)."""
    return process.pid if process.local_pid is None else process.local_pid


def signal_refusal(process: ProcessSample) -> str | None:
    """Why no signal may be sent to ``process`` from here, or None when one may."""
    if process.foreign:
        return "not in this PID namespace"
    pid = target_pid(process)
    # kill(0) signals our own process group and kill(-1) every process we may signal.
    if pid <= 0:
        return f"PID {pid} does not name a single process"
    return None


def send_signal(kill: Kill, process: ProcessSample, sig: int) -> str | None:
    """Send ``sig`` to ``process`` through ``kill``; None when sent, else why not, in words."""
    refusal = signal_refusal(process)
    if refusal is not None:
        return refusal
    pid = target_pid(process)
    try:
        kill(pid, sig)
    except PermissionError:
        owner = f" (it belongs to {process.user})" if process.user else ""
        return f"not permitted to signal PID {pid}{owner}"
    except ProcessLookupError:
        return "process has exited"
    except OSError as error:
        return error.strerror or str(error)
    return None


def describe(row: ProcessRow) -> str:
    """One line naming the process: user, command and GPU."""
    return f"{user_text(row.process)}  {command_text(row.process)}  (GPU {row.cell('gpu')})"
