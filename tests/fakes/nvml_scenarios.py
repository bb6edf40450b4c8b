"""Machines for the fake NVML to be: hand-built GPUs, captures, and named scenarios.

``scenario(spec)`` turns a name from :data:`SCENARIOS` or a capture path into the snapshots and
faults a :class:`fakes.nvml_fake.FakeNvml` is built from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pynvml  # noqa: TID251 -- error codes for the start-up failure scenarios

from fakes.nvml_fake import Faults
from gputop.model import (
    Clocks,
    EccErrors,
    GpuSample,
    Memory,
    MigDeviceSample,
    Power,
    ProcessSample,
    Snapshot,
    Temperature,
    Utilization,
)
from gputop.model.health import RemappedRows, RetiredPages

MIB = 1024 * 1024
GIB = 1024 * MIB


def gpu_sample(index: int = 0, **changes: object) -> GpuSample:
    """A GPU that reports every field (an RTX A6000-like card), with ``changes`` applied."""
    sample = GpuSample(
        index=index,
        name="NVIDIA RTX A6000",
        uuid=f"GPU-1a2b3c4d-0000-4000-8000-{index:012x}",
        pci_bus_id=f"00000000:{0x17 + index:02X}:00.0",
        serial=f"13220210{index:05d}",
        architecture="Ampere",
        utilization=Utilization(gpu=87.0, memory=41.0, encoder=3.0, decoder=0.0),
        memory=Memory(total=48 * GIB, used=30 * GIB, free=17 * GIB, reserved=GIB),
        bar1=Memory(total=256 * MIB, used=9 * MIB, free=247 * MIB),
        temperature=Temperature(
            gpu=71.0, memory=None, slowdown=93.0, shutdown=98.0, max_operating=88.0
        ),
        power=Power(
            draw=251.5,
            limit=300.0,
            default_limit=300.0,
            min_limit=100.0,
            max_limit=300.0,
            energy=8_765_432.1,
        ),
        fan_speed=64.0,
        performance_state="P2",
        clocks=Clocks(graphics=1740, sm=1740, memory=7600, video=1545),
        max_clocks=Clocks(graphics=2100, sm=2100, memory=8001, video=1950),
        persistence_mode=True,
        compute_mode="Default",
        ecc_mode=True,
        ecc_errors=EccErrors(
            volatile_corrected=2,
            volatile_uncorrected=0,
            aggregate_corrected=17,
            aggregate_uncorrected=1,
        ),
        remapped_rows=RemappedRows(correctable=0, uncorrectable=0, pending=False, failure=False),
        retired_pages=RetiredPages(single_bit=0, double_bit=0, pending=False),
        throttle_reasons=("sw_power_cap",),
        mig_mode=False,
        processes=(
            ProcessSample(
                pid=4242 + index,
                type="C",
                name="python3",
                memory_used=20 * GIB,
                sm_utilization=80.0,
            ),
            ProcessSample(pid=1717, type="G", name="/usr/lib/xorg/Xorg", memory_used=120 * MIB),
            ProcessSample(pid=1818, type="C+G", name="blender", memory_used=2 * GIB),
        ),
    )
    return replace(sample, **changes)  # type: ignore[arg-type]


def snapshot(
    *gpus: GpuSample,
    driver: str | None = "550.54.15",
    cuda: str | None = "12.4",
) -> Snapshot:
    """A machine with ``gpus`` (renumbered 0..n-1)."""
    numbered = tuple(replace(gpu, index=i) for i, gpu in enumerate(gpus))
    return Snapshot(
        timestamp=datetime(2024, 9, 18, 21, 34, 12),
        gpus=numbered,
        driver_version=driver,
        cuda_version=cuda,
        attached_gpus=len(numbered),
    )


def mig_gpu(
    index: int = 0,
    *,
    instances: int = 7,
    processes_per_instance: int = 2,
    pid_base: int = 100_000,
    gpm: bool = True,
    derived: bool = False,
) -> GpuSample:
    """An H100 80GB in MIG mode with ``instances`` 1g.10gb instances (16 SMs each)."""
    devices: list[MigDeviceSample] = []
    processes: list[ProcessSample] = []
    pid = pid_base
    for slot in range(instances):
        gi = 7 + slot
        mine: list[ProcessSample] = []
        for n in range(processes_per_instance):
            mine.append(
                ProcessSample(
                    pid=pid,
                    type="C",
                    name="python3",
                    memory_used=(512 + 64 * n) * MIB,
                    gpu_instance_id=gi,
                    compute_instance_id=0,
                )
            )
            pid += 1
        processes.extend(mine)
        devices.append(
            MigDeviceSample(
                index=slot,
                gpu_instance_id=gi,
                compute_instance_id=0,
                profile="1g.10gb",
                profile_derived=derived,
                sm_count=16,
                memory=Memory(
                    total=9984 * MIB,
                    used=(600 + 100 * slot) * MIB,
                    free=(9384 - 100 * slot) * MIB,
                    reserved=0,
                ),
                bar1=Memory(total=16384 * MIB, used=2 * MIB, free=16382 * MIB),
                uuid=f"MIG-{index:02x}{slot:02x}c0de-5eed-5a1e-8000-00000000{slot:04x}",
                utilization=Utilization(gpu=10.0 * slot, memory=5.0 * slot)
                if gpm
                else Utilization(),
                processes=tuple(mine),
            )
        )
    return gpu_sample(
        index,
        name="NVIDIA H100 80GB HBM3",
        architecture="Hopper",
        utilization=Utilization(),
        memory=Memory(total=81559 * MIB, used=10000 * MIB, free=70000 * MIB, reserved=1559 * MIB),
        temperature=Temperature(
            gpu=41.0, memory=48.0, slowdown=90.0, shutdown=92.0, max_operating=87.0
        ),
        power=Power(
            draw=312.25, limit=700.0, default_limit=700.0, min_limit=200.0, max_limit=700.0
        ),
        fan_speed=None,
        throttle_reasons=(),
        mig_mode=True,
        mig_devices=tuple(devices),
        processes=tuple(processes),
    )


def h100_mig_box(gpus: int = 8, instances: int = 7, processes: int = 200) -> Snapshot:
    """The scale case: ``gpus`` H100s of ``instances`` MIG instances each; ``processes`` in all."""
    per_gpu = [processes // gpus + (1 if i < processes % gpus else 0) for i in range(gpus)]
    boards: list[GpuSample] = []
    pid = 100_000
    for index, count in enumerate(per_gpu):
        board = mig_gpu(index, instances=instances, processes_per_instance=0)
        spread: list[ProcessSample] = []
        devices = list(board.mig_devices)
        for n in range(count):
            device = devices[n % instances]
            spread.append(
                ProcessSample(
                    pid=pid,
                    type="C",
                    name="python3",
                    memory_used=256 * MIB,
                    gpu_instance_id=device.gpu_instance_id,
                    compute_instance_id=0,
                )
            )
            pid += 1
        devices = [
            replace(d, processes=tuple(p for p in spread if p.gpu_instance_id == d.gpu_instance_id))
            for d in devices
        ]
        boards.append(replace(board, mig_devices=tuple(devices), processes=tuple(spread)))
    return snapshot(*boards, driver="550.90.07", cuda="12.4")


def plain_box(gpus: int = 8) -> Snapshot:
    """``gpus`` fully reporting cards, a few processes each (no MIG)."""
    return snapshot(*(gpu_sample(i) for i in range(gpus)))


def varying(base: Snapshot, ticks: int = 120) -> list[Snapshot]:
    """``base`` with load, power and temperature moving tick by tick (for live UI demos)."""
    out: list[Snapshot] = []
    for tick in range(ticks):
        gpus = []
        for gpu in base.gpus:
            wave = (math.sin((tick + 3 * gpu.index) / 6) + 1) / 2
            utilization = gpu.utilization
            if utilization.gpu is not None:
                utilization = replace(utilization, gpu=float(round(100 * wave)))
            power = gpu.power
            if power.draw is not None and power.limit is not None:
                power = replace(power, draw=round(power.limit * (0.2 + 0.75 * wave), 2))
            temperature = gpu.temperature
            if temperature.gpu is not None:
                temperature = replace(temperature, gpu=float(round(40 + 40 * wave)))
            gpus.append(replace(gpu, utilization=utilization, power=power, temperature=temperature))
        out.append(replace(base, gpus=tuple(gpus)))
    return out


def from_capture(path: Path) -> list[Snapshot]:
    """Every document of an nvidia-smi XML capture (file, stream, .gz or directory)."""
    from gputop.sources.smi.recording import Recording

    with Recording.open(path) as recording:
        return list(recording)


def _failing(code: int) -> Callable[[], tuple[list[Snapshot], Faults]]:
    return lambda: ([snapshot(gpu_sample())], Faults(init_error=code))


def _h200_train() -> tuple[list[Snapshot], Faults]:
    # Imported here: that module builds on this one's machines.
    from fakes.nvml_h200 import h200_ticks

    return h200_ticks(), Faults()


SCENARIOS: dict[str, Callable[[], tuple[list[Snapshot], Faults]]] = {
    "h100-mig-8x7": lambda: ([h100_mig_box()], Faults()),
    "plain-8": lambda: ([plain_box(8)], Faults()),
    # A Kubernetes node: a whole GPU (PIDs 4242, 1717, 1818) and a MIG GPU with two
    # instances (PIDs 100000, 100001); tests give the PIDs cgroups (support.fake_node).
    "pods": lambda: (
        [snapshot(gpu_sample(0), mig_gpu(1, instances=2, processes_per_instance=1))],
        Faults(),
    ),
    "busy-2": lambda: (varying(plain_box(2)), Faults()),
    # One H200 (Hopper: GPM) under the training-like load it was recorded under.
    "h200-train": _h200_train,
    "no-gpu": lambda: ([snapshot()], Faults()),
    "no-library": _failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
    "no-driver": _failing(pynvml.NVML_ERROR_DRIVER_NOT_LOADED),
    "no-permission": _failing(pynvml.NVML_ERROR_NO_PERMISSION),
    "mismatch": _failing(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
}
"""Named machines for ``GPUTOP_FAKE_NVML``."""


def scenario(
    spec: str, search: Iterable[Path] = (Path.cwd(),)
) -> tuple[Sequence[Snapshot], Faults]:
    """Snapshots and faults for a scenario name or a capture path."""
    builder = SCENARIOS.get(spec)
    if builder is not None:
        return builder()
    path = Path(spec)
    candidates = [path] if path.is_absolute() else [base / path for base in search]
    for candidate in candidates:
        if candidate.exists():
            return from_capture(candidate), Faults()
    known = ", ".join(sorted(SCENARIOS))
    raise ValueError(f"GPUTOP_FAKE_NVML={spec!r}: no such capture, and not a scenario ({known})")
