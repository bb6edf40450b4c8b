"""A live source's snapshots with who holds each GPU: the kubelet's assignments (``holders``)
and, inside a container, what this container was given (``Snapshot.container``).

Wraps any :class:`~gputop.sources.base.Source`. The kubelet is asked on the watcher's own
thread; here only its last answer is read, so a poll costs nothing more when no pod holds a
GPU, and a GPU whose sample and holders did not change is last tick's object again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from gputop.model import ContainerView, GpuSample, MigDeviceSample, Snapshot
from gputop.sources.base import Source

if TYPE_CHECKING:
    # The client is loaded only with a watcher, on a Kubernetes node.
    from gputop.sources.k8s.podresources import Assignments, PodResourcesWatcher

ContainerReader = Callable[[Snapshot], "ContainerView | None"]
"""What this container was given, worked out once from the first snapshot's GPUs."""


class AttributedSource:
    """``inner``'s snapshots with ``holders`` and ``container`` filled in.

    Args:
        inner: the source (NVML).
        watcher: the kubelet's PodResources, when its socket is here.
        container: reads this container's view (None on a host, or to skip it).
    """

    def __init__(
        self,
        inner: Source,
        *,
        watcher: PodResourcesWatcher | None = None,
        container: ContainerReader | None = None,
    ) -> None:
        self._inner = inner
        self._watcher = watcher
        self._reader = container
        self._view: ContainerView | None = None
        self._first = True
        self._last: dict[int, tuple[GpuSample, Assignments | None, GpuSample]] = {}
        """GPU index -> (last input, the assignments applied, last output)."""

    @property
    def note(self) -> str | None:
        """Why the kubelet gave no answer, when that is worth saying (see the watcher)."""
        return None if self._watcher is None else self._watcher.note

    def poll(self) -> Snapshot:
        """The inner source's snapshot, attributed."""
        snapshot = self._inner.poll()
        if self._first and self._watcher is not None:
            # Deferred: the kubelet's client, only on a Kubernetes node (test_live_imports).
            from gputop.sources.k8s.podresources import TIMEOUT

            # The first snapshot (--once, --json) waits for the kubelet's first answer, at
            # most one call's timeout; later ones take whatever answer is there.
            self._watcher.wait_first(TIMEOUT)
        self._first = False
        if self._reader is not None and snapshot.gpus:
            self._view = self._reader(snapshot)
            self._reader = None  # a container's environment does not change
        given = self._watcher.current if self._watcher is not None else None
        gpus = tuple(self._attributed(gpu, given) for gpu in snapshot.gpus)
        changed = any(a is not b for a, b in zip(gpus, snapshot.gpus, strict=True))
        if not changed and self._view is None:
            return snapshot
        return dataclasses.replace(snapshot, gpus=gpus, container=self._view)

    def _attributed(self, gpu: GpuSample, given: Assignments | None) -> GpuSample:
        last = self._last.get(gpu.index)
        if last is not None and last[0] is gpu and last[1] is given:
            return last[2]
        out = with_holders(gpu, given)
        self._last[gpu.index] = (gpu, given, out)
        return out

    def close(self) -> None:
        """Stop the watcher, then close the inner source."""
        try:
            if self._watcher is not None:
                self._watcher.close()
        finally:
            self._inner.close()


def with_holders(gpu: GpuSample, given: Assignments | None) -> GpuSample:
    """``gpu`` with the pods the kubelet gave it and each of its MIG devices (None: no
    kubelet to ask, so none); ``gpu`` itself when that changes nothing."""
    nothing_given = given is None or not given.holders
    if nothing_given and not gpu.holders and not any(d.holders for d in gpu.mig_devices):
        return gpu
    if given is None:
        # Deferred: the kubelet's client, only on a Kubernetes node (test_live_imports).
        from gputop.sources.k8s.podresources import NO_ASSIGNMENTS

        given = NO_ASSIGNMENTS
    holders = given.of(gpu.uuid, str(gpu.index))
    devices = tuple(_device_holders(gpu, device, given) for device in gpu.mig_devices)
    same_devices = all(a is b for a, b in zip(devices, gpu.mig_devices, strict=True))
    if holders == gpu.holders and same_devices:
        return gpu
    return dataclasses.replace(gpu, holders=holders, mig_devices=devices)


def _device_holders(gpu: GpuSample, device: MigDeviceSample, given: Assignments) -> MigDeviceSample:
    by_index = None if device.index is None else f"{gpu.index}:{device.index}"
    holders = given.of(device.uuid, by_index)
    return device if holders == device.holders else dataclasses.replace(device, holders=holders)
