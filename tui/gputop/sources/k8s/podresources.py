"""Which pod the kubelet gave each GPU and MIG device: its PodResources API.

The kubelet serves ``v1.PodResourcesLister`` over gRPC on a unix socket
(``/var/lib/kubelet/pod-resources/kubelet.sock``, readable by root: a DaemonSet mounts the
directory). ``List`` names, per pod and container, the device ids each device plugin handed
out. For NVIDIA's plugin the resource is ``nvidia.com/gpu`` (``nvidia.com/gpu.shared`` when
time-sharing is renamed) or ``nvidia.com/mig-<profile>``, and a device id is a GPU UUID, a
``MIG-`` UUID, a time-sharing replica ``<uuid>::<n>``, or with ``deviceIDStrategy=index`` an
NVML index (``<gpu>:<mig>`` for MIG devices). That names the pod of a GPU even when none of
its processes can be seen (another PID namespace, or nothing running yet).

The call is made on a daemon thread every ``REFRESH`` seconds with a ``TIMEOUT``, never on
the polling thread: a hung kubelet leaves the last answer in place. No grpcio, no socket, or
a refused call: no holders, and a one-line ``note`` saying why where it helps.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputop.model import Owner
from gputop.sources.k8s.kubelet import DEFAULT_SOCKET, SOCKET_VARIABLE, kubelet_socket, socket_path

if TYPE_CHECKING:
    from gputop.sources.k8s import api_pb2

__all__ = ["DEFAULT_SOCKET", "SOCKET_VARIABLE", "socket_path"]
"""Where the socket is (``k8s.kubelet``), also named from here."""

REFRESH = 5.0
"""Seconds between two ``List`` calls: pods come and go in seconds, not every tick."""
TIMEOUT = 2.0
"""Seconds one ``List`` may take."""

GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/mig-")
"""Resource names (prefixes) of NVIDIA's device plugin."""

MISSING_GRPC = (
    "the kubelet's PodResources socket is here but grpcio is not installed: "
    "`pip install gputop-tui[k8s]` to name the pod of each GPU"
)


def is_gpu_resource(name: str) -> bool:
    """``nvidia.com/gpu``, ``nvidia.com/gpu.shared``, ``nvidia.com/mig-1g.10gb``, ..."""
    return name.startswith(GPU_RESOURCES)


def device_key(device_id: str) -> str:
    """The device a plugin's device id names: a time-sharing replica ``<id>::<n>`` is a
    share of ``<id>``."""
    return device_id.split("::", 1)[0]


@dataclass(frozen=True, slots=True)
class Assignments:
    """Who holds each device: device key (GPU or MIG UUID, or an index) -> pods' containers."""

    holders: Mapping[str, tuple[Owner, ...]]

    def of(self, *keys: str | None) -> tuple[Owner, ...]:
        """The holders of a device known by any of ``keys`` (its UUID, its index), each
        holder once, in the kubelet's order."""
        found: list[Owner] = []
        for key in keys:
            if key is None:
                continue
            for owner in self.holders.get(key, ()):
                if owner not in found:
                    found.append(owner)
        return tuple(found)


NO_ASSIGNMENTS = Assignments({})


def assignments(response: api_pb2.ListPodResourcesResponse) -> Assignments:
    """The GPU and MIG devices of a ``List`` answer, by device."""
    holders: dict[str, list[Owner]] = {}
    for pod in response.pod_resources:
        for container in pod.containers:
            owner = Owner(
                container=container.name or None,
                pod=pod.name or None,
                namespace=pod.namespace or None,
            )
            for devices in container.devices:
                if not is_gpu_resource(devices.resource_name):
                    continue
                for device_id in devices.device_ids:
                    listed = holders.setdefault(device_key(device_id), [])
                    if owner not in listed:  # two replicas of one GPU in one container
                        listed.append(owner)
    return Assignments({key: tuple(owners) for key, owners in holders.items()})


Lister = Callable[[float], "api_pb2.ListPodResourcesResponse"]
"""Calls ``List`` with a timeout in seconds."""


def grpc_lister(socket: Path) -> tuple[Lister, Callable[[], None]]:
    """A ``List`` over gRPC on ``socket``, and what closes its channel.

    Raises:
        ImportError: grpcio (or protobuf) is not installed.
    """
    # Deferred: grpcio is optional (the k8s extra): its ImportError is the caller's to say.
    import grpc

    # Deferred: the generated stubs import grpc and protobuf (optional, as above).
    from gputop.sources.k8s import api_pb2, api_pb2_grpc

    channel = grpc.insecure_channel(f"unix://{os.fspath(socket)}")
    # The generated stub is untyped (grpcio-tools writes no annotations).
    stub: Any = api_pb2_grpc.PodResourcesListerStub(channel)  # type: ignore[no-untyped-call]

    def call(timeout: float) -> api_pb2.ListPodResourcesResponse:
        response: api_pb2.ListPodResourcesResponse = stub.List(
            api_pb2.ListPodResourcesRequest(), timeout=timeout
        )
        return response

    return call, channel.close


class PodResourcesWatcher:
    """The latest :class:`Assignments`, refreshed on a daemon thread.

    Args:
        socket: the kubelet's PodResources socket.
        refresh: seconds between calls.
        timeout: seconds one call may take.
        lister: makes the call (tests, and ``grpc_lister`` by default).
    """

    def __init__(
        self,
        socket: Path,
        *,
        refresh: float = REFRESH,
        timeout: float = TIMEOUT,
        lister: Callable[[Path], tuple[Lister, Callable[[], None]]] = grpc_lister,
    ) -> None:
        self._socket = socket
        self._refresh = refresh
        self._timeout = timeout
        self._make = lister
        self._current = NO_ASSIGNMENTS
        self._note: str | None = None
        self._stop = threading.Event()
        self._answered = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gputop-podresources", daemon=True)
        self._thread.start()

    @property
    def current(self) -> Assignments:
        """The last answer (none before the first, or when the kubelet cannot be asked)."""
        return self._current

    @property
    def note(self) -> str | None:
        """Why there is no answer, when saying so helps (the socket is there, the call fails)."""
        return self._note

    def wait_first(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the first answer (or failure); True if it came."""
        return self._answered.wait(timeout)

    def close(self) -> None:
        """Stop refreshing (the thread ends within one call's timeout)."""
        self._stop.set()

    def _run(self) -> None:
        try:
            call, close = self._make(self._socket)
        except ImportError:
            self._note = MISSING_GRPC
            self._answered.set()
            return
        try:
            while not self._stop.is_set():
                self._once(call)
                self._answered.set()
                self._stop.wait(self._refresh)
        finally:
            close()

    def _once(self, call: Lister) -> None:
        try:
            response = call(self._timeout)
        except Exception as error:  # grpc.RpcError and anything a broken peer may cause
            self._note = f"kubelet PodResources ({self._socket}): {_describe(error)}"
            self._current = NO_ASSIGNMENTS
            return
        self._note = None
        self._current = assignments(response)


def _describe(error: BaseException) -> str:
    details = getattr(error, "details", None)
    if callable(details):
        text = details()
        if text:
            return str(text).splitlines()[0]
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def open_watcher(environ: Mapping[str, str]) -> PodResourcesWatcher | None:
    """A watcher when the kubelet's socket exists (quietly None otherwise: not a node, or
    not mounted in)."""
    socket = kubelet_socket(environ)
    return None if socket is None else PodResourcesWatcher(socket)
