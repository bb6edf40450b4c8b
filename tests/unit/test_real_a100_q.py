"""HuggingFace's `nvidia-smi -q` texts of an 8x A100 node whose training job hung (see
snapshots/README.md): the whole node, and `-q -i 0` / `-q -i 1` of single GPUs taken in the
same minute. Every expected value is read again from the file's own text."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from support.command import gputop
from support.q_text import q_blocks, q_value, replay_json

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
NODE = SNAPSHOTS / "a100x8-hang-525-q.txt"
SINGLE = [SNAPSHOTS / "a100x8-hang-525-q-i0.txt", SNAPSHOTS / "a100x8-hang-525-q-i1.txt"]
MIB = 2**20


def _section(block: str, section: str, label: str) -> str:
    """A value under a section heading (`FB Memory Usage` / `Used`, ...)."""
    body = block.split(f"\n    {section}\n", 1)[1]
    return q_value(body, label)


def _number(cell: str) -> float:
    return float(cell.split()[0])


def _stamp(text: str) -> str:
    return datetime.strptime(q_value(text, "Timestamp"), "%a %b %d %H:%M:%S %Y").isoformat()


def test_an_8x_a100_q_text_replays_every_gpu_and_process() -> None:
    text = NODE.read_text()
    blocks = q_blocks(text)
    assert len(blocks) == int(q_value(text, "Attached GPUs")) == 8
    snapshot = replay_json(NODE)
    assert snapshot["timestamp"] == _stamp(text)
    assert snapshot["driver_version"] == q_value(text, "Driver Version") == "525.60.13"
    assert snapshot["cuda_version"] == q_value(text, "CUDA Version")
    gpus = snapshot["gpus"]
    assert [gpu["index"] for gpu in gpus] == list(range(len(blocks)))
    for gpu, block in zip(gpus, blocks, strict=True):
        assert gpu["pci_bus_id"] == block.split()[1]
        assert gpu["name"] == q_value(block, "Product Name") == "NVIDIA A100-SXM4-80GB"
        assert gpu["uuid"] == q_value(block, "GPU UUID")
        assert gpu["serial"] == q_value(block, "Serial Number")
        assert gpu["performance_state"] == q_value(block, "Performance State")
        assert gpu["utilization_gpu"] == _number(_section(block, "Utilization", "Gpu"))
        assert gpu["utilization_memory"] == _number(_section(block, "Utilization", "Memory"))
        memory = [
            ("memory_total", "Total"),
            ("memory_used", "Used"),
            ("memory_reserved", "Reserved"),
        ]
        for key, label in memory:
            assert gpu[key] == _number(_section(block, "FB Memory Usage", label)) * MIB
        assert gpu["power_draw"] == _number(q_value(block, "Power Draw"))
        assert gpu["power_limit"] == _number(q_value(block, "Enforced Power Limit"))
        assert gpu["temperature"] == _number(q_value(block, "GPU Current Temp"))
        assert gpu["clocks_sm"] == _number(_section(block, "Clocks", "SM"))
        processes = block.split("\n    Processes\n", 1)[1]
        pids = [int(pid) for pid in re.findall(r"Process ID\s+: (\d+)", processes)]
        kinds = re.findall(r"^\s+Type\s+: (\S+)", processes, re.MULTILINE)
        names = re.findall(r"^\s+Name\s+: (.*?)\s*$", processes, re.MULTILINE)
        used = [int(m) * MIB for m in re.findall(r"Used GPU Memory\s+: (\d+) MiB", processes)]
        got = [(p["pid"], p["type"], p["name"], p["memory_used"]) for p in gpu["processes"]]
        assert got == list(zip(pids, kinds, names, used, strict=True))
        # No fan on an SXM board: n/a, not 0.
        assert q_value(block, "Fan Speed") == "N/A" and gpu["fan_speed"] is None
    # The hang: rank 0's GPU sits at 0 % holding its memory while the other seven spin at
    # 100 % (waiting in a collective), as the file says.
    idle = [gpu["index"] for gpu in gpus if gpu["utilization_gpu"] == 0]
    assert idle == [0] and all(gpu["memory_used"] > 2**30 for gpu in gpus)
    assert sum(len(gpu["processes"]) for gpu in gpus) == len(re.findall("Process ID", text))


def test_the_8x_a100_q_text_reports_and_prints_each_gpu() -> None:
    snapshot = replay_json(NODE)
    report = gputop("report", NODE, "--json")
    assert report.returncode == 0, report.stderr
    summaries = json.loads(report.stdout)["gpus"]
    assert [s["uuid"] for s in summaries] == [gpu["uuid"] for gpu in snapshot["gpus"]]
    for summary, gpu in zip(summaries, snapshot["gpus"], strict=True):
        assert summary["peak_memory_used_bytes"] == gpu["memory_used"]
        assert summary["utilization_mean_pct"] == gpu["utilization_gpu"]
        assert summary["peak_power_w"] == gpu["power_draw"]
        assert summary["memory_total_bytes"] == gpu["memory_total"]
    once = gputop("--replay", NODE, "--once")
    assert once.returncode == 0, once.stderr
    for pid in re.findall(r"Process ID\s+: (\d+)", NODE.read_text()):
        assert pid in once.stdout


@pytest.mark.parametrize("path", SINGLE, ids=lambda path: path.name)
def test_q_i_of_one_gpu_says_eight_attached_and_holds_one(path: Path) -> None:
    """`nvidia-smi -q -i N`: `Attached GPUs : 8`, one block. The block is the same GPU (by bus
    id and UUID) as in the whole node's text taken in the same minute."""
    text = path.read_text()
    (block,) = q_blocks(text)
    snapshot = replay_json(path)
    assert snapshot["attached_gpus"] == int(q_value(text, "Attached GPUs")) == 8
    assert snapshot["timestamp"] == _stamp(text)
    (gpu,) = snapshot["gpus"]
    bus_id = block.split()[1]
    assert gpu["pci_bus_id"] == bus_id
    assert gpu["uuid"] == q_value(block, "GPU UUID")
    assert gpu["utilization_gpu"] == _number(_section(block, "Utilization", "Gpu"))
    assert gpu["memory_used"] == _number(_section(block, "FB Memory Usage", "Used")) * MIB
    assert [p["pid"] for p in gpu["processes"]] == [
        int(pid) for pid in re.findall(r"Process ID\s+: (\d+)", block)
    ]
    (same,) = [g for g in replay_json(NODE)["gpus"] if g["pci_bus_id"] == bus_id]
    assert (same["uuid"], same["serial"], same["memory_total"]) == (
        gpu["uuid"],
        gpu["serial"],
        gpu["memory_total"],
    )
    assert [p["pid"] for p in same["processes"]] == [p["pid"] for p in gpu["processes"]]
