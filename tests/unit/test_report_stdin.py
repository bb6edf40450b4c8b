"""`gputop report -` reads the recording from standard input, as `--replay -` does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


def _report(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gputop", "report", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_report_of_standard_input_matches_the_file() -> None:
    capture = SNAPSHOTS / "rtx3090x4-procs-v12.xml"
    piped = _report("-", "--json", stdin=capture.read_bytes())
    assert piped.returncode == 0, piped.stderr
    direct = subprocess.run(
        [sys.executable, "-m", "gputop", "report", str(capture), "--json"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    ours, theirs = json.loads(piped.stdout), json.loads(direct.stdout)
    assert len(ours["gpus"]) == 4
    assert ours["gpus"] == theirs["gpus"]


def test_empty_standard_input_is_one_line_naming_it_as_given() -> None:
    result = _report("-", stdin=b"")
    assert result.returncode == 2
    assert result.stderr.decode() == "gputop: -: empty file\n"
