"""`gputop report` and time: a log without times is one line and a failing exit; the
--max-gap help says the floor a log really gets."""

from __future__ import annotations

import json
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


def test_max_gap_help_says_the_floor_a_csv_log_gets(tmp_path: Path) -> None:
    log = tmp_path / "steady.csv"
    rows = [
        f"2026/01/01 00:00:{tick // 2:02d}.{5 * (tick % 2)}00, GPU-1, 100 MiB" for tick in range(20)
    ]
    log.write_text("timestamp, uuid, memory.used [MiB]\n" + "\n".join(rows) + "\n")
    report = run_gputop("report", "--json", str(log))
    assert report.returncode == 0, report.stderr
    floor = json.loads(report.stdout)["max_gap_s"]
    assert floor == 2.0  # three 0.5 s intervals are less: the floor applies
    helped = " ".join(run_gputop("report", "--help").stdout.split())
    assert f"at least {floor:g} s for CSV" in helped, helped
