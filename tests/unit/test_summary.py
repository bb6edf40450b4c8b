"""`--once`: the summary's process rows line up with their header, MIG rows included."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from fakes.nvml_scenarios import gpu_sample, h100_mig_box, mig_gpu, snapshot
from gputop.model import Memory
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
    for column in ("CI", "SMs", "/"):
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


def test_whole_names_and_one_memory_unit_in_the_table() -> None:
    """Issue 25: `--once` cut "NVIDIA RTX PRO 6000 Blackwell Server Edition" at 28
    characters and mixed `4/40960MiB`, `0.00/79.65GiB` and `88.4GiB / n/a` in one table."""
    mib, gib = 1024**2, 1024**3
    long_name = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    gpus = (
        replace(gpu_sample(0), name=long_name, memory=Memory(used=4 * mib, total=40960 * mib)),
        replace(gpu_sample(1), memory=Memory(used=0, total=int(79.65 * gib))),
        replace(gpu_sample(2), memory=Memory(used=int(88.4 * gib), total=None)),
    )
    lines = format_summary(snapshot(*gpus)).splitlines()
    header, rows = lines[1], lines[2:5]
    assert long_name in rows[0]
    assert "Memory used/total GiB" in header
    memory = [next(cell for cell in row.split() if "/" in cell and cell != "/") for row in rows]
    assert memory == ["<0.01/40.00", "0.00/79.65", "88.40/n/a"]
    assert not any(re.search(r"\d(MiB|GiB)", row) for row in rows)
    # The memory column lines up under its title, whatever the names' lengths.
    title_end = header.index("GiB") + len("GiB")
    assert {row.index(cell) + len(cell) for row, cell in zip(rows, memory, strict=True)} == {
        title_end
    }


def test_a_small_box_reads_in_mib() -> None:
    mib = 1024**2
    gpu = replace(gpu_sample(0), memory=Memory(used=300 * mib, total=512 * mib))
    lines = format_summary(snapshot(gpu)).splitlines()
    assert "Memory used/total MiB" in lines[1] and "300/512" in lines[2]
