"""`--once`: the summary's process rows line up with their header, MIG rows included."""

from __future__ import annotations

import re

from fakes.nvml_scenarios import gpu_sample, mig_gpu, snapshot
from gputop.sinks.summary import format_summary


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
