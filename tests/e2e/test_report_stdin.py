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


def test_a_csv_log_piped_in_is_reported_whole_even_when_it_pauses() -> None:
    """The writer stops for a moment mid-way (a slow `zcat`, a network pipe): the report
    still covers every snapshot, not those that had come when reading caught up."""
    header = "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
    rows = [
        f"2024/01/04 15:{minute:02d}:{second:02d}.000, {gpu}, {50 + gpu} %, 1000 MiB\n"
        for minute in range(20)
        for second in range(60)
        for gpu in range(2)
    ]
    writer = (
        "import sys, time\n"
        f"rows = {rows!r}\n"
        f"sys.stdout.write({header!r} + ''.join(rows[:1000])); sys.stdout.flush()\n"
        "time.sleep(1.5)\n"
        "sys.stdout.write(''.join(rows[1000:])); sys.stdout.flush()\n"
    )
    source = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "gputop", "report", "-", "--json"],
            stdin=source.stdout,
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        assert source.stdout is not None
        source.stdout.close()
        source.wait(timeout=30)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["snapshots"] == 1200
    assert [gpu["samples"] for gpu in report["gpus"]] == [1200, 1200]
