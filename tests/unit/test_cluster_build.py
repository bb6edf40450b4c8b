"""One host's series -> the model's Snapshot, and each GPU's state over the window."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputop.insight.diagnosis import DEFAULT_THRESHOLDS
from gputop.model import GpuSample, Memory, Owner, Power, Reason, Utilization
from gputop.model.activity import load_percent
from gputop.model.fields import MIB
from gputop.model.fleet import GpuState
from gputop.model.gpu_state import sample_state
from gputop.sources.prometheus import window
from gputop.sources.prometheus.build import NodeBuilder, is_blank
from gputop.sources.prometheus.families import GPU_METRICS, Reading, host_of, owner_of

GPU0 = {"gpu": "0", "UUID": "GPU-a", "Hostname": "n1", "modelName": "NVIDIA A100"}


def _build(*readings: tuple[str, dict[str, str], float]) -> GpuSample:
    builder = NodeBuilder("n1")
    builder.add_all(Reading(m, labels, v) for m, labels, v in readings)
    [gpu] = builder.snapshot(None).gpus
    return gpu


def test_window_thresholds_are_the_diagnosis_thresholds() -> None:
    assert DEFAULT_THRESHOLDS.low_utilization_pct == window.LOW_UTILIZATION_PCT
    assert DEFAULT_THRESHOLDS.idle_utilization_pct == window.IDLE_UTILIZATION_PCT
    assert DEFAULT_THRESHOLDS.held_memory_bytes == window.HELD_MEMORY_BYTES


@pytest.mark.parametrize(
    ("util", "samples", "memory", "processes", "expected"),
    [
        (80.0, 10, 40 * 1024**3, None, GpuState.BUSY),
        (12.0, 10, 30 * 1024**3, None, GpuState.WAITING),  # memory held, compute idle
        (0.0, 10, 2 * 1024**3, None, GpuState.WAITING),
        (0.0, 10, 0, 1, GpuState.WAITING),  # a process listed
        (0.0, 10, 300 * MIB, None, GpuState.IDLE),
        (6.0, 10, 0, None, GpuState.WAITING),  # something runs at 6%
        (0.0, 1, 0, None, GpuState.UNKNOWN),  # one sample is no window
        (None, 0, 300 * MIB, None, GpuState.IDLE),  # MIG: nothing loaded
        (None, 0, 30 * 1024**3, None, GpuState.UNKNOWN),  # MIG with work: could be anything
    ],
)
def test_states(
    util: float | None, samples: int, memory: int, processes: int | None, expected: GpuState
) -> None:
    gpu = GpuSample(index=0, memory=Memory(used=memory))
    got = window.classify(
        gpu,
        utilization_mean=util,
        samples=samples,
        memory_used_mean=memory,
        process_count=processes,
    )
    assert got is expected


def test_throttled_wins_and_the_exporters_own_state_wins_over_all() -> None:
    hot = GpuSample(index=0, throttle_reasons=("hw_thermal_slowdown",))
    assert window.classify(hot, utilization_mean=90.0, samples=5, memory_used_mean=0) is (
        GpuState.THROTTLED
    )
    idle_clocks = GpuSample(index=0, throttle_reasons=("gpu_idle",))  # benign
    assert window.classify(idle_clocks, utilization_mean=0.0, samples=5, memory_used_mean=0) is (
        GpuState.IDLE
    )
    said = window.classify(
        hot, utilization_mean=90.0, samples=5, memory_used_mean=0, exporter_state="waiting"
    )
    assert said is GpuState.WAITING


def test_old_and_new_kubernetes_labels() -> None:
    old = {"pod_name": "train-0", "pod_namespace": "ml", "container_name": "main"}
    new = {"pod": "train-0", "namespace": "ml", "container": "main"}
    expected = Owner(container="main", pod="train-0", namespace="ml")
    assert owner_of(old) == expected
    assert owner_of(new) == expected
    assert owner_of({"pod": "", "namespace": "", "container": ""}) is None
    gpu = _build(("DCGM_FI_DEV_FB_USED", {**GPU0, **old}, 1024))
    assert gpu.holders == (expected,)
    assert gpu.memory.used == 1024 * MIB


def test_host_labels() -> None:
    assert host_of({"Hostname": "a", "instance": "10.0.0.1:9400"}) == "a"
    assert host_of({"hostname": "b", "instance": "10.0.0.1:9400"}) == "b"
    assert host_of({"instance": "10.0.0.1:9400"}) == "10.0.0.1"
    assert host_of({"instance": "[::1]:9400"}) == "::1"
    assert host_of({}) is None


def test_dcgm_blank_values_are_not_values() -> None:
    assert is_blank(9223372036854775794.0)  # seen in NVIDIA's README for MEMORY_TEMP
    assert is_blank(float("nan"))
    assert not is_blank(4335301032.0)  # a real energy counter above 2**31
    gpu = _build(("DCGM_FI_DEV_GPU_TEMP", GPU0, 9223372036854775794.0))
    assert gpu.temperature.gpu is None
    assert gpu.reason("temperature.gpu") is not None


def test_gputop_exporter_series() -> None:
    """gputop's own names: every table field, throttle reasons, processes and its state."""
    readings = []
    for name, spec in GPU_METRICS.items():
        readings.append((name, GPU0, 0.0 if spec.path == "lost" else 7.0))
    readings += [
        ("gputop_throttle_reason", {**GPU0, "reason": "sw_power_cap"}, 1.0),
        ("gputop_throttle_reason", {**GPU0, "reason": "hw_slowdown"}, 0.0),
        ("gputop_process_memory_used_bytes", {**GPU0, "pid": "42", "name": "python"}, 3e9),
        ("gputop_processes", GPU0, 1.0),
        ("gputop_gpu_state", {**GPU0, "state": "waiting"}, 1.0),
        ("gputop_gpu_state", {**GPU0, "state": "busy"}, 0.0),
    ]
    builder = NodeBuilder("n1")
    builder.add_all(Reading(m, labels, v) for m, labels, v in readings)
    [gpu] = builder.snapshot(None).gpus
    assert builder.exporter == "gputop"
    assert gpu.utilization.gpu == 7.0
    assert gpu.memory.used == 7 * MIB
    assert gpu.performance_state == "P7"
    assert gpu.clocks.sm == 7
    assert gpu.throttle_reasons == ("sw_power_cap",)
    [process] = gpu.processes
    assert (process.pid, process.name, process.memory_used) == (42, "python", 3_000_000_000)
    [extras] = builder.extras()
    assert (extras.state, extras.process_count) == ("waiting", 1)
    assert gpu.unavailable == ()  # every field the table exports came back
    assert gpu.lost is False and gpu.ecc_mode is True and gpu.clocks.graphics == 7


def test_a_busy_gpu_at_its_power_cap_is_busy_over_the_window_too() -> None:
    """Issue 25: the fleet view takes the states every view takes (model.gpu_state)."""
    capped = GpuSample(
        index=0,
        power=Power(draw=690.0, limit=700.0),
        throttle_reasons=("sw_power_cap",),
    )
    busy = window.classify(capped, utilization_mean=64.0, samples=20, memory_used_mean=0)
    assert busy is GpuState.BUSY
    held_back = window.classify(capped, utilization_mean=10.0, samples=20, memory_used_mean=0)
    assert held_back is GpuState.THROTTLED
    outlasting = replace(capped, power=Power(draw=300.0, limit=700.0))
    held = 30 * 1024**3
    assert (
        window.classify(outlasting, utilization_mean=0.0, samples=20, memory_used_mean=held)
        is GpuState.WAITING
    )


@pytest.mark.parametrize("util", [None, 0.0, 4.0, 12.0, 31.0, 97.0])
@pytest.mark.parametrize("used", [None, 0, 300 * MIB, 30 * 1024**3])
@pytest.mark.parametrize(
    "reasons",
    [None, (), ("sw_power_cap",), ("gpu_idle",), ("hw_slowdown",), ("sw_thermal_slowdown",)],
)
def test_one_sample_window_and_one_sample_are_judged_alike(
    util: float | None, used: int | None, reasons: tuple[str, ...] | None
) -> None:
    """The window's state of a steady GPU is the sample's state, whatever the inputs."""
    gpu = GpuSample(
        index=0,
        utilization=Utilization(gpu=util),
        memory=Memory(used=used),
        power=Power(draw=680.0, limit=700.0),
        throttle_reasons=reasons,
    )
    over_window = window.classify(gpu, utilization_mean=util, samples=10, memory_used_mean=used)
    one = sample_state(gpu)
    if used is None and util is not None:
        # An exporter's missing memory series: the window knows only what utilization says,
        # so at low utilization it cannot tell idle from waiting (issue 29).
        assert over_window is one or GpuState.UNKNOWN in (one, over_window)
        if util < 5.0 and not reasons:
            assert over_window is GpuState.UNKNOWN
    else:
        assert over_window is one


def test_dcgm_profiling_series_fill_the_gpus_activity() -> None:
    gpu = _build(
        ("DCGM_FI_DEV_GPU_UTIL", GPU0, 98.0),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", GPU0, 0.9787),
        ("DCGM_FI_PROF_SM_ACTIVE", GPU0, 0.9433),
        ("DCGM_FI_PROF_SM_OCCUPANCY", GPU0, 0.1394),
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", GPU0, 0.9157),
        ("DCGM_FI_PROF_DRAM_ACTIVE", GPU0, 0.1586),
        ("DCGM_FI_PROF_PCIE_TX_BYTES", GPU0, 775946.0),
        ("DCGM_FI_PROF_PCIE_RX_BYTES", GPU0, 2474639.0),
        # DCGM's per-instance profiling of a MIG instance is the instance's, not the GPU's.
        ("DCGM_FI_PROF_NVLINK_TX_BYTES", {**GPU0, "GPU_I_ID": "3"}, 5e9),
    )
    activity = gpu.activity
    assert activity.graphics == pytest.approx(97.87)
    assert activity.sm == pytest.approx(94.33)
    assert activity.sm_occupancy == pytest.approx(13.94)
    assert activity.tensor == pytest.approx(91.57)
    assert activity.dram == pytest.approx(15.86)
    assert (activity.pcie_tx, activity.pcie_rx) == (775946.0, 2474639.0)
    assert activity.nvlink_tx is None
    assert gpu.reason("activity.nvlink_tx") is Reason.NOT_EXPORTED
    assert gpu.reason("activity.sm") is None


def test_dcgm_exporters_default_counters_have_no_activity_but_utilization() -> None:
    gpu = _build(("DCGM_FI_DEV_GPU_UTIL", GPU0, 40.0))
    assert gpu.activity.graphics is None and gpu.reason("activity.graphics") is Reason.NOT_EXPORTED
    assert load_percent(gpu) == 40.0


@pytest.mark.parametrize(
    ("activity", "utilization", "expected"),
    [
        ((0.9787, 12), (98.0, 12), (97.87, 12)),  # engine activity where the exporter has it
        ((0.02, 12), (100.0, 12), (2.0, 12)),  # utilization's "0 or 100" sampling: activity wins
        ((None, 0), (44.0, 10), (44.0, 10)),  # dcgm-exporter's default counters: utilization
        ((0.5, 0), (44.0, 10), (44.0, 10)),  # no activity sample in the window
        ((None, 0), (None, 0), (None, 0)),
    ],
)
def test_the_windows_input_is_engine_activity_else_utilization(
    activity: tuple[float | None, int],
    utilization: tuple[float | None, int],
    expected: tuple[float | None, int],
) -> None:
    mean, samples = window.load_mean(activity, utilization)
    assert samples == expected[1]
    assert mean == (None if expected[0] is None else pytest.approx(expected[0]))
