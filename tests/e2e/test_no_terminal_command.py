"""`gputop` with its standard output piped: the summary a terminal-less run prints, and the
one line a session that needs a terminal gets (the choice itself, in-process:
``tests/unit/test_no_terminal.py``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.command import run_gputop

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"


def gputop(*args: str) -> subprocess.CompletedProcess[str]:
    return run_gputop(*args, timeout=30, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args", [[], ["--replay", str(FOUR)]], ids=["live", "replay"])
def test_e2e_piped_stdout_gets_the_once_summary(args: list[str]) -> None:
    piped = gputop(*args)
    once = gputop(*args, "--once")
    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stdout
    # Live summaries differ only in their first line's time.
    assert piped.stdout.splitlines()[1:] == once.stdout.splitlines()[1:]
    assert piped.stdout.count("NVIDIA GeForce RTX 3090") == 4


def test_e2e_piped_stdout_with_a_log_is_one_line_and_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "gpus.csv"
    result = gputop("--log", str(log))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("gputop: stdout is not a terminal")
    assert not log.exists()
