"""`--json`: a snapshot as the JSON document the README documents."""

from __future__ import annotations

import json
from typing import Any

from gputop.model import GpuSample, Snapshot
from gputop.model.fields import GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS, Field, Value


def snapshot_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON interface (field names documented in the README, each field's ``json`` in
    ``model/fields.py``). Unknown values are null."""
    return {
        "timestamp": snapshot.timestamp.isoformat() if snapshot.timestamp else None,
        "host": snapshot.host,
        "driver_version": snapshot.driver_version,
        "cuda_version": snapshot.cuda_version,
        "attached_gpus": snapshot.attached_gpus,
        "gpus": [_gpu_dict(gpu) for gpu in snapshot.gpus],
    }


def _json_value(field: Field, obj: object) -> Any:
    value = field.read(obj)
    if field.value is Value.NAMES and value is not None:
        return list(value)
    return value


def _fields_dict(fields: tuple[Field, ...], obj: object) -> dict[str, Any]:
    """The table's fields that ``--json`` carries, under their JSON names, in table order."""
    return {field.json: _json_value(field, obj) for field in fields if field.json is not None}


def _gpu_dict(gpu: GpuSample) -> dict[str, Any]:
    out = _fields_dict(GPU_FIELDS, gpu)
    out["mig_devices"] = [_fields_dict(MIG_FIELDS, device) for device in gpu.mig_devices]
    out["processes"] = [_fields_dict(PROCESS_FIELDS, process) for process in gpu.processes]
    out["unavailable"] = {path: reason.value for path, reason in gpu.unavailable}
    return out


def snapshot_json(snapshot: Snapshot, *, indent: int | None = 2) -> str:
    """The snapshot as a JSON document."""
    return json.dumps(snapshot_dict(snapshot), indent=indent)
