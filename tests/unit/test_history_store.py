"""HistoryStore: per (GPU, metric) series aligned on one time axis, bounded, rebuildable."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from gputop.history import HistoryStore, Metric, gpu_key, metric_value
from gputop.model import Clocks, GpuSample, Memory, Power, Snapshot, Temperature, Utilization

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
    assert store.gpu_keys() == ["GPU-0", "GPU-1"]


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
    store = HistoryStore(capacity=5)
    for second in range(12):
        store.append(snap(second, gpu(0, float(second))))
    assert len(store) == 5
    assert values(store.copy_series("GPU-0", Metric.GPU_UTIL)) == [7.0, 8.0, 9.0, 10.0, 11.0]
    stamps = store.timestamps()
    assert stamps[0] == T0 + timedelta(seconds=7) and stamps[-1] == T0 + timedelta(seconds=11)


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
    assert values(store.copy_series("GPU-0", Metric.GPU_UTIL)) == [50.0, 51.0, 52.0]
    store.drop_last()
    assert values(store.copy_series("GPU-0", Metric.GPU_UTIL)) == [50.0, 51.0]
    assert store.timestamps()[-1] == T0 + timedelta(seconds=101)


def test_the_number_of_gpus_remembered_is_bounded() -> None:
    store = HistoryStore(capacity=4, max_keys=3)
    for index in range(5):
        store.append(snap(index, gpu(index, 1.0)))
    assert len(store.gpu_keys()) == 3
    assert "GPU-4" in store.gpu_keys() and "GPU-0" not in store.gpu_keys()


def test_keys_fall_back_to_the_index_and_lost_gpus_read_as_none() -> None:
    nameless = gpu(3, 5.0, uuid="")
    assert gpu_key(nameless) == "index:3"
    assert metric_value(gpu(0, 5.0, lost=True), Metric.GPU_UTIL) is None
    assert metric_value(gpu(0, 5.0), Metric.POWER) == 100.0


def test_every_metric_reads_its_field_and_the_store_files_the_same() -> None:
    full = GpuSample(
        index=0,
        uuid="GPU-0",
        utilization=Utilization(gpu=1.0, memory=2.0, encoder=3.0, decoder=4.0),
        memory=Memory(used=5),
        power=Power(draw=6.0),
        temperature=Temperature(gpu=7.0),
        fan_speed=8.0,
        clocks=Clocks(sm=9),
    )
    want = {
        Metric.GPU_UTIL: 1.0,
        Metric.MEM_UTIL: 2.0,
        Metric.ENCODER: 3.0,
        Metric.DECODER: 4.0,
        Metric.MEM_USED: 5.0,
        Metric.POWER: 6.0,
        Metric.TEMP: 7.0,
        Metric.FAN: 8.0,
        Metric.SM_CLOCK: 9.0,
    }
    assert {metric: metric_value(full, metric) for metric in Metric} == want
    assert all(metric_value(GpuSample(index=0), metric) is None for metric in Metric)
    store = HistoryStore(capacity=4)
    store.append(snap(0, full))
    store.append(snap(1, GpuSample(index=0, uuid="GPU-0", fan_speed=8.0, lost=True)))
    view = store.view()
    assert {metric: values(view.series("GPU-0", metric)) for metric in Metric} == {
        metric: [value, None] for metric, value in want.items()
    }


def test_an_hour_at_one_second_for_eight_gpus_stays_small() -> None:
    store = HistoryStore()
    assert store.capacity >= 3600
    gpus = tuple(gpu(i, 50.0) for i in range(8))
    for second in range(store.capacity + 10):
        store.append(snap(second, *gpus))
    ring_bytes = sum(
        len(store.copy_series(key, metric)) * 4 for key in store.gpu_keys() for metric in Metric
    )
    assert len(store) == store.capacity
    assert ring_bytes <= 2 * 1024 * 1024
