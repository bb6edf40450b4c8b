"""What gputop can tell about the container it runs in, when it runs in one.

Inside a container without the host's PID namespace (no ``hostPID``, no ``--pid=host``) the
driver still reports every process on the GPUs it was given, but the PIDs of other containers
name nothing here. What can be said is which GPUs this container was given (the variables the
device plugin and the NVIDIA container toolkit set), and which pod it is (the host name and
the downward API's variables); the processes that do not resolve (``ProcessSample.foreign``)
are then other containers'. Read once, at start: a container's environment does not change.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ContainerView:
    """This container, as seen from inside it. Every field is None (or empty) when unknown."""

    variable: str | None = None
    """The variable that says which GPUs were given: ``NVIDIA_VISIBLE_DEVICES``, ``NV_GPU``
    or ``CUDA_VISIBLE_DEVICES`` (the first one set, in that order); None when none is."""
    requested: str | None = None
    """That variable's value as set (``GPU-8f2a…,MIG-…``, ``0,3``, ``all``, ``none``)."""
    given: tuple[str, ...] = ()
    """The UUIDs (``GPU-…`` or ``MIG-…``) of what NVML enumerates that the variable names,
    in the variable's order."""
    unmatched: tuple[str, ...] = ()
    """Items of the variable that name nothing NVML enumerates here (renumbered indices
    excepted: inside a container the given GPUs are numbered from 0)."""
    all_gpus: bool = False
    """The variable says ``all``."""
    no_gpus: bool = False
    """The variable says ``none``, ``void`` or is empty: no GPU was asked for."""
    pod: str | None = None
    """The pod's name: ``POD_NAME`` (downward API) or, on Kubernetes, ``HOSTNAME``."""
    namespace: str | None = None
    """``POD_NAMESPACE`` (downward API), or the service account's namespace file."""
    node: str | None = None
    """``NODE_NAME`` (downward API ``spec.nodeName``)."""
    container: str | None = None
    """``CONTAINER_NAME`` when a pod spec sets it (the downward API cannot)."""
    kubernetes: bool = False
    """``KUBERNETES_SERVICE_HOST`` is set: the container is a pod's."""

    def describe(self) -> str:
        """One line for ``--once`` and the status: ``in pod ns/name; given GPU-…, MIG-…``."""
        parts: list[str] = []
        if self.pod is not None:
            where = f"{self.namespace}/" if self.namespace else ""
            parts.append(f"in pod {where}{self.pod}")
        else:
            parts.append("in a container")
        if self.container is not None:
            parts.append(
                f"({self.container})" if self.pod is None else f"container {self.container}"
            )
        if self.node is not None:
            parts.append(f"on node {self.node}")
        text = " ".join(parts)
        if self.variable is None:
            return text
        if self.all_gpus:
            given = f"given all GPUs ({self.variable}=all)"
        elif self.no_gpus:
            given = f"given no GPU ({self.variable}={self.requested or '(empty)'})"
        elif self.given:
            given = f"given {', '.join(self.given)} ({self.variable})"
        else:
            given = f"{self.variable}={self.requested} names no GPU NVML shows here"
        if self.unmatched and not self.no_gpus and self.given:
            given += f"; not found here: {', '.join(self.unmatched)}"
        return f"{text}; {given}"
