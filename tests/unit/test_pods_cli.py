"""The real ``gputop`` on a fake Kubernetes node: fake NVML (``GPUTOP_FAKE_NVML=pods``), a
host procfs and ``/var/log/pods`` built from real cgroup paths, the real PodResources gRPC
service on a unix socket, and the environment of a pod without hostPID."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputop.sources.host.incontainer import POD_VARIABLES as _POD_VARIABLES
from support.fake_kubelet import GPU, Lister, container, devices, kubelet, pod
from support.fake_node import REAL, FakeNode

REPO = Path(__file__).resolve().parents[2]
FAKES = REPO / "tests" / "fakes"
GPU0 = "GPU-1a2b3c4d-0000-4000-8000-000000000000"
MIG1 = "MIG-0101c0de-5eed-5a1e-8000-000000000001"


def _uid(name: str) -> str:
    uid = REAL[name].pod_uid
    assert uid is not None
    return uid


def _cid(name: str) -> str:
    cid = REAL[name].container_id
    assert cid is not None
    return cid


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A node's files and a kubelet serving it; yields (root, environment for gputop)."""
    fake = FakeNode(tmp_path)
    # gputop itself: PID 7 in its pod, 5000 on the host (the host's procfs is mounted in).
    me = tmp_path / "proc" / "self"
    me.mkdir(parents=True)
    (me / "status").write_text("Name:\tgputop\nNSpid:\t5000\t7\n")
    fake.process(4242, REAL["containerd-systemd-v2"].text, start=4242)
    fake.process(1717, REAL["host-service"].text, start=1717)
    fake.process(1818, REAL["docker-systemd"].text, start=1818)
    fake.process(100000, REAL["crio-v1"].text, start=9000)
    fake.process(100001, REAL["slurm-v1"].text, start=9001)
    fake.pod_logs("ml", "trainer-0", _uid("containerd-systemd-v2"), "trainer")
    fake.docker_config(_cid("docker-systemd"), "render-farm", {})
    fake.crio_config(
        _cid("crio-v1"),
        {
            "io.kubernetes.container.name": "server",
            "io.kubernetes.pod.name": "infer-0",
            "io.kubernetes.pod.namespace": "research",
        },
    )
    served = [
        pod("ml", "trainer-0", container("trainer", devices(GPU, f"{GPU0}::0"))),
        pod("lab", "notebook-a", container("jupyter", devices(GPU, f"{GPU0}::1"))),
        pod("research", "infer-0", container("server", devices("nvidia.com/mig-1g.10gb", MIG1))),
    ]
    socket = tmp_path / "pod-resources" / "kubelet.sock"
    socket.parent.mkdir()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GPUTOP_", "NV"))}
    for name in ("CUDA_VISIBLE_DEVICES", *_POD_VARIABLES):
        environ.pop(name, None)
    environ.update(
        PYTHONPATH=str(FAKES),
        GPUTOP_FAKE_NVML="pods",
        GPUTOP_HOST_PROC=str(tmp_path / "proc"),
        GPUTOP_HOST_ROOT=str(tmp_path),
        GPUTOP_PODRESOURCES_SOCKET=str(socket),
        KUBERNETES_SERVICE_HOST="10.96.0.1",
        HOSTNAME="gputop-x7k2p",
        POD_NAMESPACE="monitoring",
        NODE_NAME="gpu-node-7",
        CONTAINER_NAME="gputop",
        NVIDIA_VISIBLE_DEVICES=f"{GPU0},{MIG1}",
    )
    with kubelet(socket, Lister(served)):
        yield tmp_path, environ


def _gputop(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputop", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=REPO,
        timeout=120,
    )


def _by_pid(gpu: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {process["pid"]: process for process in gpu["processes"]}


def test_json_names_pods_containers_jobs_and_holders(node: tuple[Path, dict[str, str]]) -> None:
    _, environ = node
    result = _gputop(environ, "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    whole, mig = document["gpus"]
    processes = _by_pid(whole) | _by_pid(mig)
    keys = ("pod", "namespace", "container", "container_id", "slurm_job")
    assert {key: processes[4242][key] for key in keys} == {
        "pod": "trainer-0",
        "namespace": "ml",
        "container": "trainer",
        "container_id": _cid("containerd-systemd-v2"),
        "slurm_job": None,
    }
    assert processes[4242]["foreign"] is True  # another container's, named all the same
    assert [processes[1717][key] for key in keys] == [None] * 5
    assert (processes[1818]["container"], processes[1818]["pod"]) == ("render-farm", None)
    assert (processes[100000]["pod"], processes[100000]["container"]) == ("infer-0", "server")
    assert processes[100001]["slurm_job"] == "280678"
    # The kubelet's assignments: two pods time-share GPU 0; a MIG instance is infer-0's.
    assert [(h["namespace"], h["pod"]) for h in whole["holders"]] == [
        ("ml", "trainer-0"),
        ("lab", "notebook-a"),
    ]
    assert [[h["pod"] for h in device["holders"]] for device in mig["mig_devices"]] == [
        [],
        ["infer-0"],
    ]
    assert document["container"] == {
        "pod": "gputop-x7k2p",
        "namespace": "monitoring",
        "node": "gpu-node-7",
        "container": "gputop",
        "kubernetes": True,
        "variable": "NVIDIA_VISIBLE_DEVICES",
        "requested": f"{GPU0},{MIG1}",
        "given": [GPU0, MIG1],
        "unmatched": [],
        "all_gpus": False,
        "no_gpus": False,
    }


def test_once_says_which_container_and_whose_processes(node: tuple[Path, dict[str, str]]) -> None:
    _, environ = node
    result = _gputop(environ, "--once")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert (
        "This container: in pod monitoring/gputop-x7k2p container gputop on node gpu-node-7; "
        f"given {GPU0}, "
        f"{MIG1} (NVIDIA_VISIBLE_DEVICES)"
    ) in text
    assert "held by pod ml/trainer-0 (trainer), pod lab/notebook-a (jupyter)" in text
    (mig,) = [line for line in text.splitlines() if "MIG GI 8" in line]
    assert mig.endswith("held by pod research/infer-0 (server)")
    lines = {line.split()[1]: line for line in text.splitlines() if line.strip()[:1].isdigit()}
    assert lines["4242"].endswith("[pod ml/trainer-0 (trainer)]")
    assert lines["1818"].endswith("[docker render-farm]")
    assert lines["100001"].endswith("[Slurm job 280678]")
    assert "[" not in lines["1717"]
    assert "5 of these belong to other containers" in text


def test_a_kubelet_that_refuses_is_said_once_on_stderr(
    node: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, environ = node
    # A socket that is there but answers nobody: the call fails, the run goes on.
    import socket as sockets

    dead = tmp_path / "dead.sock"
    listener = sockets.socket(sockets.AF_UNIX)
    listener.bind(str(dead))
    try:
        environ = {**environ, "GPUTOP_PODRESOURCES_SOCKET": str(dead)}
        result = _gputop(environ, "--json")
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr
    assert "kubelet PodResources" in result.stderr
    assert result.stderr.count("kubelet PodResources") == 1
    assert json.loads(result.stdout)["gpus"][0]["holders"] == []
