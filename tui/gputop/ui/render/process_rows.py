"""Rows of the process table as plain values: building, filtering, sorting and details.

Nothing here imports Textual, so every rule of the table is tested without running an app. A
row is keyed by (GPU index, PID): that is what the table diffs on from one tick to the next.
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gputop.model import ProcessSample, Snapshot
from gputop.model.fields import PROCESS_BY_PATH
from gputop.model.units import NA, fmt_bytes, fmt_percent, fmt_text
from gputop.ui.render.owners import (
    Holder,
    container_cell,
    holder_of,
    job_cell,
    owner_words,
    pod_cell,
)

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
    Column("pod", "POD", right=False, descending=False),
    Column("container", "CONTAINER", right=False, descending=False),
    Column("job", "JOB", right=False, descending=False),
    Column("type", "TYPE", right=False, descending=False),
    Column("gpu_memory", "GPU MEM", right=True, descending=True),
    Column("sm", "SM%", right=True, descending=True),
    Column("cpu", "CPU%", right=True, descending=True),
    Column("host_memory", "HOST MEM", right=True, descending=True),
    Column("time", "TIME", right=True, descending=True),
    Column("command", "COMMAND", right=False, descending=False),
)

COLUMN_INDEX = {column.key: index for index, column in enumerate(COLUMNS)}

OWNER_COLUMNS = ("pod", "container", "job")
"""Columns shown only while some process has a value in them (a pod, a container, a job):
on a workstation they would be a column of n/a each."""


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

    @property
    def command(self) -> str:
        """The whole command line, which the COMMAND cell may show cut."""
        return command_text(self.process)

    @property
    def holder(self) -> Holder | None:
        """The pod, job or container the process is grouped under."""
        return holder_of(self.process.owner)


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
    owner = process.owner
    pod, container, job = pod_cell(owner), container_cell(owner), job_cell(owner)
    cells = (
        gpu_label(gpu_index, process),
        str(process.pid),
        user_text(process),
        pod,
        container,
        job,
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
        _text(None if pod == NA else pod),
        _text(None if container == NA else container),
        _text(None if job == NA else job),
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

RowCache = dict[RowKey, ProcessRow]
"""The last tick's rows by (GPU index, PID), for :func:`build_rows` to reuse while the
process sample is the same (the very object, or an equal one): keyed by PID, not by the
sample, since hashing a sample hashes every field of it, for every row of every tick."""


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
            found = None if cache is None else cache.get(key)
            if found is None or (found.process is not process and found.process != process):
                row = build_row(gpu.index, process, now)
            else:
                row = _rerun(found, now)
            fresh[key] = row
            rows.append(row)
    if cache is not None:
        cache.clear()
        cache.update(fresh)
    return rows


def owner_columns(rows: Iterable[ProcessRow]) -> frozenset[str]:
    """Which of ``OWNER_COLUMNS`` some row has a value in (a pod, a container, a job)."""
    found: set[str] = set()
    for row in rows:
        owner = row.process.owner
        if owner is None:
            continue
        if owner.pod is not None or owner.pod_uid is not None:
            found.add("pod")
        if owner.container is not None or owner.container_id is not None:
            found.add("container")
        if owner.slurm_job is not None:
            found.add("job")
        if len(found) == len(OWNER_COLUMNS):
            break
    return frozenset(found)


def matches(row: ProcessRow, text: str) -> bool:
    """Whether every word of ``text`` occurs (case-insensitively) in the row's user, command
    or process name, PID, GPU label, or its pod, namespace, container or Slurm job."""
    terms = text.casefold().split()
    if not terms:
        return True
    process = row.process
    fields = [row.cell("gpu"), str(process.pid), user_text(process), command_text(process)]
    if process.name:
        fields.append(process.name)
    if process.local_pid is not None:
        fields.append(str(process.local_pid))
    fields.extend(owner_words(process.owner))
    haystack = [field.casefold() for field in fields]
    return all(any(term in field for field in haystack) for term in terms)


def visible_rows(
    rows: Iterable[ProcessRow], text: str, type_filter: TypeFilter
) -> list[ProcessRow]:
    """The rows that pass both the type filter and the text filter, in their order."""
    return [row for row in rows if type_filter.admits(row.process.type) and matches(row, text)]


class Sortable(Protocol):
    """A row :func:`sort_rows` orders: a process's or a group's."""

    @property
    def key(self) -> RowKey:
        """Ties are ordered by it."""
        ...

    @property
    def sort_values(self) -> tuple[SortValue | None, ...]:
        """Per column of ``COLUMNS``."""
        ...


SortableT = TypeVar("SortableT", bound=Sortable)


def sort_rows(rows: Sequence[SortableT], column: int, reverse: bool) -> list[SortableT]:
    """Rows ordered by ``COLUMNS[column]``; ties by key; unknown values last either way."""
    by_key = sorted(rows, key=lambda row: row.key)
    known = [row for row in by_key if row.sort_values[column] is not None]
    unknown = [row for row in by_key if row.sort_values[column] is None]

    def value(row: SortableT) -> SortValue:
        found = row.sort_values[column]
        assert found is not None
        return found

    # sorted() is stable with reverse=True too, so equal values keep key order.
    return sorted(known, key=value, reverse=reverse) + unknown


EXPANDED = "▾"
COLLAPSED = "▸"


def _total(values: Iterable[float]) -> float:
    return float(sum(values))


def _most(values: Iterable[float]) -> float:
    return max(values)


_NUMBERS: dict[str, Callable[[Iterable[float]], float]] = {
    "gpu_memory": _total,
    "sm": _most,
    "cpu": _total,
    "host_memory": _total,
}
"""How a group's column is made of its processes' values: memory and CPU add up, SM % is
the busiest process's. TIME is the longest running process's own cell (:func:`_longest`),
whatever TIME's format and sort value."""

_MANY = {"user": "users", "pod": "pods", "container": "containers", "job": "jobs"}
"""What a group's text cell says when its processes differ: "2 users" ("mixed" types)."""

_KEYS = tuple(column.key for column in COLUMNS)


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One line for the processes of a pod (or Slurm job, or container) in the grouped table.

    It has a process row's cells: the GPUs, the pod, memory and CPU summed, the highest SM %
    and the longest running time of its processes, and "3 processes in ml/llama-0" as its
    command. Its processes follow it when it is expanded.
    """

    holder: Holder
    members: tuple[ProcessRow, ...]
    """Its processes that pass the filters, by key."""
    expanded: bool
    cells: tuple[str, ...]
    sort_values: tuple[SortValue | None, ...]
    foreign: bool
    """Every process of it is in another PID namespace."""

    @property
    def key(self) -> RowKey:
        """Its first process's key: what ties among groups and processes are ordered by."""
        return self.members[0].key

    @property
    def key_text(self) -> str:
        """``pod:ml/llama-0``, never a process row's ``GPU:PID``."""
        return self.holder.key_text

    @property
    def command(self) -> str:
        """What the COMMAND cell says, whole."""
        return self.cells[_COMMAND]

    def cell(self, column_key: str) -> str:
        """The display text of one column."""
        return self.cells[COLUMN_INDEX[column_key]]


TableRow = ProcessRow | GroupRow
"""A line of the process table."""

_COMMAND = COLUMN_INDEX["command"]


def gpu_list(indices: Iterable[int]) -> str:
    """``"0"``, ``"0,2"``, ``"0-3,6"``: GPU indices with runs shortened."""
    runs: list[list[int]] = []
    for index in sorted(set(indices)):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ",".join(
        str(run[0]) if len(run) == 1 else f"{run[0]}{'-' if len(run) > 2 else ','}{run[-1]}"
        for run in runs
    )


GroupCache = dict[str, GroupRow]
"""The last tick's group lines by key text, for :func:`group_rows` to reuse."""


def _by_key(row: ProcessRow) -> RowKey:
    return row.key


def build_group(holder: Holder, members: Sequence[ProcessRow], expanded: bool) -> GroupRow:
    """The line for ``members`` (at least one), the processes of ``holder``."""
    rows = tuple(sorted(members, key=_by_key))
    # Column by column: one transposition instead of a pass over the rows per column.
    texts = tuple(zip(*(row.cells for row in rows), strict=True))
    values = tuple(zip(*(row.sort_values for row in rows), strict=True))
    cells: list[str] = []
    sort_values: list[SortValue | None] = []
    for index, key in enumerate(_KEYS):
        column_values = values[index]
        if key == "gpu" or key == "pid":
            known = [value for value in column_values if value is not None]
            sort_values.append(min(known) if known else None)
            if key == "pid":
                cells.append("")
            else:
                marker = EXPANDED if expanded else COLLAPSED
                cells.append(f"{marker} {gpu_list(row.gpu_index for row in rows)}")
        elif key == "time":
            longest = _longest(rows)
            cells.append(NA if longest is None else longest.cells[_TIME])
            sort_values.append(None if longest is None else longest.sort_values[_TIME])
        elif key in _NUMBERS:
            numbers = [float(value[0]) for value in column_values if value is not None]
            number = _NUMBERS[key](numbers) if numbers else None
            cells.append(_format_number(key, number))
            sort_values.append(_number(number))
        elif key == "command":
            count = len(rows)
            # The POD column says it is a pod; the namespace comes early, before any cut.
            where = holder.name if holder.kind == "pod" else holder.describe()
            text = f"{count} process{'' if count == 1 else 'es'} in {where}"
            cells.append(text)
            sort_values.append(_text(text))
        else:
            distinct = set(texts[index])
            if len(distinct) == 1:
                text = distinct.pop()
            else:
                text = "mixed" if key == "type" else f"{len(distinct)} {_MANY[key]}"
            cells.append(text)
            sort_values.append(_text(None if text == NA else text))
    foreign = all(row.foreign for row in rows)
    return GroupRow(holder, rows, expanded, tuple(cells), tuple(sort_values), foreign)


def _longest(rows: Iterable[ProcessRow]) -> ProcessRow | None:
    """The row TIME sorts first (descending: the longest running), None if none is known."""
    longest: ProcessRow | None = None
    best: SortValue | None = None
    for row in rows:
        value = row.sort_values[_TIME]
        if value is not None and (best is None or value > best):
            longest, best = row, value
    return longest


def _format_number(key: str, value: float | None) -> str:
    if key in ("sm", "cpu"):
        return fmt_percent(value)
    return fmt_bytes(None if value is None else int(value))


def _regroup(found: GroupRow, members: Sequence[ProcessRow]) -> GroupRow | None:
    """``found`` over ``members`` (by key), when they are its processes unchanged but for
    their running times; None when something else changed."""
    old = found.members
    if len(old) != len(members):
        return None
    for before, now in zip(old, members, strict=True):
        if before.gpu_index != now.gpu_index or (
            before.process is not now.process and before.process != now.process
        ):
            return None
    longest = _longest(members)
    text = NA if longest is None else longest.cells[_TIME]
    value = None if longest is None else longest.sort_values[_TIME]
    if text == found.cells[_TIME] and value == found.sort_values[_TIME]:
        cells, sort_values = found.cells, found.sort_values
    else:
        cells = (*found.cells[:_TIME], text, *found.cells[_TIME + 1 :])
        sort_values = (*found.sort_values[:_TIME], value, *found.sort_values[_TIME + 1 :])
    return GroupRow(found.holder, tuple(members), found.expanded, cells, sort_values, found.foreign)


def group_rows(
    rows: Iterable[ProcessRow],
    column: int,
    reverse: bool,
    expanded: Collection[str],
    cache: GroupCache | None = None,
) -> list[TableRow]:
    """One line per pod (job, container), sorted among the processes that have none, each
    expanded group (by key text, in ``expanded``) followed by its processes, sorted too.

    With ``cache`` (the caller's, kept from tick to tick), a group whose processes are the
    last tick's is not summed again: only its running time, which moves on its own, is.
    """
    loose: list[ProcessRow] = []
    members: dict[str, list[ProcessRow]] = {}
    holders: dict[str, Holder] = {}
    for row in rows:
        holder = row.holder
        if holder is None:
            loose.append(row)
            continue
        key = holder.key_text
        if key not in members:
            holders[key] = holder
            members[key] = []
        members[key].append(row)
    top: list[TableRow] = list(loose)
    fresh: GroupCache = {}
    for key, found in members.items():
        ordered = sorted(found, key=_by_key)
        before = None if cache is None else cache.get(key)
        group = None
        if before is not None and before.expanded == (key in expanded):
            group = _regroup(before, ordered)
        if group is None:
            group = build_group(holders[key], ordered, key in expanded)
        fresh[key] = group
        top.append(group)
    if cache is not None:
        cache.clear()
        cache.update(fresh)
    shown: list[TableRow] = []
    for item in sort_rows(top, column, reverse):
        shown.append(item)
        if isinstance(item, GroupRow) and item.expanded:
            shown.extend(sort_rows(item.members, column, reverse))
    return shown


def cursor_after(
    key: str | None, before: Mapping[str, TableRow], shown: Mapping[str, TableRow]
) -> str | None:
    """The row the cursor goes to when its row (``key``, of ``before``) is not among
    ``shown`` (in display order): a hidden process's group, a group's first process shown."""
    if key is None or key in shown:
        return key
    row = before.get(key)
    if isinstance(row, ProcessRow):
        holder = row.holder
        if holder is not None and holder.key_text in shown:
            return holder.key_text
    elif isinstance(row, GroupRow):
        members = {member.key_text for member in row.members}
        return next((found for found in shown if found in members), key)
    return key


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
