"""`gputop --demo` replays the capture installed with the package, from any directory, and
the no-driver line offers it."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

import tomllib

from gputop.cli.demo import DEMO_CAPTURE
from gputop.sinks.summary import format_summary
from support.shortcuts import snapshot_from_path

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"
FAKES = ROOT / "tests" / "fakes"
INSTALLED = Path(sys.executable).with_name("gputop")
"""The console script pip installed beside this Python."""


def run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GPUTOP_", "CUDA_"))}
    environ.update(env)
    return subprocess.run(
        [str(INSTALLED), *args], capture_output=True, text=True, env=environ, cwd=cwd, timeout=60
    )


def test_the_demo_runs_from_any_directory_with_the_installed_command(tmp_path: Path) -> None:
    assert INSTALLED.is_file(), "pip install -e . puts the gputop command beside this Python"
    result = run("--demo", "--once", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == format_summary(snapshot_from_path(CAPTURE)) + "\n"
    assert not any(tmp_path.iterdir())  # nothing looked for, nor left, in the directory


def test_the_no_driver_line_offers_the_demo_and_that_command_works(tmp_path: Path) -> None:
    failed = run("--once", cwd=tmp_path, PYTHONPATH=str(FAKES), GPUTOP_FAKE_NVML="no-driver")
    assert failed.returncode == 1
    (line,) = failed.stderr.splitlines()
    suggested = re.findall(r"`(gputop [^`]*)`", line)
    assert suggested == ["gputop --demo"]
    # Typed as offered, where the user is: it works (here with --once, as no terminal is).
    offered = run(*suggested[0].split()[1:], "--once", cwd=tmp_path)
    assert offered.returncode == 0, offered.stderr
    assert offered.stdout.startswith("2024-09-18 21:34:12") and "4 GPU(s)" in offered.stdout


def test_the_demo_capture_is_package_data_and_the_credited_capture() -> None:
    assert DEMO_CAPTURE.read_bytes() == CAPTURE.read_bytes()  # credited in snapshots/README
    package = ROOT / "tui" / "gputop"
    inside = DEMO_CAPTURE.relative_to(package).as_posix()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["gputop"]
    assert any(fnmatch.fnmatch(inside, pattern) for pattern in globs), (inside, globs)


def test_demo_and_replay_together_are_refused(tmp_path: Path) -> None:
    result = run("--demo", "--replay", str(CAPTURE), "--once", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--demo" in result.stderr
