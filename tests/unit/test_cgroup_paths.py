"""Real ``/proc/PID/cgroup`` texts of each runtime and driver, parsed (sources in
``tests/support/fake_node.py`` and ``snapshots/README.md``)."""

from __future__ import annotations

import pytest

from gputop.sources.host.cgroup import parse_cgroup, parse_path
from support.fake_node import REAL


@pytest.mark.parametrize("name", sorted(REAL))
def test_each_real_path_says_what_it_holds(name: str) -> None:
    real = REAL[name]
    facts = parse_cgroup(real.text)
    assert (facts.runtime, facts.container_id, facts.pod_uid, facts.slurm_job) == (
        real.runtime,
        real.container_id,
        real.pod_uid,
        real.slurm_job,
    )


def test_systemd_underscores_become_dashes() -> None:
    facts = parse_cgroup(REAL["containerd-systemd-v2"].text)
    assert facts.pod_uid is not None and "_" not in facts.pod_uid
    assert facts.pod_uid == "2d5133c0-65f3-40b2-b375-c04866d418e1"


def test_guaranteed_pods_have_no_qos_level() -> None:
    uid = "2d5133c0_65f3_40b2_b375_c04866d418e1"
    cid = "e" * 64
    systemd = parse_path(f"/kubepods.slice/kubepods-pod{uid}.slice/cri-containerd-{cid}.scope")
    cgroupfs = parse_path(f"/kubepods/pod{uid.replace('_', '-')}/{cid}")
    assert systemd.pod_uid == cgroupfs.pod_uid == uid.replace("_", "-")
    assert systemd.container_id == cgroupfs.container_id == cid


def test_a_relative_path_from_inside_a_cgroup_namespace() -> None:
    # A reader in its own cgroup namespace sees other cgroups above its root as "..".
    text = REAL["containerd-systemd-v2"].text.replace("0::/", "0::/../../../")
    assert parse_cgroup(text).container_id == REAL["containerd-systemd-v2"].container_id


def test_the_line_that_says_most_wins() -> None:
    # cgroup v1: the name=systemd line may sit in a session while the others are the pod's.
    text = "1:name=systemd:/user.slice/user-0.slice/session-1.scope\n" + REAL["cgroupfs-v1"].text
    assert parse_cgroup(text).pod_uid == REAL["cgroupfs-v1"].pod_uid


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n", "0::/\n", "0::/kubepods.slice\n", "0::/pod/x\n", "0::/job_5/step_0\n"],
)
def test_nothing_known_is_nothing(text: str) -> None:
    assert parse_cgroup(text).weight == 0


def test_a_kind_node_nests_the_pods_under_kubelet_slice() -> None:
    # kind runs the kubelet with --cgroup-root=/kubelet: every name gets a "kubelet-" prefix.
    uid = "a45947e4_314c_4694_8f05_5e1425a02de4"
    cid = "ab" * 32
    facts = parse_path(
        "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
        f"kubelet-kubepods-burstable-pod{uid}.slice/cri-containerd-{cid}.scope"
    )
    assert (facts.runtime, facts.container_id, facts.pod_uid) == (
        "containerd",
        cid,
        uid.replace("_", "-"),
    )


def test_crio_with_the_cgroupfs_driver_names_its_container() -> None:
    # cri-o's cgmgr (cgroupfs) names a container's cgroup "crio-<id>" with no ".scope", and
    # its conmon's "crio-conmon-<id>"; systemd's ".scope" is systemd's, not cri-o's.
    uid = "0f0c3a1e-54f1-4d8b-9d4e-4a1b2c3d4e5f"
    cid = "cd" * 32
    for name in (f"crio-{cid}", f"crio-conmon-{cid}"):
        facts = parse_path(f"/kubepods/besteffort/pod{uid}/{name}")
        assert (facts.runtime, facts.container_id, facts.pod_uid) == ("cri-o", cid, uid)


def test_a_node_in_a_container_is_not_the_pods_runtime() -> None:
    # kind and minikube (docker driver) run the node as a Docker container: the pod's path
    # sits under the node's "/docker/<node id>". The innermost container is the process's,
    # with its own runtime, or none said.
    node = "ee" * 32
    uid = "8ca306fa-3c03-47fa-97dd-19979c345572"
    cid = "12" * 32
    crio = parse_path(f"/docker/{node}/kubepods/besteffort/pod{uid}/crio-{cid}")
    assert (crio.runtime, crio.container_id, crio.pod_uid) == ("cri-o", cid, uid)
    scoped = parse_path(
        f"/docker/{node}/kubepods.slice/kubepods-besteffort.slice/"
        f"kubepods-besteffort-pod{uid.replace('-', '_')}.slice/cri-containerd-{cid}.scope"
    )
    assert (scoped.runtime, scoped.container_id, scoped.pod_uid) == ("containerd", cid, uid)
    bare = parse_path(f"/docker/{node}/kubepods/burstable/pod{uid}/{cid}")
    assert (bare.runtime, bare.container_id, bare.pod_uid) == (None, cid, uid)
    # A plain Docker container keeps its runtime.
    assert parse_path(f"/docker/{node}").runtime == "docker"
