"""`--json`: a snapshot as the JSON document the README documents."""

from __future__ import annotations

import json
from typing import Any

from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Snapshot


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
        "profile_from_name": device.profile_from_name,
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
