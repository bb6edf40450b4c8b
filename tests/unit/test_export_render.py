"""`gputop export`'s rendering, on hand-built snapshots: names, units and labels as
dcgm-exporter's, None never emitted, privacy, pods, clock events, waiting, staleness."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from fakes.nvml_h200 import h200_gpu, loaded_windows, without_activity
from fakes.nvml_scenarios import GIB, MIB, gpu_sample, h100_mig_box, mig_gpu, snapshot
from gputop.insight.diagnosis import gpu_state
from gputop.model import GpuSample, ProcessSample, Snapshot, Utilization
from gputop.model.fields import GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS
from gputop.model.owner import Owner
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.pipeline.loop import PollLoop
from gputop.sinks.prometheus.dcgm import DCGM_FAMILIES
from gputop.sinks.prometheus.labels import ProcessDetail
from gputop.sinks.prometheus.latest import LatestSample
from gputop.sinks.prometheus.render import Exported, exposition, snapshot_families
from gputop.sinks.prometheus.tracker import ExportTracker
from support.metrics import find, series

DCGM_ORDER = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
              "DCGM_FI_DRIVER_VERSION"]  # fmt: skip


def classify(gpu: GpuSample) -> str:
    return gpu_state(gpu).value


def render(
    shot: Snapshot,
    *,
    detail: ProcessDetail = ProcessDetail.BASIC,
    host: str | None = "node-7",
    tracker: ExportTracker | None = None,
    stale: bool = False,
) -> str:
    tracker = tracker or ExportTracker(classify)
    extras = tracker.update(shot, 0.0)
    exported = Exported(shot, extras, 0.5, stale, host, detail, tracker.window_ms)
    return exposition(snapshot_families(exported)).decode()


def lines_of(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def label_names(line: str) -> list[str]:
    inside = line[line.index("{") + 1 : line.rindex("}")]
    return [part.split("=", 1)[0] for part in inside.split('",') if part]


def test_gpu_series_carry_dcgm_exporters_labels_in_its_order() -> None:
    text = render(snapshot(gpu_sample(0), gpu_sample(1)))
    line = lines_of(text, "DCGM_FI_DEV_GPU_UTIL")[1]
    assert label_names(line) == DCGM_ORDER
    assert 'gpu="1",' in line and 'device="nvidia1"' in line
    assert 'UUID="GPU-1a2b3c4d-0000-4000-8000-000000000001"' in line
    assert 'modelName="NVIDIA RTX A6000"' in line and 'Hostname="node-7"' in line
    assert 'DCGM_FI_DRIVER_VERSION="550.54.15"' in line
    assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in text
    assert "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %)." in text
    assert "# TYPE DCGM_FI_DEV_ECC_SBE_VOL_TOTAL counter" in text


def test_values_in_dcgm_units_from_the_field_table() -> None:
    gpu = gpu_sample(0)
    values = series(render(snapshot(gpu)))
    for field in GPU_FIELDS:
        name = field.prometheus
        if name is None or not name.startswith("DCGM_FI_DEV_") or name == "DCGM_FI_DEV_PSTATE":
            continue
        raw = field.read(gpu)
        wanted = [] if raw is None else [pytest.approx(float(raw) * field.export_scale)]
        assert find(values, name, gpu="0") == wanted, name
    assert find(values, "DCGM_FI_DEV_FB_USED", gpu="0") == [30 * 1024]  # MiB
    assert find(values, "DCGM_FI_DEV_PSTATE", gpu="0") == [2.0]
    assert find(values, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu="0") == [8_765_432_100]
    assert find(values, "DCGM_FI_DEV_MEMORY_TEMP", gpu="0") == []  # not an HBM part
    assert find(values, "gputop_ecc_mode", gpu="0") == [1.0]


def test_a_value_not_reported_is_not_emitted_never_zero() -> None:
    quiet = gpu_sample(1, utilization=Utilization(gpu=None, memory=3.0), fan_speed=None)
    values = series(render(snapshot(gpu_sample(0), quiet)))
    assert find(values, "DCGM_FI_DEV_GPU_UTIL", gpu="0") == [87.0]
    assert find(values, "DCGM_FI_DEV_GPU_UTIL", gpu="1") == []
    assert find(values, "DCGM_FI_DEV_FAN_SPEED", gpu="1") == []
    assert find(values, "DCGM_FI_DEV_MEM_COPY_UTIL", gpu="1") == [3.0]


def test_every_named_field_has_a_type_and_help() -> None:
    text = render(h100_mig_box(2, 2, 4))
    for table in (GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS):
        for field in table:
            if field.prometheus and field.prometheus in text:
                assert f"# TYPE {field.prometheus} " in text
                assert f"# HELP {field.prometheus} " in text
    for name in DCGM_FAMILIES:
        if f"\n{name}{{" in text:
            assert f"# TYPE {name} {DCGM_FAMILIES[name].type}" in text


def test_mig_instances_carry_the_parents_labels_and_gpu_i() -> None:
    text = render(snapshot(mig_gpu(0, instances=3, processes_per_instance=1)))
    used = [line for line in lines_of(text, "DCGM_FI_DEV_FB_USED") if "GPU_I_ID" in line]
    assert len(used) == 3
    assert label_names(used[0]) == [
        "gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID",
        "Hostname", "DCGM_FI_DRIVER_VERSION",
    ]  # fmt: skip
    values = series(text)
    assert find(values, "DCGM_FI_DEV_FB_USED", GPU_I_ID="8", GPU_I_PROFILE="1g.10gb") == [700.0]
    # GPM's graphics activity is DCGM's ratio; the instance of slot 0 is at 0%.
    assert find(values, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", GPU_I_ID="9") == [pytest.approx(0.2)]
    # The parent GPU itself reports no utilization under MIG: none emitted.
    assert find(values, "DCGM_FI_DEV_GPU_UTIL") == []
    # A process inside an instance is labelled with it.
    assert find(values, "gputop_process_memory_used_bytes", GPU_I_ID="8", pid="100001") == [
        512 * MIB
    ]


def test_gr_engine_active_only_with_real_per_instance_activity() -> None:
    values = series(render(snapshot(mig_gpu(0, instances=2, gpm=False))))
    assert find(values, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") == []
    assert len(find(values, "DCGM_FI_DEV_FB_USED", GPU_I_PROFILE="1g.10gb")) == 2


def full_process() -> ProcessSample:
    return ProcessSample(
        pid=31337,
        type="C",
        name="python3",
        memory_used=3 * GIB,
        sm_utilization=55.0,
        user="alice",
        command='python3 train.py --note "a\\b"\nnext',
    )


@pytest.mark.parametrize("detail", list(ProcessDetail))
def test_export_processes_says_only_what_was_asked(detail: ProcessDetail) -> None:
    shot = snapshot(gpu_sample(0, processes=(full_process(),)))
    text = render(shot, detail=detail)
    values = series(text)  # also: the escaped command parses back
    memory = find(values, "gputop_process_memory_used_bytes", pid="31337")
    if detail is ProcessDetail.NONE:
        assert memory == [] and "gputop_process_" not in text
        return
    assert memory == [3 * GIB]
    assert find(values, "gputop_process_sm_utilization", process_name="python3") == [55.0]
    full = detail is ProcessDetail.FULL
    assert ("alice" in text) is full
    assert ("train.py" in text) is full
    if full:
        command = 'python3 train.py --note "a\\b"\nnext'
        assert find(values, "gputop_process_memory_used_bytes", user="alice", command=command)


def pod(name: str, container: str = "trainer", namespace: str = "ml") -> Owner:
    return Owner(runtime="containerd", container=container, pod=name, namespace=namespace)


def test_pods_label_processes_and_a_gpu_that_one_pod_holds() -> None:
    one = (
        replace(full_process(), pid=1, owner=pod("job-a")),
        replace(full_process(), pid=2, owner=pod("job-a")),
    )
    two = (replace(full_process(), pid=3, owner=pod("job-a")), replace(full_process(), pid=4))
    held = gpu_sample(2, processes=(), holders=(pod("job-b", "worker"),))
    text = render(snapshot(gpu_sample(0, processes=one), gpu_sample(1, processes=two), held))
    values = series(text)
    assert find(values, "DCGM_FI_DEV_GPU_UTIL", gpu="0", pod="job-a", namespace="ml") == [87.0]
    gpu0 = lines_of(text, "DCGM_FI_DEV_GPU_UTIL")[0]
    assert label_names(gpu0)[-3:] == ["container", "namespace", "pod"]
    # GPU 1: one process outside any pod, so the GPU is not the pod's.
    assert "pod=" not in lines_of(text, "DCGM_FI_DEV_GPU_UTIL")[1]
    assert find(values, "gputop_process_memory_used_bytes", pid="3", pod="job-a")
    assert "pod=" not in next(
        line for line in lines_of(text, "gputop_process_memory_used_bytes") if 'pid="4"' in line
    )
    # GPU 2: the kubelet's assignment, with no process yet.
    assert find(values, "DCGM_FI_DEV_GPU_UTIL", gpu="2", pod="job-b", container="worker")


def test_two_pods_on_a_gpu_label_neither() -> None:
    mixed = (
        replace(full_process(), pid=1, owner=pod("job-a")),
        replace(full_process(), pid=2, owner=pod("job-c")),
    )
    text = render(snapshot(gpu_sample(0, processes=mixed)))
    assert "pod=" not in lines_of(text, "DCGM_FI_DEV_GPU_UTIL")[0]


def at(seconds: float, *gpus: GpuSample) -> Snapshot:
    return replace(snapshot(*gpus), timestamp=datetime(2024, 1, 1) + timedelta(seconds=seconds))


def test_clock_events_count_samples_in_the_window_as_dcgm_exporter() -> None:
    tracker = ExportTracker(classify, window_ms=10_000)
    capped = gpu_sample(0, throttle_reasons=("sw_power_cap", "hw_thermal_slowdown"))
    calm = gpu_sample(0, throttle_reasons=())
    for second, gpu in ((0, capped), (2, capped), (4, calm), (6, capped)):
        tracker.update(at(second, gpu), 0.0)
    values = series(render(at(8, calm), tracker=tracker))
    window = {"window_size_in_ms": "10000"}
    assert find(values, "DCGM_EXP_CLOCK_EVENTS_COUNT", clock_event="power_cap", **window) == [3]
    assert find(values, "DCGM_EXP_CLOCK_EVENTS_COUNT", clock_event="hw_thermal") == [3]
    # 13 s on, the first two have left the window.
    values = series(render(at(13, calm), tracker=tracker))
    assert find(values, "DCGM_EXP_CLOCK_EVENTS_COUNT", clock_event="power_cap") == [1]
    values = series(render(at(30, calm), tracker=tracker))
    assert find(values, "DCGM_EXP_CLOCK_EVENTS_COUNT") == [0]  # one series, no clock_event
    assert find(values, "gputop_throttle_reason", reason="sw_power_cap") == [0]


def test_state_and_seconds_waiting() -> None:
    tracker = ExportTracker(classify)
    waiting = gpu_sample(0, utilization=Utilization(gpu=1.0, memory=0.0), throttle_reasons=())
    busy = gpu_sample(0, throttle_reasons=())
    tracker.update(at(0, busy), 0.0)
    tracker.update(at(5, waiting), 0.0)
    values = series(render(at(65, waiting), tracker=tracker))
    assert find(values, "gputop_gpu_state", state="waiting") == [1.0]
    assert find(values, "gputop_gpu_state", state="busy") == [0.0]
    assert find(values, "gputop_gpu_waiting_seconds", gpu="0") == [60.0]
    values = series(render(at(70, busy), tracker=tracker))
    assert find(values, "gputop_gpu_waiting_seconds", gpu="0") == [0.0]
    assert find(values, "gputop_gpu_state", state="busy") == [1.0]


def test_staleness_from_the_sample_age() -> None:
    now = [100.0]
    latest = LatestSample(ExportTracker(classify), stale_after=3.0, clock=lambda: now[0])
    assert latest.render()[0] == b""
    shot = snapshot(gpu_sample(0), replace(gpu_sample(1), stale=True))
    latest.take(shot)
    now[0] = 102.0
    values = series(latest.render()[0].decode())
    assert find(values, "gputop_sample_age_seconds") == [2.0]
    assert find(values, "gputop_stale") == [0.0]
    assert find(values, "gputop_gpu_stale", gpu="0") == [0.0]
    assert find(values, "gputop_gpu_stale", gpu="1") == [1.0]  # its driver call hung
    now[0] = 104.5
    values = series(latest.render()[0].decode())
    assert find(values, "gputop_stale") == [1.0]
    assert find(values, "gputop_gpu_stale", gpu="0") == [1.0]
    assert find(values, "DCGM_FI_DEV_GPU_UTIL", gpu="0") == [87.0]  # the last sample stays


class Blocking:
    """A source whose second poll blocks until released: a hung driver."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.polls = 0

    def poll(self) -> Snapshot:
        self.polls += 1
        if self.polls > 1:
            self.release.wait(30)
        return snapshot(gpu_sample(0))

    def close(self) -> None:
        self.release.set()


def test_a_scrape_never_waits_for_a_hung_sampler() -> None:
    source = Blocking()
    latest = LatestSample(ExportTracker(classify), stale_after=0.3)
    pipeline = Pipeline(LiveFeed(source), interval=0.25)
    latest.take(pipeline.start().snapshot)
    loop = PollLoop(pipeline, started=True)
    loop.start(lambda tick: latest.take(tick.snapshot))
    try:
        deadline = time.monotonic() + 5
        while source.polls < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        began = time.perf_counter()
        values = series(latest.render()[0].decode())
        assert time.perf_counter() - began < 0.5
        assert find(values, "gputop_stale") == [1.0]
        assert find(values, "DCGM_FI_DEV_POWER_USAGE", gpu="0") == [251.5]
    finally:
        source.release.set()
        loop.stop(2.0)


def test_added_labels_go_before_the_pod_labels_as_dcgm_exporter_renders() -> None:
    mine = (replace(full_process(), pid=1, owner=pod("job-a")),)
    gpu = gpu_sample(0, processes=mine, throttle_reasons=("sw_power_cap",))
    text = render(snapshot(gpu))
    event = lines_of(text, "DCGM_EXP_CLOCK_EVENTS_COUNT")[0]
    assert label_names(event)[-5:] == [
        "clock_event", "window_size_in_ms", "container", "namespace", "pod",
    ]  # fmt: skip
    state = lines_of(text, "gputop_gpu_state")[0]
    assert label_names(state)[-4:] == ["state", "container", "namespace", "pod"]


def test_the_readme_lists_every_exported_name() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("## `gputop export`") :]
    section = section[: section.index("\n## ", 1)]
    # The table abbreviates a group as `DCGM_FI_DEV_FB_TOTAL`, `_FB_USED`: match either.
    shown = set(re.findall(r"`(DCGM_\w+|gputop_\w+|_\w+)", section))

    def listed(name: str) -> bool:
        short = "_" + name.split("_", 3)[-1] if name.startswith("DCGM_FI_") else name
        return name in shown or short in shown

    for table in (GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS):
        for field in table:
            assert field.prometheus is None or listed(field.prometheus), field.prometheus
    text = render(h100_mig_box(2, 2, 4))
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            assert listed(line.split()[2]), line


def test_gpm_activity_is_dcgm_profiling_metrics_in_dcgms_units() -> None:
    window = loaded_windows()[1]
    text = render(snapshot(h200_gpu(window)))
    values = series(text)
    for name, expected in (
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.9787),
        ("DCGM_FI_PROF_SM_ACTIVE", 0.9433),
        ("DCGM_FI_PROF_SM_OCCUPANCY", 0.1394),
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.9157),
        ("DCGM_FI_PROF_DRAM_ACTIVE", 0.1586),
        ("DCGM_FI_PROF_PCIE_TX_BYTES", 0.74 * MIB),
        ("DCGM_FI_PROF_PCIE_RX_BYTES", 2.36 * MIB),
        ("DCGM_FI_PROF_NVLINK_TX_BYTES", 0.0),
        ("DCGM_FI_PROF_NVLINK_RX_BYTES", 0.0),
    ):
        assert find(values, name, gpu="0") == [pytest.approx(expected)], name
        family = DCGM_FAMILIES[name]
        assert f"# TYPE {name} gauge" in text
        assert f"# HELP {name} {family.help}" in text
    # dcgm-exporter's help texts, word for word (etc/dcp-metrics-included.csv).
    assert DCGM_FAMILIES["DCGM_FI_PROF_SM_ACTIVE"].help == (
        "The ratio of cycles an SM has at least 1 warp assigned."
    )
    assert DCGM_FAMILIES["DCGM_FI_PROF_PCIE_TX_BYTES"].help.endswith("in bytes per second.")


def test_no_profiling_metric_for_a_gpu_without_gpm() -> None:
    values = series(render(snapshot(without_activity(h200_gpu(loaded_windows()[1])))))
    assert not [key for key in values if key[0].startswith("DCGM_FI_PROF_")]
    assert find(values, "DCGM_FI_DEV_GPU_UTIL", gpu="0") == [98.0]
