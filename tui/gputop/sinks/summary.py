"""`--once`: a compact, nvidia-smi-like text summary of one snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from gputop.model import GpuSample, MigDeviceSample, Owner, ProcessSample, Snapshot
from gputop.model.gpu_health import gpu_problems
from gputop.model.safe_text import terminal_safe
from gputop.model.units import NA, fmt_celsius, fmt_mib, fmt_percent, fmt_text, fmt_watts

_MIB = 1024 * 1024
_GIB = 1024 * _MIB


def format_summary(snapshot: Snapshot) -> str:
    """A compact text summary: one line per GPU, its MIG devices, then its processes."""
    # To the second, as the XML and -q text captures give it: a CSV log's milliseconds would
    # otherwise print as `.123000` on a line that is read at a glance.
    stamp = (
        snapshot.timestamp.isoformat(sep=" ", timespec="seconds")
        if snapshot.timestamp
        else "time n/a"
    )
    devices = [device for gpu in snapshot.gpus for device in gpu.mig_devices]
    # The whole name, however long ("NVIDIA RTX PRO 6000 Blackwell Server Edition"), and
    # memory in one unit for every row, said once in the header.
    name_width = max((len(fmt_text(gpu.name)) for gpu in snapshot.gpus), default=4)
    unit = _MemoryUnit.of(snapshot)
    lines = [
        f"{stamp}   driver {fmt_text(snapshot.driver_version)}   "
        f"CUDA {fmt_text(snapshot.cuda_version)}   {len(snapshot.gpus)} GPU(s)",
        f"{'GPU':>3}  {'Name':<{name_width}} {'Util':>5} {unit.title:>21} "
        f"{'Power / limit':>13} {'Temp':>5} {'Fan':>5} {'Perf':>4}",
    ]
    if snapshot.container is not None:
        lines.insert(1, f"This container: {snapshot.container.describe()}")
    # Ids as wide as the widest (GI 7 above GI 13), so the columns after them line up.
    widths = _MigWidths(
        gi=max((len(fmt_text(_id(d.gpu_instance_id))) for d in devices), default=1),
        ci=max((len(fmt_text(_id(d.compute_instance_id))) for d in devices), default=1),
        profile=max((len(_profile(d)) for d in devices), default=9),
    )
    for gpu in snapshot.gpus:
        lines.append(_gpu_line(gpu, name_width, unit))
        if gpu.holders:
            lines.append(f"{'':>3}  held by {_holders(gpu.holders)}")
        for device in gpu.mig_devices:
            line = _mig_line(device, widths, unit)
            lines.append(f"{line}  held by {_holders(device.holders)}" if device.holders else line)
    footnote = _derived_footnote(devices)
    if footnote:
        lines.append(footnote)
    lines.extend(health_lines(snapshot))
    processes = [(gpu.index, process) for gpu in snapshot.gpus for process in gpu.processes]
    if processes:
        # A MIG process's GPU reads "0:3/0" (GPU:GI/CI): the column is as wide as its widest.
        places = [_place(index, process) for index, process in processes]
        width = max(3, *(len(place) for place in places))
        lines.append("")
        lines.append(f"{'GPU':>{width}}  {'PID':>8} {'Type':<4} {'Memory':>9}  Process")
        lines.extend(
            _process_line(place, width, process)
            for place, (_, process) in zip(places, processes, strict=True)
        )
        others = [process for _, process in processes if process.foreign]
        if snapshot.container is not None and others:
            memory = sum(process.memory_used or 0 for process in others)
            lines.append(
                f"{len(others)} of these belong to other containers (their PIDs are the "
                f"host's), using {fmt_mib(memory).strip()} of GPU memory"
            )
    elif snapshot.gpus and all(gpu.reason("processes") for gpu in snapshot.gpus):
        lines.append("Processes: n/a (not in this recording)")
    else:
        lines.append("No processes.")
    # Names, owners and versions come from outside: no line may carry a control character
    # (a newline in a pod's name would forge a line). Names are made safe before they are
    # cut to their column (``fmt_text``), so that the columns line up.
    return "\n".join(map(terminal_safe, lines))


@dataclass(frozen=True)
class _MemoryUnit:
    """The one unit a summary's memory columns are in: GiB when any amount reaches one
    (two decimals, one where a GPU has 100 GiB or more), else MiB."""

    unit: str
    decimals: int

    @classmethod
    def of(cls, snapshot: Snapshot) -> _MemoryUnit:
        amounts = [
            value
            for gpu in snapshot.gpus
            for memory in (gpu.memory, *(device.memory for device in gpu.mig_devices))
            for value in (memory.used, memory.total)
            if value is not None
        ]
        if not amounts or max(amounts) < _GIB:
            return cls("MiB", 0)
        return cls("GiB", 1 if max(amounts) >= 100 * _GIB else 2)

    @property
    def title(self) -> str:
        return f"Memory used/total {self.unit}"

    def amount(self, value: int | None) -> str:
        if value is None:
            return NA
        if self.unit == "MiB":
            return "<1" if 0 < value < _MIB else str(value // _MIB)
        shown = f"{value / _GIB:.{self.decimals}f}"
        smallest = 10**-self.decimals
        # Held memory never reads as none: under the last decimal it is "<0.01".
        return f"<{smallest:.{self.decimals}f}" if value > 0 and float(shown) == 0 else shown

    def pair(self, used: int | None, total: int | None) -> str:
        return f"{self.amount(used)}/{self.amount(total)}"


def health_lines(snapshot: Snapshot) -> list[str]:
    """One line per GPU with a health problem (``gputop.model.gpu_health``), then one per
    health event the snapshot carries; nothing when all is well."""
    lines = []
    for gpu in snapshot.gpus:
        problems = gpu_problems(gpu)
        if problems:
            worst = problems[0].severity.value.upper()
            said = "; ".join(problem.text for problem in problems)
            lines.append(f"{gpu.index:>3}  {worst}: {said}")
    for event in snapshot.events:
        stamp = event.time.isoformat(sep=" ", timespec="seconds")
        lines.append(
            f"{event.gpu:>3}  {event.severity.value.upper()} {stamp} {event.title()}"
            f"{event.advice()}"
        )
    if lines:
        lines.insert(0, "Health:")
    return lines


def owner_text(owner: Owner | None) -> str | None:
    """``pod ml/trainer-0 (trainer)``, ``docker train-1``, ``Slurm job 4711``; None when
    nothing is known."""
    if owner is None or not owner.is_known:
        return None
    parts: list[str] = []
    if owner.pod is not None:
        where = f"{owner.namespace}/" if owner.namespace else ""
        parts.append(f"pod {where}{owner.pod}")
    elif owner.pod_uid is not None:
        parts.append(f"pod {owner.pod_uid}")
    if owner.container is not None:
        parts.append(
            f"({owner.container})" if parts else f"{owner.runtime or 'container'} {owner.container}"
        )
    elif owner.container_id is not None and owner.pod is None:
        parts.append(f"{owner.runtime or 'container'} {owner.container_id[:12]}")
    if owner.slurm_job is not None:
        parts.append(f"Slurm job {owner.slurm_job}")
    return " ".join(parts) or None


def _holders(holders: tuple[Owner, ...]) -> str:
    return ", ".join(owner_text(owner) or "?" for owner in holders)


def _gpu_line(gpu: GpuSample, width: int, unit: _MemoryUnit) -> str:
    name = fmt_text(gpu.name)
    if gpu.lost:
        return f"{gpu.index:>3}  {name:<{width}} GPU lost"
    memory = unit.pair(gpu.memory.used, gpu.memory.total)
    power = f"{fmt_watts(gpu.power.draw)} / {fmt_watts(gpu.power.limit)}"
    return (
        f"{gpu.index:>3}  {name:<{width}} {fmt_percent(gpu.utilization.gpu):>5} {memory:>21} "
        f"{power:>13} {fmt_celsius(gpu.temperature.gpu):>5} {fmt_percent(gpu.fan_speed):>5} "
        f"{fmt_text(gpu.performance_state):>4}"
    )


@dataclass(frozen=True)
class _MigWidths:
    """Widths of a snapshot's MIG id and profile columns."""

    gi: int
    ci: int
    profile: int


def _profile(device: MigDeviceSample) -> str:
    """``1g.20gb``, with ``*`` when it was worked out rather than read (see the footnote)."""
    derived = device.profile is not None and device.profile_derived
    return fmt_text(device.profile) + ("*" if derived else "")


def _derived_footnote(devices: list[MigDeviceSample]) -> str | None:
    """What the ``*`` after a profile means, when one is shown."""
    derived = [d for d in devices if d.profile is not None and d.profile_derived]
    if not derived:
        return None
    sources = []
    if any(d.profile_from_name for d in derived):
        sources.append("the MIG device's name")
    if not all(d.profile_from_name for d in derived):
        sources.append("its SM count and memory")
    return f"     * profile worked out from {' or '.join(sources)}, not read from the driver"


def _mig_line(device: MigDeviceSample, widths: _MigWidths, unit: _MemoryUnit) -> str:
    profile = _profile(device)
    gi = fmt_text(_id(device.gpu_instance_id))
    ci = fmt_text(_id(device.compute_instance_id))
    ids = f"GI {gi:>{widths.gi}} CI {ci:>{widths.ci}}"
    memory = unit.pair(device.memory.used, device.memory.total)  # the GPU lines' unit
    sms = "n/a" if device.sm_count is None else str(device.sm_count)
    return f"{'':>3}  MIG {ids} {profile:<{max(9, widths.profile)}} {sms:>3} SMs {memory:>21}"


def _place(index: int, process: ProcessSample) -> str:
    """The GPU a process runs on, with its MIG GPU and compute instance: ``0:3/0``."""
    where = str(index)
    if process.gpu_instance_id is not None:
        where += f":{process.gpu_instance_id}/{_id(process.compute_instance_id) or '-'}"
    return where


def _process_line(where: str, width: int, process: ProcessSample) -> str:
    line = (
        f"{where:>{width}}  {process.pid:>8} {fmt_text(process.type):<4} "
        f"{fmt_mib(process.memory_used):>9}  {fmt_text(process.command or process.name)}"
    )
    owner = owner_text(process.owner)
    return line if owner is None else f"{line}  [{owner}]"


def _id(value: int | None) -> str | None:
    return None if value is None else str(value)
