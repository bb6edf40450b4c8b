"""`--once`: a compact, nvidia-smi-like text summary of one snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Snapshot
from gputop.model.units import (
    fmt_celsius,
    fmt_memory_pair,
    fmt_mib,
    fmt_percent,
    fmt_text,
    fmt_used_of,
    fmt_watts,
)


def format_summary(snapshot: Snapshot) -> str:
    """A compact text summary: one line per GPU, its MIG devices, then its processes."""
    stamp = snapshot.timestamp.isoformat(sep=" ") if snapshot.timestamp else "time n/a"
    lines = [
        f"{stamp}   driver {fmt_text(snapshot.driver_version)}   "
        f"CUDA {fmt_text(snapshot.cuda_version)}   {len(snapshot.gpus)} GPU(s)",
        f"{'GPU':>3}  {'Name':<28} {'Util':>5} {'Memory used / total':>21} "
        f"{'Power / limit':>13} {'Temp':>5} {'Fan':>5} {'Perf':>4}",
    ]
    devices = [device for gpu in snapshot.gpus for device in gpu.mig_devices]
    # Ids as wide as the widest (GI 7 above GI 13), so the columns after them line up.
    widths = _MigWidths(
        gi=max((len(fmt_text(_id(d.gpu_instance_id))) for d in devices), default=1),
        ci=max((len(fmt_text(_id(d.compute_instance_id))) for d in devices), default=1),
        profile=max((len(_profile(d)) for d in devices), default=9),
    )
    for gpu in snapshot.gpus:
        lines.append(_gpu_line(gpu))
        lines.extend(_mig_line(device, widths) for device in gpu.mig_devices)
    footnote = _derived_footnote(devices)
    if footnote:
        lines.append(footnote)
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
    else:
        lines.append("No processes.")
    return "\n".join(lines)


def _gpu_line(gpu: GpuSample) -> str:
    name = fmt_text(gpu.name)
    if gpu.lost:
        return f"{gpu.index:>3}  {name[:28]:<28} GPU lost"
    used, total = gpu.memory.used, gpu.memory.total
    memory = fmt_memory_pair(used, total)  # one unit, as the TUI shows it
    power = f"{fmt_watts(gpu.power.draw)} / {fmt_watts(gpu.power.limit)}"
    return (
        f"{gpu.index:>3}  {name[:28]:<28} {fmt_percent(gpu.utilization.gpu):>5} {memory:>21} "
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


def _mig_line(device: MigDeviceSample, widths: _MigWidths) -> str:
    profile = _profile(device)
    gi = fmt_text(_id(device.gpu_instance_id))
    ci = fmt_text(_id(device.compute_instance_id))
    ids = f"GI {gi:>{widths.gi}} CI {ci:>{widths.ci}}"
    used, total = device.memory.used, device.memory.total
    if used is not None and total is not None:
        memory = fmt_used_of(used, total)  # the GPU line's unit
    else:
        memory = f"{fmt_mib(used)} / {fmt_mib(total)}"
    sms = "n/a" if device.sm_count is None else str(device.sm_count)
    return f"{'':>3}  MIG {ids} {profile:<{max(9, widths.profile)}} {sms:>3} SMs {memory:>21}"


def _place(index: int, process: ProcessSample) -> str:
    """The GPU a process runs on, with its MIG GPU and compute instance: ``0:3/0``."""
    where = str(index)
    if process.gpu_instance_id is not None:
        where += f":{process.gpu_instance_id}/{_id(process.compute_instance_id) or '-'}"
    return where


def _process_line(where: str, width: int, process: ProcessSample) -> str:
    return (
        f"{where:>{width}}  {process.pid:>8} {fmt_text(process.type):<4} "
        f"{fmt_mib(process.memory_used):>9}  {fmt_text(process.command or process.name)}"
    )


def _id(value: int | None) -> str | None:
    return None if value is None else str(value)
