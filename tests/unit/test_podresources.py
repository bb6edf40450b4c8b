"""GPU -> pod from the kubelet's PodResources API, against the real gRPC service served on a
unix socket (``support.fake_kubelet``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from gputop.model import Owner, Snapshot
from gputop.sources.host.attribution import AttributedSource, with_holders
from gputop.sources.k8s.podresources import (
    MISSING_GRPC,
    SOCKET_VARIABLE,
    PodResourcesWatcher,
    open_watcher,
)
from support.fake_kubelet import GPU, Lister, container, devices, kubelet, pod

GPU0 = "GPU-1a2b3c4d-0000-4000-8000-000000000000"
GPU1 = "GPU-1a2b3c4d-0000-4000-8000-000000000001"
MIG0 = "MIG-0200c0de-5eed-5a1e-8000-000000000000"
MIG1 = "MIG-0201c0de-5eed-5a1e-8000-000000000001"

NODE = [
    # A training pod with a whole GPU, beside a sidecar with none.
    pod(
        "ml",
        "trainer-0",
        container("trainer", devices(GPU, GPU0), cpus=(2, 3)),
        container("log-shipper"),
    ),
    # Two notebooks time-sharing GPU 1 (the plugin's replicas of it).
    pod("lab", "notebook-a", container("jupyter", devices("nvidia.com/gpu.shared", f"{GPU1}::0"))),
    pod(
        "lab",
        "notebook-b",
        container("jupyter", devices("nvidia.com/gpu.shared", f"{GPU1}::3", f"{GPU1}::4")),
    ),
    # A MIG slice, and something that is no GPU at all.
    pod("research", "infer-0", container("server", devices("nvidia.com/mig-1g.10gb", MIG1))),
    pod("net", "sriov-0", container("app", devices("intel.com/sriov", "0000:3b:02.1"))),
]


def wait_for(watcher: PodResourcesWatcher) -> None:
    assert watcher.wait_first(10)


def test_list_names_the_pods_of_gpus_replicas_and_mig_devices(tmp_path: Path) -> None:
    socket = tmp_path / "kubelet.sock"
    with kubelet(socket, Lister(NODE)):
        watcher = PodResourcesWatcher(socket, refresh=60)
        try:
            wait_for(watcher)
            given = watcher.current
        finally:
            watcher.close()
    assert watcher.note is None
    assert given.of(GPU0) == (Owner(container="trainer", pod="trainer-0", namespace="ml"),)
    # Replicas are shares of the one GPU; a pod with two replicas is one holder.
    assert [owner.pod for owner in given.of(GPU1)] == ["notebook-a", "notebook-b"]
    assert given.of(MIG1) == (Owner(container="server", pod="infer-0", namespace="research"),)
    assert given.of(MIG0) == ()
    assert "0000:3b:02.1" not in given.holders


def test_the_holders_land_on_gpus_and_mig_devices(tmp_path: Path) -> None:
    from fakes.nvml_scenarios import gpu_sample, mig_gpu, snapshot

    box = snapshot(gpu_sample(0), gpu_sample(1), mig_gpu(2, instances=2, processes_per_instance=0))
    assert box.gpus[2].mig_devices[1].uuid == MIG1

    class Box:
        def __init__(self) -> None:
            self.closed = False

        def poll(self) -> Snapshot:
            return box

        def close(self) -> None:
            self.closed = True

    socket = tmp_path / "kubelet.sock"
    inner = Box()
    with kubelet(socket, Lister(NODE)) as served:
        watcher = PodResourcesWatcher(socket, refresh=60)
        wait_for(watcher)
        source = AttributedSource(inner, watcher=watcher)
        first = source.poll()
        second = source.poll()
        source.close()
        assert served.calls == 1  # the kubelet is asked on its own schedule, not per poll
    assert inner.closed
    gpu0, gpu1, gpu2 = first.gpus
    assert [owner.pod for owner in gpu0.holders] == ["trainer-0"]
    assert [owner.pod for owner in gpu1.holders] == ["notebook-a", "notebook-b"]
    assert gpu2.holders == ()
    assert [d.holders for d in gpu2.mig_devices] == [
        (),
        (Owner(container="server", pod="infer-0", namespace="research"),),
    ]
    # Nothing changed: the same objects, tick after tick.
    assert all(a is b for a, b in zip(second.gpus, first.gpus, strict=True))


def test_index_device_ids_name_gpus_by_their_index() -> None:
    from fakes.nvml_scenarios import gpu_sample, mig_gpu
    from gputop.sources.k8s import api_pb2
    from gputop.sources.k8s.podresources import assignments

    response = api_pb2.ListPodResourcesResponse(
        pod_resources=[
            pod("a", "by-index", container("c", devices(GPU, "0"))),
            pod("b", "mig-by-index", container("c", devices("nvidia.com/mig-1g.10gb", "1:0"))),
        ]
    )
    given = assignments(response)
    assert [o.pod for o in with_holders(gpu_sample(0), given).holders] == ["by-index"]
    mig = with_holders(mig_gpu(1, instances=2, processes_per_instance=0), given)
    assert mig.holders == ()
    assert [o.pod for o in mig.mig_devices[0].holders] == ["mig-by-index"]


def test_a_slow_kubelet_times_out_and_is_said_once(tmp_path: Path) -> None:
    socket = tmp_path / "kubelet.sock"
    with kubelet(socket, Lister(NODE, delay=3.0)):
        watcher = PodResourcesWatcher(socket, refresh=60, timeout=0.3)
        started = time.monotonic()
        wait_for(watcher)
        took = time.monotonic() - started
        watcher.close()
    assert took < 2.5
    assert watcher.current.holders == {}
    assert watcher.note is not None and "kubelet PodResources" in watcher.note


def test_no_socket_is_quietly_nothing(tmp_path: Path) -> None:
    assert open_watcher({SOCKET_VARIABLE: str(tmp_path / "missing.sock")}) is None
    (tmp_path / "file").write_text("")
    assert open_watcher({SOCKET_VARIABLE: str(tmp_path / "file")}) is None


def test_without_grpcio_the_note_says_what_to_install(tmp_path: Path) -> None:
    socket = tmp_path / "kubelet.sock"
    code = (
        "import sys; sys.modules['grpc'] = None\n"
        "from pathlib import Path\n"
        "from gputop.sources.k8s.podresources import PodResourcesWatcher\n"
        f"w = PodResourcesWatcher(Path({str(socket)!r}))\n"
        "assert w.wait_first(10)\n"
        "print(w.note)\n"
    )
    with kubelet(socket, Lister(NODE)):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == MISSING_GRPC


def test_the_tui_is_told_once_when_the_kubelet_cannot_be_asked(tmp_path: Path) -> None:
    import socket as sockets

    from fakes.nvml_scenarios import gpu_sample, snapshot
    from gputop.pipeline.core import Pipeline
    from gputop.pipeline.feed import LiveFeed

    box = snapshot(gpu_sample(0))

    class Box:
        def poll(self) -> Snapshot:
            return box

        def close(self) -> None:
            pass

    dead = tmp_path / "dead.sock"
    listener = sockets.socket(sockets.AF_UNIX)
    listener.bind(str(dead))  # there, but nobody listens: every call fails
    try:
        watcher = PodResourcesWatcher(dead, refresh=60, timeout=0.5)
        pipeline = Pipeline(LiveFeed(AttributedSource(Box(), watcher=watcher)))
        first = pipeline.start()
        second = pipeline.advance()
        pipeline.close()
    finally:
        listener.close()
    assert len(first.notes) == 1 and "kubelet PodResources" in first.notes[0]
    assert second.notes == ()
    assert first.snapshot.gpus[0].holders == ()
