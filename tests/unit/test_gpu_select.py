"""--gpu SPEC matching and the *_VISIBLE_DEVICES note."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputop.errors import BadArguments
from gputop.model import ProcessSample, Snapshot
from gputop.pipeline.gpu_select import (
    GpuSelection,
    describe_devices,
    describe_visible_devices,
    parse_pci_bus_id,
    short_uuid,
)
from support.shortcuts import select_gpus, snapshot_from_path

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


@pytest.fixture(scope="module")
def four() -> Snapshot:
    """4x RTX 3090: UUIDs GPU-8ad6666a, GPU-d45bf8ec, GPU-0a66778f, GPU-4354b5f6."""
    return snapshot_from_path(SNAPSHOTS / "rtx3090x4-procs-v12.xml")


@pytest.fixture(scope="module")
def mig() -> Snapshot:
    """The A100 capture with MIG UUIDs and a process per MIG device, as NVML would give."""
    snapshot = snapshot_from_path(SNAPSHOTS / "a100-sxm4-80gb-mig-v12.xml")
    gpu = snapshot.gpus[0]
    devices = tuple(
        dataclasses.replace(device, uuid=f"MIG-{n}c1e0000-aaaa-bbbb-cccc-00000000000{n}")
        for n, device in enumerate(gpu.mig_devices)
    )
    processes = tuple(
        ProcessSample(pid=100 + n, gpu_instance_id=device.gpu_instance_id, compute_instance_id=0)
        for n, device in enumerate(devices)
    )
    return dataclasses.replace(
        snapshot, gpus=(dataclasses.replace(gpu, mig_devices=devices, processes=processes),)
    )


def indices(snapshot: Snapshot) -> list[int]:
    return [gpu.index for gpu in snapshot.gpus]


def test_indices_keep_nvml_numbering(four: Snapshot) -> None:
    chosen = select_gpus(four, "0, 2")
    assert indices(chosen) == [0, 2]
    assert chosen.gpus[1] is four.gpus[2]  # untouched samples, original index
    assert chosen.attached_gpus == four.attached_gpus


@pytest.mark.parametrize(
    "spec",
    [
        "GPU-d45bf8ec-5a88-7fa3-7baa-c0196ebd87c8",
        "GPU-d45bf8ec",
        "gpu-D45BF8",
        "00000000:81:00.0",
        "0000:81:00.0",
        "81:00.0",
    ],
)
def test_uuids_prefixes_and_bus_id_spellings_name_gpu_1(four: Snapshot, spec: str) -> None:
    assert indices(select_gpus(four, spec)) == [1]


def test_mixed_items_select_in_nvml_order(four: Snapshot) -> None:
    assert indices(select_gpus(four, "c2:00.0,GPU-8ad6,1")) == [0, 1, 3]


def test_pci_domains_other_than_zero() -> None:
    azure = snapshot_from_path(SNAPSHOTS / "tesla-k80x4-azure-v10.xml")
    assert indices(select_gpus(azure, "2df7:00:00.0")) == [1]
    # Domain 0 names none of them: lenient matching drops it...
    assert indices(GpuSelection.parse("00:00.0,1").apply(azure, strict=False)) == [1]
    # ...strict matching (the first snapshot) reports it.
    with pytest.raises(BadArguments, match=r"nothing matches '00:00\.0'"):
        GpuSelection.parse("00:00.0").apply(azure)


def test_an_ambiguous_uuid_prefix_is_an_error() -> None:
    pair = snapshot_from_path(SNAPSHOTS / "rtx-a5000x2-v13.xml")
    with pytest.raises(BadArguments, match="ambiguous") as caught:
        select_gpus(pair, "GPU-12345678")
    assert "\n" not in str(caught.value)
    assert indices(select_gpus(pair, "GPU-12345678-aaaa-bbbb-cccc-0123456789cd")) == [1]


def test_a_spec_matching_nothing_lists_what_exists_on_one_line(four: Snapshot) -> None:
    with pytest.raises(BadArguments) as caught:
        select_gpus(four, "7")
    message = str(caught.value)
    assert "\n" not in message
    assert "'7'" in message
    for expected in ("0 GPU-8ad6666a 00000000:46:00.0", "3 GPU-4354b5f6 00000000:C2:00.0"):
        assert expected in message


def test_one_unmatched_item_among_good_ones_is_an_error(four: Snapshot) -> None:
    with pytest.raises(BadArguments, match="'GPU-ffff'"):
        select_gpus(four, "0,GPU-ffff")


def test_lenient_apply_for_later_ticks_drops_what_is_gone(four: Snapshot) -> None:
    selection = GpuSelection.parse("1,3")
    fewer = dataclasses.replace(four, gpus=four.gpus[:2])
    assert indices(selection.apply(fewer, strict=False)) == [1]
    assert indices(selection.apply(four, strict=False)) == [1, 3]


@pytest.mark.parametrize("spec", ["foo", "", " , ", "GPU-", "MIG-", "GPU-xyz", "1:2:3:4", "-1"])
def test_malformed_specs_are_refused_before_any_snapshot(spec: str) -> None:
    with pytest.raises(BadArguments) as caught:
        GpuSelection.parse(spec)
    assert "\n" not in str(caught.value)


def test_a_mig_uuid_selects_its_gpu_with_only_that_device_and_its_processes(
    mig: Snapshot,
) -> None:
    chosen = select_gpus(mig, "mig-2C1E")
    (gpu,) = chosen.gpus
    assert gpu.index == 0
    assert [device.uuid for device in gpu.mig_devices] == [mig.gpus[0].mig_devices[2].uuid]
    assert [process.pid for process in gpu.processes] == [102]


def test_two_mig_devices_of_one_gpu_and_the_whole_gpu(mig: Snapshot) -> None:
    two = select_gpus(mig, "MIG-0c1e,MIG-3c1e")
    assert [device.index for device in two.gpus[0].mig_devices] == [0, 3]
    assert [process.pid for process in two.gpus[0].processes] == [100, 103]
    whole = select_gpus(mig, "MIG-0c1e,0")
    assert whole.gpus[0] is mig.gpus[0]


def test_mig_devices_are_listed_when_nothing_matches(mig: Snapshot) -> None:
    with pytest.raises(BadArguments, match="MIG MIG-0c1e0000 MIG-1c1e0000"):
        select_gpus(mig, "MIG-ffff")


def test_no_spec_is_the_snapshot_itself(four: Snapshot) -> None:
    assert select_gpus(four, None) is four


def test_helpers() -> None:
    assert parse_pci_bus_id("00000000:0A:00.0") == parse_pci_bus_id("0a:00.0") == (0, 10, 0, 0)
    assert parse_pci_bus_id("0000F8D6:00:00.0") == (0xF8D6, 0, 0, 0)
    assert parse_pci_bus_id("GPU-1") is None
    assert short_uuid("GPU-513536b6-7d19-9063-b049-1e69664bb298") == "GPU-513536b6"
    assert short_uuid(None) == "no-uuid"
    assert describe_devices(Snapshot(timestamp=None)) == "no GPUs here"


def test_visible_devices_note() -> None:
    assert describe_visible_devices({}, 4) is None
    assert describe_visible_devices({"PATH": "/usr/bin"}, 4) is None

    cuda = describe_visible_devices({"CUDA_VISIBLE_DEVICES": "2,0"}, 4)
    assert cuda is not None
    assert "2 as cuda:0, 0 as cuda:1" in cuda
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in cuda and "differ" in cuda

    ordered = describe_visible_devices(
        {"CUDA_VISIBLE_DEVICES": "GPU-8ad6", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, 4
    )
    assert ordered is not None and "GPU-8ad6 as cuda:0" in ordered and "differ" not in ordered

    none = describe_visible_devices({"CUDA_VISIBLE_DEVICES": ""}, 4)
    assert none is not None and "no GPU" in none

    # Two GPUs asked, two shown: only CUDA's renumbering is worth a word.
    both = describe_visible_devices(
        {"NVIDIA_VISIBLE_DEVICES": "2,3", "CUDA_VISIBLE_DEVICES": "1"}, 2
    )
    assert both is not None
    assert "NVIDIA_VISIBLE_DEVICES" not in both and "1 as cuda:0" in both
    assert "\n" not in both

    # What was asked is what NVML shows: nothing to say (issue 25).
    assert describe_visible_devices({"NVIDIA_VISIBLE_DEVICES": "all"}, 8) is None
    assert describe_visible_devices({"NVIDIA_VISIBLE_DEVICES": "void"}, 0) is None
    assert describe_visible_devices({"NVIDIA_VISIBLE_DEVICES": "0"}, 1) is None
    assert describe_visible_devices({"NVIDIA_VISIBLE_DEVICES": "2,3"}, 2) is None
    assert describe_visible_devices({"CUDA_VISIBLE_DEVICES": "0"}, 1) is None
    ordered_all = {"CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert describe_visible_devices(ordered_all, 2) is None
    # ...but fastest-first order may differ from NVML's on two GPUs.
    assert describe_visible_devices({"CUDA_VISIBLE_DEVICES": "0,1"}, 2) is not None
    uuid = "GPU-8ad6666a-1234"
    named = {"NVIDIA_VISIBLE_DEVICES": "GPU-8ad6"}
    assert describe_visible_devices(named, 1, [uuid]) is None
    stranger = describe_visible_devices({"NVIDIA_VISIBLE_DEVICES": "GPU-0a66"}, 1, [uuid])
    assert stranger is not None and "not applied as asked" in stranger


@pytest.mark.parametrize("value", ["2,3", "none", "void", ""])
def test_an_inherited_visible_devices_never_contradicts_what_nvml_shows(value: str) -> None:
    """The variable asks the container runtime for GPUs; when NVML shows others (it was
    inherited by a shell the runtime never touched), the note says so instead of claiming
    the container sees only some or none."""
    note = describe_visible_devices({"NVIDIA_VISIBLE_DEVICES": value}, 8)
    assert note is not None
    assert "NVML shows 8 GPUs" in note and "not applied" in note
    assert "sees only" not in note and "exposes no GPU" not in note


def test_cuda_visible_devices_past_the_last_gpu_are_ignored_as_cuda_does() -> None:
    partly = describe_visible_devices({"CUDA_VISIBLE_DEVICES": "1,5,0"}, 2)
    assert partly is not None and "1 as cuda:0" in partly and "as cuda:1" not in partly
    nothing = describe_visible_devices({"CUDA_VISIBLE_DEVICES": "7"}, 2)
    assert nothing is not None and "see no GPU" in nothing
