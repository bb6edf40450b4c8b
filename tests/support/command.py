"""The real ``gputop`` command on the fake NVML (tests/fakes/sitecustomize.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKES = ROOT / "tests" / "fakes"
FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"
GPUTOP = Path(sys.executable).with_name("gputop")


def gputop_command(fake: str = str(FOUR), **env: str) -> tuple[list[str], dict[str, str]]:
    """The real ``gputop`` command and its environment, on the fake NVML ``fake``."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GPUTOP_", "CUDA_", "NVIDIA_"))
    }
    environ.update(PYTHONPATH=str(FAKES), GPUTOP_FAKE_NVML=fake, **env)
    command = [str(GPUTOP)] if GPUTOP.exists() else [sys.executable, "-m", "gputop"]
    return command, environ


def run_gputop(
    *args: str, timeout: float = 60, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real command on the fake NVML of the bundled 4x RTX 3090 box, from the root."""
    command, environ = gputop_command()
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=timeout,
        stdin=stdin,
    )


def start_gputop(*args: str, fake: str = str(FOUR), **env: str) -> subprocess.Popen[str]:
    """Start the real command in the background on the fake NVML ``fake``, as a service
    manager does (a server: ``export``, ``serve``): its output dropped, stderr kept."""
    command, environ = gputop_command(fake, **env)
    return subprocess.Popen(
        [*command, *args],
        cwd=ROOT,
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def gputop(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m gputop ARGS`` in this process's environment (no fake NVML: for recordings,
    reports and bad input), ``stdin`` piped in, its output kept; bounded so that a hang fails
    the test."""
    return subprocess.run(
        [sys.executable, "-m", "gputop", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        input=None if stdin is None else stdin.decode(),
    )
