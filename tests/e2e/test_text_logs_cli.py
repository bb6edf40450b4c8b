"""The real command on `-q` text, dmon and pmon logs: `--replay --once/--json`, `report`,
and damaged logs (one line, exit 2, never a traceback)."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gputop.errors import BadCapture
from gputop.sources.recordings.formats import detect, open_recording
from support.command import gputop

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
MIB = 2**20


def test_replay_json_of_q_text() -> None:
    result = gputop("--replay", SNAPSHOTS / "h100-mig-590-q.txt", "--json")

    assert result.returncode == 0, result.stderr
    (gpu,) = json.loads(result.stdout)["gpus"]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["memory_used"] == 11125 * MIB
    assert [d["profile"] for d in gpu["mig_devices"]] == [
        "3g.40gb",
        "2g.20gb",
        "1g.10gb",
        "1g.10gb",
    ]
    assert gpu["utilization_gpu"] is None
    assert gpu["unavailable"]["utilization.gpu"] == "not available under MIG"


def test_replay_once_of_a_q_l_stream_at_the_last_log() -> None:
    result = gputop("--replay", SNAPSHOTS / "h100-mig-590-q-l.txt", "--once", "--at", "-1")

    assert result.returncode == 0, result.stderr
    assert "gpu_burn" in result.stdout and "432W / 700W" in result.stdout


def test_replay_json_of_dmon_says_what_the_log_lacks() -> None:
    result = gputop("--replay", SNAPSHOTS / "h100-590-dmon.txt", "--json", "--at", "2")

    assert result.returncode == 0, result.stderr
    (gpu,) = json.loads(result.stdout)["gpus"]
    assert (gpu["power_draw"], gpu["temperature"], gpu["utilization_gpu"]) == (633, 64, 100)
    assert gpu["memory_total"] is None
    assert gpu["unavailable"]["memory.total"] == "not in this log"


DATED = """\
#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk    fb
#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz    MB
 20240104   13:54:35      0   100    50     -    90    10     0     0  6250  1695  8000
 20240104   13:54:36      0   100    50     -    90    10     0     0  6250  1695  8000
 20240104   13:54:37      0   100    50     -    10    10     0     0  6250  1695  8000
 20240104   13:54:38      0   100    50     -    10    10     0     0  6250  1695  8000
 20240104   13:54:39      0   100    50     -    10    10     0     0  6250  1695  8000
"""


def test_report_of_a_dated_dmon(tmp_path: Path) -> None:
    path = tmp_path / "dmon.log"
    path.write_text(DATED)

    result = gputop("report", path, "--json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["snapshots"] == 5 and report["duration_s"] == 4
    (gpu,) = report["gpus"]
    assert gpu["utilization_mean_pct"] == 42
    assert gpu["peak_memory_used_bytes"] == 8000 * MIB
    assert gpu["peak_power_w"] == 100
    assert gpu["energy_wh"] == pytest.approx(100 * 4 / 3600, abs=1e-4)


def test_report_of_q_text() -> None:
    result = gputop("report", SNAPSHOTS / "h100-mig-590-q-l.txt", "--json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["snapshots"] == 2 and report["duration_s"] == 17
    assert report["gpus"][0]["peak_power_w"] == 432.21


@pytest.mark.parametrize(
    "data",
    [
        b"==============NVSMI LOG==============\n\x00\xff",
        b"# gpu pwr gtemp\n",
        b"# gpu   pid  type  sm  command\n\x00\x00",
    ],
)
def test_damaged_logs_give_one_line_and_exit_2(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    for command in (("--replay", path, "--once"), ("report", path)):
        result = gputop(*command)
        assert "Traceback" not in result.stderr
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.splitlines()) == 1
        assert result.stderr.startswith("gputop: ") and str(path) in result.stderr


SOURCES = [
    (SNAPSHOTS / name).read_bytes()
    for name in ("h100-mig-590-q.txt", "rtx2080s-win-610-pmon.txt", "l40s-595-dmon.txt")
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SOURCES)))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["cut", "flip", "insert", "delete"]))
        if kind == "cut":
            del data[at:]
        elif kind == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(
                st.sampled_from(
                    [b"\n", b" : ", b"    ", b"-", b"# gpu pid\n", b"\x00", b"N/A", b"99999999999"]
                )
            )
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 200))]
    return bytes(data)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mutated())
# A pmon header with no command column, and a row without its pid (CI's Hypothesis found it).
@example(data=b"# gpu pid\n==============NVSMI LOG==============\n\nTimestamp : Tue Jul 14\n4")
def test_mutated_logs_raise_only_bad_capture(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(data)
    found = detect(data[:4096])
    if found is None or found.spooled is None:
        return  # no longer looks like a text log: the XML reader refuses it (its own tests)
    try:
        log = found.open(path)
    except BadCapture:
        return
    with log:
        for index in range(len(log)):
            with contextlib.suppress(BadCapture):
                log.snapshot(index)
            log.timestamp(index)


def test_follow_prints_samples_as_they_are_appended(tmp_path: Path) -> None:
    """`nvidia-smi dmon -o DT > dmon.log &` then `gputop --replay dmon.log --follow`."""
    path = tmp_path / "dmon.log"
    lines = DATED.splitlines(keepends=True)
    path.write_text("".join(lines[:3]))
    command = [sys.executable, "-m", "gputop", "--replay", str(path), "--follow", "--json"]
    process = subprocess.Popen(
        [*command, "--count", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in lines[3:]:
            time.sleep(0.7)  # dmon -d 1 writes a sample a second
            with path.open("a") as log:
                log.write(line)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    samples = [json.loads(line) for line in out.splitlines()]
    assert [sample["timestamp"] for sample in samples] == [
        f"2024-01-04T13:54:3{second}" for second in range(5, 9)
    ]
    assert [sample["gpus"][0]["utilization_gpu"] for sample in samples] == [90, 90, 10, 10]


def test_a_dmon_pipe_on_standard_input() -> None:
    """`nvidia-smi dmon -o DT | gputop --replay -`: told by its first line, read as it comes."""
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "--replay", "-", "--json", "--count", "9"],
        input=DATED,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    samples = [json.loads(line) for line in result.stdout.splitlines()]
    assert [sample["gpus"][0]["utilization_gpu"] for sample in samples] == [90, 90, 10, 10, 10]


def test_report_of_a_q_text_pipe() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "report", "/dev/stdin", "--json"],
        input=(SNAPSHOTS / "h100-mig-590-q-l.txt").read_text(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["snapshots"] == 2


def test_the_last_line_needs_no_line_end(tmp_path: Path) -> None:
    path = tmp_path / "dmon.log"
    path.write_text(DATED.rstrip("\n"))

    result = gputop("report", path, "--json")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["snapshots"] == 5


def test_a_text_pipe_with_no_room_for_its_copy_is_a_bad_capture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def full(**_: object) -> tuple[int, str]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    read, write = os.pipe()
    os.write(write, DATED.encode())
    os.close(write)

    with pytest.raises(BadCapture, match=r"no room to keep the stream.*TMPDIR"):
        open_recording(Path(f"/dev/fd/{read}"))
    os.close(read)


TINY_FILE_SIZE_LIMIT = ["sh", "-c", 'trap "" XFSZ; ulimit -f 1; exec "$@"', "sh"]
"""Runs a command in which no file can grow past 1 KiB (a write past it fails with EFBIG, as
on a full disk, instead of the signal that would kill the command)."""


@pytest.mark.parametrize("kind", ["pipe", "gzip"])
def test_a_text_log_whose_copy_cannot_be_written_gets_one_line(tmp_path: Path, kind: str) -> None:
    text = (SNAPSHOTS / "h100-mig-590-q-l.txt").read_bytes()
    assert len(text) > 2 * 1024  # the first write to the copy is past the limit
    packed = tmp_path / "run.txt.gz"
    packed.write_bytes(gzip.compress(text))
    argument = "-" if kind == "pipe" else str(packed)

    result = subprocess.run(
        [*TINY_FILE_SIZE_LIMIT, sys.executable, "-m", "gputop", "report", argument, "--json"],
        input=text if kind == "pipe" else None,
        capture_output=True,
        timeout=60,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )

    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    shown = "-" if kind == "pipe" else str(packed)
    keeping = "keep the stream" if kind == "pipe" else "inflate it"
    assert stderr.splitlines() == [
        f"gputop: {shown}: cannot {keeping} in {tmp_path} (file too large); point TMPDIR elsewhere"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.txt.gz"]  # no copy left
