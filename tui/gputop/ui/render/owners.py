"""Who holds a process or a GPU, as the views name it.

The process table's POD, CONTAINER and JOB cells, the group a process is filed under when the
table groups by pod, the one pod (or Slurm job, or container) that holds a whole GPU or a
MIG device, and, when gputop runs inside a container, what it can say of that container.
Plain values, no Textual: the process table, the GPU panel and the MIG tree all read them
from here, so they name a pod the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from gputop.model import ContainerView, GpuSample, MigDeviceSample, Owner, Snapshot
from gputop.model.units import NA, fmt_bytes

ELLIPSIS = "…"

POD_WIDTH = 20
"""Most cells a POD cell takes; longer names are cut in the middle (``llama-70b-…b5-x2kq9``):
a Deployment's pods differ only at the end of their names, and start with what they run."""
CONTAINER_WIDTH = 16
JOB_WIDTH = 12
SHORT_ID = 12
"""Characters of a container id shown, as ``docker ps`` shows them."""
SHORT_UID = 8
"""Characters of a pod UID shown when the pod's name is not known."""


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by an ellipsis."""
    if len(text) <= width:
        return text
    if width <= len(ELLIPSIS):
        return ELLIPSIS[:width]
    tail = (width - len(ELLIPSIS)) // 2
    head = width - len(ELLIPSIS) - tail
    return text[:head] + ELLIPSIS + text[len(text) - tail :]


def pod_name(owner: Owner | None) -> str | None:
    """The pod's name, else a short form of its UID; None outside a pod."""
    if owner is None:
        return None
    if owner.pod is not None:
        return owner.pod
    if owner.pod_uid is not None:
        return f"uid {owner.pod_uid[:SHORT_UID]}"
    return None


def container_name(owner: Owner | None) -> str | None:
    """The container's name, else the start of its id; None outside a container."""
    if owner is None:
        return None
    if owner.container is not None:
        return owner.container
    if owner.container_id is not None:
        return owner.container_id[:SHORT_ID]
    return None


def pod_cell(owner: Owner | None) -> str:
    """The POD cell: the pod's name cut to ``POD_WIDTH``, or n/a."""
    name = pod_name(owner)
    return NA if name is None else cut_middle(name, POD_WIDTH)


def container_cell(owner: Owner | None) -> str:
    """The CONTAINER cell: the container's name (or short id) cut to ``CONTAINER_WIDTH``."""
    name = container_name(owner)
    return NA if name is None else cut_middle(name, CONTAINER_WIDTH)


def job_cell(owner: Owner | None) -> str:
    """The JOB cell: the Slurm job id, or n/a."""
    if owner is None or owner.slurm_job is None:
        return NA
    return cut_middle(owner.slurm_job, JOB_WIDTH)


def owner_words(owner: Owner | None) -> tuple[str, ...]:
    """What a filter may match of ``owner``: pod, namespace, container, its id, job."""
    if owner is None:
        return ()
    values = (
        owner.pod,
        owner.namespace,
        owner.pod_uid,
        owner.container,
        owner.container_id,
        owner.slurm_job,
    )
    return tuple(value for value in values if value)


@dataclass(frozen=True, slots=True)
class Holder:
    """What a process is grouped under: its pod, else its Slurm job, else its container."""

    kind: str
    """``"pod"``, ``"job"`` or ``"container"``."""
    ident: str
    """Unique within ``kind``: ``namespace/name`` (or the UID) of a pod, a job id, a
    container id (or name)."""
    name: str
    """As shown: the pod's ``namespace/name``, the job id, the container's name."""

    @property
    def key_text(self) -> str:
        """A row key no process row has (those are ``GPU:PID``)."""
        return f"{self.kind}:{self.ident}"

    def describe(self) -> str:
        """``"pod ml/llama-0"``, ``"Slurm job 4242"``, ``"container trainer"``."""
        label = {"pod": "pod", "job": "Slurm job", "container": "container"}[self.kind]
        return f"{label} {self.name}"


@lru_cache(maxsize=4096)
def holder_of(owner: Owner | None) -> Holder | None:
    """The pod, job or container ``owner`` names, None when it names none of them.

    A pod is known by namespace and name where they were found (the kubelet's PodResources
    answer names pods that way, so a GPU's holders and its processes' owners agree), else by
    UID. Cached: the same few owners come back on every process of every tick.
    """
    if owner is None:
        return None
    if owner.pod is not None:
        name = f"{owner.namespace}/{owner.pod}" if owner.namespace else owner.pod
        return Holder("pod", name, name)
    if owner.pod_uid is not None:
        return Holder("pod", owner.pod_uid, f"uid {owner.pod_uid[:SHORT_UID]}")
    if owner.slurm_job is not None:
        return Holder("job", owner.slurm_job, owner.slurm_job)
    if owner.container_id is not None or owner.container is not None:
        ident = owner.container_id or owner.container or ""
        return Holder("container", ident, container_name(owner) or ident)
    return None


def _distinct(holders: Iterable[Holder | None]) -> list[Holder]:
    seen: dict[str, Holder] = {}
    for holder in holders:
        if holder is not None:
            seen.setdefault(holder.key_text, holder)
    return sorted(seen.values(), key=lambda holder: (holder.kind, holder.name))


def gpu_holder(gpu: GpuSample) -> Holder | None:
    """The one pod (or job, or container) that holds ``gpu``, None when there is not one.

    The kubelet's answer (``gpu.holders``) when there is one, since it names a pod whose
    processes are hidden from here; else the owner every process on the GPU shares. A GPU
    with no processes, or one with a process of no pod, is held by no one in particular.
    """
    if gpu.holders:
        found = _distinct(holder_of(owner) for owner in gpu.holders)
        return found[0] if len(found) == 1 else None
    if not gpu.processes:
        return None
    holders = {holder_of(process.owner) for process in gpu.processes}
    if len(holders) != 1:
        return None
    return holders.pop()


def device_holders(device: MigDeviceSample, processes: Iterable[Owner | None]) -> list[Holder]:
    """The pods (jobs, containers) on a MIG device: the kubelet's, and its processes' owners,
    each once, by name."""
    return _distinct([*(holder_of(owner) for owner in device.holders), *map(holder_of, processes)])


def holders_text(holders: Sequence[Holder]) -> str:
    """``pod ml/a``, ``pods ml/a, ml/b``, or each described when they are of several kinds."""
    if len(holders) == 1:
        return holders[0].describe()
    if all(holder.kind == "pod" for holder in holders):
        return "pods " + ", ".join(holder.name for holder in holders)
    return ", ".join(holder.describe() for holder in holders)


def _device_labels(snapshot: Snapshot) -> dict[str, str]:
    """``GPU 0`` or ``MIG 0:1/0`` (GPU:GPU instance/compute instance) by UUID."""
    labels: dict[str, str] = {}
    for gpu in snapshot.gpus:
        if gpu.uuid:
            labels[gpu.uuid] = f"GPU {gpu.index}"
        for device in gpu.mig_devices:
            if device.uuid:
                gi = NA if device.gpu_instance_id is None else device.gpu_instance_id
                ci = NA if device.compute_instance_id is None else device.compute_instance_id
                labels[device.uuid] = f"MIG {gpu.index}:{gi}/{ci}"
    return labels


def _given(view: ContainerView, snapshot: Snapshot) -> str | None:
    """Which GPUs the container was given, named as the panels name them."""
    if view.variable is None:
        return None
    if view.all_gpus:
        return f"given all GPUs ({view.variable}=all)"
    if view.no_gpus:
        return f"given no GPU ({view.variable}={view.requested or '(empty)'})"
    labels = _device_labels(snapshot)
    given = ", ".join(labels.get(uuid, uuid) for uuid in view.given)
    text = f"given {given}" if given else f"{view.variable}={view.requested} names no GPU here"
    if view.unmatched and view.given:
        text += f" (not seen here: {', '.join(view.unmatched)})"
    return text


def container_line(snapshot: Snapshot | None) -> str | None:
    """What gputop inside a container says of it: the GPUs it was given, the processes of
    other containers on them with their GPU memory, and its pod; None outside one.

    In that order: the pod is the one thing its user knows already, so a cut takes it first.
    """
    view = None if snapshot is None else snapshot.container
    if snapshot is None or view is None:
        return None
    parts: list[str] = []
    given = _given(view, snapshot)
    if given is not None:
        parts.append(given)
    others = [p for gpu in snapshot.gpus for p in gpu.processes if p.foreign]
    if others:
        known = [p.memory_used for p in others if p.memory_used is not None]
        memory = fmt_bytes(sum(known)) if known else NA
        count = len(others)
        parts.append(f"other containers: {count} process{'' if count == 1 else 'es'}, {memory}")
    if view.pod is not None:
        where = f"pod {view.namespace}/{view.pod}" if view.namespace else f"pod {view.pod}"
    else:
        where = "in a container"
    if view.container is not None:
        where += f", container {view.container}"
    parts.append(where)
    line = " · ".join(parts)
    return line[0].upper() + line[1:]
