"""--pick N: the least used GPUs first, lost and MIG GPUs never."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputop.cli.pick import NotEnoughGpus, format_pick, order_note, pick_gpus
from gputop.model import GpuSample, Memory, Snapshot, Utilization
from gputop.sources.smi.recording import snapshot_from_path

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
GIB = 2**30


def gpu(index: int, used: float | None, busy: float | None, **changes: object) -> GpuSample:
    sample = GpuSample(
        index=index,
        memory=Memory(total=24 * GIB, used=None if used is None else int(used * GIB)),
        utilization=Utilization(gpu=busy),
    )
    return dataclasses.replace(sample, **changes)  # type: ignore[arg-type]


def snapshot(*gpus: GpuSample) -> Snapshot:
    return Snapshot(timestamp=None, gpus=gpus)


def test_least_memory_used_first_then_least_busy_then_index() -> None:
    machine = snapshot(
        gpu(0, 10, 0),
        gpu(1, 1, 90),
        gpu(2, 1, 5),
        gpu(3, 0.5, 100),
        gpu(4, 1, 5),
    )
    assert pick_gpus(machine, 1) == [3]
    assert pick_gpus(machine, 4) == [3, 2, 4, 1]
    assert pick_gpus(machine, 5) == [3, 2, 4, 1, 0]


def test_unknown_use_sorts_after_known_use() -> None:
    machine = snapshot(gpu(0, None, 0), gpu(1, 20, None), gpu(2, 20, 50))
    assert pick_gpus(machine, 3) == [2, 1, 0]


def test_lost_and_mig_gpus_are_never_picked() -> None:
    machine = snapshot(gpu(0, 0, 0, lost=True), gpu(1, 0, 0, mig_mode=True), gpu(2, 9, 9))
    assert pick_gpus(machine, 1) == [2]
    with pytest.raises(NotEnoughGpus, match=r"only 1 usable GPU.*2 lost or in MIG mode") as caught:
        pick_gpus(machine, 2)
    assert caught.value.exit_code == 1


def test_on_a_real_capture() -> None:
    # Four RTX 3090s using 10868, 10788, 10976 and 11134 MiB: GPU 1 is lightest, then 0.
    four = snapshot_from_path(SNAPSHOTS / "rtx3090x4-procs-v12.xml")
    assert pick_gpus(four, 2) == [1, 0]


def test_output_and_order_note() -> None:
    assert format_pick([3, 0]) == "3,0"
    assert order_note({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) is None
    note = order_note({})
    assert note is not None and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in note
