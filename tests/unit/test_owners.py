"""Process -> container, pod and Slurm job, over fake nodes built from real cgroup paths."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest

from gputop.model import Owner
from gputop.sources.host import owners
from gputop.sources.host.cgroup import CgroupFacts, parse_cgroup
from gputop.sources.host.owners import OwnerLookup
from support.fake_node import REAL, FakeNode


def lookup(node: FakeNode) -> OwnerLookup:
    return OwnerLookup(proc_root=node.proc, root=node.root)


def test_containerd_systemd_v2_pod_from_the_log_directory(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    real = REAL["containerd-systemd-v2"]
    assert real.pod_uid is not None and real.container_id is not None
    node.process(4242, real.text)
    node.pod_logs("ml", "trainer-7f9c", real.pod_uid, "trainer")
    assert lookup(node).owner(4242) == Owner(
        runtime="containerd",
        container_id=real.container_id,
        container="trainer",
        pod="trainer-7f9c",
        namespace="ml",
        pod_uid=real.pod_uid,
    )


def test_containerd_names_from_its_task_config(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    real = REAL["containerd-v1-colons"]
    assert real.pod_uid is not None and real.container_id is not None
    node.process(77, real.text)
    # Two containers logged: only the runtime's annotations tell which one this is.
    node.pod_logs("kube-system", "cilium-bsznc", real.pod_uid, "cilium-agent", "mount-cgroup")
    node.containerd_config(
        real.container_id,
        {
            "io.kubernetes.cri.container-type": "container",
            "io.kubernetes.cri.container-name": "cilium-agent",
            "io.kubernetes.cri.sandbox-name": "cilium-bsznc",
            "io.kubernetes.cri.sandbox-namespace": "kube-system",
            "io.kubernetes.cri.sandbox-uid": real.pod_uid,
        },
    )
    owner = lookup(node).owner(77)
    assert owner is not None
    assert (owner.runtime, owner.namespace, owner.pod, owner.container) == (
        "containerd",
        "kube-system",
        "cilium-bsznc",
        "cilium-agent",
    )


def test_crio_names_from_its_userdata_config(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    real = REAL["crio-v1"]
    assert real.container_id is not None
    node.process(500, real.text)
    # No log directory at all: the runtime's annotations alone name the pod.
    node.crio_config(
        real.container_id,
        {
            "io.kubernetes.container.name": "cuda-vectoradd",
            "io.kubernetes.pod.name": "gpu-operator-test",
            "io.kubernetes.pod.namespace": "gpu-operator",
        },
    )
    owner = lookup(node).owner(500)
    assert owner == Owner(
        runtime="cri-o",
        container_id=real.container_id,
        container="cuda-vectoradd",
        pod="gpu-operator-test",
        namespace="gpu-operator",
        pod_uid=real.pod_uid,
    )


def test_docker_container_name_from_config_v2(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    for pid, name in ((10, "docker-v1"), (11, "docker-systemd")):
        real = REAL[name]
        assert real.container_id is not None
        node.process(pid, real.text)
        node.docker_config(real.container_id, f"train-{pid}", {"maintainer": "x"})
    found = lookup(node)
    for pid, name in ((10, "docker-v1"), (11, "docker-systemd")):
        assert found.owner(pid) == Owner(
            runtime="docker", container_id=REAL[name].container_id, container=f"train-{pid}"
        )


def test_cgroupfs_v1_container_named_by_the_kubelet_link(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    real = REAL["cgroupfs-v1"]
    assert real.pod_uid is not None and real.container_id is not None
    node.process(900, real.text)
    node.pod_logs("default", "bert-0", real.pod_uid, "bert", "sidecar")
    node.container_log_link("bert-0", "default", "sidecar", "a" * 64)
    node.container_log_link("bert-0", "default", "bert", real.container_id)
    # A bare id says no runtime; whose directory holds it does.
    (tmp_path / "run/containerd/io.containerd.runtime.v2.task/k8s.io" / real.container_id).mkdir(
        parents=True
    )
    owner = lookup(node).owner(900)
    assert owner is not None
    assert (owner.runtime, owner.namespace, owner.pod, owner.container) == (
        "containerd",
        "default",
        "bert-0",
        "bert",
    )


def test_slurm_from_the_cgroup_and_from_the_environment(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.process(1, REAL["slurm-v2"].text)
    node.process(2, REAL["slurm-v1"].text)
    node.process(3, REAL["host-session"].text, environ={"SLURM_JOB_ID": "4711", "USER": "ada"})
    found = lookup(node)
    assert found.owner(1) == Owner(runtime="slurm", slurm_job="1392969")
    assert found.owner(2) == Owner(runtime="slurm", slurm_job="280678")
    assert found.owner(3) == Owner(runtime="slurm", slurm_job="4711")


def test_a_plain_host_process_has_no_owner(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.process(1, REAL["host-session"].text)
    node.process(2, REAL["host-service"].text)
    found = lookup(node)
    assert found.owner(1) is None
    assert found.owner(2) is None
    assert found.owner(3) is None  # no such process


def test_a_uid_with_no_log_directory_keeps_what_the_cgroup_says(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    real = REAL["containerd-systemd-v2"]
    node.process(5, real.text)
    node.pod_logs("other", "someone-else", "00000000-0000-0000-0000-000000000000", "c")
    assert lookup(node).owner(5) == Owner(
        runtime="containerd", container_id=real.container_id, pod_uid=real.pod_uid
    )


def test_unreadable_files_are_unknown_not_errors(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    real = REAL["crio-static-pod"]
    assert real.container_id is not None and real.pod_uid is not None
    # Tests run as root, so no permission is simulated by what no read can open: a
    # directory where the file should be.
    base = node.process(6, None)
    (base / "cgroup").mkdir()
    (base / "environ").unlink()
    (base / "environ").mkdir()
    assert lookup(node).owner(6) is None
    node.process(7, real.text)
    node.pod_logs("openshift-kube-apiserver", "kube-apiserver-master-0", real.pod_uid)
    broken = tmp_path / "run/containers/storage/overlay-containers" / real.container_id
    (broken / "userdata/config.json").mkdir(parents=True)
    owner = lookup(node).owner(7)
    assert owner is not None
    assert (owner.pod, owner.container, owner.runtime) == (
        "kube-apiserver-master-0",
        None,
        "cri-o",
    )


def test_answers_are_cached_per_pid_and_start_time(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.process(8, REAL["docker-v1"].text, start=100)
    found = lookup(node)
    first = found.owner(8)
    assert first is not None and first.runtime == "docker"
    # The same process (same start time): not read again, even if its files changed.
    node.process(8, REAL["slurm-v2"].text, start=100)
    assert found.owner(8) is first
    assert found.owner(8, start=100) is first
    # The PID reused by a new process (another start time): read again.
    node.process(8, REAL["slurm-v2"].text, start=200)
    again = found.owner(8)
    assert again is not None and again.slurm_job == "1392969"
    found.keep_only([])
    node.process(8, REAL["docker-v1"].text, start=200)
    assert found.owner(8) == first  # forgotten, so read afresh


def test_a_pid_that_exits_between_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = FakeNode(tmp_path)
    base = node.process(9, REAL["docker-v1"].text)

    def exit_while_read(text: str) -> CgroupFacts:
        # The lookup is reading the cgroup file when the process exits: its stat goes.
        (base / "stat").unlink()
        return parse_cgroup(text)

    found = lookup(node)
    with monkeypatch.context() as patch:
        patch.setattr(owners, "parse_cgroup", exit_while_read)
        assert found.owner(9, start=1000) is None
    # Nothing cached for it: a process now at that PID is read afresh.
    node.process(9, REAL["slurm-v1"].text, start=1000)
    owner = found.owner(9, start=1000)
    assert owner is not None and owner.slurm_job == "280678"


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_deeply_nested_runtime_config_is_unknown_not_a_crash(tmp_path: Path) -> None:
    # json.loads raises RecursionError, not ValueError, on a document nested this deep.
    node = FakeNode(tmp_path)
    crio = REAL["crio-v1"]
    docker = REAL["docker-v1"]
    assert crio.container_id is not None and docker.container_id is not None
    node.process(40, crio.text)
    node.crio_config(crio.container_id, {})
    config = tmp_path / "run/containers/storage/overlay-containers" / crio.container_id
    (config / "userdata/config.json").write_text('{"annotations": ' + _nested(200_000) + "}")
    node.process(41, docker.text)
    node.docker_config(docker.container_id, "x", {})
    v2 = tmp_path / "var/lib/docker/containers" / docker.container_id / "config.v2.json"
    v2.write_text('{"Config": {"Labels": ' + _nested(200_000) + "}}")
    owners = lookup(node)
    first, second = owners.owner(40), owners.owner(41)
    assert first is not None and second is not None
    assert (first.runtime, first.container_id, first.container) == (
        "cri-o",
        crio.container_id,
        None,
    )
    assert (second.runtime, second.container_id, second.container) == (
        "docker",
        docker.container_id,
        None,
    )


def test_a_fifo_in_place_of_a_file_does_not_hang(tmp_path: Path) -> None:
    # Opening a FIFO for reading waits for a writer: a lookup must not.
    node = FakeNode(tmp_path)
    real = REAL["docker-v1"]
    assert real.container_id is not None
    os.mkfifo(node.process(50, None) / "cgroup")
    base = node.process(51, real.text)
    (base / "environ").unlink()
    os.mkfifo(base / "environ")
    stat = node.process(52, None) / "stat"
    stat.unlink()
    os.mkfifo(stat)
    config = tmp_path / "var/lib/docker/containers" / real.container_id
    config.mkdir(parents=True)
    os.mkfifo(config / "config.v2.json")
    answers: list[Owner | None] = []
    worker = threading.Thread(
        target=lambda: answers.extend(lookup(node).owner(pid) for pid in (50, 51, 52)),
        daemon=True,
    )
    worker.start()
    worker.join(5.0)
    hung = worker.is_alive()
    fifos = [tmp_path / "proc/50/cgroup", base / "environ", stat, config / "config.v2.json"]
    deadline = time.monotonic() + 5.0
    while worker.is_alive() and time.monotonic() < deadline:
        # Let each blocked open go (a writer that leaves at once), so no thread is left.
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(0.05)
    assert not hung
    assert answers == [None, Owner(runtime="docker", container_id=real.container_id), None]
