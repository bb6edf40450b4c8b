"""`gputop --replay FILE --once / --json / --at`: the numbers of the capture come out."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gputop.cli.main import main

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
MIB = 1048576
T0 = datetime(2024, 9, 18, 23, 59, 58)
STREAM = ("tesla-t4-v11.xml", "grid-k520-v7.xml", "a100-sxm4-80gb-mig-v12.xml")
STREAM_NAMES = ["Tesla T4", "GRID K520", "NVIDIA A100-SXM4-80GB"]


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def json_of(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, Any]:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    """Six documents a second apart, running past midnight: T4, K520, A100, T4, K520, A100."""
    documents = []
    for number in range(6):
        raw = (SNAPSHOTS / STREAM[number % 3]).read_bytes()
        stamp = (T0 + timedelta(seconds=number)).strftime("%a %b %d %H:%M:%S %Y").encode()
        documents.append(
            re.sub(rb"<timestamp>[^<]*</timestamp>", b"<timestamp>" + stamp + b"</timestamp>", raw)
        )
    path = tmp_path / "stream.xml"
    path.write_bytes(b"\n".join(documents))
    return path


# --- --once -----------------------------------------------------------------------------


def test_once_multi_gpu_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--replay", SNAPSHOTS / "rtx3090x4-procs-v12.xml", "--once")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("2024-09-18 21:34:12")
    assert "550.90.07" in lines[0] and "12.4" in lines[0] and "4 GPU(s)" in lines[0]
    gpu_lines = [line for line in lines if "NVIDIA GeForce RTX 3090" in line]
    assert len(gpu_lines) == 4
    assert "Memory used/total GiB" in lines[1]
    # (util, used/total GiB, power draw, temperature) as the capture has them, rounded for
    # display; memory in one unit, said once in the header.
    for line, numbers in zip(
        gpu_lines,
        [
            ("0%", "10.61/24.00", "104W", "32C"),  # 10868 MiB, 104.12 W
            ("0%", "10.54/24.00", "116W", "31C"),  # 10788 MiB, 116.39 W
            ("23%", "10.72/24.00", "141W", "31C"),  # 10976 MiB, 140.68 W
            ("0%", "10.87/24.00", "152W", "31C"),  # 11134 MiB, 151.91 W
        ],
        strict=True,
    ):
        fields = line.split()
        for number in numbers:
            assert number in fields, (number, line)
        assert "350W" in fields and "30%" in fields and "P2" in fields
    # Every process, with its GPU and memory.
    for gpu, pid, mib in [
        (0, 642928, 2974),
        (0, 2651948, 7884),
        (1, 643178, 2968),
        (1, 643179, 7810),
        (2, 2294960, 3180),
        (2, 2652292, 7786),
        (3, 642639, 2970),
        (3, 2652618, 8154),
    ]:
        assert any(line.split()[:4] == [str(gpu), str(pid), "C", f"{mib}MiB"] for line in lines)


def test_once_shows_na_not_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--replay", SNAPSHOTS / "a100-sxm4-80gb-mig-v12.xml", "--once")
    assert code == 0
    gpu_line = next(line for line in out.splitlines() if "A100" in line)
    assert gpu_line.split()[3] == "n/a"  # utilization under MIG ("0 NVIDIA A100-SXM4-80GB n/a")
    assert "n/a" in gpu_line.split()[-2:]  # fan
    mig_lines = [line for line in out.splitlines() if line.strip().startswith("MIG")]
    assert [line.split()[2] for line in mig_lines] == ["3", "4", "5", "6"]
    # In the GPU line's unit: 12 MiB of 19968 MiB.
    assert all("1g.20gb" in line and "0.01/19.50" in line for line in mig_lines)
    assert "/80.00" in gpu_line


def test_once_through_the_real_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "--replay", SNAPSHOTS / "gtx1070x6-v9.xml", "--once"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.count("GeForce GTX 1070") == 6
    assert "./ethminer" in result.stdout


# --- --json -----------------------------------------------------------------------------


def test_json_interface_of_a_multi_gpu_capture(capsys: pytest.CaptureFixture[str]) -> None:
    data = json_of(capsys, "--replay", SNAPSHOTS / "rtx3090x4-procs-v12.xml")
    assert data["driver_version"] == "550.90.07"
    assert data["cuda_version"] == "12.4"
    assert data["timestamp"] == "2024-09-18T21:34:12"
    assert datetime.fromisoformat(data["timestamp"]) == datetime(2024, 9, 18, 21, 34, 12)
    gpus = data["gpus"]
    assert [gpu["index"] for gpu in gpus] == [0, 1, 2, 3]
    third = gpus[2]
    assert third["name"] == "NVIDIA GeForce RTX 3090"
    assert third["uuid"] == "GPU-0a66778f-a4ed-a1ff-a65e-98882252dca3"
    assert third["pci_bus_id"] == "00000000:C1:00.0"
    assert (third["utilization_gpu"], third["utilization_memory"]) == (23, 8)
    assert third["memory_total"] == 24576 * MIB
    assert third["memory_used"] == 10976 * MIB
    assert third["power_draw"] == 140.68
    assert third["power_limit"] == 350
    assert third["temperature"] == 31
    assert third["fan_speed"] == 30
    assert third["mig_mode"] is None  # "N/A" on a GeForce
    assert third["mig_devices"] == []
    assert third["processes"] == [
        {
            **third["processes"][0],
            "pid": 2294960,
            "type": "C",
            "name": "python3",
            "memory_used": 3180 * MIB,
            "gpu_instance_id": None,
            "compute_instance_id": None,
        },
        {
            **third["processes"][1],
            "pid": 2652292,
            "type": "C",
            "name": "python3",
            "memory_used": 7786 * MIB,
            "gpu_instance_id": None,
            "compute_instance_id": None,
        },
    ]
    assert [gpu["memory_used"] for gpu in gpus] == [
        10868 * MIB,
        10788 * MIB,
        10976 * MIB,
        11134 * MIB,
    ]


def test_json_mig_capture(capsys: pytest.CaptureFixture[str]) -> None:
    data = json_of(capsys, "--replay", SNAPSHOTS / "a100-sxm4-80gb-mig-v12.xml")
    assert data["attached_gpus"] == 4
    (gpu,) = data["gpus"]
    assert gpu["utilization_gpu"] is None
    assert gpu["utilization_memory"] is None
    assert gpu["fan_speed"] is None
    assert gpu["mig_mode"] is True
    assert gpu["memory_total"] == 81920 * MIB
    assert gpu["memory_used"] == 50 * MIB
    assert gpu["unavailable"]["utilization.gpu"] == "not available under MIG"
    assert gpu["unavailable"]["fan_speed"] == "not available"
    assert [
        (
            d["gpu_instance_id"],
            d["compute_instance_id"],
            d["profile"],
            d["memory_total"],
            d["memory_used"],
        )
        for d in gpu["mig_devices"]
    ] == [(gi, 0, "1g.20gb", 19968 * MIB, 12 * MIB) for gi in (3, 4, 5, 6)]
    assert gpu["processes"] == []


def test_json_unknowns_are_null(capsys: pytest.CaptureFixture[str]) -> None:
    data = json_of(capsys, "--replay", SNAPSHOTS / "grid-k520-v7.xml")
    assert data["cuda_version"] is None  # v7 has none
    (gpu,) = data["gpus"]
    assert gpu["fan_speed"] is None
    assert gpu["mig_mode"] is None
    assert gpu["pci_bus_id"] == "0000:00:03.0"
    assert gpu["power_draw"] == 17.97
    windows = json_of(capsys, "--replay", SNAPSHOTS / "tesla-t4-windows-v11.xml")
    processes = windows["gpus"][0]["processes"]
    assert len(processes) == 15
    assert all(process["memory_used"] is None for process in processes)
    assert processes[0]["name"] is None
    assert processes[0]["pid"] == 2320


@pytest.mark.parametrize("name", sorted(path.name for path in SNAPSHOTS.glob("*.xml")))
def test_json_of_every_capture_is_valid(capsys: pytest.CaptureFixture[str], name: str) -> None:
    raw = (SNAPSHOTS / name).read_text()
    data = json_of(capsys, "--replay", SNAPSHOTS / name)
    assert len(data["gpus"]) == raw.count("<gpu id=")
    uuids = re.findall(r"<uuid>([^<]*)</uuid>", raw)
    assert [gpu["uuid"] for gpu in data["gpus"]] == uuids
    for gpu in data["gpus"]:
        for key in (
            "index",
            "name",
            "uuid",
            "pci_bus_id",
            "utilization_gpu",
            "utilization_memory",
            "memory_total",
            "memory_used",
            "power_draw",
            "power_limit",
            "temperature",
            "fan_speed",
            "mig_mode",
            "mig_devices",
            "processes",
        ):
            assert key in gpu
        for process in gpu["processes"]:
            assert set(process) >= {
                "pid",
                "type",
                "name",
                "memory_used",
                "gpu_instance_id",
                "compute_instance_id",
            }


# --- --at -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (None, 0),
        ("0", 0),
        ("2", 2),
        ("5", 5),
        ("-1", 5),
        ("-6", 0),
        ("2024-09-18T23:59:59", 1),
        ("2024-09-19T00:00:01.500000", 3),  # between two: the one before
        ("2024-09-19 00:00:02", 4),
        ("23:59:58", 0),
        ("00:00:00", 2),  # past midnight: the next day's
        ("00:00:03", 5),
    ],
)
def test_at(
    capsys: pytest.CaptureFixture[str], stream: Path, at: str | None, expected: int
) -> None:
    args: list[str | Path] = ["--replay", stream]
    if at is not None:
        args += ["--at", at]
    data = json_of(capsys, *args)
    assert data["gpus"][0]["name"] == STREAM_NAMES[expected % 3]
    assert data["timestamp"] == (T0 + timedelta(seconds=expected)).isoformat()


@pytest.mark.parametrize(
    ("at", "where"),
    [
        ("2024-09-19T00:00:04", "after the recording ends"),
        ("2024-09-19T05:00:00", "after the recording ends"),
        ("00:00:04", "after the recording ends"),
        ("2024-09-18T23:59:57", "before the recording starts"),
        ("23:59:57", "before the recording starts"),
    ],
)
def test_at_outside_the_recording_is_refused_at_both_ends_with_its_span(
    capsys: pytest.CaptureFixture[str], stream: Path, at: str, where: str
) -> None:
    code, out, err = run(capsys, "--replay", stream, "--json", "--at", at)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"gputop: --at {at}: ")
    assert where in err
    assert "runs from 2024-09-18 23:59:58 to 2024-09-19 00:00:03 (6 snapshots)" in err


def test_count_prints_json_lines(capsys: pytest.CaptureFixture[str], stream: Path) -> None:
    code, out, err = run(capsys, "--replay", stream, "--json", "--count", "3", "--at", "-4")
    assert code == 0, err
    lines = out.splitlines()
    assert [json.loads(line)["timestamp"] for line in lines] == [
        (T0 + timedelta(seconds=n)).isoformat() for n in (2, 3, 4)
    ]


def test_at_on_the_summary(capsys: pytest.CaptureFixture[str], stream: Path) -> None:
    code, out, _ = run(capsys, "--replay", stream, "--once", "--at", "-2")
    assert code == 0
    assert out.startswith("2024-09-19 00:00:02")
    assert "GRID K520" in out


def test_count_beyond_the_recording_says_how_many_it_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--demo", "--json", "--count", "2")
    assert code == 0 and len(out.splitlines()) == 1
    assert err == "gputop: --count 2: the recording holds only 1 document\n"
    code, out, err = run(capsys, "--replay", SNAPSHOTS, "--json", "--count", "20", "--at", "8")
    assert code == 0 and len(out.splitlines()) == 3
    assert (
        "gputop: --count 20: the recording holds only 11 documents, 3 of them from --at 8 on\n"
        in err
    )


def test_count_within_the_recording_says_nothing_of_it(
    capsys: pytest.CaptureFixture[str], stream: Path
) -> None:
    code, out, err = run(capsys, "--replay", stream, "--json", "--count", "3")
    assert code == 0 and len(out.splitlines()) == 3 and "--count" not in err
