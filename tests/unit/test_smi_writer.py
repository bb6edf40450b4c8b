"""--record: nvidia-smi XML out, and gputop's replay reads back exactly what went in."""

from __future__ import annotations

import dataclasses
import gzip
import os
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

from gputop.errors import BadArguments
from gputop.model import (
    GpuSample,
    Memory,
    Power,
    ProcessSample,
    Reason,
    Snapshot,
    Utilization,
)
from gputop.sinks.smi_xml import SmiXmlWriter, format_timestamp, snapshot_to_xml
from gputop.sources.smi.recording import Recording
from gputop.sources.smi.xml import parse_document

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
CAPTURES = sorted(SNAPSHOTS.glob("*.xml"))
MIB = 2**20


def test_every_bundled_capture_is_there() -> None:
    assert len(CAPTURES) >= 10


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda path: path.name)
def test_parse_write_parse_gives_the_same_snapshot(capture: Path) -> None:
    original = parse_document(capture.read_bytes())

    again = parse_document(snapshot_to_xml(original))

    # Whole-value equality: every field, every missing value's reason, MIG devices, processes.
    assert again == original


def live_like() -> Snapshot:
    """What the NVML source produces: more than smi XML carries (host fields, MIG UUIDs)."""
    process = ProcessSample(
        pid=4242,
        type="C",
        name="python3 <train> & eval",
        memory_used=2974 * MIB,
        user="alice",
        command="python3 train.py",
        cpu_percent=99.0,
        foreign=True,
    )
    gpu = GpuSample(
        index=0,
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-513536b6-7d19-9063-b049-1e69664bb298",
        pci_bus_id="00000000:65:00.0",
        utilization=Utilization(gpu=12.0, memory=3.0, encoder=0.0, decoder=None),
        memory=Memory(total=81920 * MIB, used=50 * MIB, free=80999 * MIB, reserved=869 * MIB),
        power=Power(draw=67.03, limit=500.0, default_limit=500.0, min_limit=100.0, max_limit=500.0),
        fan_speed=None,
        performance_state="P0",
        throttle_reasons=("sw_power_cap",),
        processes=(process,),
        unavailable=(
            ("utilization.decoder", Reason.NOT_SUPPORTED),
            ("fan_speed", Reason.NOT_AVAILABLE),
        ),
    )
    return Snapshot(
        timestamp=datetime(2023, 8, 4, 11, 44, 30, 123456),
        gpus=(gpu,),
        host="node7",
        driver_version="535.54.03",
        cuda_version="12.2",
        attached_gpus=1,
    )


def test_element_names_units_and_prolog_are_nvidia_smis() -> None:
    text = snapshot_to_xml(live_like()).decode()

    assert text.startswith('<?xml version="1.0"')
    assert '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">' in text
    assert "<timestamp>Fri Aug  4 11:44:30 2023</timestamp>" in text
    root = ET.fromstring(text.split("\n", 2)[2])
    gpu = root.find("gpu")
    assert gpu is not None
    assert gpu.get("id") == "00000000:65:00.0"
    expected = {
        "fb_memory_usage/total": "81920 MiB",
        "fb_memory_usage/reserved": "869 MiB",
        "gpu_power_readings/power_draw": "67.03 W",
        "gpu_power_readings/current_power_limit": "500.00 W",
        "utilization/gpu_util": "12 %",
        "utilization/decoder_util": "[Not Supported]",
        "fan_speed": "N/A",
        "clocks_event_reasons/clocks_event_reason_sw_power_cap": "Active",
        "clocks_event_reasons/clocks_event_reason_gpu_idle": "Not Active",
        "pci/pci_bus_id": "00000000:65:00.0",
        "processes/process_info/pid": "4242",
        "processes/process_info/type": "C",
        "processes/process_info/process_name": "python3 <train> & eval",
        "processes/process_info/used_memory": "2974 MiB",
        "processes/process_info/gpu_instance_id": "N/A",
    }
    assert {path: gpu.findtext(path) for path in expected} == expected


def test_what_the_writer_carries_replays_with_the_same_values() -> None:
    snapshot = live_like()

    back = parse_document(snapshot_to_xml(snapshot))

    gpu, original = back.gpus[0], snapshot.gpus[0]
    assert snapshot.timestamp is not None
    assert back.timestamp == snapshot.timestamp.replace(microsecond=0)
    assert (back.driver_version, back.cuda_version, back.attached_gpus) == ("535.54.03", "12.2", 1)
    for name in ("name", "uuid", "pci_bus_id", "utilization", "memory", "power", "fan_speed"):
        assert getattr(gpu, name) == getattr(original, name), name
    assert gpu.throttle_reasons == ("sw_power_cap",)
    assert gpu.reason("utilization.decoder") is Reason.NOT_SUPPORTED
    assert gpu.reason("fan_speed") is Reason.NOT_AVAILABLE
    (process,) = gpu.processes
    assert (process.pid, process.type, process.name, process.memory_used) == (
        4242,
        "C",
        "python3 <train> & eval",
        2974 * MIB,
    )


def test_mig_devices_and_their_processes_replay() -> None:
    a100 = parse_document((SNAPSHOTS / "a100-sxm4-80gb-mig-v12.xml").read_bytes())
    gpu = a100.gpus[0]
    processes = (
        ProcessSample(
            pid=7, type="C", memory_used=300 * MIB, gpu_instance_id=4, compute_instance_id=0
        ),
    )
    with_process = dataclasses.replace(a100, gpus=(dataclasses.replace(gpu, processes=processes),))

    back = parse_document(snapshot_to_xml(with_process)).gpus[0]

    assert back.mig_mode is True
    assert [d.gpu_instance_id for d in back.mig_devices] == [3, 4, 5, 6]
    assert back.mig_devices[1].processes == processes
    assert back.mig_devices[0].processes == ()
    assert back.mig_devices == tuple(
        dataclasses.replace(d, processes=p)
        for d, p in zip(gpu.mig_devices, ((), processes, (), ()), strict=True)
    )


def test_every_reason_is_spelled_so_that_replay_gives_it_back() -> None:
    for reason in Reason:
        # NOT_IN_LOG is a CSV log's (a field it did not ask for): XML has no word for it and
        # writes N/A, as for UNDER_MIG.
        if reason in (Reason.NOT_REPORTED, Reason.UNDER_MIG, Reason.NOT_IN_LOG):
            continue
        gpu = GpuSample(index=0, fan_speed=None, unavailable=(("fan_speed", reason),))
        back = parse_document(snapshot_to_xml(Snapshot(timestamp=None, gpus=(gpu,))))
        assert back.gpus[0].fan_speed is None
        assert back.gpus[0].reason("fan_speed") is reason


def test_odd_values_do_not_break_the_document() -> None:
    gpu = GpuSample(
        index=0,
        name="GPU \x01with\x1b control",
        power=Power(draw=float("nan"), limit=123.456),
        processes=(ProcessSample(pid=1, name=None, type=None),),
    )

    back = parse_document(snapshot_to_xml(Snapshot(timestamp=None, gpus=(gpu,)))).gpus[0]

    assert back.name == "GPU with control"
    assert back.power.draw is None
    assert back.power.limit == 123.456
    assert back.processes == (ProcessSample(pid=1),)


def test_timestamps_in_nvidia_smi_format_whatever_the_locale() -> None:
    assert format_timestamp(datetime(2023, 8, 4, 11, 44, 30)) == "Fri Aug  4 11:44:30 2023"
    assert format_timestamp(datetime(2025, 12, 30, 9, 5, 0)) == "Tue Dec 30 09:05:00 2025"


def stream_of(count: int) -> list[Snapshot]:
    base = parse_document((SNAPSHOTS / "rtx3090x4-procs-v12.xml").read_bytes())
    assert base.timestamp is not None
    return [
        dataclasses.replace(
            base,
            timestamp=base.timestamp.replace(second=n),
            gpus=tuple(
                dataclasses.replace(g, utilization=dataclasses.replace(g.utilization, gpu=10.0 * n))
                for g in base.gpus
            ),
        )
        for n in range(count)
    ]


@pytest.mark.parametrize("name", ["rec.xml", "rec.xml.gz"])
def test_a_recording_replays_document_by_document(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    snapshots = stream_of(3)
    with SmiXmlWriter(path) as writer:
        writer.write(snapshots[0])
    # Appending later (a second recorder run) continues the same stream.
    with SmiXmlWriter(path) as writer:
        for snapshot in snapshots[1:]:
            writer.write(snapshot)
        assert writer.count == 2

    with Recording.open(path) as recording:
        assert len(recording) == 3
        assert [recording.snapshot(i) for i in range(3)] == snapshots
        assert [recording.timestamp(i) for i in range(3)] == [s.timestamp for s in snapshots]
        assert recording.warnings == []


def test_each_document_is_on_disk_before_write_returns(tmp_path: Path) -> None:
    path = tmp_path / "live.xml.gz"
    snapshots = stream_of(2)
    writer = SmiXmlWriter(path)
    writer.write(snapshots[0])
    writer.write(snapshots[1])
    # Not closed: a reader (or a crash now) sees two complete gzip members.
    documents = gzip.decompress(path.read_bytes()).count(b"</nvidia_smi_log>")
    writer.close()
    writer.close()
    assert documents == 2


def test_a_recorder_killed_mid_document_loses_only_that_document(tmp_path: Path) -> None:
    path = tmp_path / "killed.xml"
    snapshots = stream_of(3)
    with SmiXmlWriter(path) as writer:
        writer.write(snapshots[0])
        writer.write(snapshots[1])
    partial = snapshot_to_xml(snapshots[2])
    with path.open("ab") as handle:
        handle.write(partial[: len(partial) // 2])

    with Recording.open(path) as recording:
        assert len(recording) == 2
        assert recording.snapshot(1) == snapshots[1]
        assert any("incomplete" in warning for warning in recording.warnings)


def test_fsync_is_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    with SmiXmlWriter(tmp_path / "a.xml") as plain:
        plain.write(stream_of(1)[0])
    with SmiXmlWriter(tmp_path / "b.xml", fsync=True) as durable:
        durable.write(stream_of(1)[0])
    assert len(synced) == 1


def test_an_unwritable_path_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(BadArguments, match="cannot write") as caught:
        SmiXmlWriter(tmp_path / "no" / "such" / "dir.xml")
    assert "\n" not in str(caught.value)
    with pytest.raises(BadArguments, match="cannot write"):
        SmiXmlWriter(tmp_path)  # a directory
