"""A snapshot with every field the outputs write set (and some left unknown), for tests that
compare whole outputs."""

from __future__ import annotations

from datetime import datetime

from gputop.model import (
    Activity,
    Clocks,
    ContainerView,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    Owner,
    Power,
    ProcessSample,
    Reason,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.model.health import RemappedRows, RetiredPages, xid_event

MIB = 1024**2

_PROCESS = ProcessSample(
    pid=4242,
    type="C",
    name="python",
    memory_used=512 * MIB,
    gpu_instance_id=1,
    compute_instance_id=0,
    sm_utilization=37.5,
    user="ada",
    command="python train.py --lr 3e-4",
    cpu_percent=99.5,
    host_memory=2 * 1024 * MIB,
    start_time=1726668000.25,
    local_pid=17,
    owner=Owner(
        runtime="containerd",
        container_id="6a3c1f0d9b2e4c7a8f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2",
        container="trainer",
        pod="train-7f9c",
        namespace="ml",
        pod_uid="0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    ),
)
_HOLDER = Owner(
    pod="train-7f9c",
    namespace="ml",
    container="trainer",
    pod_uid="0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
)
EVERY_FIELD = Snapshot(
    timestamp=datetime(2024, 9, 18, 14, 0, 0, 123456),
    host="box",
    driver_version="550.54.14",
    cuda_version="12.4",
    attached_gpus=3,
    container=ContainerView(
        variable="NVIDIA_VISIBLE_DEVICES",
        requested="GPU-0,GPU-9",
        given=("GPU-0",),
        unmatched=("GPU-9",),
        pod="train-7f9c",
        namespace="ml",
        node="node-a",
        kubernetes=True,
    ),
    gpus=(
        GpuSample(
            index=0,
            name="NVIDIA A100-SXM4-80GB",
            uuid="GPU-0",
            pci_bus_id="00000000:07:00.0",
            serial="1324",
            architecture="Ampere",
            utilization=Utilization(gpu=23.0, memory=8.25, encoder=1.0, decoder=0.0),
            memory=Memory(total=81920 * MIB, used=10976 * MIB + 123, free=70000 * MIB, reserved=5),
            bar1=Memory(total=128 * MIB, used=MIB),
            temperature=Temperature(gpu=31.0, memory=40.0, slowdown=90.0, shutdown=95.0),
            power=Power(draw=140.678, limit=400.0, default_limit=400.0, min_limit=100.0),
            fan_speed=30.0,
            performance_state="P0",
            clocks=Clocks(graphics=1410, sm=1410, memory=1593, video=1275),
            max_clocks=Clocks(graphics=1410, sm=1410, memory=1593, video=1275),
            persistence_mode=True,
            compute_mode="Default",
            ecc_mode=True,
            ecc_errors=EccErrors(
                volatile_corrected=3,
                volatile_uncorrected=0,
                aggregate_corrected=12,
                aggregate_uncorrected=1,
            ),
            remapped_rows=RemappedRows(correctable=2, uncorrectable=1, pending=True, failure=False),
            retired_pages=RetiredPages(single_bit=0, double_bit=1, pending=False),
            throttle_reasons=("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown"),
            mig_mode=True,
            mig_devices=(
                MigDeviceSample(
                    index=0,
                    gpu_instance_id=1,
                    compute_instance_id=0,
                    profile="3g.40gb",
                    profile_derived=True,
                    sm_count=42,
                    memory=Memory(total=40 * 1024 * MIB, used=512 * MIB),
                    uuid="MIG-0",
                    processes=(_PROCESS,),
                    holders=(_HOLDER,),
                ),
            ),
            processes=(
                _PROCESS,
                ProcessSample(pid=9, foreign=True, type="G"),
                ProcessSample(pid=31, type="C", owner=Owner(runtime="slurm", slurm_job="4711")),
            ),
            holders=(_HOLDER, Owner(pod="notebook-0", namespace="lab", container="jupyter")),
        ),
        GpuSample(
            index=1,
            name='Odd, "quoted" name',
            throttle_reasons=(),
            unavailable=(("fan_speed", Reason.NOT_SUPPORTED), ("power.draw", Reason.GPU_LOST)),
            lost=True,
        ),
        GpuSample(
            index=2,
            power=Power(draw=-0.001),
            utilization=Utilization(gpu=0.004),
            activity=Activity(
                graphics=97.22,
                sm=93.63,
                sm_occupancy=13.84,
                tensor=90.9,
                dram=15.8,
                pcie_tx=0.61 * MIB,
                pcie_rx=2.25 * MIB,
                nvlink_tx=0.0,
            ),
            unavailable=(("activity.nvlink_rx", Reason.NOT_SUPPORTED),),
        ),
    ),
    events=(
        xid_event(datetime(2024, 9, 18, 13, 59, 59, 500000), 0, 79, uuid="GPU-0"),
        xid_event(datetime(2024, 9, 18, 13, 59, 59, 750000), 0, 13, gpu_instance_id=1),
    ),
)
