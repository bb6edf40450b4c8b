"""Round trip: capture XML -> fake NVML -> NvmlSource equals the XML reader, field by field.

What the NVML path cannot carry, and so is not compared:

* ``Snapshot.timestamp`` and ``Snapshot.host``: NVML has no capture time or host name (the live
  source stamps ``now`` and this machine's name);
* ``Snapshot.attached_gpus`` where a capture was edited to hold fewer ``<gpu>`` elements than it
  claims (a100-sxm4-80gb-mig-v12.xml says 4, holds 1): NVML's count is its number of devices;
* ``unavailable`` reasons other than UNDER_MIG: the XML tells "N/A" from "not reported" from
  "deprecated", NVML only says NotSupported / NoPermission / error. Values are compared;
* the order of processes: NVML lists compute processes before graphics ones; compared by PID.

The fake also cannot give half of a value NVML reads in one call (utilization gpu without
memory, power min without max); no bundled capture has such a half.
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import pytest

from fakes.nvml_fake import FakeNvml
from fakes.nvml_harness import nvml_source
from gputop.model import GpuSample, MigDeviceSample, Reason, Snapshot
from gputop.sources.nvml.gpm import ACTIVITY_PATHS
from support.shortcuts import snapshot_from_path

CAPTURES = sorted((Path(__file__).resolve().parents[2] / "snapshots").glob("*.xml"))


def _mig(device: MigDeviceSample) -> MigDeviceSample:
    # The same profile, learnt two ways: NVML names MIG devices after it, the XML does not.
    return replace(
        device,
        unavailable=(),
        profile_from_name=False,
        processes=tuple(sorted(device.processes, key=lambda p: p.pid)),
    )


def _gpu(gpu: GpuSample) -> GpuSample:
    return replace(
        gpu,
        unavailable=(),
        processes=tuple(sorted(gpu.processes, key=lambda p: p.pid)),
        mig_devices=tuple(_mig(d) for d in gpu.mig_devices),
    )


def _through_nvml(want: Snapshot) -> Snapshot:
    with nvml_source(FakeNvml(want)) as source:
        return source.poll()


def test_every_bundled_capture_is_checked() -> None:
    assert len(CAPTURES) >= 11


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_capture_round_trip(capture: Path) -> None:
    want = snapshot_from_path(capture)
    got = _through_nvml(want)
    assert got.driver_version == want.driver_version
    assert got.cuda_version == want.cuda_version
    if want.attached_gpus == len(want.gpus):
        assert got.attached_gpus == want.attached_gpus
    assert len(got.gpus) == len(want.gpus)
    for have, expected in zip(got.gpus, want.gpus, strict=True):
        have, expected = _gpu(have), _gpu(expected)
        for f in fields(GpuSample):
            assert getattr(have, f.name) == getattr(expected, f.name), (capture.name, f.name)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_under_mig_reasons_agree(capture: Path) -> None:
    want = snapshot_from_path(capture)
    got = _through_nvml(want)

    def under_mig(unavailable: tuple[tuple[str, Reason], ...]) -> set[str]:
        return {path for path, reason in unavailable if reason is Reason.UNDER_MIG}

    for have, expected in zip(got.gpus, want.gpus, strict=True):
        # NVML also says so of the per-process SM figures and of GPM's activity, which is
        # measured per instance under MIG; no recording format carries either.
        only_live = {"processes.sm_utilization", *ACTIVITY_PATHS}
        assert under_mig(have.unavailable) - only_live == under_mig(expected.unavailable)
        for mine, theirs in zip(have.mig_devices, expected.mig_devices, strict=True):
            # NVML also says why it has no per-instance encoder/decoder figures.
            assert under_mig(theirs.unavailable) <= under_mig(mine.unavailable)
            assert mine.utilization == theirs.utilization
