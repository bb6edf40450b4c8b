"""`--once`: the summary's process rows line up with their header, MIG rows included."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fakes.nvml_scenarios import gpu_sample, h100_mig_box, mig_gpu, snapshot
from gputop.sinks.summary import format_summary
from gputop.sources.smi.recording import Recording


def _ends(line: str) -> list[int]:
    """Where each of the first four words of ``line`` ends."""
    return [match.end() for match in re.finditer(r"\S+", line)][:4]


def test_mig_process_rows_line_up_with_their_header() -> None:
    lines = format_summary(snapshot(mig_gpu(0, instances=2), gpu_sample(1))).splitlines()
    start = next(i for i, line in enumerate(lines) if "PID" in line)
    header, rows = lines[start], lines[start + 1 :]
    assert any(row.split()[0] == "0:7/0" for row in rows)  # GPU 0, GPU instance 7, CI 0
    assert any(row.split()[0] == "1" for row in rows)
    gpu_end, pid_end, _, memory_end = _ends(header)
    for row in rows:
        where, pid, _type, memory = _ends(row)
        # GPU, PID and Memory are right-aligned under their titles; Type is left-aligned.
        assert (where, pid, memory) == (gpu_end, pid_end, memory_end), row


def test_mig_lines_line_up_when_instance_ids_reach_two_digits() -> None:
    text = format_summary(h100_mig_box())
    mig_lines = [line for line in text.splitlines() if line.lstrip().startswith("MIG")]
    gis = {line.split()[2] for line in mig_lines}
    assert {"7", "13"} <= gis  # one and two digits on one box
    # Every column after the ids starts where the others do.
    for column in ("CI", "SMs", "GiB"):
        assert len({line.index(column) for line in mig_lines}) == 1, column


def test_a_derived_profile_star_is_explained_once() -> None:
    capture = Path(__file__).resolve().parents[2] / "snapshots" / "a100-sxm4-80gb-mig-v12.xml"
    with Recording.open(capture) as recording:
        text = format_summary(recording.snapshot(0))
    assert "1g.20gb*" in text
    footnotes = [line for line in text.splitlines() if line.strip().startswith("* profile")]
    assert footnotes == [
        "     * profile worked out from its SM count and memory, not read from the driver"
    ]


def test_no_footnote_without_a_star() -> None:
    text = format_summary(h100_mig_box())
    assert "*" not in text


SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


def test_a_csv_logs_time_is_shown_to_the_second_as_an_xml_captures_is() -> None:
    """`--replay log.csv --once`: the header's time is `2025-06-13 00:27:52`, as for XML and
    `-q` text captures, not `00:27:52.195000` (the log's milliseconds as microseconds)."""
    log = SNAPSHOTS / "gpu-log-v100s-miris.csv"
    stamp = log.read_text().splitlines()[1].split(", ")[0]  # `2025/06/13 00:27:52.195`
    day, clock = stamp.split(" ")
    expected = f"{day.replace('/', '-')} {clock.split('.')[0]}   driver "
    for path, first in [
        (log, expected),
        (SNAPSHOTS / "tesla-t4-v11.xml", None),
        (SNAPSHOTS / "h100-590-q.txt", None),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "gputop", "--replay", str(path), "--once"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        header = result.stdout.splitlines()[0]
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d   driver ", header), header
        if first is not None:
            assert header.startswith(first), header
