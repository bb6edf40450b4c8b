"""No terminal for the TUI: stdout a pipe or a file prints the --once summary (as `top -b`
does), --record/--log then are refused with one line, and nothing ever waits for a `q`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gputop.cli.options import Options
from gputop.cli.terminal import tui_or_batch
from gputop.errors import BadArguments

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def no_tty() -> bool:
    return False


def test_a_terminal_on_both_sides_runs_the_tui() -> None:
    options = Options(log=Path("x.csv"))
    assert tui_or_batch(options, stdin=Tty(), stdout=Tty(), has_terminal=no_tty) is options


def test_stdout_not_a_terminal_prints_the_summary() -> None:
    chosen = tui_or_batch(Options(replay=FOUR), stdin=Tty(), stdout=io.StringIO())
    assert chosen == Options(replay=FOUR, once=True)


def test_headless_runs_are_left_alone() -> None:
    options = Options(json=True, log=Path("x.csv"))
    assert tui_or_batch(options, stdin=io.StringIO(), stdout=io.StringIO()) is options


@pytest.mark.parametrize("given", [{"record": Path("r.xml")}, {"log": Path("l.csv")}])
def test_a_session_to_record_without_a_terminal_is_refused(given: dict[str, Path]) -> None:
    with pytest.raises(BadArguments, match=r"stdout is not a terminal.*add --count N"):
        tui_or_batch(Options(**given), stdin=Tty(), stdout=io.StringIO())  # type: ignore[arg-type]


def test_keys_from_dev_tty_when_stdin_is_not_a_terminal() -> None:
    options = Options()
    assert tui_or_batch(options, stdin=io.StringIO(), stdout=Tty(), has_terminal=lambda: True) is (
        options
    )
    with pytest.raises(BadArguments, match="no /dev/tty to read keys from"):
        tui_or_batch(options, stdin=io.StringIO(), stdout=Tty(), has_terminal=no_tty)
