"""HistoryStore: per (GPU, metric) series aligned on one time axis, bounded, rebuildable."""

from __future__ import annotations

import math
import tracemalloc
from datetime import datetime, timedelta

import pytest

from gputop.history import HistoryStore, Metric, gpu_key, memory_bound
from gputop.model import (
    Activity,
    Clocks,
    GpuSample,
    Memory,
    Power,
    Snapshot,
    Temperature,
    Utilization,
)
from support.shortcuts import history_keys

T0 = datetime(2024, 9, 18, 21, 34, 12)


def gpu(
    index: int, util: float | None, *, uuid: str | None = None, lost: bool = False
) -> GpuSample:
    return GpuSample(
        index=index,
        uuid=uuid if uuid is not None else f"GPU-{index}",
        utilization=Utilization(gpu=util),
        memory=Memory(total=8 << 30, used=1 << 30),
        power=Power(draw=100.0, limit=250.0),
        lost=lost,
    )


def snap(second: int, *gpus: GpuSample) -> Snapshot:
    return Snapshot(timestamp=T0 + timedelta(seconds=second), gpus=gpus)


def values(series: object) -> list[float | None]:
    return [None if math.isnan(v) else v for v in series]  # type: ignore[attr-defined]


def test_appends_one_sample_per_gpu_and_metric() -> None:
    store = HistoryStore(capacity=10)
    store.append(snap(0, gpu(0, 10.0), gpu(1, 20.0)))
    store.append(snap(1, gpu(0, 30.0), gpu(1, 40.0)))
    view = store.view()
    assert values(view.series("GPU-0", Metric.GPU_UTIL)) == [10.0, 30.0]
    assert values(view.series("GPU-1", Metric.GPU_UTIL)) == [20.0, 40.0]
    assert values(view.series("GPU-0", Metric.MEM_USED)) == [float(1 << 30)] * 2
    assert view.length == 2
    assert history_keys(store) == ["GPU-0", "GPU-1"]


def test_missing_values_lost_and_absent_gpus_are_gaps() -> None:
    store = HistoryStore(capacity=10)
    store.append(snap(0, gpu(0, 10.0), gpu(1, None)))
    store.append(snap(1, gpu(0, 11.0, lost=True)))
    assert values(store.view().series("GPU-1", Metric.GPU_UTIL)) == [None, None]
    assert values(store.view().series("GPU-0", Metric.GPU_UTIL)) == [10.0, None]


def test_a_gpu_that_appears_later_lines_up_with_the_others() -> None:
    store = HistoryStore(capacity=10)
    store.append(snap(0, gpu(0, 1.0)))
    store.append(snap(1, gpu(0, 2.0)))
    store.append(snap(2, gpu(0, 3.0), gpu(1, 9.0)))
    assert values(store.view().series("GPU-1", Metric.GPU_UTIL)) == [None, None, 9.0]


def test_capacity_bounds_every_series_and_the_timestamps() -> None:
    store = HistoryStore(capacity=5, bucket_seconds=1000)
    for second in range(12):
        store.append(snap(second, gpu(0, float(second))))
    assert len(store) == 5
    window = store.window("GPU-0", None)
    assert values(window.series(Metric.GPU_UTIL)) == [7.0, 8.0, 9.0, 10.0, 11.0]
    assert list(window.times) == [(T0 + timedelta(seconds=s)).timestamp() for s in range(7, 12)]


def test_views_are_limited_copies_that_later_appends_do_not_change() -> None:
    store = HistoryStore(capacity=100, view_width=3)
    for second in range(6):
        store.append(snap(second, gpu(0, float(second))))
    view = store.view(metrics=[Metric.GPU_UTIL])
    store.append(snap(6, gpu(0, 60.0)))
    assert values(view.series("GPU-0", Metric.GPU_UTIL)) == [3.0, 4.0, 5.0]
    assert len(view.series("GPU-0", Metric.POWER)) == 0
    assert len(view.series("nope", Metric.GPU_UTIL)) == 0


def test_rebuild_replaces_everything_and_drop_last_steps_back() -> None:
    store = HistoryStore(capacity=10)
    for second in range(5):
        store.append(snap(second, gpu(0, float(second))))
    store.rebuild([snap(100, gpu(0, 50.0)), snap(101, gpu(0, 51.0)), snap(102, gpu(0, 52.0))])
    assert values(store.view().series("GPU-0", Metric.GPU_UTIL)) == [50.0, 51.0, 52.0]
    store.drop_last()
    window = store.window("GPU-0", None)
    assert values(window.series(Metric.GPU_UTIL)) == [50.0, 51.0]
    assert window.times[-1] == (T0 + timedelta(seconds=101)).timestamp()


def test_the_number_of_gpus_remembered_is_bounded() -> None:
    store = HistoryStore(capacity=4, max_keys=3)
    for index in range(5):
        store.append(snap(index, gpu(index, 1.0)))
    assert len(history_keys(store)) == 3
    assert "GPU-4" in history_keys(store) and "GPU-0" not in history_keys(store)


def test_keys_fall_back_to_the_index() -> None:
    nameless = gpu(3, 5.0, uuid="")
    assert gpu_key(nameless) == "index:3"
    store = HistoryStore(capacity=4)
    store.append(snap(0, nameless))
    assert values(store.view().series("index:3", Metric.GPU_UTIL)) == [5.0]


def test_every_metric_reads_its_field_and_the_store_files_the_same() -> None:
    full = GpuSample(
        index=0,
        uuid="GPU-0",
        utilization=Utilization(gpu=1.0, memory=2.0, encoder=3.0, decoder=4.0),
        memory=Memory(used=5, total=10),
        power=Power(draw=6.0, limit=11.0),
        temperature=Temperature(gpu=7.0),
        fan_speed=8.0,
        clocks=Clocks(sm=9, memory=12),
        activity=Activity(sm=13.0, tensor=14.0),
    )
    want = {
        Metric.GPU_UTIL: 1.0,
        Metric.MEM_UTIL: 2.0,
        Metric.ENCODER: 3.0,
        Metric.DECODER: 4.0,
        Metric.MEM_USED: 5.0,
        Metric.MEM_TOTAL: 10.0,
        Metric.POWER: 6.0,
        Metric.POWER_LIMIT: 11.0,
        Metric.TEMP: 7.0,
        Metric.FAN: 8.0,
        Metric.SM_CLOCK: 9.0,
        Metric.MEM_CLOCK: 12.0,
        Metric.SM_ACTIVE: 13.0,
        Metric.TENSOR_ACTIVE: 14.0,
    }
    fields = [metric for metric in Metric if metric is not Metric.THROTTLED]
    store = HistoryStore(capacity=4)
    assert set(store.metrics) == set(want)  # no reader for throttling: not kept
    store.append(snap(0, full))
    store.append(snap(1, GpuSample(index=0, uuid="GPU-0", fan_speed=8.0, lost=True)))
    store.append(snap(2, GpuSample(index=0, uuid="GPU-0")))
    view = store.view()
    assert {metric: values(view.series("GPU-0", metric)) for metric in fields} == {
        metric: [value, None, None] for metric, value in want.items()
    }


def test_throttling_is_read_by_the_reader_it_is_handed() -> None:
    with pytest.raises(ValueError, match="no reader for THROTTLED"):
        HistoryStore(metrics=[Metric.THROTTLED])
    store = HistoryStore(readers={Metric.THROTTLED: lambda g: g.utilization.gpu == 99.0})
    for second, util in enumerate((10.0, 99.0, 99.0, 10.0)):
        store.append(snap(second, gpu(0, util)))
    window = store.window("GPU-0", None)
    assert values(window.series(Metric.THROTTLED)) == [0.0, 1.0, 1.0, 0.0]
    assert window.flags(Metric.THROTTLED) == [False, True, True, False]


ON_A_MINUTE = datetime(2024, 9, 18, 21, 34)


def minutes(store: HistoryStore, count: int, start: int = 0, gpus: int = 1) -> None:
    """``count`` ticks a second apart from a whole minute; utilization is the second's."""
    for second in range(start, start + count):
        gpus_now = tuple(gpu(i, float(second % 60)) for i in range(gpus))
        store.append(Snapshot(ON_A_MINUTE + timedelta(seconds=second), gpus_now))


def test_ticks_beyond_the_fine_rings_are_kept_as_minute_buckets_with_min_mean_max() -> None:
    store = HistoryStore(capacity=150, coarse_capacity=10)
    minutes(store, 10 * 60)
    assert len(store) == 150
    everything = store.window("GPU-0", None)
    # Buckets up to the one holding the oldest whole tick (second 450, minute 7), then ticks.
    assert everything.buckets == 8
    assert list(everything.weights[:8]) == [60.0] * 8
    assert everything.samples == 600 and everything.span == 599.0
    assert everything.times[0] == ON_A_MINUTE.timestamp()
    assert everything.times[8] == (ON_A_MINUTE + timedelta(minutes=8)).timestamp()
    assert values(everything.low[Metric.GPU_UTIL][:8]) == [0.0] * 8
    assert values(everything.series(Metric.GPU_UTIL)[:8]) == [29.5] * 8
    assert values(everything.high[Metric.GPU_UTIL][:8]) == [59.0] * 8
    found = everything.stats(Metric.GPU_UTIL)
    assert found is not None and (found.minimum, found.mean, found.maximum) == (0.0, 29.5, 59.0)
    # A window the fine rings cover is every tick, even where buckets exist.
    last = store.window("GPU-0", 60.0)
    assert last.buckets == 0 and last.samples == 61 and last.span == 60.0
    # One that begins before them: the buckets that begin inside it, then the ticks.
    five = store.window("GPU-0", 300.0)
    assert five.buckets == 3 and five.samples == 300 and five.span == 299.0


def test_the_coarse_tier_keeps_a_day_of_minutes_beyond_the_fine_one() -> None:
    store = HistoryStore(capacity=120, coarse_capacity=3)
    minutes(store, 8 * 60)
    everything = store.window("GPU-0", None)
    assert everything.buckets == 3  # minutes 4, 5, 6 (the newest three summed up)
    assert everything.times[0] == (ON_A_MINUTE + timedelta(minutes=4)).timestamp()
    assert everything.samples == 4 * 60


def test_stepping_back_across_a_minute_reopens_its_bucket() -> None:
    stepped = HistoryStore(capacity=100)
    minutes(stepped, 121)  # minutes 0 and 1 summed up, and one tick of minute 2
    stepped.drop_last()
    stepped.drop_last()  # back into minute 1, which was summed up: it is open again
    minutes(stepped, 62, start=119)
    straight = HistoryStore(capacity=100)
    minutes(straight, 181)
    mine, theirs = stepped.window("GPU-0", None), straight.window("GPU-0", None)
    assert mine.buckets == theirs.buckets == 2 and list(mine.weights[:2]) == [60.0, 60.0]
    assert (mine.times, mine.weights) == (theirs.times, theirs.weights)
    for tier in ("low", "mean", "high"):
        assert getattr(mine, tier)[Metric.GPU_UTIL] == getattr(theirs, tier)[Metric.GPU_UTIL]


def test_a_gpu_that_joins_late_has_gap_buckets_and_stats_skip_gaps() -> None:
    store = HistoryStore(capacity=60)
    minutes(store, 120)
    minutes(store, 121, start=120, gpus=2)
    late = store.window("GPU-1", None)
    assert late.buckets == 4 and late.samples == 241
    assert values(late.series(Metric.GPU_UTIL)[:4]) == [None, None, 29.5, 29.5]
    found = late.stats(Metric.GPU_UTIL)
    assert found is not None and found.minimum == 0.0 and found.maximum == 59.0
    assert store.window("nope", None).samples == 0 and not store.window("nope", 60.0)


def test_ticks_without_a_time_are_left_out_of_windows() -> None:
    store = HistoryStore(capacity=10)
    store.append(snap(0, gpu(0, 1.0)))
    store.append(Snapshot(timestamp=None, gpus=(gpu(0, 2.0),)))
    store.append(snap(2, gpu(0, 3.0)))
    window = store.window("GPU-0", None)
    assert values(window.series(Metric.GPU_UTIL)) == [1.0, 3.0] and window.samples == 2


def test_memory_is_bounded_by_the_capacities_however_long_the_run() -> None:
    store = HistoryStore(capacity=120, coarse_capacity=5, max_keys=3)
    bound = memory_bound(120, 5, len(store.metrics), keys=3)
    minutes(store, 60 * 60, gpus=4)  # more ticks, minutes and GPUs than it keeps
    assert len(history_keys(store)) == 3
    assert store.nbytes() == bound
    minutes(store, 60, start=60 * 60, gpus=3)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        minutes(store, 30 * 60, start=61 * 60, gpus=3)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    ours = [tracemalloc.Filter(True, "*/gputop/history/*")]  # not the test's own samples
    changes = after.filter_traces(ours).compare_to(before.filter_traces(ours), "filename")
    assert sum(change.size_diff for change in changes) < 4096  # the rings are allocated once
    assert store.nbytes() == bound


def test_a_day_at_one_second_for_eight_gpus_stays_small() -> None:
    store = HistoryStore()
    assert store.capacity >= 3600
    assert memory_bound(keys=8) <= 4 * 1024 * 1024
    minutes(store, 3 * 60, gpus=8)
    # Memory follows the run's length up to the bound: three minutes cost three minutes.
    per_tick = 8 * len(store.metrics) * 4 + 8
    per_bucket = 8 * len(store.metrics) * 12 + 12
    assert store.nbytes() == 180 * per_tick + 2 * per_bucket
