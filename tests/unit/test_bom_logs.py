"""A UTF-8 byte order mark before a text log (Notepad and PowerShell's ``Out-File`` write
one): every format reads as it does without it, as the XML reader always did."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from gputop.cli.main import main

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
BOM = b"\xef\xbb\xbf"
BOM_FORMATS = [
    "h100-590-q.txt",  # nvidia-smi -q
    "a100x8-hang-525-q.txt",  # -q -l: several logs
    "h100-590-dmon.txt",
    "h100-590-pmon.txt",
    "pmon-ray-3gpu.txt",
    "csv-h100-590.csv",  # --query-gpu with units
    "query-gpu-2x-a0s.csv",
    "gpu-log-noheader-plato.csv",  # noheader, read by its --query-gpu
    "csv-rtx2080s-windows-610.csv",  # written on Windows
]
QUERY_NOHEADER = (
    "timestamp,utilization.gpu,utilization.memory,memory.used,memory.free,temperature.gpu,"
    "power.draw"
)


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def every_snapshot(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> list[Any]:
    """Every snapshot of ``path`` as ``--json`` writes it (``--count`` of them all)."""
    code, out, err = run(capsys, "--replay", path, *extra, "--json", "--count", "100000")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def with_bom(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """The capture ``name`` as it is and with a BOM before it, side by side."""
    plain = SNAPSHOTS / name
    marked = tmp_path / f"bom-{name}"
    marked.write_bytes(BOM + plain.read_bytes())
    return plain, marked


@pytest.mark.parametrize("name", BOM_FORMATS)
def test_a_bom_before_a_log_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    plain, marked = with_bom(tmp_path, name)
    extra = ("--query-gpu", QUERY_NOHEADER) if "noheader" in name else ()
    expected = every_snapshot(capsys, plain, *extra)
    assert expected  # the capture itself reads
    assert every_snapshot(capsys, marked, *extra) == expected
    summaries = [run(capsys, "--replay", path, *extra, "--once") for path in (plain, marked)]
    assert summaries[1] == (0, summaries[0][1], summaries[0][2].replace(str(plain), str(marked)))


@pytest.mark.parametrize("name", ["h100-590-q.txt", "csv-h100-590.csv", "a100x8-hang-525-q.txt"])
def test_the_report_of_a_log_with_a_bom(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    plain, marked = with_bom(tmp_path, name)
    reports = []
    for path in (plain, marked):
        code, out, err = run(capsys, "report", path, "--json")
        assert code == 0 and "skipped" not in err, err
        reports.append({k: v for k, v in json.loads(out).items() if k != "source"})
    assert reports[1] == reports[0]


def test_a_gzipped_log_with_a_bom(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plain = SNAPSHOTS / "h100-590-dmon.txt"
    packed = tmp_path / "dmon.txt.gz"
    packed.write_bytes(gzip.compress(BOM + plain.read_bytes()))
    assert every_snapshot(capsys, packed) == every_snapshot(capsys, plain)


def test_an_apps_log_with_a_bom(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gpus, apps = tmp_path / "gpu.csv", tmp_path / "apps.csv"
    gpus.write_bytes(
        BOM + b"timestamp, index, uuid, utilization.gpu [%], memory.used [MiB]\n"
        b"2024/01/04 15:02:11.123, 0, GPU-aaaa, 3 %, 500 MiB\n"
    )
    apps.write_bytes(
        BOM + b"timestamp, gpu_uuid, pid, process_name, used_memory [MiB]\n"
        b"2024/01/04 15:02:11.600, GPU-aaaa, 4242, python, 480 MiB\n"
    )
    (snapshot,) = every_snapshot(capsys, gpus, "--apps", str(apps))
    assert [p["pid"] for p in snapshot["gpus"][0]["processes"]] == [4242]
