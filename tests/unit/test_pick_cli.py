"""The real `gputop --pick N`, live on the fake NVML and on a recording (`--replay`, `--at`)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from gputop.model import ProcessSample, Snapshot
from gputop.sinks.smi_xml import snapshot_to_xml
from support.shortcuts import snapshot_from_path

ROOT = Path(__file__).resolve().parents[2]
FAKES = ROOT / "tests" / "fakes"
GIB = 2**30

# index: (utilization in the first and second sample, memory used GiB, compute processes)
BOX = {
    0: ((99, 99), 2.0, 1),
    1: ((0, 0), 8.0, 1),
    2: ((40, 40), 9.0, 0),
    3: ((70, 0), 0.5, 0),  # busy a moment ago, idle now
    4: ((0, 0), 6.0, 0),
    5: ((0, 0), 4.0, 0),
    6: ((0, 0), 1.0, 1),
    7: ((2, 0), 5.0, 0),
}


def _box(sample: int) -> Snapshot:
    base = snapshot_from_path(ROOT / "snapshots" / "rtx3090x4-procs-v12.xml")
    template = base.gpus[0]
    gpus = []
    for index, (load, used, jobs) in BOX.items():
        gpus.append(
            dataclasses.replace(
                template,
                index=index,
                uuid=f"GPU-{index:08x}-1111-2222-3333-444444444444",
                pci_bus_id=f"00000000:{0x18 + index * 0x10:02X}:00.0",
                utilization=dataclasses.replace(template.utilization, gpu=float(load[sample])),
                memory=dataclasses.replace(template.memory, used=int(used * GIB)),
                processes=tuple(
                    ProcessSample(pid=1000 * index + n, type="C", name="python", memory_used=GIB)
                    for n in range(jobs)
                ),
            )
        )
    assert base.timestamp is not None
    return dataclasses.replace(
        base, timestamp=base.timestamp + timedelta(seconds=sample), gpus=tuple(gpus)
    )


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "eight.xml"
    path.write_bytes(snapshot_to_xml(_box(0)) + snapshot_to_xml(_box(1)))
    return path


def gputop(
    *args: str, fake: Path | None = None, order: str = "PCI_BUS_ID"
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GPUTOP_", "CUDA_"))}
    environ.update(CUDA_DEVICE_ORDER=order)
    if fake is not None:
        environ.update(PYTHONPATH=str(FAKES), GPUTOP_FAKE_NVML=str(fake))
    return subprocess.run(
        [sys.executable, "-m", "gputop", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=60,
    )


def test_live_pick_skips_busy_gpus_over_two_samples(recording: Path) -> None:
    result = gputop("--pick", "3", "--interval", "0.25", fake=recording)
    assert result.returncode == 0, result.stderr
    # By memory alone this box gives 3,6,0: a job on 6, 99 % on 0, 70 % a moment ago on 3.
    assert result.stdout == "5,4,7\n"
    assert result.stderr == ""


def test_live_pick_refuses_when_too_few_are_free(recording: Path) -> None:
    result = gputop("--pick", "4", "--interval", "0.25", fake=recording)
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("gputop: --pick 4: only 3 of 8 GPU(s) free")
    assert "busy: 0 (1 process, 99%), 1 (1 process, 0%), 2 (40%), 3 (70%), 6" in line


@pytest.mark.parametrize(
    ("args", "picked"),
    [
        ([], "5,4,7"),  # the last snapshot, and the one before it
        (["--at", "-1", "--count", "1"], "3,5,7"),  # the last alone: 3 is idle by then
        (["--at", "0"], "5,4,7"),  # the first alone: 3 is busy then
    ],
    ids=str,
)
def test_pick_works_on_a_replayed_snapshot(recording: Path, args: list[str], picked: str) -> None:
    result = gputop("--replay", str(recording), "--pick", "3", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout == picked + "\n"


def test_the_cuda_order_note_comes_with_a_replayed_pick(recording: Path) -> None:
    result = gputop("--replay", str(recording), "--pick", "1", order="FASTEST_FIRST")
    assert result.returncode == 0 and result.stdout == "5\n"
    assert "export CUDA_DEVICE_ORDER=PCI_BUS_ID" in result.stderr


def test_pick_with_once_or_json_is_refused(recording: Path) -> None:
    result = gputop("--replay", str(recording), "--pick", "1", "--json")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--pick" in result.stderr
