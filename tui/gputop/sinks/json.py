"""`--json`: a snapshot as the JSON document the README documents."""

from __future__ import annotations

import json
from typing import Any

from gputop.model import ContainerView, GpuSample, Owner, Snapshot
from gputop.model.fields import GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS, Field, Value
from gputop.model.gpu_health import gpu_problems
from gputop.model.gpu_state import sample_verdict
from gputop.model.health import HealthEvent


def snapshot_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON interface (field names documented in the README, each field's ``json`` in
    ``model/fields.py``). Unknown values are null."""
    return {
        "timestamp": snapshot.timestamp.isoformat() if snapshot.timestamp else None,
        "host": snapshot.host,
        "driver_version": snapshot.driver_version,
        "cuda_version": snapshot.cuda_version,
        "attached_gpus": snapshot.attached_gpus,
        "container": _container_dict(snapshot.container),
        "gpus": [_gpu_dict(gpu) for gpu in snapshot.gpus],
        "events": [event_dict(event) for event in snapshot.events],
    }


def event_dict(event: HealthEvent) -> dict[str, Any]:
    """A health event (``events``: those that arrived since the previous snapshot)."""
    return {
        "time": event.time.isoformat(),
        "gpu": event.gpu,
        "uuid": event.uuid,
        "kind": event.kind.value,
        "xid": event.xid,
        "severity": event.severity.value,
        "action": event.action.value,
        "description": event.description,
        "gpu_instance_id": event.gpu_instance_id,
        "compute_instance_id": event.compute_instance_id,
    }


def holder_dict(owner: Owner) -> dict[str, Any]:
    """A pod the kubelet gave a GPU or MIG device to (``holders``)."""
    return {
        "pod": owner.pod,
        "namespace": owner.namespace,
        "container": owner.container,
        "pod_uid": owner.pod_uid,
    }


def _container_dict(container: ContainerView | None) -> dict[str, Any] | None:
    """The container gputop runs in (live, inside one); null elsewhere."""
    if container is None:
        return None
    return {
        "pod": container.pod,
        "namespace": container.namespace,
        "node": container.node,
        "container": container.container,
        "kubernetes": container.kubernetes,
        "variable": container.variable,
        "requested": container.requested,
        "given": list(container.given),
        "unmatched": list(container.unmatched),
        "all_gpus": container.all_gpus,
        "no_gpus": container.no_gpus,
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
    out["mig_devices"] = [
        {
            **_fields_dict(MIG_FIELDS, device),
            "holders": [holder_dict(owner) for owner in device.holders],
        }
        for device in gpu.mig_devices
    ]
    out["processes"] = [_fields_dict(PROCESS_FIELDS, process) for process in gpu.processes]
    out["holders"] = [holder_dict(owner) for owner in gpu.holders]
    out["problems"] = [
        {"severity": problem.severity.value, "problem": problem.text}
        for problem in gpu_problems(gpu)
    ]
    out["unavailable"] = {path: reason.value for path, reason in gpu.unavailable}
    # The state as every view says it (``model.gpu_state``), in this one sample.
    verdict = sample_verdict(gpu)
    out["state"] = verdict.state.value
    out["at_power_cap"] = verdict.at_power_cap if gpu.throttle_reasons is not None else None
    return out


def snapshot_json(snapshot: Snapshot, *, indent: int | None = 2) -> str:
    """The snapshot as a JSON document."""
    return json.dumps(snapshot_dict(snapshot), indent=indent)
