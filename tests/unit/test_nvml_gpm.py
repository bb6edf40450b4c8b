"""A whole GPU's activity through GPM (Hopper and later), answered by the fake NVML with what a
real H200 measured (``snapshots/h200-gpm.json``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, replace

import pynvml  # noqa: TID251 -- the source under test is handed the real pynvml
import pytest

from fakes.nvml_fake import FakeNvml, Faults
from fakes.nvml_h200 import h200_gpu, h200_ticks, loaded_windows, without_activity
from fakes.nvml_install import installed
from fakes.nvml_scenarios import mig_gpu, snapshot
from gputop.model import Activity, Reason, Snapshot
from gputop.sources.nvml.gpm import ACTIVITY_PATHS, LONGEST_S, METRICS_PRICE_S, GpmCadence
from gputop.sources.nvml.source import NvmlSource


class _Clock:
    """Monotonic seconds that move only when told (one tick: one second)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def _source(
    fake: FakeNvml, every: float | GpmCadence = 0.0, clock: _Clock | None = None
) -> Iterator[NvmlSource]:
    with installed(fake):
        pynvml.nvmlInit()
        source = NvmlSource(
            pynvml,
            deadline=None,
            host="testhost",
            shutdown_on_close=True,
            clock=clock or _Clock(),
            gpm_cadence=every if isinstance(every, GpmCadence) else GpmCadence(every),
        )
        try:
            yield source
        finally:
            source.close()


def _poll(fake: FakeNvml, count: int, every: float = 0.0) -> list[Snapshot]:
    clock = _Clock()
    polled = []
    with _source(fake, every, clock) as source:
        for _ in range(count):
            polled.append(source.poll())
            clock.now += 1.0
    return polled


def _close(got: Activity, want: Activity) -> bool:
    return all(
        (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-6)
        for a, b in zip(astuple(got), astuple(want), strict=True)
    )


def test_first_tick_has_no_window_yet() -> None:
    gpu = _poll(FakeNvml(h200_ticks()), 1)[0].gpus[0]
    assert gpu.activity == Activity()
    for path in ACTIVITY_PATHS:
        assert gpu.reason(path) is Reason.NOT_AVAILABLE, path


def test_each_window_is_what_the_h200_measured() -> None:
    windows = loaded_windows()
    ticks = _poll(FakeNvml(h200_ticks(windows)), len(windows))
    for number, (tick, window) in enumerate(zip(ticks[1:], windows[1:], strict=True), 1):
        gpu = tick.gpus[0]
        assert _close(gpu.activity, window.activity), number
        assert not [p for p, _ in gpu.unavailable if p.startswith("activity.")], number
    loaded = ticks[1].gpus[0]
    # While NVML's utilization says 98 %, the SMs were 94 % active and 14 % occupied.
    assert loaded.utilization.gpu == 98.0
    assert loaded.activity.sm == pytest.approx(94.33)
    assert loaded.activity.sm_occupancy == pytest.approx(13.94)
    assert loaded.activity.tensor == pytest.approx(91.57)
    assert loaded.activity.dram == pytest.approx(15.86)
    assert loaded.activity.pcie_rx == pytest.approx(2.36 * 1024 * 1024)


def test_a_gpu_without_gpm_says_not_supported_and_is_asked_once() -> None:
    gpu = without_activity(h200_gpu(loaded_windows()[0]))
    fake = FakeNvml(snapshot(gpu))
    clock = _Clock()
    with _source(fake, clock=clock) as source:
        polled = []
        for _ in range(3):
            mark = fake.mark()
            polled.append(source.poll())
            clock.now += 1.0
        counts = fake.counts_since(mark)
    for tick in polled:
        sample = tick.gpus[0]
        assert sample.activity == Activity()
        for path in ACTIVITY_PATHS:
            assert sample.reason(path) is Reason.NOT_SUPPORTED, path
    assert not [name for name in counts if name.startswith("nvmlGpm")]
    assert fake.live_gpm_samples == 0


def test_a_driver_without_gpm_entry_points_is_not_supported() -> None:
    fake = FakeNvml(h200_ticks(), Faults(missing={"nvmlGpmQueryDeviceSupport"}))
    gpu = _poll(fake, 2)[1].gpus[0]
    assert gpu.activity == Activity()
    assert {gpu.reason(path) for path in ACTIVITY_PATHS} == {Reason.NOT_SUPPORTED}


def test_a_metric_the_gpu_lacks_is_none_with_its_reason_and_the_others_stay() -> None:
    window = loaded_windows()[1]
    partial = replace(window.activity, nvlink_tx=None, nvlink_rx=None)
    fake = FakeNvml(snapshot(replace(h200_gpu(window), activity=partial)))
    gpu = _poll(fake, 2)[1].gpus[0]
    assert gpu.activity.nvlink_tx is None and gpu.activity.nvlink_rx is None
    assert gpu.reason("activity.nvlink_tx") is Reason.NOT_SUPPORTED
    assert gpu.reason("activity.nvlink_rx") is Reason.NOT_SUPPORTED
    assert gpu.activity.sm == pytest.approx(window.activity.sm)
    assert gpu.reason("activity.sm") is None


def test_a_failed_sample_is_an_error_that_tick_and_the_next_window_is_longer() -> None:
    windows = loaded_windows()
    fake = FakeNvml(h200_ticks(windows))
    clock = _Clock()
    with _source(fake, clock=clock) as source:
        polled = [source.poll()]
        clock.now += 1.0
        fake.faults.errors[(0, "nvmlGpmSampleGet")] = pynvml.NVML_ERROR_UNKNOWN
        polled.append(source.poll())
        clock.now += 1.0
        del fake.faults.errors[(0, "nvmlGpmSampleGet")]
        mark = fake.mark()
        polled.append(source.poll())
        calls = fake.calls_since(mark)
    failed = polled[1].gpus[0]
    assert failed.activity == Activity()
    assert {failed.reason(path) for path in ACTIVITY_PATHS} == {Reason.ERROR}
    # The start sample of tick 0 still holds: tick 2 measures from tick 0 to tick 2.
    assert _close(polled[2].gpus[0].activity, windows[2].activity)
    gets = [call for call in calls if call.name == "nvmlGpmMetricsGet"]
    assert len(gets) == 1


def test_mig_mode_leaves_the_gpu_level_alone() -> None:
    gpu = mig_gpu()
    fake = FakeNvml(snapshot(replace(gpu, activity=loaded_windows()[1].activity)))
    clock = _Clock()
    with _source(fake, clock=clock) as source:
        ticks = []
        for _ in range(2):
            mark = fake.mark()
            ticks.append(source.poll())
            clock.now += 1.0
        counts = fake.counts_since(mark)
    got = ticks[1].gpus[0]
    assert got.activity == Activity()
    assert {got.reason(path) for path in ACTIVITY_PATHS} == {Reason.UNDER_MIG}
    assert counts["nvmlGpmSampleGet"] == 0
    # The instances' own activity through GPM, as before: one sample and one metrics call
    # per instance.
    assert counts["nvmlGpmMigSampleGet"] == 7
    assert [d.utilization.gpu for d in got.mig_devices] == [10.0 * slot for slot in range(7)]


def test_buffers_are_freed_when_the_source_closes() -> None:
    fake = FakeNvml(h200_ticks())
    _poll(fake, 3)
    assert fake.live_gpm_samples == 0


def test_one_sample_per_gpu_per_tick_on_four_gpus() -> None:
    windows = loaded_windows()
    ticks = [snapshot(*(h200_gpu(window, index) for index in range(4))) for window in windows[:5]]
    fake = FakeNvml(ticks)
    clock = _Clock()
    with _source(fake, clock=clock) as source:
        for _ in range(5):
            mark = fake.mark()
            source.poll()
            clock.now += 1.0
            samples = [
                call.gpu for call in fake.calls_since(mark) if call.name == "nvmlGpmSampleGet"
            ]
            assert sorted(gpu for gpu in samples if gpu is not None) == [0, 1, 2, 3]
            assert len(samples) == 4


def test_metrics_on_a_cadence_cover_the_whole_window_and_hold_between() -> None:
    windows = loaded_windows()
    fake = FakeNvml(h200_ticks(windows))
    clock = _Clock()
    with _source(fake, every=3.0, clock=clock) as source:
        polled = []
        counted = []
        for _ in range(8):
            mark = fake.mark()
            polled.append(source.poll())
            clock.now += 1.0
            counts = fake.counts_since(mark)
            counted.append((counts["nvmlGpmSampleGet"], counts["nvmlGpmMetricsGet"]))
    # Tick 0 starts the window, tick 1 measures at once, then every 3 s: ticks 4 and 7.
    assert counted == [(1, 0), (1, 1), (0, 0), (0, 0), (1, 1), (0, 0), (0, 0), (1, 1)]
    values = [tick.gpus[0].activity for tick in polled]
    assert values[2] == values[1] == values[3]
    assert _close(values[4], windows[4].activity)
    assert values[5] == values[4] == values[6]
    assert _close(values[7], windows[7].activity)


def test_a_cpu_budget_spaces_the_metrics_by_how_many_gpus_share_it() -> None:
    windows = loaded_windows()
    ticks = [snapshot(*(h200_gpu(window, index) for index in range(4))) for window in windows]
    fake = FakeNvml(ticks)
    clock = _Clock()
    # Four GPUs at the H200's price within 0.28 % of a core: each every 2 s.
    cadence = GpmCadence(budget=4 * METRICS_PRICE_S / 2.0)
    with _source(fake, cadence, clock) as source:
        gets = []
        for _ in range(7):
            mark = fake.mark()
            source.poll()
            clock.now += 1.0
            gets.append(fake.counts_since(mark)["nvmlGpmMetricsGet"])
        assert cadence.windows == 4
        assert cadence.seconds() == pytest.approx(2.0)
    assert gets == [0, 4, 0, 4, 0, 4, 0]
    assert cadence.windows == 0  # the source closed: every window freed


def test_a_budget_never_spaces_beyond_the_longest() -> None:
    cadence = GpmCadence(budget=0.003)
    cadence.opened(56)  # 8 GPUs of 7 MIG instances
    assert cadence.seconds() == LONGEST_S
    cadence.closed(55)
    assert cadence.seconds() == pytest.approx(METRICS_PRICE_S / 0.003)
    assert GpmCadence(every=15.0, budget=0.003).seconds() == 15.0
