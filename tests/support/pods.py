"""Hand-made snapshots of GPU boxes running pods, containers and Slurm jobs, for the views.

The owners are what the attribution sources give (``model.owner.Owner``): names as
Kubernetes writes them (a Deployment's pod ``<name>-<replicaset hash>-<5 chars>``, a
StatefulSet's ``<name>-<ordinal>``), 64-hex container ids, UIDs with ``-``.
"""

from __future__ import annotations

import dataclasses

from gputop.model import (
    ContainerView,
    GpuSample,
    Memory,
    MigDeviceSample,
    Owner,
    ProcessSample,
    Reason,
    Snapshot,
)

NOW = 1_700_000_000.0
MIB = 1024**2
GIB = 1024**3

LLAMA = Owner(
    runtime="containerd",
    container_id="a3f9c1" + "0" * 58,
    container="vllm",
    pod="llama-70b-inference-6f7d9c8b5-x2kq9",
    namespace="ml",
    pod_uid="5d1c2b1e-8a8b-4a0e-9d3c-1f2e3d4c5b6a",
)
BERT = Owner(
    runtime="cri-o",
    container_id="77be02" + "1" * 58,
    container="trainer",
    pod="bert-finetune-0",
    namespace="research",
    pod_uid="0b0e2c44-1111-2222-3333-444455556666",
)
BERT_PROFILER = Owner(
    runtime="cri-o",
    container_id="88cc03" + "2" * 58,
    container="profiler",
    pod="bert-finetune-0",
    namespace="research",
    pod_uid="0b0e2c44-1111-2222-3333-444455556666",
)
SLURM = Owner(runtime="slurm", slurm_job="4242017")


def _process(
    pid: int,
    memory: int,
    sm: float,
    user: str,
    command: str,
    owner: Owner | None,
    running: float,
    *,
    kind: str = "C",
    gi: int | None = None,
) -> ProcessSample:
    return ProcessSample(
        pid,
        kind,
        command.split()[0],
        memory,
        gpu_instance_id=gi,
        compute_instance_id=None if gi is None else 0,
        sm_utilization=sm,
        user=user,
        command=command,
        cpu_percent=round(sm * 1.3, 1),
        host_memory=memory // 8,
        start_time=NOW - running,
        owner=owner,
    )


def timeless(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with no start times: TIME reads n/a, so a picture does not depend on how
    running times are written."""
    return dataclasses.replace(
        snapshot,
        gpus=tuple(
            dataclasses.replace(
                gpu,
                processes=tuple(dataclasses.replace(p, start_time=None) for p in gpu.processes),
            )
            for gpu in snapshot.gpus
        ),
    )


def k8s_node() -> Snapshot:
    """Two GPUs of a Kubernetes node: a vLLM pod across both (tensor parallel), a training
    pod with a profiler sidecar on GPU 1, and the host's Xorg on GPU 0."""
    gpu0 = (
        _process(41001, 30 * GIB, 71.0, "root",
                 "python3 -m vllm.entrypoints.openai.api_server --model llama-70b "
                 "--tensor-parallel-size 2", LLAMA, 5000),
        ProcessSample(1893, "G", "/usr/lib/xorg/Xorg", 112 * MIB, sm_utilization=0.0,
                      user="root", command="/usr/lib/xorg/Xorg vt1 -displayfd 3",
                      cpu_percent=1.2, host_memory=95 * MIB, start_time=NOW - 90000),
    )  # fmt: skip
    gpu1 = (
        _process(41002, 29 * GIB, 68.0, "root", "python3 -m vllm.worker --rank 1", LLAMA, 4990),
        _process(52010, 12 * GIB, 40.0, "1000", "python train.py --model bert-large", BERT, 700),
        _process(52044, 300 * MIB, 2.0, "1000", "nsys profile --capture-range=cudaProfilerApi",
                 BERT_PROFILER, 650),
    )  # fmt: skip
    return Snapshot(
        timestamp=None,
        gpus=(
            GpuSample(index=0, name="NVIDIA A100-SXM4-80GB", processes=gpu0),
            GpuSample(index=1, name="NVIDIA A100-SXM4-80GB", processes=gpu1),
        ),
    )


def slurm_node() -> Snapshot:
    """One GPU of a Slurm node: a job's two ranks and a process of no job."""
    procs = (
        _process(7001, 20 * GIB, 90.0, "dave", "srun python pretrain.py --rank 0", SLURM, 3600),
        _process(7002, 20 * GIB, 88.0, "dave", "srun python pretrain.py --rank 1", SLURM, 3600),
        _process(8100, 1 * GIB, 5.0, "erin", "python notebook_kernel.py", None, 120),
    )
    return Snapshot(timestamp=None, gpus=(GpuSample(index=0, processes=procs),))


CI_RUNNER = Owner(pod="gpu-test-runner-7", namespace="ci")
"""A pod the kubelet says holds a MIG device, with no process visible from here."""

BERT_A = Owner(container="bert", pod="bert-a-0", namespace="research")
BERT_B = Owner(container="bert", pod="bert-b-0", namespace="research")


def mig_node() -> Snapshot:
    """An H100 split for pods: a 3g.40gb held by the vLLM pod (the kubelet says so and its
    process shows), a 2g.20gb two pods share (time-slicing), a 1g.10gb the kubelet gave to a
    CI pod whose processes are hidden, and a free 1g.10gb."""
    procs = (
        _process(41001, 30 * GIB, 0.0, "root", "python3 -m vllm.entrypoints.openai.api_server",
                 LLAMA, 5000, gi=1),
        _process(61001, 6 * GIB, 0.0, "1000", "python finetune.py --shard a", BERT_A, 900, gi=5),
        _process(61002, 5 * GIB, 0.0, "1000", "python finetune.py --shard b", BERT_B, 800, gi=5),
    )  # fmt: skip
    under_mig = (("utilization.gpu", Reason.UNDER_MIG), ("utilization.memory", Reason.UNDER_MIG))
    layout = (
        (1, "3g.40gb", 60, 40448, (LLAMA,)),
        (5, "2g.20gb", 32, 20096, ()),
        (13, "1g.10gb", 16, 9984, (CI_RUNNER,)),
        (14, "1g.10gb", 16, 9984, ()),
    )
    devices = tuple(
        MigDeviceSample(
            index=index,
            gpu_instance_id=gi,
            compute_instance_id=0,
            profile=profile,
            sm_count=sms,
            memory=Memory(
                total=total * MIB,
                used=13 * MIB + sum(p.memory_used or 0 for p in procs if p.gpu_instance_id == gi),
            ),
            uuid=f"MIG-5a1c0de0-0000-4000-8000-0000000000{index:02d}",
            processes=tuple(p for p in procs if p.gpu_instance_id == gi),
            holders=holders,
            unavailable=under_mig,
        )
        for index, (gi, profile, sms, total, holders) in enumerate(layout)
    )
    gpu = GpuSample(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        memory=Memory(total=81559 * MIB, used=41 * GIB + 52 * MIB),
        mig_mode=True,
        mig_devices=devices,
        processes=procs,
        unavailable=under_mig,
    )
    return Snapshot(timestamp=None, gpus=(gpu,))


GIVEN_GPU = "GPU-8f2a6c3e-1b7d-4e0a-9c55-2d0c4e9b7a11"


def inside_pod() -> Snapshot:
    """gputop in a pod without hostPID: its own process, and three of other containers on the
    GPU the device plugin gave it (their PIDs name nothing here)."""
    procs = (
        ProcessSample(88121, "C", "python", 22 * GIB, foreign=True),
        ProcessSample(88340, "C", None, 10 * GIB, foreign=True),
        ProcessSample(90411, "C", "python3", 512 * MIB, foreign=True),
        ProcessSample(3120, "C", "python", 4 * GIB, sm_utilization=63.0, user="me",
                      command="python finetune.py", cpu_percent=97.0, host_memory=3 * GIB,
                      start_time=NOW - 1500, local_pid=57),
    )  # fmt: skip
    view = ContainerView(
        variable="NVIDIA_VISIBLE_DEVICES",
        requested=GIVEN_GPU,
        given=(GIVEN_GPU,),
        pod="finetune-7c9f5d4b8-qk2lm",
        namespace="research",
        container="trainer",
        kubernetes=True,
    )
    gpu = GpuSample(index=0, name="NVIDIA A100-SXM4-80GB", uuid=GIVEN_GPU, processes=procs)
    return Snapshot(timestamp=None, gpus=(gpu,), container=view)
