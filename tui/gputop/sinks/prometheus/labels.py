"""Each series' labels, in dcgm-exporter's order.

A GPU's series carry ``gpu``, ``UUID``, ``pci_bus_id``, ``device`` (``nvidia0``),
``modelName``, then for a MIG instance ``GPU_I_PROFILE`` and ``GPU_I_ID``, then ``Hostname``
and ``DCGM_FI_DRIVER_VERSION``, then what the series adds (a process, a clock event), then
the Kubernetes ``container``, ``namespace`` and ``pod`` (as dcgm-exporter's template renders
them: labels, then attributes in sorted order). A label with no value is left out, as
Prometheus reads an empty label as an absent one.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from gputop.model import GpuSample, ProcessSample
from gputop.model.owner import Owner
from gputop.sinks.prometheus import dcgm

Labels = dict[str, str]

MAX_COMMAND = 512
"""Characters of a command line kept in a label: a label is for telling processes apart,
and a very long one costs every scrape and the server's index."""


class ProcessDetail(enum.Enum):
    """``--export-processes``: what per-process series say."""

    NONE = "none"
    """No per-process series."""
    BASIC = "basic"
    """PID and process name."""
    FULL = "full"
    """PID, process name, user and command line."""


def gpu_labels(gpu: GpuSample, host: str | None, driver: str | None) -> Labels:
    """The labels every series of ``gpu`` starts with (no MIG, no owner)."""
    labels: Labels = {dcgm.GPU: str(gpu.index)}
    if gpu.uuid:
        labels[dcgm.UUID] = gpu.uuid
    if gpu.pci_bus_id:
        labels[dcgm.PCI_BUS_ID] = gpu.pci_bus_id
    labels[dcgm.DEVICE] = f"nvidia{gpu.index}"
    if gpu.name:
        labels[dcgm.MODEL_NAME] = gpu.name
    return _tail(labels, host, driver)


def mig_labels(
    gpu: GpuSample, profile: str | None, instance: int, host: str | None, driver: str | None
) -> Labels:
    """The labels of a MIG GPU instance: its parent's, with ``GPU_I_PROFILE`` and
    ``GPU_I_ID`` before ``Hostname`` as dcgm-exporter's template puts them."""
    base = gpu_labels(gpu, None, None)
    if profile:
        base[dcgm.GPU_I_PROFILE] = profile
    base[dcgm.GPU_I_ID] = str(instance)
    return _tail(base, host, driver)


def _tail(labels: Labels, host: str | None, driver: str | None) -> Labels:
    if host:
        labels[dcgm.HOSTNAME] = host
    if driver:
        labels[dcgm.DRIVER_VERSION] = driver
    return labels


def owner_labels(owner: Owner | None) -> Labels:
    """``container``, ``namespace``, ``pod`` of a pod's process (sorted, as dcgm-exporter
    renders its attributes); nothing for a process outside Kubernetes."""
    if owner is None or owner.pod is None:
        return {}
    labels: Labels = {}
    if owner.container:
        labels[dcgm.CONTAINER] = owner.container
    if owner.namespace:
        labels[dcgm.NAMESPACE] = owner.namespace
    labels[dcgm.POD] = owner.pod
    return labels


def one_pod(holders: Iterable[Owner], processes: Iterable[ProcessSample]) -> Labels:
    """The pod a GPU (or MIG instance) belongs to, for its own series: the one pod the
    kubelet assigned it to, else the one pod every process on it belongs to; nothing when
    none, or several, are known. ``container`` only when it too is one."""
    pods = [owner for owner in holders if owner.pod is not None]
    if not pods:
        owners = [process.owner for process in processes]
        if not owners or any(owner is None or owner.pod is None for owner in owners):
            return {}
        pods = [owner for owner in owners if owner is not None]
    if len({(owner.namespace, owner.pod) for owner in pods}) != 1:
        return {}
    labels = owner_labels(pods[0])
    if len({owner.container for owner in pods}) != 1:
        labels.pop(dcgm.CONTAINER, None)
    return labels


_POD_LABELS = (dcgm.CONTAINER, dcgm.NAMESPACE, dcgm.POD)


def with_labels(base: Labels, extra: Labels) -> Labels:
    """``base`` with ``extra`` added before its pod labels, which dcgm-exporter renders
    last (they are attributes; the others, labels)."""
    if not any(name in base for name in _POD_LABELS):
        return {**base, **extra}
    core = {k: v for k, v in base.items() if k not in _POD_LABELS}
    pods = {k: v for k, v in base.items() if k in _POD_LABELS}
    return {**core, **extra, **pods}


def process_labels(base: Labels, process: ProcessSample, detail: ProcessDetail) -> Labels:
    """A process's series labels: its device's (``base``), then ``pid``, ``process_name`` and
    (``full`` only) ``user`` and ``command``, then its pod's."""
    # The device's own pod labels go: the process says its own below.
    labels = {k: v for k, v in base.items() if k not in _POD_LABELS}
    labels["pid"] = str(process.pid)
    if process.name:
        labels["process_name"] = process.name
    if detail is ProcessDetail.FULL:
        if process.user:
            labels["user"] = process.user
        if process.command:
            command = process.command
            labels["command"] = command if len(command) <= MAX_COMMAND else command[:MAX_COMMAND]
    labels.update(owner_labels(process.owner))
    return labels
