"""The fake NVML in another process: ``PYTHONPATH=tests/fakes GPUTOP_FAKE_NVML=...``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FAKES = REPO / "tests" / "fakes"

POLL = """
from gputop.sources.nvml.source import open_nvml_source
source = open_nvml_source(deadline=5.0)
for _ in range({ticks}):
    snap = source.poll()
    print(len(snap.gpus), snap.driver_version, ";".join(
        f"{{g.name}}|{{g.lost}}|{{len(g.processes)}}|{{len(g.mig_devices)}}" for g in snap.gpus))
source.close()
"""


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_FAKE_NVML")}
    environ["PYTHONPATH"] = str(FAKES)
    environ.update(env)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=environ, cwd=REPO, timeout=60
    )


def test_a_capture_through_the_fake() -> None:
    result = _run(
        ["-c", POLL.format(ticks=1)], GPUTOP_FAKE_NVML="snapshots/rtx3090x4-procs-v12.xml"
    )
    assert result.returncode == 0, result.stderr
    count, driver, gpus = result.stdout.split(maxsplit=2)
    assert (count, driver) == ("4", "550.90.07")
    assert gpus.strip().split(";") == ["NVIDIA GeForce RTX 3090|False|2|0"] * 4


def test_scale_scenario_and_a_gpu_lost_mid_run() -> None:
    result = _run(
        ["-c", POLL.format(ticks=3)],
        GPUTOP_FAKE_NVML="h100-mig-8x7",
        GPUTOP_FAKE_NVML_LOSE="3@1",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    lost = [[gpu.split("|")[1] for gpu in line.split(maxsplit=2)[2].split(";")] for line in lines]
    assert lost[0] == ["False"] * 8
    assert lost[1][3] == "True" and lost[2][3] == "True"
    assert lost[1].count("True") == 1
    assert "NVIDIA H100 80GB HBM3|False|25|7" in lines[0]


def test_the_real_command_line() -> None:
    result = _run(
        ["-m", "gputop", "--once"], GPUTOP_FAKE_NVML="snapshots/a100-sxm4-80gb-mig-v12.xml"
    )
    assert result.returncode == 0, result.stderr
    assert "NVIDIA A100-SXM4-80GB" in result.stdout
    assert "1g.20gb" in result.stdout


@pytest.mark.parametrize(
    ("scenario", "words"),
    [
        ("no-library", "library not found"),
        ("no-driver", "driver not loaded"),
        ("no-permission", "no permission"),
        ("mismatch", "version mismatch"),
        ("no-gpu", "no NVIDIA GPU found"),
    ],
)
def test_start_up_failures_on_the_command_line(scenario: str, words: str) -> None:
    result = _run(["-m", "gputop", "--once"], GPUTOP_FAKE_NVML=scenario)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert words in lines[0]
    assert "`gputop --demo` replays a recorded 4-GPU box" in lines[0]


def test_nothing_is_installed_without_the_variable() -> None:
    result = _run(["-c", "import pynvml; print(pynvml.nvmlLib)"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"


def test_an_unknown_scenario_is_refused() -> None:
    result = _run(["-c", "pass"], GPUTOP_FAKE_NVML="no-such-thing")
    assert result.returncode != 0
    assert "no such capture, and not a scenario" in result.stderr
