"""--pick N: free GPUs only (no compute process, no recent load), least used first; lost and
MIG GPUs never; fewer free than asked is a one-line refusal."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputop.cli.pick import NotEnoughGpus, format_pick, order_note, pick_gpus
from gputop.model import GpuSample, Memory, ProcessSample, Reason, Snapshot, Utilization
from support.shortcuts import snapshot_from_path

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
GIB = 2**30


def gpu(
    index: int, used: float | None, busy: float | None, *kinds: str, **changes: object
) -> GpuSample:
    sample = GpuSample(
        index=index,
        uuid=f"GPU-{index}",
        memory=Memory(total=24 * GIB, used=None if used is None else int(used * GIB)),
        utilization=Utilization(gpu=busy),
        processes=tuple(ProcessSample(pid=100 + n, type=kind) for n, kind in enumerate(kinds)),
    )
    return dataclasses.replace(sample, **changes)  # type: ignore[arg-type]


def snapshot(*gpus: GpuSample) -> Snapshot:
    return Snapshot(timestamp=None, gpus=gpus)


def test_the_issues_box_busy_gpus_are_not_picked_whatever_their_memory() -> None:
    # GPU 3 holds the least memory but runs a job; GPU 0 is at 99 %; 4, 5, 7 are idle.
    box = snapshot(
        gpu(0, 2, 99, "C"),
        gpu(1, 9, 40),
        gpu(2, 8, 0, "C"),
        gpu(3, 0.5, 0, "C"),
        gpu(4, 6, 0),
        gpu(5, 4, 0),
        gpu(6, 1, 30),
        gpu(7, 5, 1, "G"),
    )
    assert pick_gpus([box], 2) == [5, 4]  # both at 0 %: less memory first
    assert pick_gpus([box], 3) == [5, 4, 7]  # 1 % and a display process: free, ranked after


def test_recent_utilization_counts_even_when_the_latest_sample_is_idle() -> None:
    before = snapshot(gpu(0, 1, 80), gpu(1, 3, 0), gpu(2, 2, 0))
    now = snapshot(gpu(0, 1, 0), gpu(1, 3, 0), gpu(2, 2, 3))
    assert pick_gpus([now], 1) == [0]
    assert pick_gpus([before, now], 1) == [1]  # GPU 0 was busy a moment ago; 2 at 3 % > 0 %
    assert pick_gpus([before, now], 2) == [1, 2]


def test_fewer_free_than_asked_is_refused_naming_the_busy_ones() -> None:
    box = snapshot(gpu(0, 1, 99, "C", "C"), gpu(1, 1, 0), gpu(2, 1, 50), gpu(3, 1, 0, "C+G"))
    with pytest.raises(NotEnoughGpus) as caught:
        pick_gpus([box, box], 2)
    message = str(caught.value)
    assert caught.value.exit_code == 1
    assert message.startswith("--pick 2: only 1 of 4 GPU(s) free")
    assert "over 2 samples" in message
    assert "busy: 0 (2 processes, 99%), 2 (50%), 3 (1 process, 0%)" in message


def test_unknown_values_rank_last_and_do_not_make_a_gpu_busy() -> None:
    unlisted = gpu(0, 1, 0, unavailable=(("processes", Reason.NO_PERMISSION),))
    box = snapshot(unlisted, gpu(1, None, 0), gpu(2, 20, None), gpu(3, 20, 2))
    # Processes, then utilization, then memory: 1 (0 %, memory unknown) before 3 (2 %),
    # 2 (utilization unknown) after both, 0 (processes unknown) last.
    assert pick_gpus([box], 4) == [1, 3, 2, 0]


def test_lost_and_mig_gpus_are_never_picked() -> None:
    machine = snapshot(gpu(0, 0, 0, lost=True), gpu(1, 0, 0, mig_mode=True), gpu(2, 9, 0))
    assert pick_gpus([machine], 1) == [2]
    with pytest.raises(NotEnoughGpus, match=r"only 1 of 3 GPU\(s\) free.*2 lost or in MIG mode"):
        pick_gpus([machine], 2)


def test_on_a_real_capture_every_gpu_runs_two_jobs() -> None:
    four = snapshot_from_path(SNAPSHOTS / "rtx3090x4-procs-v12.xml")
    with pytest.raises(NotEnoughGpus, match=r"only 0 of 4 .*busy: 0 \(2 processes, 0%\)"):
        pick_gpus([four], 1)


def test_output_and_order_note() -> None:
    assert format_pick([3, 0]) == "3,0"
    assert order_note({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) is None
    note = order_note({})
    assert note is not None and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in note
