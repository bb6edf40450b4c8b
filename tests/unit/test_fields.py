"""The field table: each metric once, and the outputs, history and labels read it."""

from __future__ import annotations

import dataclasses
import re

from gputop.history.metrics import FIELD_READERS, Metric
from gputop.insight.report import gpu_to_json
from gputop.model import GpuSample, MigDeviceSample, ProcessSample, Snapshot
from gputop.model.fields import (
    CSV_LOG,
    GPU_BY_PATH,
    GPU_FIELDS,
    HOST_FIELDS,
    IDENTITY,
    MIG_FIELDS,
    OWNER_PARTS,
    PROCESS_FIELDS,
    Value,
    host_facts,
)
from gputop.sinks.csv_log import COLUMNS, gpu_row
from gputop.sinks.json import snapshot_dict
from gputop.ui.render import gauges, process_rows
from support.every_field import EVERY_FIELD
from support.shortcuts import summarize

PROMETHEUS = re.compile(r"(DCGM_FI_(DEV|PROF)_[A-Z0-9_]+|gputop_[a-z0-9_]+)")


def test_names_are_unique_within_each_output() -> None:
    for table in (GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS):
        for attribute in ("path", "json", "csv", "query", "prometheus"):
            names = [getattr(f, attribute) for f in table if getattr(f, attribute) is not None]
            assert len(names) == len(set(names)), (attribute, names)


def test_prometheus_names_are_dcgm_exporters_or_ours() -> None:
    for table in (GPU_FIELDS, MIG_FIELDS, PROCESS_FIELDS):
        for f in table:
            if f.prometheus is not None:
                assert PROMETHEUS.fullmatch(f.prometheus), f.prometheus
    named = {f.path: f.prometheus for f in GPU_FIELDS}
    assert named["utilization.gpu"] == "DCGM_FI_DEV_GPU_UTIL"
    assert named["utilization.memory"] == "DCGM_FI_DEV_MEM_COPY_UTIL"
    assert named["memory.used"] == "DCGM_FI_DEV_FB_USED"
    assert named["memory.free"] == "DCGM_FI_DEV_FB_FREE"
    assert named["memory.reserved"] == "DCGM_FI_DEV_FB_RESERVED"
    assert named["power.draw"] == "DCGM_FI_DEV_POWER_USAGE"
    assert named["temperature.gpu"] == "DCGM_FI_DEV_GPU_TEMP"
    assert named["clocks.sm"] == "DCGM_FI_DEV_SM_CLOCK"
    assert named["clocks.memory"] == "DCGM_FI_DEV_MEM_CLOCK"
    assert named["fan_speed"] == "DCGM_FI_DEV_FAN_SPEED"
    for table in (GPU_FIELDS, MIG_FIELDS):
        for f in table:
            framebuffer = (f.prometheus or "").startswith("DCGM_FI_DEV_FB_")
            # DCGM's 0..1, from %; its PCIe and NVLink rates are bytes/s as the model's.
            ratio = (f.prometheus or "").startswith("DCGM_FI_PROF_") and f.unit != "B/s"
            millijoules = f.prometheus == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
            expected = (
                1 / 1024**2 if framebuffer else 1 / 100 if ratio else 1000 if millijoules else 1.0
            )
            assert f.export_scale == expected, f.path
            assert not ratio or f.unit == "%", f.path
            assert framebuffer is (f.value is Value.BYTES), f.path


def test_every_path_reads_its_model_value() -> None:
    gpu = EVERY_FIELD.gpus[0]
    for f in GPU_FIELDS:
        if f.value is not Value.COUNT:
            value: object = gpu
            for part in f.path.split("."):
                value = getattr(value, part)
            assert f.read(gpu) == value, f.path
    assert GPU_BY_PATH["processes"].read(gpu) == len(gpu.processes)
    for table, obj in ((MIG_FIELDS, gpu.mig_devices[0]), (PROCESS_FIELDS, gpu.processes[0])):
        for f in table:
            f.read(obj)


def test_process_table_is_every_process_sample_field_in_order() -> None:
    top = [f.path for f in PROCESS_FIELDS if "." not in f.path]
    assert top == [f.name for f in dataclasses.fields(ProcessSample)]
    # The owner's parts follow the fields, each read from the owner (None without one).
    parts = [f for f in PROCESS_FIELDS if "." in f.path]
    assert [f.path for f in parts] == [f"owner.{name}" for name, _ in OWNER_PARTS]
    process = EVERY_FIELD.gpus[0].processes[0]
    assert process.owner is not None
    for f in parts:
        assert f.read(process) == getattr(process.owner, f.path.split(".")[1]), f.path
        assert f.read(ProcessSample(pid=1)) is None, f.path
    model = {f.name for f in dataclasses.fields(MigDeviceSample)}
    assert {f.path.split(".")[0] for f in MIG_FIELDS} <= model


def test_json_and_csv_carry_exactly_the_tables_names() -> None:
    gpu = snapshot_dict(EVERY_FIELD)["gpus"][0]
    structure = [
        "mig_devices",
        "processes",
        "holders",
        "problems",
        "unavailable",
        "state",
        "at_power_cap",
    ]
    assert list(gpu) == [f.json for f in GPU_FIELDS if f.json] + structure
    assert list(gpu["mig_devices"][0]) == [f.json for f in MIG_FIELDS if f.json] + ["holders"]
    assert list(gpu["processes"][0]) == [f.json for f in PROCESS_FIELDS if f.json]
    # The owner flattened: a process's pod and container are keys of the process.
    owned = gpu["processes"][0]
    assert [owned[key] for key in ("pod", "namespace", "container", "slurm_job")] == [
        "train-7f9c",
        "ml",
        "trainer",
        None,
    ]
    assert owned["container_id"].startswith("6a3c1f0d9b2e")
    assert gpu["processes"][2]["slurm_job"] == "4711"
    assert [holder["pod"] for holder in gpu["holders"]] == ["train-7f9c", "notebook-0"]
    assert gpu["mig_devices"][0]["holders"][0]["namespace"] == "ml"
    container = snapshot_dict(EVERY_FIELD)["container"]
    assert (container["pod"], container["given"], container["unmatched"]) == (
        "train-7f9c",
        ["GPU-0"],
        ["GPU-9"],
    )
    assert ("timestamp", *(f.csv for f in CSV_LOG)) == COLUMNS
    assert len(gpu_row(EVERY_FIELD, EVERY_FIELD.gpus[0])) == len(COLUMNS)


def test_report_names_a_gpu_by_the_identity_fields() -> None:
    gpu = gpu_to_json(summarize([EVERY_FIELD]).gpus[0])
    assert list(gpu)[:3] == [f.json for f in IDENTITY]
    assert [gpu[f.json] for f in IDENTITY if f.json] == [0, "NVIDIA A100-SXM4-80GB", "GPU-0"]


def test_history_metrics_are_table_paths() -> None:
    gpu = EVERY_FIELD.gpus[0]
    for metric, read in FIELD_READERS.items():
        assert read(gpu) == GPU_BY_PATH[metric.value].read(gpu)
    assert set(FIELD_READERS) == set(Metric) - {Metric.THROTTLED}


def test_labels_come_from_the_table() -> None:
    assert gauges.FIELD_LABELS["power.draw"] == GPU_BY_PATH["power.draw"].label == "power"
    labels = {f.path: f.label for f in PROCESS_FIELDS}
    assert {path: labels[path] for path in process_rows.FIELD_LABELS} == process_rows.FIELD_LABELS
    assert set(process_rows.FIELD_LABELS) == {path for path in labels if "." not in path}


def test_host_facts_are_named_once() -> None:
    assert HOST_FIELDS == (
        "user",
        "command",
        "cpu_percent",
        "host_memory",
        "start_time",
        "foreign",
        "local_pid",
        "owner",
    )
    host = ProcessSample(pid=3, name="host name", user="ada", cpu_percent=5.0, local_pid=9)
    assert host_facts(host) == {
        "user": "ada",
        "command": None,
        "cpu_percent": 5.0,
        "host_memory": None,
        "start_time": None,
        "foreign": False,
        "local_pid": 9,
        "owner": None,
    }


def test_a_snapshot_without_gpus_has_no_rows() -> None:
    assert snapshot_dict(Snapshot(timestamp=None))["gpus"] == []
    assert GpuSample(index=0).processes == ()
