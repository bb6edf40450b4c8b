"""What the container gputop runs in was given, read from inside it (no hostPID needed).

The NVIDIA device plugin and container toolkit hand a container its GPUs through
``NVIDIA_VISIBLE_DEVICES`` (GPU UUIDs, ``MIG-`` UUIDs, host indices, ``all``, ``none`` or
``void``); Docker's ``--gpus`` and the old ``nvidia-docker`` read ``NV_GPU``; a batch system
may set ``CUDA_VISIBLE_DEVICES``. Those are matched to what NVML enumerates here. The pod is
named by the downward API's variables (``POD_NAME``, ``POD_NAMESPACE``, ``NODE_NAME``, when
the pod spec sets them) or, on Kubernetes, by ``HOSTNAME`` (a pod's host name is its name
unless the spec sets another), and the namespace by the service account's namespace file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gputop.model import ContainerView, Snapshot

DEVICE_VARIABLES = ("NVIDIA_VISIBLE_DEVICES", "NV_GPU", "CUDA_VISIBLE_DEVICES")
"""Read in this order: the first one set says what this container was given."""

SERVICE_ACCOUNT_NAMESPACE = "var/run/secrets/kubernetes.io/serviceaccount/namespace"

_POD_NAME = ("POD_NAME", "MY_POD_NAME", "K8S_POD_NAME", "KUBERNETES_POD_NAME")
_POD_NAMESPACE = ("POD_NAMESPACE", "MY_POD_NAMESPACE", "K8S_NAMESPACE", "KUBERNETES_NAMESPACE")
_NODE_NAME = ("NODE_NAME", "MY_NODE_NAME", "K8S_NODE_NAME", "KUBERNETES_NODE_NAME")
_CONTAINER_NAME = ("CONTAINER_NAME", "K8S_CONTAINER_NAME")
POD_VARIABLES = (*_POD_NAME, *_POD_NAMESPACE, *_NODE_NAME, *_CONTAINER_NAME)
"""Every variable read for the pod's names."""
_CONTAINER_MARKERS = (".dockerenv", "run/.containerenv")
"""Files Docker and podman put in every container."""


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def in_container(environ: Mapping[str, str], root: Path = Path("/")) -> bool:
    """Is this process in a container? A pod (``KUBERNETES_SERVICE_HOST``), podman's or
    systemd's ``container`` variable, or Docker's and podman's marker files."""
    if environ.get("KUBERNETES_SERVICE_HOST") or environ.get("container"):
        return True
    return any(os.path.exists(os.path.join(root, marker)) for marker in _CONTAINER_MARKERS)


def _read_namespace(root: Path) -> str | None:
    try:
        with open(os.path.join(root, SERVICE_ACCOUNT_NAMESPACE), encoding="utf-8") as file:
            text = file.read(256).strip()
    except (OSError, ValueError):
        return None
    return text or None


def match_devices(
    variable: str, value: str, snapshot: Snapshot
) -> tuple[tuple[str, ...], tuple[str, ...], bool, bool]:
    """(UUIDs given, items not found, all, none) for ``variable=value`` against the GPUs
    NVML enumerates in ``snapshot``.

    UUIDs (and prefixes of them, as nvidia-smi takes) match a GPU or a MIG device. Host
    indices are renumbered from 0 in a container that was given them: when there are as many
    as GPUs here, the n-th smallest is the n-th GPU here (both count in PCI bus order);
    otherwise an index names the GPU with that index here.
    """
    text = value.strip()
    lowered = text.lower()
    uuids = [gpu.uuid for gpu in snapshot.gpus if gpu.uuid]
    if lowered == "all":
        return tuple(uuids), (), True, False
    if lowered in ("", "none", "void", "nodevfiles"):
        return (), (), False, True
    items = [item.strip() for item in text.split(",") if item.strip()]
    devices = {
        device.uuid.lower(): device.uuid
        for gpu in snapshot.gpus
        for device in gpu.mig_devices
        if device.uuid
    }
    devices.update({uuid.lower(): uuid for uuid in uuids})
    indices = [item for item in items if item.isdigit()]
    renumbered = len(indices) == len(items) == len(snapshot.gpus) and variable != (
        "CUDA_VISIBLE_DEVICES"
    )
    order = {item: n for n, item in enumerate(sorted(indices, key=int))}
    given: list[str] = []
    unmatched: list[str] = []
    for item in items:
        found: str | None = None
        if item.isdigit():
            position = order[item] if renumbered else int(item)
            gpu = snapshot.gpu(position)
            found = gpu.uuid if gpu is not None else None
        else:
            key = item.lower()
            found = devices.get(key)
            if found is None:
                prefixed = [uuid for lower, uuid in devices.items() if lower.startswith(key)]
                found = prefixed[0] if len(prefixed) == 1 else None
        if found is None:
            unmatched.append(item)
        elif found not in given:
            given.append(found)
    return tuple(given), tuple(unmatched), False, False


def read_container_view(
    snapshot: Snapshot, environ: Mapping[str, str], root: Path = Path("/")
) -> ContainerView | None:
    """This container's view, matched to ``snapshot``'s GPUs; None when not in a container,
    or in one that neither is a pod nor was given GPUs by a variable (nothing to say)."""
    if not in_container(environ, root):
        return None
    kubernetes = bool(environ.get("KUBERNETES_SERVICE_HOST"))
    if not kubernetes and not any(name in environ for name in DEVICE_VARIABLES):
        return None
    pod = _first(environ, _POD_NAME)
    if pod is None and kubernetes:
        pod = environ.get("HOSTNAME") or None
    namespace = _first(environ, _POD_NAMESPACE)
    if namespace is None and kubernetes:
        namespace = _read_namespace(root)
    variable = next((name for name in DEVICE_VARIABLES if name in environ), None)
    given: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()
    all_gpus = no_gpus = False
    requested = None
    if variable is not None:
        requested = environ[variable]
        given, unmatched, all_gpus, no_gpus = match_devices(variable, requested, snapshot)
    return ContainerView(
        variable=variable,
        requested=requested,
        given=given,
        unmatched=unmatched,
        all_gpus=all_gpus,
        no_gpus=no_gpus,
        pod=pod,
        namespace=namespace,
        node=_first(environ, _NODE_NAME),
        container=_first(environ, _CONTAINER_NAME),
        kubernetes=kubernetes,
    )
