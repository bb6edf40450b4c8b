"""`gputop` writing to a full disk (``/dev/full``): one line, exit 1, and what else it was
doing goes on (the sinks' failures in-process: ``tests/unit/test_sink_failures.py``)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

from gputop.sources.smi.recording import Recording
from support.command import run_gputop

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"

ENOSPC = os.strerror(errno.ENOSPC)


def gputop(*args: str) -> subprocess.CompletedProcess[str]:
    return run_gputop(*args, timeout=30)


def test_e2e_log_on_dev_full_is_one_line_and_exit_1_while_the_recording_goes_on(
    tmp_path: Path,
) -> None:
    target = tmp_path / "rec.xml"
    result = gputop(
        "--count", "3", "--interval", "0.25", "--record", str(target), "--log", "/dev/full"
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    failures = [line for line in result.stderr.splitlines() if "/dev/full" in line]
    assert failures == [f"gputop: --log /dev/full: write failed: {ENOSPC}"]
    assert result.stdout.count("NVIDIA GeForce RTX 3090") == 3 * 4
    with Recording.open(target) as recording:
        assert len(recording) == 3


def test_e2e_record_on_dev_full_with_once() -> None:
    result = gputop("--once", "--record", "/dev/full")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"gputop: --record /dev/full: write failed: {ENOSPC}\n" in result.stderr
    assert result.stdout.count("NVIDIA GeForce RTX 3090") == 4


def test_e2e_converting_a_recording_to_a_log_on_dev_full() -> None:
    result = gputop("--replay", str(FOUR), "--count", "2", "--log", "/dev/full")
    assert result.returncode == 1
    assert result.stderr == (
        f"gputop: --log /dev/full: write failed: {ENOSPC}\n"
        "gputop: --count 2: the recording holds only 1 document\n"
    )
    assert result.stdout.count("NVIDIA GeForce RTX 3090") == 4
