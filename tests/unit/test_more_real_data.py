"""More real nvidia-smi outputs published by others (see snapshots/README.md), read through
gputop's replay and report: every expected value is read again from the file's own text."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.command import gputop
from support.q_text import q_blocks, q_value, replay_json

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
SONAR_Q = SNAPSHOTS / "rtx2080tix4-procs-545-q.txt"
MORPHEUS_DMON = SNAPSHOTS / "morpheus-dmon.txt"
MIB = 2**20


def test_a_4_gpu_q_text_with_processes_and_a_thermal_slowdown() -> None:
    """NordicHPC/sonar's `nvidia-smi -q` of a 4x RTX 2080 Ti node (driver 545): GPU 0 is
    hot (SW Thermal Slowdown Active) and holds two processes, one with a long Julia path."""
    text = SONAR_Q.read_text()
    blocks = q_blocks(text)
    assert len(blocks) == int(q_value(text, "Attached GPUs")) == 4
    snapshot = replay_json(SONAR_Q)
    assert snapshot["driver_version"] == q_value(text, "Driver Version")
    assert snapshot["cuda_version"] == q_value(text, "CUDA Version")
    gpus = snapshot["gpus"]
    assert len(gpus) == len(blocks)
    for gpu, block in zip(gpus, blocks, strict=True):
        assert gpu["pci_bus_id"] == block.split()[1]
        assert gpu["name"] == q_value(block, "Product Name")
        assert gpu["utilization_gpu"] == float(q_value(block, "Gpu").split()[0])
        used = re.search(r"FB Memory Usage\n(?:.*\n)*?\s+Used\s+: (\d+) MiB", block)
        assert used is not None
        assert gpu["memory_used"] == int(used.group(1)) * MIB
        # "SW Thermal Slowdown : Active" is the one active reason the file gives.
        hot = q_value(block, "SW Thermal Slowdown") == "Active"
        assert ("sw_thermal_slowdown" in gpu["throttle_reasons"]) is hot
        pids = [int(pid) for pid in re.findall(r"Process ID\s+: (\d+)", block)]
        names = re.findall(r"^\s+Name\s+: (.*?)\s*$", block, re.MULTILINE)
        memories = [int(m) for m in re.findall(r"Used GPU Memory\s+: (\d+) MiB", block)]
        assert [p["pid"] for p in gpu["processes"]] == pids
        assert [p["name"] for p in gpu["processes"]] == names
        assert [p["memory_used"] for p in gpu["processes"]] == [m * MIB for m in memories]
    assert any("sw_thermal_slowdown" in gpu["throttle_reasons"] for gpu in gpus)
    assert any(len(gpu["processes"]) == 2 for gpu in gpus)

    report = gputop("report", SONAR_Q, "--json")
    assert report.returncode == 0, report.stderr
    summaries = json.loads(report.stdout)["gpus"]
    assert [gpu["peak_memory_used_bytes"] for gpu in summaries] == [
        gpu["memory_used"] for gpu in gpus
    ]


def test_a_dmon_paste_replays_each_row_as_a_step() -> None:
    """NVIDIA Morpheus's `nvidia-smi dmon` paste: one GPU going from idle to 99 % SM,
    no `-o DT` (so no time), memory temperature `-`."""
    lines = MORPHEUS_DMON.read_text().splitlines()
    header = lines[0].lstrip("#").split()
    rows = [dict(zip(header, line.split(), strict=True)) for line in lines[2:]]
    assert len(rows) == 9
    for step, row in enumerate(rows):
        (gpu,) = replay_json(MORPHEUS_DMON, "--at", str(step))["gpus"]
        assert gpu["index"] == int(row["gpu"])
        assert gpu["power_draw"] == float(row["pwr"])
        assert gpu["temperature"] == float(row["gtemp"])
        assert gpu["utilization_gpu"] == float(row["sm"])
        assert gpu["utilization_memory"] == float(row["mem"])
        assert row["mtemp"] == "-"
        # dmon has no column for the name or the memory: unknown, never 0.
        assert gpu["name"] is None and gpu["unavailable"]["name"] == "not in this log"
        assert gpu["memory_total"] is None
    # A log with no time cannot be placed in time: report says so in one line, exit 2.
    report = gputop("report", MORPHEUS_DMON)
    assert report.returncode == 2 and len(report.stderr.splitlines()) == 1


RAY_PMON = SNAPSHOTS / "pmon-ray-3gpu.txt"


def test_a_3_gpu_pmon_with_one_process_on_two_gpus() -> None:
    """Ray's `nvidia-smi pmon -c 1` sample: one worker (its command cut to 15 characters by
    nvidia-smi) on GPUs 0 and 1, GPU 2 idle (`-`). One sample of three GPUs."""
    lines = RAY_PMON.read_text().splitlines()
    rows = [line.split() for line in lines if not line.startswith("#")]
    snapshot = replay_json(RAY_PMON)
    gpus = snapshot["gpus"]
    assert [gpu["index"] for gpu in gpus] == sorted({int(row[0]) for row in rows})
    for gpu in gpus:
        expected = [row for row in rows if int(row[0]) == gpu["index"] and row[1] != "-"]
        got = [(p["pid"], p["type"], p["sm_utilization"], p["name"]) for p in gpu["processes"]]
        assert got == [(int(r[1]), r[2], float(r[3]), r[-1]) for r in expected]
        # pmon gives no GPU-wide values: unknown, not 0.
        assert gpu["utilization_gpu"] is None
        assert gpu["unavailable"]["utilization.gpu"] == "not in this log"
    assert [len(gpu["processes"]) for gpu in gpus] == [1, 1, 0]
    # The cut command is kept as nvidia-smi wrote it.
    assert {p["name"] for gpu in gpus for p in gpu["processes"]} == {"ray::TorchGPUWo"}


WIN_610_Q = SNAPSHOTS / "rtx2080s-win-610-q.txt"
WIN_610_CSV = SNAPSHOTS / "csv-rtx2080s-windows-610.csv"


def test_a_610_q_texts_versions_are_the_csv_logs_of_the_same_machine() -> None:
    """The 610 driver writes `Driver Version : 610.62 [Deprecated; will be removed in CUDA
    14.0. Use KMD Version instead]` in `-q` text; its `--query-gpu` CSV of the same machine
    says `610.62`. The text reader gives the version, as the CSV (and XML) readers do."""
    text = WIN_610_Q.read_text()
    kmd = q_value(text, "KMD Version")
    umd = q_value(text, "CUDA UMD Version")
    assert q_value(text, "Driver Version").startswith(f"{kmd} [Deprecated")
    header, row = WIN_610_CSV.read_text().splitlines()[:2]
    csv_driver = dict(zip(header.split(", "), row.split(", "), strict=True))["driver_version"]
    assert csv_driver == kmd
    snapshot = replay_json(WIN_610_Q)
    assert snapshot["driver_version"] == kmd == replay_json(WIN_610_CSV)["driver_version"]
    assert snapshot["cuda_version"] == umd
    once = gputop("--replay", WIN_610_Q, "--once")
    assert once.returncode == 0, once.stderr
    assert f"driver {kmd}   CUDA {umd}   1 GPU(s)" in once.stdout.splitlines()[0]


FOUR_T4 = SNAPSHOTS / "query-gpu-4xt4-virtualclient.csv"


def test_a_4_gpu_nounits_query_of_an_azure_vm_is_one_snapshot_told_apart_by_bus_id() -> None:
    """VirtualClient's query of a 4x Tesla T4 Azure VM: no `index` and no `uuid`, the GPUs
    told apart by `pci.bus_id` (domains 00000001 to 00000004), each row stamped on its own,
    `nounits` values under a header that keeps some units, no final newline."""
    header, *lines = FOUR_T4.read_text().splitlines()
    names = [cell.split(" [")[0] for cell in header.split(", ")]
    rows = [dict(zip(names, line.split(", "), strict=True)) for line in lines]
    assert len(rows) == 4 and not FOUR_T4.read_bytes().endswith(b"\n")
    snapshot = replay_json(FOUR_T4)
    assert snapshot["driver_version"] == rows[0]["driver_version"]
    gpus = snapshot["gpus"]
    assert [gpu["pci_bus_id"] for gpu in gpus] == [row["pci.bus_id"] for row in rows]
    for gpu, row in zip(gpus, rows, strict=True):
        assert gpu["name"] == row["name"]
        assert gpu["performance_state"] == row["pstate"]
        assert gpu["temperature"] == float(row["temperature.gpu"])
        assert gpu["utilization_gpu"] == float(row["utilization.gpu"])
        assert gpu["utilization_memory"] == float(row["utilization.memory"])
        assert gpu["memory_total"] == int(row["memory.total"]) * MIB
        assert gpu["memory_free"] == int(row["memory.free"]) * MIB
        assert gpu["memory_used"] == int(row["memory.used"]) * MIB
        # No power column in this query: unknown, never 0 W.
        assert gpu["power_draw"] is None
        assert gpu["unavailable"]["power.draw"] == "not in this log"
    report = gputop("report", FOUR_T4, "--json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert summary["snapshots"] == 1
    assert [gpu["peak_memory_used_bytes"] for gpu in summary["gpus"]] == [
        int(row["memory.used"]) * MIB for row in rows
    ]
