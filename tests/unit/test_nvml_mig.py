"""MIG through NVML: instances, profiles, per-instance activity via GPM, attribution."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pynvml  # noqa: TID251 -- the request struct the source makes is counted
import pytest

from fakes.nvml_fake import FakeNvml
from fakes.nvml_harness import nvml_source
from fakes.nvml_scenarios import MIB, gpu_sample, h100_mig_box, mig_gpu, snapshot
from gputop.model import Reason, Snapshot, reason_for

UTILIZATION = (
    "utilization.gpu",
    "utilization.memory",
    "utilization.encoder",
    "utilization.decoder",
)


def _ticks(snapshots: Snapshot | list[Snapshot], count: int) -> list[Snapshot]:
    fake = FakeNvml(snapshots)
    with nvml_source(fake) as source:
        return [source.poll() for _ in range(count)]


def test_gpu_utilization_under_mig_is_none_not_zero() -> None:
    gpu = _ticks(snapshot(mig_gpu()), 1)[0].gpus[0]
    assert gpu.mig_mode is True
    for path in UTILIZATION:
        assert gpu.reason(path) is Reason.UNDER_MIG, path
    assert gpu.utilization.gpu is None and gpu.utilization.memory is None


def test_instances_identity_memory_and_reported_profile() -> None:
    want = mig_gpu()
    got = _ticks(snapshot(want), 1)[0].gpus[0]
    assert len(got.mig_devices) == 7
    for have, expected in zip(got.mig_devices, want.mig_devices, strict=True):
        assert have.index == expected.index
        assert have.gpu_instance_id == expected.gpu_instance_id
        assert have.compute_instance_id == 0
        assert have.uuid == expected.uuid
        assert have.sm_count == 16
        assert have.memory == expected.memory
        assert have.bar1.total == 16384 * MIB
        assert have.profile == "1g.10gb"
        assert have.profile_derived is False


def test_profile_derived_without_privileges() -> None:
    got = _ticks(snapshot(mig_gpu(derived=True)), 1)[0].gpus[0]
    assert {(d.profile, d.profile_derived) for d in got.mig_devices} == {("1g.10gb", True)}


def test_compute_instance_smaller_than_its_gpu_instance() -> None:
    want = mig_gpu(instances=2)
    devices = (
        replace(want.mig_devices[0], profile="1c.3g.40gb", sm_count=16, compute_instance_id=0),
        replace(
            want.mig_devices[1],
            profile="2c.3g.40gb",
            sm_count=32,
            gpu_instance_id=want.mig_devices[0].gpu_instance_id,
            compute_instance_id=1,
        ),
    )
    got = _ticks(snapshot(replace(want, mig_devices=devices)), 1)[0].gpus[0]
    assert [d.profile for d in got.mig_devices] == ["1c.3g.40gb", "2c.3g.40gb"]
    assert [d.compute_instance_id for d in got.mig_devices] == [0, 1]


def test_gpm_activity_needs_two_ticks() -> None:
    first, second, third = (s.gpus[0] for s in _ticks(snapshot(mig_gpu()), 3))
    for device in first.mig_devices:
        assert device.utilization.gpu is None
        assert reason_for(device.unavailable, "utilization.gpu") is Reason.NOT_AVAILABLE
    for tick in (second, third):
        assert [d.utilization.gpu for d in tick.mig_devices] == [10.0 * i for i in range(7)]
        assert [d.utilization.memory for d in tick.mig_devices] == [5.0 * i for i in range(7)]
        for device in tick.mig_devices:
            assert dict(device.unavailable).get("utilization.gpu") is None
            # NVML has no per-instance encoder/decoder figures.
            assert dict(device.unavailable)["utilization.encoder"] is Reason.UNDER_MIG


def test_without_gpm_instance_activity_is_under_mig() -> None:
    for tick in _ticks(snapshot(mig_gpu(gpm=False)), 2):
        for device in tick.gpus[0].mig_devices:
            assert device.utilization.gpu is None
            assert dict(device.unavailable)["utilization.gpu"] is Reason.UNDER_MIG
            assert dict(device.unavailable)["utilization.memory"] is Reason.UNDER_MIG


def test_processes_attributed_to_their_instance_and_listed_on_the_gpu() -> None:
    want = mig_gpu(processes_per_instance=3)
    got = _ticks(snapshot(want), 1)[0].gpus[0]
    assert {p.pid for p in got.processes} == {p.pid for p in want.processes}
    assert len(got.processes) == 21
    for device in got.mig_devices:
        assert len(device.processes) == 3
        assert {p.gpu_instance_id for p in device.processes} == {device.gpu_instance_id}
        assert {p.compute_instance_id for p in device.processes} == {0}
        assert {p.name for p in device.processes} == {"python3"}
    # No per-process SM samples under MIG: unknown and said why.
    assert got.reason("processes.sm_utilization") is Reason.UNDER_MIG


def test_gpm_buffers_are_freed_on_close() -> None:
    fake = FakeNvml(snapshot(mig_gpu()))
    with nvml_source(fake) as source:
        source.poll()
        source.poll()
        assert fake.live_gpm_samples == 14  # two per GPU instance
    assert fake.live_gpm_samples == 0


def test_one_gpm_metrics_request_per_gpu_however_many_instances(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NVML's request struct has room for every GPM metric (about 9 KiB): one per instance
    and direction was 2 MiB of the 8x7 box's memory. Each instance still reads its own
    activity through the shared one."""
    made: list[Any] = []
    real = pynvml.c_nvmlGpmMetricsGet_t

    def counted() -> Any:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(pynvml, "c_nvmlGpmMetricsGet_t", counted)
    ticks = _ticks(h100_mig_box(gpus=2, processes=14), 3)
    assert len(made) == 2
    for tick in ticks[1:]:
        for gpu in tick.gpus:
            assert [d.utilization.gpu for d in gpu.mig_devices] == [10.0 * i for i in range(7)]
            assert [d.utilization.memory for d in gpu.mig_devices] == [5.0 * i for i in range(7)]


def test_mig_switched_off_between_ticks() -> None:
    on = snapshot(mig_gpu())
    off = snapshot(gpu_sample(0, name="NVIDIA H100 80GB HBM3"))
    first, second, third = (s.gpus[0] for s in _ticks([on, off], 3))
    assert first.mig_mode and len(first.mig_devices) == 7
    # MIG mode is a slow value (0.1-0.4 ms a call): the instances gone at once are seen at
    # once, and make the next tick read the mode, whatever the cadence.
    assert second.mig_devices == ()
    assert third.mig_mode is False and third.mig_devices == ()
    # What was unsupported under MIG is asked again.
    assert third.utilization.gpu == 87.0
    assert third.reason("utilization.gpu") is None


def test_instance_destroyed_between_ticks() -> None:
    before = mig_gpu()
    after = replace(before, mig_devices=before.mig_devices[:3])
    first, second = (s.gpus[0] for s in _ticks([snapshot(before), snapshot(after)], 2))
    assert len(first.mig_devices) == 7
    assert [d.gpu_instance_id for d in second.mig_devices] == [7, 8, 9]


def test_scale_box() -> None:
    got = _ticks(h100_mig_box(), 2)[1]
    assert len(got.gpus) == 8
    assert sum(len(g.processes) for g in got.gpus) == 200
    assert all(len(g.mig_devices) == 7 for g in got.gpus)
    assert all(d.utilization.gpu is not None for g in got.gpus for d in g.mig_devices)
    assert sum(len(d.processes) for g in got.gpus for d in g.mig_devices) == 200


def test_gpm_buffers_freed_when_mig_is_switched_off() -> None:
    fake = FakeNvml([snapshot(mig_gpu()), snapshot(mig_gpu()), snapshot(gpu_sample(0))])
    with nvml_source(fake) as source:
        source.poll()
        source.poll()
        assert fake.live_gpm_samples == 14
        source.poll()  # the instances are gone: the mode is read again next tick
        source.poll()
        assert fake.live_gpm_samples == 0


def test_profile_from_the_device_name_when_neither_profile_calls_nor_sms_answer() -> None:
    # An unprivileged user on a driver that reports no SM count either: nvitop still shows
    # the profile, read from the MIG device's name ("NVIDIA H100 80GB HBM3 MIG 1g.10gb").
    want = mig_gpu(derived=True, instances=2)
    want = replace(want, mig_devices=tuple(replace(d, sm_count=None) for d in want.mig_devices))
    got = _ticks(snapshot(want), 1)[0].gpus[0]
    assert [(d.profile, d.profile_derived, d.profile_from_name) for d in got.mig_devices] == [
        ("1g.10gb", True, True)
    ] * 2
    assert all(d.sm_count is None for d in got.mig_devices)


def test_a_name_without_a_profile_falls_back_to_sm_count_and_memory() -> None:
    want = mig_gpu(derived=True, instances=1)
    # The fake names a device with no profile "… MIG ?"; the SM count (16) still tells.
    unnamed = replace(want.mig_devices[0], profile=None)
    got = _ticks(snapshot(replace(want, mig_devices=(unnamed,))), 1)[0].gpus[0]
    device = got.mig_devices[0]
    assert (device.profile, device.profile_derived, device.profile_from_name) == (
        "1g.10gb",
        True,
        False,
    )
