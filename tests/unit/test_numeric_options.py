"""Every numeric option of `gputop` and `gputop report` refuses nan, inf, negatives and
out-of-range values with one line and exit 2, through one validator."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from gputop.cli import main as cli
from gputop.cli import report
from gputop.cli.validate import NUMERIC_TYPES, Bounded

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"


def _numeric(parser: argparse.ArgumentParser) -> dict[str, Bounded[int] | Bounded[float]]:
    """The options of ``parser`` that take a number, by flag."""
    found: dict[str, Bounded[int] | Bounded[float]] = {}
    for action in parser._actions:
        if action.type is None or action.type is Path or not action.option_strings:
            continue
        # A numeric option added later with its own checker (or a bare int/float) fails here.
        assert action.type in NUMERIC_TYPES, f"{action.option_strings} is not checked by validate"
        assert isinstance(action.type, Bounded)
        found[action.option_strings[0]] = action.type
    return found


MAIN = _numeric(cli.build_parser())
REPORT = _numeric(report.build_parser())


def test_the_known_numeric_options_are_all_there() -> None:
    assert set(MAIN) == {"--interval", "--count", "--pick"}
    assert set(REPORT) == {"--max-gap", "--jobs"}


def _bad_values(check: Bounded[int] | Bounded[float]) -> list[str]:
    below = check.low - (1 if check.kind is int else check.low / 2)
    above = check.high + 1
    return ["nan", "inf", "-inf", "-1", "1e400", str(below), str(above), "", "ten"]


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], flag: str) -> None:
    code = cli.main(argv)
    captured = capsys.readouterr()
    assert code == 2, (argv, captured.err)
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("gputop") and flag in lines[0]
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("flag", sorted(MAIN))
def test_main_command_refuses_bad_numbers(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    check = MAIN[flag]
    for value in _bad_values(check):
        _one_line_exit_2(capsys, [f"{flag}={value}", "--once"], flag)
    # The range is the message's: what is accepted is said.
    assert getattr(cli.parse_options([flag, str(check.low)]), flag[2:]) == check.low
    assert getattr(cli.parse_options([flag, str(check.high)]), flag[2:]) == check.high


@pytest.mark.parametrize("flag", sorted(REPORT))
def test_report_refuses_bad_numbers(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    check = REPORT[flag]
    for value in _bad_values(check):
        _one_line_exit_2(capsys, ["report", str(CAPTURE), f"{flag}={value}"], flag)
    code = cli.main(["report", str(CAPTURE), "--json", flag, str(check.high)])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "1.5", "1", "-2", "99"])
def test_at_refuses_bad_numbers(capsys: pytest.CaptureFixture[str], value: str) -> None:
    # A one-document capture: 0 and -1 are its only indices.
    _one_line_exit_2(capsys, ["--replay", str(CAPTURE), "--once", f"--at={value}"], "--at")


def test_the_interval_is_bounded_as_the_tui_bounds_it() -> None:
    from gputop.pipeline.interval import MAX_INTERVAL, MIN_INTERVAL

    assert (MAIN["--interval"].low, MAIN["--interval"].high) == (MIN_INTERVAL, MAX_INTERVAL)


@pytest.mark.parametrize(
    "args",
    [
        ["--interval", "nan", "--count", "2", "--json"],
        ["--interval", "inf", "--once"],
        ["report", str(CAPTURE), "--max-gap", "inf"],
    ],
    ids=str,
)
def test_the_real_command_says_one_line_and_exits_2(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gputop", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "out of range" not in result.stderr
    assert "is not a number of seconds" in result.stderr
