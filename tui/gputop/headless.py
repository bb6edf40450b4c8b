"""Output without the TUI: `--once` (a compact nvidia-smi-like summary) and `--json`."""

from __future__ import annotations

import contextlib
import json
import sys
from datetime import datetime, timedelta
from typing import Any

from gputop.errors import BadArguments, BadCapture
from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Snapshot
from gputop.model.units import (
    fmt_bytes,
    fmt_celsius,
    fmt_mib,
    fmt_percent,
    fmt_text,
    fmt_watts,
)
from gputop.options import Options
from gputop.sinks import open_sinks
from gputop.sources.recording import Recording

_TIME_FORMATS = ("%H:%M:%S", "%H:%M")


def format_summary(snapshot: Snapshot) -> str:
    """A compact text summary: one line per GPU, its MIG devices, then its processes."""
    stamp = snapshot.timestamp.isoformat(sep=" ") if snapshot.timestamp else "time n/a"
    lines = [
        f"{stamp}   driver {fmt_text(snapshot.driver_version)}   "
        f"CUDA {fmt_text(snapshot.cuda_version)}   {len(snapshot.gpus)} GPU(s)",
        f"{'GPU':>3}  {'Name':<28} {'Util':>5} {'Memory used / total':>21} "
        f"{'Power / limit':>13} {'Temp':>5} {'Fan':>5} {'Perf':>4}",
    ]
    for gpu in snapshot.gpus:
        lines.append(_gpu_line(gpu))
        lines.extend(_mig_line(device) for device in gpu.mig_devices)
    processes = [(gpu.index, process) for gpu in snapshot.gpus for process in gpu.processes]
    if processes:
        lines.append("")
        lines.append(f"{'GPU':>3}  {'PID':>8} {'Type':<4} {'Memory':>9}  Process")
        lines.extend(_process_line(index, process) for index, process in processes)
    else:
        lines.append("No processes.")
    return "\n".join(lines)


def _gpu_line(gpu: GpuSample) -> str:
    name = fmt_text(gpu.name)
    if gpu.lost:
        return f"{gpu.index:>3}  {name[:28]:<28} GPU lost"
    memory = f"{fmt_bytes(gpu.memory.used)} / {fmt_bytes(gpu.memory.total)}"
    power = f"{fmt_watts(gpu.power.draw)} / {fmt_watts(gpu.power.limit)}"
    return (
        f"{gpu.index:>3}  {name[:28]:<28} {fmt_percent(gpu.utilization.gpu):>5} {memory:>21} "
        f"{power:>13} {fmt_celsius(gpu.temperature.gpu):>5} {fmt_percent(gpu.fan_speed):>5} "
        f"{fmt_text(gpu.performance_state):>4}"
    )


def _mig_line(device: MigDeviceSample) -> str:
    profile = fmt_text(device.profile) + ("*" if device.profile_derived else "")
    ids = (
        f"GI {fmt_text(_id(device.gpu_instance_id))} CI {fmt_text(_id(device.compute_instance_id))}"
    )
    memory = f"{fmt_mib(device.memory.used)} / {fmt_mib(device.memory.total)}"
    sms = "n/a" if device.sm_count is None else str(device.sm_count)
    return f"{'':>3}  MIG {ids} {profile:<9} {sms:>3} SMs {memory:>21}"


def _process_line(index: int, process: ProcessSample) -> str:
    where = str(index)
    if process.gpu_instance_id is not None:
        where += f":{process.gpu_instance_id}/{_id(process.compute_instance_id) or '-'}"
    return (
        f"{where:>3}  {process.pid:>8} {fmt_text(process.type):<4} "
        f"{fmt_mib(process.memory_used):>9}  {fmt_text(process.command or process.name)}"
    )


def _id(value: int | None) -> str | None:
    return None if value is None else str(value)


def snapshot_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON interface (field names documented in the README). Unknown values are null."""
    return {
        "timestamp": snapshot.timestamp.isoformat() if snapshot.timestamp else None,
        "host": snapshot.host,
        "driver_version": snapshot.driver_version,
        "cuda_version": snapshot.cuda_version,
        "attached_gpus": snapshot.attached_gpus,
        "gpus": [_gpu_dict(gpu) for gpu in snapshot.gpus],
    }


def _gpu_dict(gpu: GpuSample) -> dict[str, Any]:
    return {
        "index": gpu.index,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "pci_bus_id": gpu.pci_bus_id,
        "serial": gpu.serial,
        "lost": gpu.lost,
        "utilization_gpu": gpu.utilization.gpu,
        "utilization_memory": gpu.utilization.memory,
        "utilization_encoder": gpu.utilization.encoder,
        "utilization_decoder": gpu.utilization.decoder,
        "memory_total": gpu.memory.total,
        "memory_used": gpu.memory.used,
        "memory_free": gpu.memory.free,
        "memory_reserved": gpu.memory.reserved,
        "power_draw": gpu.power.draw,
        "power_limit": gpu.power.limit,
        "temperature": gpu.temperature.gpu,
        "temperature_slowdown": gpu.temperature.slowdown,
        "temperature_shutdown": gpu.temperature.shutdown,
        "fan_speed": gpu.fan_speed,
        "performance_state": gpu.performance_state,
        "clocks_graphics": gpu.clocks.graphics,
        "clocks_sm": gpu.clocks.sm,
        "clocks_memory": gpu.clocks.memory,
        "clocks_video": gpu.clocks.video,
        "ecc_mode": gpu.ecc_mode,
        "ecc_errors_volatile_corrected": gpu.ecc_errors.volatile_corrected,
        "ecc_errors_volatile_uncorrected": gpu.ecc_errors.volatile_uncorrected,
        "throttle_reasons": None if gpu.throttle_reasons is None else list(gpu.throttle_reasons),
        "mig_mode": gpu.mig_mode,
        "mig_devices": [_mig_dict(device) for device in gpu.mig_devices],
        "processes": [_process_dict(process) for process in gpu.processes],
        "unavailable": {path: reason.value for path, reason in gpu.unavailable},
    }


def _mig_dict(device: MigDeviceSample) -> dict[str, Any]:
    return {
        "index": device.index,
        "gpu_instance_id": device.gpu_instance_id,
        "compute_instance_id": device.compute_instance_id,
        "profile": device.profile,
        "profile_derived": device.profile_derived,
        "uuid": device.uuid,
        "sm_count": device.sm_count,
        "memory_total": device.memory.total,
        "memory_used": device.memory.used,
    }


def _process_dict(process: ProcessSample) -> dict[str, Any]:
    return {
        "pid": process.pid,
        "type": process.type,
        "name": process.name,
        "memory_used": process.memory_used,
        "gpu_instance_id": process.gpu_instance_id,
        "compute_instance_id": process.compute_instance_id,
        "sm_utilization": process.sm_utilization,
        "user": process.user,
        "command": process.command,
        "foreign": process.foreign,
    }


def snapshot_json(snapshot: Snapshot, *, indent: int | None = 2) -> str:
    """The snapshot as a JSON document."""
    return json.dumps(snapshot_dict(snapshot), indent=indent)


def resolve_at(recording: Recording, at: str | None) -> int:
    """Turn `--at INDEX|TIME` into a document index of ``recording``.

    Raises:
        BadArguments: not an index in range, nor a time this recording can place.
    """
    if at is None:
        return 0
    text = at.strip()
    try:
        index = int(text)
    except ValueError:
        return _index_at_time(recording, text)
    count = len(recording)
    if not -count <= index < count:
        raise BadArguments(f"--at {index}: the recording has {count} snapshot(s), 0 to {count - 1}")
    return index % count


def _index_at_time(recording: Recording, text: str) -> int:
    moment = _parse_moment(recording, text)
    found = recording.index_at(moment)
    stamp = recording.timestamp(found)
    if stamp is None:
        raise BadArguments(
            f"--at {text!r}: no snapshot of this recording is stamped at or before that time; "
            "use an index"
        )
    if stamp > moment:
        # index_at falls back to the first document; a time before the recording began
        # names no snapshot, and printing the first one would pass it off as that time.
        raise BadArguments(f"--at {text!r}: the recording starts later, at {stamp.isoformat()}")
    return found


def _parse_moment(recording: Recording, text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        if moment.tzinfo is not None:
            # nvidia-smi stamps are the recording machine's local time, zone unknown.
            raise BadArguments(
                f"--at {text!r}: give the time without a zone, as the recording's local time"
            )
        return moment
    first = recording.timestamp(0)
    for layout in _TIME_FORMATS:
        try:
            clock = datetime.strptime(text, layout).time()
        except ValueError:
            continue
        if first is None:
            raise BadArguments("--at TIME: this recording has no timestamps; use an index")
        moment = datetime.combine(first.date(), clock)
        last = recording.timestamp(-1)
        if moment < first and last is not None and last.date() > first.date():
            moment += timedelta(days=1)  # the recording runs past midnight
        return moment
    raise BadArguments(
        f"--at {text!r}: expected an index, an ISO time (2024-09-18T21:34:12) or HH:MM:SS"
    )


def _select(snapshot: Snapshot, spec: str | None) -> Snapshot:
    if spec is None:
        return snapshot
    from gputop.sources.gpu_select import GpuSelection

    return GpuSelection.parse(spec).apply(snapshot)


def replay_headless(options: Options) -> int:
    """`--replay FILE` with `--once`, `--json` or `--count N`: print (and `--log`), then exit."""
    assert options.replay is not None
    # --record is refused with --replay, so the only sink here is the --log CSV.
    log = open_sinks(options)
    with contextlib.ExitStack() as cleanup:
        if log is not None:
            cleanup.callback(log.close)
        recording = cleanup.enter_context(Recording.open(options.replay))
        start = resolve_at(recording, options.at)
        count = options.count or 1
        for index in range(start, start + count):
            try:
                snapshot = recording.snapshot(index)
            except IndexError:
                break
            except BadCapture as error:
                if count == 1:
                    raise
                # Several asked for: skip a damaged one as a replay would, and say so.
                recording.warnings.append(f"{options.replay}: skipped {error}")
                continue
            snapshot = _select(snapshot, options.gpu)
            if log is not None:
                log.write(snapshot)
            if options.json:
                print(snapshot_json(snapshot, indent=None if count > 1 else 2))
            else:
                print(format_summary(snapshot))
        # Scan to the end so that a cut-off tail is reported even when printing the first.
        len(recording)
        for warning in recording.warnings:
            print(f"gputop: warning: {warning}", file=sys.stderr)
    return 0
