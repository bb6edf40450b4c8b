"""What each tick costs in NVML calls: none twice, and fewer once static values are known."""

from __future__ import annotations

from collections import Counter

import pytest

from fakes.nvml_fake import Call, FakeNvml, Faults
from fakes.nvml_harness import nvml_source
from fakes.nvml_scenarios import gpu_sample, h100_mig_box, mig_gpu, plain_box, snapshot
from gputop.model import Snapshot

OLD_DRIVER = Faults(
    missing={
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetCurrentClocksEventReasons",
        *(
            f"nvmlDevice{kind}RunningProcesses{version}"
            for kind in ("GetCompute", "GetGraphics", "GetMPSCompute")
            for version in ("_v3", "_v2")
        ),
    }
)

SCENARIOS: dict[str, tuple[Snapshot, Faults | None]] = {
    "one-gpu": (snapshot(gpu_sample(0)), None),
    "eight-gpus": (plain_box(8), None),
    "old-driver": (plain_box(2), OLD_DRIVER),
    "mig-gpm": (snapshot(mig_gpu()), None),
    "mig-unprivileged": (snapshot(mig_gpu(derived=True, gpm=False)), None),
    "h100-8x7-200": (h100_mig_box(), None),
}


def _repeats(calls: list[Call]) -> list[Call]:
    return [call for call, n in Counter(calls).items() if n > 1]


@pytest.mark.parametrize("deadline", [None, 5.0], ids=["inline", "threaded"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_no_call_is_made_twice_in_a_tick(name: str, deadline: float | None) -> None:
    snap, faults = SCENARIOS[name]
    fake = FakeNvml(snap, faults)
    with nvml_source(fake, deadline=deadline) as source:
        ticks: list[list[Call]] = []
        for _ in range(3):
            mark = fake.mark()
            source.poll()
            ticks.append(fake.calls_since(mark))
    for tick in ticks:
        assert tick, "a tick made no NVML call"
        assert _repeats(tick) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_later_ticks_cost_less_than_the_first(name: str) -> None:
    snap, faults = SCENARIOS[name]
    fake = FakeNvml(snap, faults)
    with nvml_source(fake) as source:
        sizes = []
        for _ in range(3):
            mark = fake.mark()
            source.poll()
            sizes.append(len(fake.calls_since(mark)))
    assert sizes[1] < sizes[0]
    # Steady state: the same calls every tick.
    assert sizes[2] == sizes[1]


def test_a_steady_tick_asks_only_for_what_changes() -> None:
    fake = FakeNvml(snapshot(gpu_sample(0)))
    with nvml_source(fake) as source:
        source.poll()
        mark = fake.mark()
        source.poll()
    counts = fake.counts_since(mark)
    assert counts["nvmlDeviceGetClockInfo"] == 4
    assert counts["nvmlDeviceGetTemperature"] == 1
    assert counts["nvmlDeviceGetPowerUsage"] == 1
    assert counts["nvmlDeviceGetMaxClockInfo"] == 0
    # Slow values (re-read every SLOW_REFRESH seconds) come from the first tick.
    for slow in (
        "nvmlDeviceGetTotalEccErrors",
        "nvmlDeviceGetEccMode",
        "nvmlDeviceGetPersistenceMode",
        "nvmlDeviceGetComputeMode",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetBAR1MemoryInfo",
    ):
        assert counts[slow] == 0, slow
    # Memory temperature is unsupported on this card: asked on the first tick only.
    assert counts["nvmlDeviceGetFieldValues"] == 0
    # Process names are known from the first tick.
    assert counts["nvmlSystemGetProcessName"] == 0
    per_gpu = sum(n for name, n in counts.items())
    assert per_gpu <= 32


def test_every_tick_of_a_scale_box_reads_each_instance_once() -> None:
    fake = FakeNvml(h100_mig_box())
    with nvml_source(fake) as source:
        source.poll()
        mark = fake.mark()
        source.poll()
    counts = fake.counts_since(mark)
    assert counts["nvmlGpmMigSampleGet"] == 56
    assert counts["nvmlGpmMetricsGet"] == 56
    assert counts["nvmlDeviceGetMemoryInfo_v2"] == 8 + 56
    # Identity of instances is static; the layout (handles, UUIDs) and BAR1 are slow.
    assert counts["nvmlDeviceGetAttributes_v2"] == 0
    assert counts["nvmlDeviceGetGpuInstanceId"] == 0
    assert counts["nvmlDeviceGetMigDeviceHandleByIndex"] == 0
    assert counts["nvmlDeviceGetUUID"] == 0
    assert counts["nvmlDeviceGetBAR1MemoryInfo"] == 0
