"""Slow values: read on the first tick and every ``slow_refresh`` seconds, reused in between.

Persistence, compute and ECC modes, ECC counters, the enforced power limit, BAR1 and the MIG
layout (instance handles and UUIDs) change rarely; a steady tick reads only what moves. A MIG
layout that changes under the cached handles is re-read in the same tick; lost and hung GPUs
behave as they always did.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

import pynvml  # noqa: TID251 -- the source under test is handed the real pynvml
import pytest

from fakes.nvml_fake import Call, FakeNvml, Faults
from fakes.nvml_install import installed
from fakes.nvml_scenarios import MIB, gpu_sample, h100_mig_box, mig_gpu, snapshot
from gputop.model import EccErrors, GpuSample, MigDeviceSample, Power, Reason, Snapshot
from gputop.sources.nvml.device import SLOW_REFRESH
from gputop.sources.nvml.source import NvmlSource

SLOW_CALLS = {
    "nvmlDeviceGetTotalEccErrors": 4,
    "nvmlDeviceGetEccMode": 1,
    "nvmlDeviceGetPersistenceMode": 1,
    "nvmlDeviceGetComputeMode": 1,
    "nvmlDeviceGetEnforcedPowerLimit": 1,
    "nvmlDeviceGetBAR1MemoryInfo": 1,
    # 0.1-0.4 ms a call on an H200 (prices), and it changes only with a GPU reset.
    "nvmlDeviceGetMigMode": 1,
}
"""What one plain GPU's refresh reads, per C function."""

FAST_CALLS = (
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetPerformanceState",
)


class Clock:
    """Monotonic seconds that only move when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def source(
    fake: FakeNvml, clock: Clock, *, deadline: float | None = None, slow_refresh: float = 5.0
) -> Iterator[NvmlSource]:
    with installed(fake):
        pynvml.nvmlInit()
        polled = NvmlSource(
            pynvml,
            deadline=deadline,
            host="testhost",
            shutdown_on_close=True,
            slow_refresh=slow_refresh,
            clock=clock,
        )
        try:
            yield polled
        finally:
            polled.close()


def _poll(fake: FakeNvml, polled: NvmlSource) -> tuple[Snapshot, list[Call]]:
    mark = fake.mark()
    got = polled.poll()
    return got, fake.calls_since(mark)


def _counts(calls: Sequence[Call]) -> Counter[str]:
    return Counter(call.name for call in calls)


def _repeats(calls: Sequence[Call]) -> list[Call]:
    return [call for call, n in Counter(calls).items() if n > 1]


def _changed_slowly(gpu: GpuSample) -> GpuSample:
    """``gpu`` with every slow value and some fast ones different."""
    return replace(
        gpu,
        power=replace(gpu.power, draw=123.0, limit=250.0),
        temperature=replace(gpu.temperature, gpu=55.0),
        persistence_mode=False,
        compute_mode="Exclusive_Process",
        ecc_errors=EccErrors(
            volatile_corrected=9,
            volatile_uncorrected=1,
            aggregate_corrected=40,
            aggregate_uncorrected=2,
        ),
        bar1=replace(gpu.bar1, used=100 * MIB, free=156 * MIB),
    )


def test_the_default_cadence_is_a_few_seconds() -> None:
    assert 1.0 < SLOW_REFRESH <= 10.0


def test_slow_values_are_read_first_then_after_the_cadence_not_in_between() -> None:
    before = gpu_sample(0)
    after = _changed_slowly(before)
    fake = FakeNvml([snapshot(before), snapshot(after)])
    clock = Clock()
    with source(fake, clock) as polled:
        first, first_calls = _poll(fake, polled)
        clock.now += 1.0
        second, second_calls = _poll(fake, polled)
        clock.now += 3.9
        third, third_calls = _poll(fake, polled)
        clock.now += 0.1  # 5 s after the first tick
        fourth, fourth_calls = _poll(fake, polled)

    for name, count in SLOW_CALLS.items():
        assert _counts(first_calls)[name] == count, name
        assert _counts(second_calls)[name] == 0, name
        assert _counts(third_calls)[name] == 0, name
        assert _counts(fourth_calls)[name] == count, name
    for name in FAST_CALLS:
        for calls in (first_calls, second_calls, third_calls, fourth_calls):
            assert _counts(calls)[name] >= 1, name

    # Fast values move at once; slow ones keep the last refresh's reading until the next.
    gpu2, gpu3, gpu4 = second.gpus[0], third.gpus[0], fourth.gpus[0]
    assert gpu2.power.draw == 123.0 and gpu2.temperature.gpu == 55.0
    for gpu in (gpu2, gpu3):
        assert gpu.power.limit == before.power.limit
        assert gpu.ecc_errors == before.ecc_errors
        assert gpu.persistence_mode is True and gpu.compute_mode == "Default"
        assert gpu.bar1 == before.bar1
    assert gpu4.power == Power(
        draw=123.0,
        limit=250.0,
        default_limit=300.0,
        min_limit=100.0,
        max_limit=300.0,
        energy=before.power.energy,
    )
    assert gpu4.ecc_errors == after.ecc_errors
    assert gpu4.persistence_mode is False and gpu4.compute_mode == "Exclusive_Process"
    assert gpu4.bar1 == after.bar1
    # A reused reading reports the same gaps as a fresh one.
    assert first.gpus[0].unavailable == gpu2.unavailable == gpu4.unavailable


def test_a_zero_cadence_reads_everything_every_tick() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    clock = Clock()
    with source(fake, clock, slow_refresh=0.0) as polled:
        _poll(fake, polled)
        _, second = _poll(fake, polled)
        _, third = _poll(fake, polled)
    for name, count in SLOW_CALLS.items():
        assert _counts(second)[name] == count, name
    assert _counts(second) == _counts(third)


def test_each_gpu_keeps_its_own_cadence_with_threads() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    clock = Clock()
    with source(fake, clock, deadline=5.0) as polled:
        _poll(fake, polled)
        clock.now += 1.0
        _, steady = _poll(fake, polled)
        clock.now += 5.0
        _, refresh = _poll(fake, polled)
    assert _counts(steady)["nvmlDeviceGetEccMode"] == 0
    assert {c.gpu for c in refresh if c.name == "nvmlDeviceGetEccMode"} == {0, 1}
    assert _repeats(steady) == [] and _repeats(refresh) == []


def test_a_slow_read_that_fails_for_now_is_retried_next_tick() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0)),
        Faults(errors={(0, "nvmlDeviceGetEccMode"): pynvml.NVML_ERROR_UNKNOWN}),
    )
    clock = Clock()
    with source(fake, clock) as polled:
        first, _ = _poll(fake, polled)
        del fake.faults.errors[(0, "nvmlDeviceGetEccMode")]
        clock.now += 1.0
        second, calls = _poll(fake, polled)
        clock.now += 1.0
        third, later = _poll(fake, polled)
    assert first.gpus[0].ecc_mode is None
    assert first.gpus[0].reason("ecc_mode") is Reason.ERROR
    assert _counts(calls)["nvmlDeviceGetEccMode"] == 1
    assert second.gpus[0].ecc_mode is True and second.gpus[0].reason("ecc_mode") is None
    # Once read, it is reused again.
    assert _counts(later)["nvmlDeviceGetEccMode"] == 0
    assert third.gpus[0].ecc_mode is True


def test_a_refused_slow_value_keeps_its_reason_on_reused_ticks() -> None:
    fake = FakeNvml(
        snapshot(gpu_sample(0)),
        Faults(errors={(0, "nvmlDeviceGetPersistenceMode"): pynvml.NVML_ERROR_NO_PERMISSION}),
    )
    clock = Clock()
    with source(fake, clock) as polled:
        ticks = []
        for _ in range(3):
            ticks.append(_poll(fake, polled))
            clock.now += 1.0
    for got, _ in ticks:
        assert got.gpus[0].reason("persistence_mode") is Reason.NO_PERMISSION
    assert sum(_counts(calls)["nvmlDeviceGetPersistenceMode"] for _, calls in ticks) == 1


def test_a_mig_box_reads_its_layout_on_refresh_ticks_only() -> None:
    fake = FakeNvml(h100_mig_box())
    clock = Clock()
    with source(fake, clock) as polled:
        _, first = _poll(fake, polled)
        clock.now += 1.0
        steady_snapshot, steady = _poll(fake, polled)
        clock.now += 5.0
        refreshed, refresh = _poll(fake, polled)
    for calls in (first, refresh):
        assert _counts(calls)["nvmlDeviceGetMigDeviceHandleByIndex"] == 56
        assert _counts(calls)["nvmlDeviceGetBAR1MemoryInfo"] == 8 + 56
    # The GPUs' UUIDs are static (first tick only), the MIG devices' slow.
    assert _counts(first)["nvmlDeviceGetUUID"] == 8 + 56
    assert _counts(refresh)["nvmlDeviceGetUUID"] == 56
    for name in ("nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceGetUUID"):
        assert _counts(steady)[name] == 0, name
    # What moves is read on every tick, for every instance.
    assert _counts(steady)["nvmlDeviceGetMemoryInfo_v2"] == 8 + 56
    assert _counts(steady)["nvmlGpmMigSampleGet"] == 56
    # MIG mode is slow (a GPU reset changes it): read on the first and refresh ticks only.
    assert _counts(steady)["nvmlDeviceGetMigMode"] == 0
    assert _counts(first)["nvmlDeviceGetMigMode"] == _counts(refresh)["nvmlDeviceGetMigMode"] == 8
    assert _repeats(steady) == [] and _repeats(refresh) == []
    assert steady_snapshot.gpus == refreshed.gpus


def _relaid(gpu: GpuSample, devices: Sequence[MigDeviceSample]) -> GpuSample:
    processes = tuple(p for d in devices for p in d.processes)
    return replace(gpu, mig_devices=tuple(devices), processes=processes)


def _run(
    snapshots: Sequence[Snapshot], ticks: int, *, invalidate_at: int | None = None
) -> list[tuple[Snapshot, list[Call]]]:
    """Poll ``ticks`` times one second apart (no refresh after the first tick)."""
    fake = FakeNvml(snapshots)
    clock = Clock()
    out = []
    with source(fake, clock) as polled:
        for tick in range(ticks):
            if tick == invalidate_at:
                fake.invalidate_mig_handles(0)
            out.append(_poll(fake, polled))
            clock.now += 1.0
    return out


def test_an_instance_destroyed_between_refreshes_is_gone_that_tick() -> None:
    before = mig_gpu(processes_per_instance=1)
    after = _relaid(before, before.mig_devices[:3])
    (first, _), (second, calls), (third, _) = _run([snapshot(before), snapshot(after)], 3)
    assert len(first.gpus[0].mig_devices) == 7
    assert [d.gpu_instance_id for d in second.gpus[0].mig_devices] == [7, 8, 9]
    assert [d.uuid for d in second.gpus[0].mig_devices] == [d.uuid for d in before.mig_devices[:3]]
    # The failing cached handles made the tick enumerate again, with no call made twice.
    assert _counts(calls)["nvmlDeviceGetMigDeviceHandleByIndex"] == 7
    assert _repeats(calls) == []
    assert [d.gpu_instance_id for d in third.gpus[0].mig_devices] == [7, 8, 9]


def test_a_layout_rebuilt_behind_invalidated_handles_is_read_again_that_tick() -> None:
    before = mig_gpu(processes_per_instance=1)
    rebuilt = tuple(
        replace(
            d, gpu_instance_id=(d.gpu_instance_id or 0) + 20, uuid=f"MIG-rebuilt-{i}", processes=()
        )
        for i, d in enumerate(before.mig_devices)
    )
    after = _relaid(before, rebuilt)
    ticks = _run([snapshot(before), snapshot(after)], 4, invalidate_at=1)
    (_, _), (second, calls), (third, _), (fourth, _) = ticks
    devices = second.gpus[0].mig_devices
    assert [d.uuid for d in devices] == [f"MIG-rebuilt-{i}" for i in range(7)]
    assert [d.gpu_instance_id for d in devices] == [d.gpu_instance_id for d in rebuilt]
    assert {d.profile for d in devices} == {"1g.10gb"}
    assert _counts(calls)["nvmlDeviceGetMigDeviceHandleByIndex"] == 7
    assert _repeats(calls) == []
    # The new instances' activity starts over: one GPM sample is no rate.
    for device in devices:
        assert dict(device.unavailable)["utilization.gpu"] is Reason.NOT_AVAILABLE
    assert [d.utilization.gpu for d in fourth.gpus[0].mig_devices] == [10.0 * i for i in range(7)]
    assert third.gpus[0].mig_devices[0].uuid == "MIG-rebuilt-0"


def test_another_instance_size_behind_a_valid_handle_is_read_again_that_tick() -> None:
    before = mig_gpu(instances=2, processes_per_instance=0)
    bigger = (
        replace(
            before.mig_devices[0],
            profile="3g.40gb",
            sm_count=60,
            uuid="MIG-big",
            memory=replace(before.mig_devices[0].memory, total=40 * 1024 * MIB),
        ),
        before.mig_devices[1],
    )
    after = _relaid(before, bigger)
    (_, _), (second, calls) = _run([snapshot(before), snapshot(after)], 2)
    device = second.gpus[0].mig_devices[0]
    assert (device.uuid, device.profile, device.sm_count) == ("MIG-big", "3g.40gb", 60)
    assert _counts(calls)["nvmlDeviceGetMigDeviceHandleByIndex"] == 7
    assert _repeats(calls) == []


def test_a_new_instance_with_a_process_on_it_shows_up_that_tick() -> None:
    full = mig_gpu(instances=4, processes_per_instance=1)
    before = _relaid(full, full.mig_devices[:3])
    (first, _), (second, calls) = _run([snapshot(before), snapshot(full)], 2)
    assert len(first.gpus[0].mig_devices) == 3
    assert len(second.gpus[0].mig_devices) == 4
    newcomer = second.gpus[0].mig_devices[3]
    assert [p.pid for p in newcomer.processes] == [p.pid for p in full.mig_devices[3].processes]
    assert _repeats(calls) == []


def test_a_new_empty_instance_shows_up_at_the_next_refresh() -> None:
    full = mig_gpu(instances=4, processes_per_instance=0)
    before = _relaid(full, full.mig_devices[:3])
    fake = FakeNvml([snapshot(before), snapshot(full)])
    clock = Clock()
    with source(fake, clock) as polled:
        polled.poll()
        clock.now += 1.0
        polled.poll()
        clock.now += 5.0
        refreshed = polled.poll()
    assert [d.uuid for d in refreshed.gpus[0].mig_devices] == [d.uuid for d in full.mig_devices]


def test_a_gpu_lost_between_refreshes_is_lost_at_once() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)), Faults(lose_at={1: 2}))
    clock = Clock()
    with source(fake, clock) as polled:
        ticks = []
        for _ in range(4):
            ticks.append(polled.poll())
            clock.now += 1.0
    assert [s.gpus[1].lost for s in ticks] == [False, False, True, True]
    lost = ticks[2].gpus[1]
    assert lost.name == "NVIDIA RTX A6000" and lost.uuid == gpu_sample(1).uuid
    assert lost.reason("lost") is Reason.GPU_LOST
    assert all(not s.gpus[0].lost and s.gpus[0].power.draw == 251.5 for s in ticks)


@pytest.mark.parametrize("function", ["nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetPowerUsage"])
def test_a_call_hung_on_a_refresh_tick_makes_the_gpu_stale(function: str) -> None:
    fake = FakeNvml(snapshot(gpu_sample(0), gpu_sample(1)))
    clock = Clock()
    with source(fake, clock, deadline=0.3) as polled:
        polled.poll()
        clock.now += 1.0
        polled.poll()
        clock.now += 5.0
        hang = fake.hang(0, function)
        refresh = polled.poll()
        hang.set()
        # The released sample finishes on its worker: wait for it here, or its remaining
        # calls reach whatever fake the next test installs (CI saw one enumerate MIG there).
        deadline = time.monotonic() + 10.0
        while polled.poll().gpus[0].stale:
            assert time.monotonic() < deadline, "the released sample never finished"
            time.sleep(0.01)
    stale, other = refresh.gpus
    assert stale.stale and not other.stale
    assert stale.power.draw == 251.5 and stale.ecc_errors == gpu_sample(0).ecc_errors
    assert other.ecc_errors == gpu_sample(1).ecc_errors


def test_an_instance_gpm_no_longer_finds_is_read_again_the_next_tick() -> None:
    # Same size, same position, handles still valid: only GPM notices the instance is gone.
    before = mig_gpu(instances=2, processes_per_instance=0)
    recreated = (
        replace(before.mig_devices[0], gpu_instance_id=30, uuid="MIG-recreated"),
        before.mig_devices[1],
    )
    after = _relaid(before, recreated)
    (_, _), (_, noticed), (third, calls) = _run([snapshot(before), snapshot(after)], 3)
    assert _counts(noticed)["nvmlDeviceGetMigDeviceHandleByIndex"] == 0
    assert _counts(calls)["nvmlDeviceGetMigDeviceHandleByIndex"] == 7
    device = third.gpus[0].mig_devices[0]
    assert (device.uuid, device.gpu_instance_id) == ("MIG-recreated", 30)
    assert _repeats(calls) == []
