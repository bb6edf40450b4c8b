"""Inside a container: which GPUs it was given and which pod it is, from its environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.nvml_scenarios import gpu_sample, mig_gpu, snapshot
from gputop.sources.host.incontainer import read_container_view

BOX = snapshot(gpu_sample(0), gpu_sample(1), mig_gpu(2, instances=2, processes_per_instance=0))
UUIDS = [gpu.uuid for gpu in BOX.gpus]
MIG = "MIG-0201c0de-5eed-5a1e-8000-000000000001"
POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "HOSTNAME": "train-5d8f7-abcde"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path  # no marker files, no service account: only the environment speaks


def test_not_in_a_container_is_nothing(root: Path) -> None:
    assert read_container_view(BOX, {"NVIDIA_VISIBLE_DEVICES": "all"}, root) is None


def test_docker_marker_file_says_container(root: Path) -> None:
    (root / ".dockerenv").write_text("")
    # A container that is no pod and was given no GPU by a variable: nothing to say.
    assert read_container_view(BOX, {"CONTAINER_NAME": "x"}, root) is None
    view = read_container_view(BOX, {"NV_GPU": "0,1"}, root)
    assert view is not None and not view.kubernetes and view.pod is None
    assert view.variable == "NV_GPU"
    assert view.describe().startswith("in a container; given GPU-")


def test_uuids_and_mig_uuids_and_prefixes(root: Path) -> None:
    env = {
        **POD,
        "NVIDIA_VISIBLE_DEVICES": (
            f"{UUIDS[1]},{MIG.lower()},GPU-1a2b3c4d-0000-4000-8000-00000000000,GPU-dead"
        ),
    }
    view = read_container_view(BOX, env, root)
    assert view is not None
    # The third item is a prefix of three GPUs' UUIDs: ambiguous, so not found.
    assert view.given == (UUIDS[1], MIG)
    assert view.unmatched == ("GPU-1a2b3c4d-0000-4000-8000-00000000000", "GPU-dead")
    assert view.pod == "train-5d8f7-abcde"


def test_host_indices_are_renumbered_from_zero(root: Path) -> None:
    # Given host GPUs 3, 5 and 7: here they are 0, 1 and 2, in the same (PCI) order.
    view = read_container_view(BOX, {**POD, "NVIDIA_VISIBLE_DEVICES": "7,3,5"}, root)
    assert view is not None
    assert view.given == (UUIDS[2], UUIDS[0], UUIDS[1])
    assert view.unmatched == ()


def test_cuda_indices_are_this_machines(root: Path) -> None:
    view = read_container_view(BOX, {**POD, "CUDA_VISIBLE_DEVICES": "1,9"}, root)
    assert view is not None
    assert (view.variable, view.given, view.unmatched) == (
        "CUDA_VISIBLE_DEVICES",
        (UUIDS[1],),
        ("9",),
    )


@pytest.mark.parametrize(
    ("value", "every", "none"),
    [("all", True, False), ("none", False, True), ("void", False, True), ("", False, True)],
)
def test_all_none_void(root: Path, value: str, every: bool, none: bool) -> None:
    view = read_container_view(BOX, {**POD, "NVIDIA_VISIBLE_DEVICES": value}, root)
    assert view is not None
    assert (view.all_gpus, view.no_gpus) == (every, none)
    assert view.given == (tuple(UUIDS) if every else ())
    assert ("given all GPUs" in view.describe()) is every
    assert ("given no GPU" in view.describe()) is none


def test_nvidia_visible_devices_wins_over_cuda(root: Path) -> None:
    env = {**POD, "CUDA_VISIBLE_DEVICES": "0", "NVIDIA_VISIBLE_DEVICES": UUIDS[2] or ""}
    view = read_container_view(BOX, env, root)
    assert view is not None and view.variable == "NVIDIA_VISIBLE_DEVICES"
    assert view.given == (UUIDS[2],)


def test_downward_api_and_service_account(root: Path) -> None:
    secrets = root / "var/run/secrets/kubernetes.io/serviceaccount"
    secrets.mkdir(parents=True)
    (secrets / "namespace").write_text("research\n")
    view = read_container_view(BOX, POD, root)
    assert view is not None
    assert (view.pod, view.namespace, view.node, view.variable) == (
        "train-5d8f7-abcde",
        "research",
        None,
        None,
    )
    env = {**POD, "POD_NAME": "infer-0", "POD_NAMESPACE": "serving", "NODE_NAME": "gpu-7"}
    named = read_container_view(BOX, env, root)
    assert named is not None
    assert (named.pod, named.namespace, named.node) == ("infer-0", "serving", "gpu-7")
    assert named.describe() == "in pod serving/infer-0 on node gpu-7"
