"""`nvidia-smi --query-gpu=... --format=csv` logs read as recordings, real and made."""

from __future__ import annotations

import gzip
import json
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from gputop.errors import BadCapture
from gputop.model import Reason
from gputop.model.fields import GPU_FIELDS, Field, Value
from gputop.sources.csvlog import CsvRecording, looks_like
from gputop.sources.csvlog.parse import Schema
from gputop.sources.recordings.formats import detect, open_recording
from support.command import gputop

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
REAL_LOGS = sorted(SNAPSHOTS.glob("csv-*.csv"))
MIB = 1024**2


# -- the real logs, checked cell by cell against the file ---------------------------------


def _raw_rows(path: Path) -> list[dict[str, str]]:
    """Every data row of ``path`` as {field: cell}, read the simplest way there is."""
    rows: list[dict[str, str]] = []
    header: list[str] = []
    for line in path.read_text().splitlines():
        cells = line.split(", ")
        if cells[0] == "timestamp":
            header = [cell.split(" [")[0] for cell in cells]
            continue
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _number(cell: str) -> float | None:
    return None if cell.startswith("[") or cell == "N/A" else float(cell.split(" ")[0])


def test_there_are_at_least_five_real_logs() -> None:
    assert len(REAL_LOGS) >= 5


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda path: path.name)
def test_a_real_log_reads_as_its_cells_say(path: Path) -> None:
    rows = _raw_rows(path)
    with CsvRecording.open(path) as recording:
        assert len(recording) == len(rows)  # one GPU each: a row is a snapshot
        assert recording.warnings == []
        for index, row in enumerate(rows):
            snapshot = recording.snapshot(index)
            stamp = datetime.strptime(row["timestamp"], "%Y/%m/%d %H:%M:%S.%f")
            assert snapshot.timestamp == stamp == recording.timestamp(index)
            assert snapshot.driver_version == row["driver_version"]
            assert snapshot.attached_gpus == int(row["count"])
            (gpu,) = snapshot.gpus
            assert gpu.index == int(row["index"])
            assert gpu.name == row["name"]
            assert gpu.uuid == row["uuid"]
            assert gpu.pci_bus_id == row["pci.bus_id"]
            assert gpu.performance_state == row["pstate"]
            assert gpu.utilization.gpu == _number(row["utilization.gpu"])
            assert gpu.temperature.gpu == _number(row["temperature.gpu"])
            assert gpu.fan_speed == _number(row["fan.speed"])
            assert gpu.power.draw == _number(row["power.draw"])
            total = _number(row["memory.total"])
            used = _number(row["memory.used"])
            assert gpu.memory.total == (None if total is None else int(total * MIB))
            assert gpu.memory.used == (None if used is None else int(used * MIB))
            clock = _number(row.get("clocks.current.sm", row.get("clocks.sm", "[N/A]")))
            assert gpu.clocks.sm == clock
            if row["utilization.gpu"].startswith("["):
                assert gpu.reason("utilization.gpu") is not None


def test_a_real_mig_log_says_why_utilization_is_missing() -> None:
    with CsvRecording.open(SNAPSHOTS / "csv-h100-mig-590.csv") as recording:
        gpu = recording.snapshot(0).gpus[0]
    assert gpu.mig_mode is True
    assert gpu.utilization.gpu is None
    assert gpu.reason("utilization.gpu") is Reason.NOT_AVAILABLE


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda path: path.name)
def test_a_real_log_replays_as_json(path: Path) -> None:
    result = gputop("--replay", path, "--json", "--at", "-1")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    row = _raw_rows(path)[-1]
    assert document["gpus"][0]["uuid"] == row["uuid"]
    assert document["gpus"][0]["utilization_gpu"] == _number(row["utilization.gpu"])


# -- made logs: every shape nvidia-smi writes ---------------------------------------------

TWO_GPUS = """\
timestamp, index, name, utilization.gpu [%], memory.used [MiB], power.draw [W]
2024/01/04 15:02:11.123, 0, NVIDIA A100, 22 %, 1024 MiB, 33.09 W
2024/01/04 15:02:11.125, 1, NVIDIA A100, [N/A], 0 MiB, [Not Supported]
2024/01/04 15:02:12.123, 0, NVIDIA A100, 50 %, 2048 MiB, 60.5 W
2024/01/04 15:02:12.126, 1, NVIDIA A100, 3 %, 10 MiB, [Unknown Error]
"""


def _write(tmp_path: Path, text: str, name: str = "gpu-log.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rows_of_several_gpus_make_one_snapshot_told_apart_by_index(tmp_path: Path) -> None:
    with CsvRecording.open(_write(tmp_path, TWO_GPUS)) as recording:
        assert len(recording) == 2
        first, second = recording.snapshot(0), recording.snapshot(1)
    assert [gpu.index for gpu in first.gpus] == [0, 1]
    assert first.gpus[0].utilization.gpu == 22.0
    assert first.gpus[0].memory.used == 1024 * MIB
    assert first.gpus[0].power.draw == 33.09
    assert first.gpus[1].utilization.gpu is None
    assert first.gpus[1].reason("utilization.gpu") is Reason.NOT_AVAILABLE
    assert first.gpus[1].reason("power.draw") is Reason.NOT_SUPPORTED
    assert second.gpus[1].reason("power.draw") is Reason.ERROR
    assert second.gpus[0].memory.used == 2048 * MIB


def test_nounits_and_a_header_repeated_before_every_block(tmp_path: Path) -> None:
    header = "timestamp, utilization.gpu [%], memory.used [MiB]\n"
    text = (
        header
        + "2024/01/04 15:02:11.000, 10, 100\n2024/01/04 15:02:11.000, 20, 200\n"
        + header
        + "2024/01/04 15:02:12.000, 30, 300\n2024/01/04 15:02:12.000, 40, 400\n"
    )
    with CsvRecording.open(_write(tmp_path, text)) as recording:
        assert len(recording) == 2
        snapshot = recording.snapshot(1)
    # No identity column: GPUs by their position in each block.
    assert [(gpu.index, gpu.utilization.gpu) for gpu in snapshot.gpus] == [(0, 30.0), (1, 40.0)]
    assert snapshot.gpus[1].memory.used == 400 * MIB


def test_what_a_log_does_not_hold_is_none_not_in_this_log(tmp_path: Path) -> None:
    with CsvRecording.open(_write(tmp_path, TWO_GPUS)) as recording:
        gpu = recording.snapshot(0).gpus[0]
    for path, value in (
        ("temperature.gpu", gpu.temperature.gpu),
        ("fan_speed", gpu.fan_speed),
        ("clocks.sm", gpu.clocks.sm),
        ("memory.total", gpu.memory.total),
        ("throttle_reasons", gpu.throttle_reasons),
    ):
        assert value is None, path
        assert gpu.reason(path) is Reason.NOT_IN_LOG, path
    assert Reason.NOT_IN_LOG.value == "not in this log"


QUERIED = [f for f in GPU_FIELDS if f.query is not None]


@pytest.mark.parametrize("field", QUERIED, ids=[f.path for f in QUERIED])
def test_each_field_table_query_name_is_read_into_the_fields_own_path(field: Field) -> None:
    assert field.query is not None
    paths = [path for _, path, _ in Schema.parse(field.query).columns]
    assert paths == [field.path]


def _cell(field: Field) -> str:
    if field.path == "performance_state":
        return "P2"
    return {
        Value.BYTES: "1024 MiB",
        Value.FLAG: "Enabled",
        Value.TEXT: "some-text",
        Value.NAMES: "0x0000000000000004",
    }.get(field.value, "7")


def test_a_log_of_every_field_table_query_name_fills_every_field(tmp_path: Path) -> None:
    header = ", ".join(f.query for f in QUERIED if f.query is not None)
    row = ", ".join(_cell(f) for f in QUERIED)
    with CsvRecording.open(_write(tmp_path, f"{header}\n{row}\n")) as recording:
        gpu = recording.snapshot(0).gpus[0]
    for field in QUERIED:
        assert field.read(gpu) is not None, field.path
        assert gpu.reason(field.path) is None, field.path
    assert gpu.memory.used == 1024 * MIB
    assert gpu.clocks.sm == 7


def test_clock_event_reasons_from_the_mask_and_from_each_flag(tmp_path: Path) -> None:
    text = (
        "timestamp, index, clocks_event_reasons.active, clocks_throttle_reasons.sw_power_cap, "
        "clocks_throttle_reasons.hw_slowdown\n"
        "2024/01/04 15:02:11.000, 0, 0x0000000000000044, Not Active, Active\n"
        "2024/01/04 15:02:11.000, 1, [N/A], Active, Not Active\n"
    )
    with CsvRecording.open(_write(tmp_path, text)) as recording:
        first, second = recording.snapshot(0).gpus
    assert first.throttle_reasons == ("sw_power_cap", "hw_thermal_slowdown")
    assert second.throttle_reasons == ("sw_power_cap",)


def test_index_at_and_timestamps_to_the_millisecond(tmp_path: Path) -> None:
    with CsvRecording.open(_write(tmp_path, TWO_GPUS)) as recording:
        assert recording.timestamp(0) == datetime(2024, 1, 4, 15, 2, 11, 123000)
        assert recording.index_at(datetime(2024, 1, 4, 15, 2, 12, 500000)) == 1
        assert recording.index_at(datetime(2024, 1, 4, 15, 2, 11, 500000)) == 0


def test_a_gzip_of_a_log_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "gpu-log.csv.gz"
    path.write_bytes(gzip.compress(TWO_GPUS.encode()))
    with open_recording(path) as recording:
        assert len(recording) == 2
        assert recording.snapshot(1).gpus[0].power.draw == 60.5


def test_a_row_that_does_not_match_its_header_is_skipped_with_a_warning(tmp_path: Path) -> None:
    text = TWO_GPUS + "2024/01/04 15:02:13.123, 0, cut off\n"
    with CsvRecording.open(_write(tmp_path, text)) as recording:
        assert len(recording) == 2
        assert any("do not match its header" in warning for warning in recording.warnings)


# -- telling formats apart ------------------------------------------------------------------


def test_formats_are_told_by_content() -> None:
    assert looks_like(TWO_GPUS.encode())
    assert not looks_like(b'<?xml version="1.0" ?>\n<nvidia_smi_log>')
    assert not looks_like(b"Date,Time,Temperature\n04-03-2021,13:32:39,58\n")
    assert not looks_like(b"\x7fELF\x02\x01\x01")
    xml = detect(b'<?xml version="1.0" ?>\n<nvidia_smi_log>')
    csv = detect(TWO_GPUS.encode())
    assert xml is not None and xml.name == "xml"
    assert csv is not None and csv.name == "csv"
    gzipped = detect(gzip.compress(TWO_GPUS.encode()))
    assert gzipped is not None and gzipped.name == "csv"


def test_the_file_name_does_not_decide(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO_GPUS, name="capture.xml")
    result = gputop("--replay", path, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["gpus"][0]["memory_used"] == 1024 * MIB


def test_format_overrides_detection(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO_GPUS)
    result = gputop("--replay", path, "--once", "--format", "xml")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "not XML" in result.stderr
    assert gputop("--replay", path, "--once", "--format", "csv").returncode == 0


def test_format_needs_a_recording() -> None:
    result = gputop("--once", "--format", "csv")
    assert result.returncode == 2
    assert "--format" in result.stderr and "--replay" in result.stderr


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Date,Time,Temperature\n04-03-2021,13:32:39,58\n", ("gputop reads", "--query-gpu")),
        ("0, 22 %, 1024 MiB\n", ("without its header line", "--query-gpu")),
        ("timestamp, utilization.gpu [%]\n", ("no GPU rows",)),
    ],
)
def test_a_file_in_no_format_is_one_line_and_exit_2(
    tmp_path: Path, text: str, words: tuple[str, ...]
) -> None:
    path = _write(tmp_path, text)
    for args in (("--replay", path, "--once"), ("report", path)):
        result = gputop(*args)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
        for word in words:
            assert word in result.stderr


# -- pipes and following ------------------------------------------------------------------


def test_a_log_on_standard_input(tmp_path: Path) -> None:
    result = gputop("--replay", "-", "--json", "--count", "2", stdin=TWO_GPUS.encode())
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["gpus"][0]["utilization_gpu"] for line in lines] == [22.0, 50.0]


def test_a_followed_log_shows_rows_as_they_are_written(tmp_path: Path) -> None:
    path = _write(tmp_path, "".join(TWO_GPUS.splitlines(keepends=True)[:3]))
    later = "".join(TWO_GPUS.splitlines(keepends=True)[3:])

    def write_later() -> None:
        time.sleep(0.5)
        with path.open("a") as handle:
            handle.write(later)
            handle.write("2024/01/04 15:02:13.123, 0, NVIDIA A100, 70 %, 4096 MiB, 61 W\n")

    with open_recording(path, follow=True) as recording:
        assert recording.following
        # The first snapshot is held back until a row of its next one comes.
        writer = threading.Thread(target=write_later)
        writer.start()
        assert recording.wait_for(1, timeout=10)
        writer.join()
        assert recording.snapshot(1).gpus[1].utilization.gpu == 3.0


# -- report ---------------------------------------------------------------------------------

NO_MEMORY = """\
timestamp, utilization.gpu [%], utilization.memory [%]
2024/09/08 13:03:31.000, 100 %, 26 %
2024/09/08 13:03:32.000, 88 %, 22 %
2024/09/08 13:03:33.000, 0 %, 0 %
2024/09/08 13:03:34.001, 35 %, 19 %
2024/09/08 13:03:38.001, 0 %, 0 %
2024/09/08 13:03:39.001, 0 %, 0 %
"""


def test_report_of_a_log_without_memory_cannot_tell_waiting_from_idle(tmp_path: Path) -> None:
    path = _write(tmp_path, NO_MEMORY)
    result = gputop("report", path, "--json")
    assert result.returncode == 0, result.stderr
    (gpu,) = json.loads(result.stdout)["gpus"]
    assert gpu["idle_s"] is None and gpu["waiting_s"] is None
    assert gpu["busy_s"] == pytest.approx(2.0)
    # The two seconds at 0%: a stalled job or nothing at all, the log cannot say which.
    assert gpu["unknown_s"] == pytest.approx(2.0, abs=0.01)
    # The 4 s pause of a 1 s log is a gap, not idle time.
    assert gpu["gap_s"] == pytest.approx(4.0)
    assert gpu["utilization_mean_pct"] == round((100 + 88 + 0 + 35) / 6, 2)
    text = gputop("report", path, "--no-charts")
    assert "waiting cannot be told from idle" in text.stdout


def test_report_of_a_log_with_memory_tells_them_apart(tmp_path: Path) -> None:
    text = (
        "timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
        "2024/09/08 13:03:31.000, 0, 0 %, 30000 MiB, 100 W\n"
        "2024/09/08 13:03:32.000, 0, 0 %, 30000 MiB, 100 W\n"
        "2024/09/08 13:03:33.000, 0, 0 %, 0 MiB, 50 W\n"
        "2024/09/08 13:03:34.000, 0, 0 %, 0 MiB, 50 W\n"
    )
    result = gputop("report", _write(tmp_path, text), "--json")
    assert result.returncode == 0, result.stderr
    (gpu,) = json.loads(result.stdout)["gpus"]
    assert gpu["waiting_s"] == pytest.approx(2.0)
    assert gpu["idle_s"] == pytest.approx(1.0)
    assert gpu["peak_memory_used_bytes"] == 30000 * MIB
    # Trapezoids: (100+100)/2 + (100+50)/2 + (50+50)/2 J over three 1 s steps.
    assert gpu["energy_wh"] == pytest.approx((100 + 75 + 50) / 3600)


def test_a_real_log_reports(tmp_path: Path) -> None:
    path = SNAPSHOTS / "csv-l40s-595.csv"
    result = gputop("report", path, "--json")
    assert result.returncode == 0, result.stderr
    rows = _raw_rows(path)
    (gpu,) = json.loads(result.stdout)["gpus"]
    assert gpu["samples"] == len(rows)
    assert gpu["peak_power_w"] == max(_number(row["power.draw"]) or 0 for row in rows)


def test_open_refuses_a_missing_log(tmp_path: Path) -> None:
    with pytest.raises(BadCapture, match="no such file"):
        CsvRecording.open(tmp_path / "nowhere.csv")


# -- `--query-compute-apps` written with the GPU query --------------------------------------

WITH_APPS = """\
timestamp, index, uuid, utilization.gpu [%], memory.used [MiB]
2024/01/04 15:02:11.123, 0, GPU-aaa, 3 %, 30000 MiB
2024/01/04 15:02:11.125, 1, GPU-bbb, 90 %, 1000 MiB
timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]
2024/01/04 15:02:11.200, NVIDIA A100, 00000000:07:00.0, 0, GPU-aaa, 4242, python train.py, 29000 MiB
timestamp, index, uuid, utilization.gpu [%], memory.used [MiB]
2024/01/04 15:02:12.123, 0, GPU-aaa, 3 %, 30000 MiB
2024/01/04 15:02:12.125, 1, GPU-bbb, 90 %, 1000 MiB
timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]
"""


def test_compute_apps_written_with_the_gpu_query_are_each_gpus_processes(tmp_path: Path) -> None:
    with CsvRecording.open(_write(tmp_path, WITH_APPS)) as recording:
        assert len(recording) == 2
        first, second = recording.snapshot(0), recording.snapshot(1)
    assert len(first.gpus) == len(second.gpus) == 2
    (process,) = first.gpus[0].processes
    assert (process.pid, process.name, process.memory_used) == (
        4242,
        "python train.py",
        29000 * MIB,
    )
    assert process.type == "C"
    assert first.gpus[1].processes == ()
    assert second.gpus[0].processes == ()  # that query listed none


def test_report_takes_format_too(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO_GPUS)
    refused = gputop("report", path, "--format", "xml")
    assert refused.returncode == 2
    assert len(refused.stderr.splitlines()) == 1 and "not XML" in refused.stderr
    result = gputop("report", path, "--format", "csv", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["snapshots"] == 2


@pytest.mark.parametrize(
    ("tail", "warning"),
    [
        (bytes(range(256)) * 400 + b"\nab\n" + bytes(range(256)) * 40, "unreadable rows"),
        (b"x" * 300_000, "a line too long"),
    ],
    ids=["binary", "long-line"],
)
def test_garbage_after_a_log_is_skipped_with_a_warning(
    tmp_path: Path, tail: bytes, warning: str
) -> None:
    path = tmp_path / "gpu-log.csv"
    path.write_bytes(TWO_GPUS.encode() + tail)
    result = gputop("--replay", path, "--json", "--at", "-1")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert warning in result.stderr
    # A stray word ("ab") is no header: the log's own columns still read.
    assert json.loads(result.stdout)["gpus"][0]["utilization_gpu"] == 50.0
