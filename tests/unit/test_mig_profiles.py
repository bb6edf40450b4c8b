"""MIG profile names worked out from SM count and memory, checked against real captures.

The expected names are what nvidia-smi itself printed for those instances: the A100 80GB
capture bundled in snapshots/, and `nvidia-smi` text captures of an H100 80GB HBM3 and an
H200 with MIG (utkuozdemir/nvidia_gpu_exporter, driver 590.48.01), whose instance sizes are
copied here as literals.
"""

from __future__ import annotations

import pytest

from gputop.model.mig_profiles import derive_profile

MIB = 1048576
GIB = 1024 * MIB


@pytest.mark.parametrize(
    ("gpu", "gpu_mib", "sms", "instance_mib", "expected"),
    [
        # A100-SXM4-80GB capture: 4 instances of 14 SMs and 19968 MiB, "1g.20gb".
        ("NVIDIA A100-SXM4-80GB", 81920, 14, 19968, "1g.20gb"),
        # H100 80GB HBM3 (81559 MiB): "MIG 3g.40gb", "MIG 2g.20gb", "MIG 1g.10gb".
        ("NVIDIA H100 80GB HBM3", 81559, 60, 40448, "3g.40gb"),
        ("NVIDIA H100 80GB HBM3", 81559, 32, 20096, "2g.20gb"),
        ("NVIDIA H100 80GB HBM3", 81559, 16, 9984, "1g.10gb"),
        # H200 (143771 MiB): "MIG 2g.35gb", "MIG 1g.18gb".
        ("NVIDIA H200", 143771, 32, 33280, "2g.35gb"),
        ("NVIDIA H200", 143771, 16, 16384, "1g.18gb"),
    ],
)
def test_profiles_nvidia_smi_printed(
    gpu: str, gpu_mib: int, sms: int, instance_mib: int, expected: str
) -> None:
    assert derive_profile(gpu, gpu_mib * MIB, sms, instance_mib * MIB) == expected


def test_compute_instance_smaller_than_its_gpu_instance_has_no_profile() -> None:
    # The H200 capture's GPU instance 2 (3g.71gb, 71424 MiB) holds compute instances of 16
    # and 32 SMs: the SM count is the compute instance's, so no GPU-instance name fits.
    assert derive_profile("NVIDIA H200", 143771 * MIB, 16, 71424 * MIB) is None
    assert derive_profile("NVIDIA H200", 143771 * MIB, 32, 71424 * MIB) is None


@pytest.mark.parametrize(
    ("gpu", "gpu_memory", "sms", "memory"),
    [
        (None, 80 * GIB, 14, 20 * GIB),
        ("NVIDIA A100-SXM4-80GB", None, 14, 20 * GIB),
        ("NVIDIA A100-SXM4-80GB", 80 * GIB, None, 20 * GIB),
        ("NVIDIA A100-SXM4-80GB", 80 * GIB, 14, None),
        ("NVIDIA A100-SXM4-80GB", 0, 14, 20 * GIB),
        ("NVIDIA A100-SXM4-80GB", -80 * GIB, 14, 20 * GIB),
        ("Tesla T4", 15 * GIB, 14, 5 * GIB),  # not a MIG GPU
        ("NVIDIA A100-SXM4-80GB", 80 * GIB, 15, 20 * GIB),  # no slice has 15 SMs
        ("NVIDIA A100-SXM4-80GB", 80 * GIB, 14, 60 * GIB),  # 1 compute, 6 memory slices
        ("NVIDIA A100-SXM4-80GB", 200 * GIB, 14, 20 * GIB),  # memory no A100 has
    ],
)
def test_unknown_geometry_gives_none(
    gpu: str | None, gpu_memory: int | None, sms: int | None, memory: int | None
) -> None:
    assert derive_profile(gpu, gpu_memory, sms, memory) is None


def test_a100_40gb_and_a30() -> None:
    assert derive_profile("NVIDIA A100-SXM4-40GB", 40 * GIB, 14, 5 * GIB) == "1g.5gb"
    assert derive_profile("NVIDIA A100-SXM4-40GB", 40 * GIB, 42, 20 * GIB) == "3g.20gb"
    assert derive_profile("NVIDIA A100-SXM4-40GB", 40 * GIB, 98, 40 * GIB) == "7g.40gb"
    assert derive_profile("NVIDIA A30", 24 * GIB, 28, 12 * GIB) == "2g.12gb"
    # The A30 has no 3-slice profile.
    assert derive_profile("NVIDIA A30", 24 * GIB, 42, 18 * GIB) is None
