"""A kubelet's PodResources service, the real gRPC one, on a unix socket in a temp dir.

Serves ``v1.PodResourcesLister`` (the generated servicer of the kubelet's ``api.proto``) with
the answer a test hands it; ``delay`` makes ``List`` slow, to test the client's timeout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc

from gputop.sources.k8s import api_pb2, api_pb2_grpc

GPU = "nvidia.com/gpu"


def devices(resource: str, *ids: str, numa: int = 0) -> api_pb2.ContainerDevices:
    """One plugin's devices given to a container."""
    return api_pb2.ContainerDevices(
        resource_name=resource,
        device_ids=list(ids),
        topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=numa)]),
    )


def container(name: str, *given: api_pb2.ContainerDevices, cpus: tuple[int, ...] = ()) -> Any:
    return api_pb2.ContainerResources(name=name, devices=list(given), cpu_ids=list(cpus))


def pod(namespace: str, name: str, *containers: api_pb2.ContainerResources) -> Any:
    return api_pb2.PodResources(name=name, namespace=namespace, containers=list(containers))


class Lister(api_pb2_grpc.PodResourcesListerServicer):
    """The service: ``List`` answers ``pods``; every call is counted."""

    def __init__(self, pods: list[api_pb2.PodResources], delay: float = 0.0) -> None:
        self.pods = pods
        self.delay = delay
        self.calls = 0

    def List(
        self, request: api_pb2.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.ListPodResourcesResponse:
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        return api_pb2.ListPodResourcesResponse(pod_resources=self.pods)


@contextmanager
def kubelet(socket: Path, lister: Lister) -> Iterator[Lister]:
    """Serve ``lister`` on ``socket`` (a unix socket) until the block ends, also on failure."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_PodResourcesListerServicer_to_server(lister, server)  # type: ignore[no-untyped-call]
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    try:
        yield lister
    finally:
        server.stop(grace=None).wait(5)
