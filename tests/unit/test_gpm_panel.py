"""What the panel's detail line and the history say of GPM's activity."""

from __future__ import annotations

from dataclasses import replace

from fakes.nvml_h200 import h200_gpu, loaded_windows, without_activity
from gputop.history import Metric
from gputop.history.metrics import FIELD_READERS
from gputop.model import Activity, Reason
from gputop.model.units import fmt_rate
from gputop.ui.render.gauges import Level, activity_parts, detail_parts, traffic_parts
from gputop.ui.render.panel_lines import PanelState, detail_line


def test_the_detail_line_opens_with_sm_tensor_occupancy_and_dram() -> None:
    gpu = replace(h200_gpu(loaded_windows()[1]), throttle_reasons=())
    texts = [text for text, _ in detail_parts(gpu)]
    assert texts[:4] == ["SM 94%", "tensor 92%", "occ 14%", "DRAM 16%"]
    assert "PCIe tx 758KiB/s rx 2.4MiB/s" in texts
    assert not [text for text in texts if text.startswith("NVLink")]  # nothing flows there
    line = "".join(text for text, _ in detail_line(PanelState(gpu, {}), 200))
    assert line.startswith("SM 94% · tensor 92% · occ 14% · DRAM 16% · fan")


def test_a_gpu_without_gpm_or_before_its_first_window_says_nothing_of_it() -> None:
    gpu = h200_gpu(loaded_windows()[1])
    older = without_activity(gpu)
    assert activity_parts(older) == [] and traffic_parts(older) == []
    first = replace(gpu, activity=Activity(), unavailable=(("activity.sm", Reason.NOT_AVAILABLE),))
    assert activity_parts(first) == []


def test_gpm_that_cannot_be_read_is_na_with_its_reason() -> None:
    gpu = replace(
        h200_gpu(loaded_windows()[1]),
        activity=Activity(),
        unavailable=(("activity.sm", Reason.NO_PERMISSION),),
    )
    assert activity_parts(gpu) == [("activity n/a (no permission)", Level.NA)]


def test_one_metric_missing_leaves_the_others() -> None:
    gpu = h200_gpu(loaded_windows()[1])
    gpu = replace(gpu, activity=replace(gpu.activity, sm_occupancy=None, nvlink_tx=3.5e9))
    texts = [text for text, _ in activity_parts(gpu) + traffic_parts(gpu)]
    assert texts[:3] == ["SM 94%", "tensor 92%", "DRAM 16%"]
    assert texts[-1] == "NVLink tx 3.3GiB/s rx 0B/s"


def test_rates_read_in_binary_units() -> None:
    assert [fmt_rate(v) for v in (None, 0, 512, 2.25 * 2**20, 775946, 45e9)] == [
        "n/a", "0B/s", "512B/s", "2.2MiB/s", "758KiB/s", "42GiB/s",
    ]  # fmt: skip


def test_history_keeps_sm_and_tensor_activity() -> None:
    gpu = h200_gpu(loaded_windows()[1])
    assert FIELD_READERS[Metric.SM_ACTIVE](gpu) == gpu.activity.sm
    assert FIELD_READERS[Metric.TENSOR_ACTIVE](gpu) == gpu.activity.tensor
    assert FIELD_READERS[Metric.SM_ACTIVE](without_activity(gpu)) is None
