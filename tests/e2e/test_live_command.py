"""The real `gputop` command on the fake NVML (tests/fakes/sitecustomize.py), headless: what
it prints, records and says when something is wrong, or while the driver starts
(``run_live`` in-process: ``tests/unit/test_live_cli.py``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gputop.sinks.json import snapshot_dict
from gputop.sinks.summary import format_summary
from gputop.sources.smi.recording import Recording
from support.command import gputop_command
from support.shortcuts import snapshot_from_path

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"

# Fields a live snapshot has that a capture cannot: when, where, and this host's view of PIDs.
LIVE_ONLY = ("timestamp", "host")


def gputop(
    *args: str, fake: str = str(FOUR), timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    command, environ = gputop_command(fake, **env)
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=environ, cwd=ROOT, timeout=timeout
    )


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's JSON without what only a live source knows or how a value went missing."""
    out = {key: value for key, value in document.items() if key not in LIVE_ONLY}
    out["gpus"] = [
        {
            **{key: value for key, value in gpu.items() if key != "unavailable"},
            "processes": [{**p, "foreign": None} for p in gpu["processes"]],
        }
        for gpu in document["gpus"]
    ]
    return out


def test_e2e_once_shows_the_capture(tmp_path: Path) -> None:
    result = gputop("--once")
    assert result.returncode == 0, result.stderr
    expected = format_summary(snapshot_from_path(FOUR)).splitlines()
    lines = result.stdout.splitlines()
    # Same table; only the first line's time differs.
    assert lines[1:] == expected[1:]
    assert lines[0].endswith(expected[0].split("   ", 1)[1])
    # The capture's PIDs exist on no machine here: flagged, with the hint, once.
    assert result.stderr.count("--pid=host") == 1


def test_e2e_json_values_equal_the_captures() -> None:
    result = gputop("--json")
    assert result.returncode == 0, result.stderr
    live_doc = json.loads(result.stdout)
    assert comparable(live_doc) == comparable(snapshot_dict(snapshot_from_path(FOUR)))
    assert all(p["foreign"] for g in live_doc["gpus"] for p in g["processes"])


def test_e2e_count_and_record_give_documents_that_replay(tmp_path: Path) -> None:
    target = tmp_path / "out.xml"
    result = gputop("--count", "3", "--interval", "0.25", "--json", "--record", str(target))
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(printed) == 3
    assert target.read_text().count("<?xml") == 3
    with Recording.open(target) as recording:
        assert len(recording) == 3
        replayed = [snapshot_dict(snapshot) for snapshot in recording]
        assert recording.warnings == []
    capture = comparable(snapshot_dict(snapshot_from_path(FOUR)))
    for shown, back in zip(printed, replayed, strict=True):
        assert comparable(back) == comparable(shown) == capture
        assert back["timestamp"] == shown["timestamp"].split(".")[0]
    # And gputop's own replay reads it.
    again = gputop("--replay", str(target), "--at", "-1", "--json")
    assert again.returncode == 0, again.stderr
    assert comparable(json.loads(again.stdout)) == capture


def test_e2e_pick() -> None:
    # Every GPU of the capture runs two compute jobs: none is free.
    busy = gputop("--pick", "2", "--interval", "0.25")
    assert busy.returncode == 1 and busy.stdout == ""
    assert busy.stderr.startswith("gputop: --pick 2: only 0 of 4 GPU(s) free")
    mig = gputop("--pick", "1", fake="h100-mig-8x7")
    assert mig.returncode == 1
    assert mig.stdout == ""
    assert mig.stderr.startswith("gputop: --pick 1: only 0 of 8 GPU(s) free")
    assert "8 lost or in MIG mode" in mig.stderr


def test_e2e_gpu_selection_and_visible_devices_note() -> None:
    result = gputop("--json", "--gpu", "GPU-0a66,c2:00.0", CUDA_VISIBLE_DEVICES="2")
    assert result.returncode == 0, result.stderr
    assert [g["index"] for g in json.loads(result.stdout)["gpus"]] == [2, 3]
    assert "CUDA_VISIBLE_DEVICES=2: CUDA programs see 2 as cuda:0" in result.stderr


@pytest.mark.parametrize("value", ["2,3", "none"])
def test_e2e_an_inherited_nvidia_visible_devices_note_agrees_with_the_gpus_shown(
    value: str,
) -> None:
    """NVML shows 8 GPUs while the variable asks for 2 or none: the note must not claim
    that this container sees only those (or none) next to a table of 8."""
    result = gputop("--json", fake="h100-mig-8x7", NVIDIA_VISIBLE_DEVICES=value)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["gpus"]) == 8
    note = result.stderr
    assert f"NVIDIA_VISIBLE_DEVICES={value}" in note
    assert "NVML shows 8 GPUs" in note and "not applied" in note
    assert "sees only" not in note and "no GPU here" not in note


def test_e2e_visible_devices_that_name_the_gpus_nvml_shows_say_nothing() -> None:
    """Issue 25: the real H200 printed an NVIDIA_VISIBLE_DEVICES note on every headless run,
    though the one GPU it names is the one NVML shows. A note is for a disagreement."""
    h200 = str(ROOT / "snapshots" / "h200-live" / "h200-train-stream.xml.gz")
    uuid = "GPU-90bf0311-6a59-dc47-3958-189cf6182603"
    for value in ("0", uuid, "all"):
        result = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES=value)
        assert result.returncode == 0, result.stderr
        assert "VISIBLE_DEVICES" not in result.stderr, value
    single = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES="0", CUDA_VISIBLE_DEVICES="0")
    assert "VISIBLE_DEVICES" not in single.stderr
    # Another GPU's UUID, or two GPUs where NVML shows one: said.
    other = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES="GPU-0a66")
    assert "NVIDIA_VISIBLE_DEVICES=GPU-0a66" in other.stderr and "NVML shows 1 GPU" in other.stderr
    two = gputop("--once", fake=h200, NVIDIA_VISIBLE_DEVICES="0,1")
    assert "not applied as asked" in two.stderr


@pytest.mark.parametrize(
    ("spec", "words"),
    [("zero", "expected an index"), ("9", "nothing matches '9'; GPUs here: 0 GPU-8ad6666a")],
)
def test_e2e_a_bad_gpu_spec_is_one_line_and_exit_2(spec: str, words: str) -> None:
    result = gputop("--once", "--gpu", spec)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and words in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "mode", [["--once"], ["--json"], ["--pick", "1"], ["--count", "2"], []], ids=str
)
def test_e2e_no_driver_is_one_line_naming_the_case_and_the_replay_hint(mode: list[str]) -> None:
    from gputop.sources.nvml.source import BUNDLED_CAPTURE_HINT

    result = gputop(*mode, fake="no-driver")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("gputop: NVIDIA driver not loaded")
    assert BUNDLED_CAPTURE_HINT in result.stderr


def test_e2e_an_unwritable_record_path(tmp_path: Path) -> None:
    result = gputop("--once", "--record", str(tmp_path / "missing" / "x.xml"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot write" in result.stderr


def test_e2e_a_mig_uuid_prefix_selects_that_device_live() -> None:
    everything = json.loads(gputop("--json", fake="h100-mig-8x7").stdout)
    gpu = everything["gpus"][3]
    device = gpu["mig_devices"][1]
    prefix = device["uuid"][:12].upper()  # MIG-0301C0DE: abbreviated, other case

    result = gputop("--json", "--gpu", prefix, fake="h100-mig-8x7")

    assert result.returncode == 0, result.stderr
    (chosen,) = json.loads(result.stdout)["gpus"]
    assert chosen["index"] == 3
    assert [d["uuid"] for d in chosen["mig_devices"]] == [device["uuid"]]
    on_device = [p for p in gpu["processes"] if p["gpu_instance_id"] == device["gpu_instance_id"]]
    assert on_device and chosen["processes"] == on_device


def test_e2e_ctrl_c_during_a_slow_driver_start_ends_at_once_with_130() -> None:
    import signal
    import time

    # nvmlInit takes 30 s; stdout is a pipe, so this is the --once summary waiting for it.
    command, environ = gputop_command(GPUTOP_FAKE_NVML_LATENCY="nvmlInitWithFlags=30")
    process = subprocess.Popen(
        command, env=environ, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(2.0)  # well past the imports: waiting for the driver
        assert process.poll() is None
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=10)
        assert time.monotonic() - interrupted < 5
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130
    assert "Traceback" not in err


def test_e2e_once_on_a_slow_driver_says_it_waits() -> None:
    result = gputop("--once", timeout=30, GPUTOP_FAKE_NVML_LATENCY="0,nvmlInitWithFlags=2.5")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("gputop: waiting for the NVIDIA driver to start…\n")
    assert result.stderr.count("waiting") == 1
    assert result.stdout.count("NVIDIA GeForce RTX 3090") == 4
