"""A log in which no snapshot has a time gets one line and a failing exit, not an empty report."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.command import run_gputop


@pytest.mark.parametrize(
    "args",
    [
        ["snapshots/h100-590-dmon.txt"],
        ["{nh}", "--query-gpu", "uuid,memory.used"],
    ],
)
def test_a_log_without_times_is_one_line_and_fails(args: list[str], tmp_path: Path) -> None:
    headerless = tmp_path / "nh.csv"
    headerless.write_text("GPU-1, 100\nGPU-1, 200\n", encoding="utf-8")
    result = run_gputop("report", *(arg.format(nh=headerless) for arg in args))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "the log has no times" in lines[0] and "report over time cannot be made" in lines[0]
