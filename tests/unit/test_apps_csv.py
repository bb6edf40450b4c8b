"""A `--query-compute-apps` CSV log kept beside a `--query-gpu` one (`--apps FILE`): each
GPU snapshot takes the processes of the apps query nearest in time, on the GPU they name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.command import gputop

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
MIB = 2**20
GPUS = """\
timestamp, index, uuid, pci.bus_id, utilization.gpu [%], memory.used [MiB]
2024/01/04 15:02:11.123, 0, GPU-aaaa, 00000000:01:00.0, 3 %, 500 MiB
2024/01/04 15:02:11.125, 1, GPU-bbbb, 00000000:02:00.0, 0 %, 3 MiB
2024/01/04 15:02:12.123, 0, GPU-aaaa, 00000000:01:00.0, 2 %, 500 MiB
2024/01/04 15:02:12.125, 1, GPU-bbbb, 00000000:02:00.0, 0 %, 3 MiB
2024/01/04 15:02:13.123, 0, GPU-aaaa, 00000000:01:00.0, 2 %, 500 MiB
2024/01/04 15:02:13.125, 1, GPU-bbbb, 00000000:02:00.0, 0 %, 3 MiB
2024/01/04 15:02:20.123, 0, GPU-aaaa, 00000000:01:00.0, 2 %, 500 MiB
2024/01/04 15:02:20.125, 1, GPU-bbbb, 00000000:02:00.0, 0 %, 3 MiB
"""
APPS = """\
timestamp, gpu_uuid, pid, process_name, used_memory [MiB]
2024/01/04 15:02:11.600, GPU-aaaa, 4242, python, 480 MiB
2024/01/04 15:02:12.600, GPU-aaaa, 4242, python, 480 MiB
2024/01/04 15:02:12.600, GPU-bbbb, 77, /usr/bin/ffmpeg, 2 MiB
"""


@pytest.fixture
def logs(tmp_path: Path) -> tuple[Path, Path]:
    gpus, apps = tmp_path / "gpu.csv", tmp_path / "apps.csv"
    gpus.write_text(GPUS)
    apps.write_text(APPS)
    return gpus, apps


def _processes(gpus: Path, apps: Path, at: int) -> list[list[tuple[int, str, int]]]:
    result = gputop("--replay", gpus, "--apps", apps, "--json", "--at", str(at))
    assert result.returncode == 0, result.stderr
    return [
        [(p["pid"], p["name"], p["memory_used"]) for p in gpu["processes"]]
        for gpu in json.loads(result.stdout)["gpus"]
    ]


def test_each_snapshot_takes_the_processes_of_the_nearest_apps_query(
    logs: tuple[Path, Path],
) -> None:
    gpus, apps = logs
    assert _processes(gpus, apps, 0) == [[(4242, "python", 480 * MIB)], []]
    assert _processes(gpus, apps, 1) == [
        [(4242, "python", 480 * MIB)],
        [(77, "/usr/bin/ffmpeg", 2 * MIB)],
    ]
    # 7 s after the last apps query: nothing ran then.
    assert _processes(gpus, apps, 3) == [[], []]


def test_processes_by_bus_id_when_the_apps_log_names_no_uuid(
    logs: tuple[Path, Path], tmp_path: Path
) -> None:
    gpus, _ = logs
    apps = tmp_path / "apps-bus.csv"
    apps.write_text(
        "timestamp, gpu_bus_id, pid, process_name, used_gpu_memory [MiB]\n"
        "2024/01/04 15:02:11.600, 00000000:02:00.0, 9, train, 100 MiB\n"
    )
    assert _processes(gpus, apps, 0) == [[], [(9, "train", 100 * MIB)]]


def test_the_report_counts_a_gpu_holding_a_process_as_waiting(
    logs: tuple[Path, Path],
) -> None:
    gpus, apps = logs
    without = json.loads(gputop("report", gpus, "--json").stdout)
    result = gputop("report", gpus, "--apps", apps, "--json")
    assert result.returncode == 0, result.stderr
    joined = json.loads(result.stdout)
    # GPU 0 at 2-3 % with 500 MiB (under the 1 GiB that counts as held): idle on its own;
    # with python running on it, waiting, for the two counted seconds.
    assert without["gpus"][0]["idle_s"] == 2.0 and without["gpus"][0]["waiting_s"] == 0.0
    assert joined["gpus"][0]["waiting_s"] == 2.0 and joined["gpus"][0]["idle_s"] == 0.0


@pytest.mark.parametrize(
    ("recording", "apps_text", "says"),
    [
        ("csv", "pid, process_name, used_memory [MiB]\n1, x, 1 MiB\n", "without a timestamp"),
        ("csv", "hello\n", "not an `nvidia-smi --query-compute-apps"),
        ("xml", APPS, "not one"),
    ],
)
def test_an_apps_log_that_cannot_be_joined_is_one_line(
    logs: tuple[Path, Path], tmp_path: Path, recording: str, apps_text: str, says: str
) -> None:
    gpus, _ = logs
    if recording == "xml":
        gpus = SNAPSHOTS / "tesla-t4-v11.xml"
    apps = tmp_path / "other.csv"
    apps.write_text(apps_text)
    for command in (["--replay", str(gpus), "--once"], ["report", str(gpus)]):
        result = gputop(*command, "--apps", apps)
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert says in line


def test_apps_goes_with_replay(logs: tuple[Path, Path]) -> None:
    _, apps = logs
    result = gputop("--apps", apps, "--once")
    assert result.returncode == 2
    assert "use it with --replay FILE" in result.stderr


def test_a_missing_apps_log_is_worded_as_a_missing_replay_file(tmp_path: Path) -> None:
    missing = tmp_path / "nonexist"
    apps = gputop("--replay", SNAPSHOTS / "csv-h100-590.csv", "--apps", missing, "--once")
    replay = gputop("--replay", missing, "--once")
    assert apps.returncode == replay.returncode == 2, apps.stderr + replay.stderr
    assert apps.stderr.splitlines() == [f"gputop: {missing}: no such file or directory"]
    assert replay.stderr == apps.stderr
