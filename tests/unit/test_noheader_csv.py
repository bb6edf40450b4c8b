"""`--query-gpu` CSV logs written with `noheader`: refused with one line that says how to
name the columns, and read once `--query-gpu FIELDS` names them as given to nvidia-smi."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from support.command import gputop

MIB = 2**20
FIELDS = "timestamp,index,name,utilization.gpu,memory.used,power.draw"
HEADER = "timestamp, index, name, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
ROWS = (
    "2024/01/04 15:02:11.123, 0, NVIDIA A100-SXM4-80GB, 90 %, 60000 MiB, 350.05 W\n"
    "2024/01/04 15:02:11.125, 1, NVIDIA A100-SXM4-80GB, 3 %, 3 MiB, 61.50 W\n"
    "2024/01/04 15:02:12.123, 0, NVIDIA A100-SXM4-80GB, 95 %, 60010 MiB, 360.00 W\n"
    "2024/01/04 15:02:12.126, 1, NVIDIA A100-SXM4-80GB, [N/A], 3 MiB, 60.25 W\n"
)


def _nounits(text: str) -> str:
    for unit in (" %", " MiB", " W"):
        text = text.replace(unit, "")
    return text


@pytest.mark.parametrize("command", [["--replay", "{}", "--json"], ["report", "{}"]])
def test_a_noheader_log_is_refused_with_how_to_name_its_columns(
    tmp_path: Path, command: list[str]
) -> None:
    path = tmp_path / "gpu-log.csv"
    path.write_text(ROWS)
    result = gputop(*(path if arg == "{}" else arg for arg in command))
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "without its header line" in line and "--query-gpu timestamp,index" in line


def test_a_gzipped_noheader_log_gets_the_same_line(tmp_path: Path) -> None:
    path = tmp_path / "gpu-log.csv.gz"
    path.write_bytes(gzip.compress(ROWS.encode()))
    result = gputop("report", path)
    assert result.returncode == 2
    assert "without its header line" in result.stderr


@pytest.mark.parametrize("units", [True, False], ids=["units", "nounits"])
def test_query_gpu_names_the_columns_of_a_noheader_log(tmp_path: Path, units: bool) -> None:
    rows = ROWS if units else _nounits(ROWS)
    path = tmp_path / "gpu-log.csv"
    path.write_text(rows)
    headed = tmp_path / "headed.csv"
    headed.write_text(HEADER + rows)
    result = gputop("--replay", path, "--query-gpu", FIELDS, "--json", "--at", "-1")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["timestamp"] == "2024-01-04T15:02:12.123000"
    first, second = snapshot["gpus"]
    assert (first["index"], first["utilization_gpu"], first["memory_used"]) == (
        0,
        95.0,
        60010 * MIB,
    )
    assert first["power_draw"] == 360.0
    assert second["utilization_gpu"] is None
    assert second["unavailable"]["utilization.gpu"] == "not available"
    assert second["unavailable"]["temperature.gpu"] == "not in this log"
    # The same as the log with its header.
    same = gputop("--replay", headed, "--json", "--at", "-1")
    assert json.loads(same.stdout) == snapshot
    report = gputop("report", path, f"--query-gpu={FIELDS}", "--json")
    assert report.returncode == 0, report.stderr
    expected = json.loads(gputop("report", headed, "--json").stdout)
    got = json.loads(report.stdout)
    assert got.pop("source") == str(path)
    expected.pop("source")
    assert got == expected
    assert [gpu["samples"] for gpu in got["gpus"]] == [2, 2]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ("foo,bar", "names no field gputop reads"),
        ("time stamp,index", "is not a field name"),
        ("timestamp,,index", "is not a field name"),
    ],
)
def test_a_bad_query_gpu_is_one_line(tmp_path: Path, fields: str, says: str) -> None:
    path = tmp_path / "gpu-log.csv"
    path.write_text(ROWS)
    commands: list[list[str | Path]] = [["--replay", path, "--once"], ["report", path]]
    for command in commands:
        result = gputop(*command, "--query-gpu", fields)
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert says in line and "Traceback" not in line


def test_query_gpu_goes_with_a_csv_replay_only(tmp_path: Path) -> None:
    assert "use it with --replay FILE" in gputop("--query-gpu", FIELDS, "--once").stderr
    path = tmp_path / "gpu-log.csv"
    path.write_text(ROWS)
    result = gputop("--replay", path, "--format", "dmon", "--query-gpu", FIELDS, "--once")
    assert result.returncode == 2
    assert "not of dmon" in result.stderr


def test_too_few_names_for_the_columns_says_how_many_of_each(tmp_path: Path) -> None:
    log = tmp_path / "nh.csv"
    log.write_text("GPU-1, 100, 1, 2, 3, 4\nGPU-1, 200, 1, 2, 3, 4\n", encoding="utf-8")
    result = gputop("--replay", log, "--query-gpu", "uuid,memory.used", "--once")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"gputop: {log}: --query-gpu gave 2 names for rows of 6 columns: give the fields "
        "the log was recorded with, in their order"
    ]
