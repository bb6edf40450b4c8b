"""`--record` and `--log` on a full disk: one line naming the file, that sink stops alone, no
half rows or documents, a non-zero exit (the real command on /dev/full:
``tests/e2e/test_full_disk_command.py``)."""

from __future__ import annotations

import csv
import errno
import io
import os
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gputop.cli.live import run_live
from gputop.cli.options import Options
from gputop.model import GpuSample, Snapshot, Utilization
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import LiveFeed
from gputop.sinks import csv_log, smi_xml
from gputop.sinks.csv_log import COLUMNS, CsvLogError, CsvLogger
from gputop.sinks.fanout import SinkState, SnapshotSinks
from gputop.sinks.smi_xml import RecordingFailed, SmiXmlWriter
from gputop.sources.smi.recording import Recording

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "snapshots" / "rtx3090x4-procs-v12.xml"
T0 = datetime(2024, 9, 18, 14, 0, 0)
ENOSPC = os.strerror(errno.ENOSPC)


def snapshot(n: int = 0, gpus: int = 2) -> Snapshot:
    return Snapshot(
        timestamp=T0 + timedelta(seconds=n),
        gpus=tuple(
            GpuSample(index=i, name=f"GPU {i}", uuid=f"GPU-{i}", utilization=Utilization(gpu=n))
            for i in range(gpus)
        ),
    )


class FillingDisk:
    """A real file on a disk with ``free`` bytes left: a write takes what fits, the next
    one fails with ENOSPC (what a full filesystem does to a large write)."""

    def __init__(self, path: Path, free: int | None = None) -> None:
        self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - closed by close()
        self.free = free
        self.closed = False

    def write(self, data: bytes | memoryview) -> int:
        if self.free is None:
            return self._file.write(data) or 0
        if self.free == 0:
            raise OSError(errno.ENOSPC, ENOSPC)
        taken = self._file.write(bytes(data[: self.free])) or 0
        self.free -= taken
        return taken

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        self.closed = True
        self._file.close()


def filling_disk(
    monkeypatch: pytest.MonkeyPatch, module: Any, disks: list[FillingDisk]
) -> Callable[..., FillingDisk]:
    def fake_open(path: Path, mode: str, **_: Any) -> FillingDisk:
        assert "a" in mode and "b" in mode
        disk = FillingDisk(Path(path))
        disks.append(disk)
        return disk

    monkeypatch.setattr(module, "open", fake_open, raising=False)
    return fake_open


def test_a_csv_row_cut_by_a_full_disk_is_taken_back_and_close_does_not_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disks: list[FillingDisk] = []
    filling_disk(monkeypatch, csv_log, disks)
    path = tmp_path / "log.csv"
    log = CsvLogger(path)
    log.write(snapshot(0))
    log.write(snapshot(1))
    before = path.read_bytes()
    disks[0].free = 100  # less than a tick's two rows: the first fits whole, the second not
    with pytest.raises(CsvLogError) as failed:
        log.write(snapshot(2))
    assert str(failed.value) == f"--log {path}: write failed: {ENOSPC}"
    log.close()  # nothing buffered to fail again
    assert path.read_bytes() == before
    rows = list(csv.reader(path.open(newline="")))
    assert rows[0] == list(COLUMNS) and len(rows) == 1 + 2 * 2
    assert all(len(row) == len(COLUMNS) for row in rows)


def test_an_xml_document_cut_by_a_full_disk_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disks: list[FillingDisk] = []
    filling_disk(monkeypatch, smi_xml, disks)
    path = tmp_path / "rec.xml"
    writer = SmiXmlWriter(path)
    writer.write(snapshot(0))
    disks[0].free = 200
    with pytest.raises(RecordingFailed, match=f"--record {path}: write failed: {ENOSPC}"):
        writer.write(snapshot(1))
    writer.close()
    with Recording.open(path) as recording:
        assert len(recording) == 1 and recording.warnings == []


def test_a_log_on_dev_full_fails_on_its_first_write_not_by_reading_it_forever() -> None:
    # Reading /dev/full gives zeros for ever: the old header check never returned.
    opened: list[CsvLogger] = []
    opening = threading.Thread(target=lambda: opened.append(CsvLogger("/dev/full")), daemon=True)
    opening.start()
    opening.join(10)
    assert opened, "opening /dev/full as a log did not return"
    log = opened[0]
    with pytest.raises(CsvLogError, match=f"^--log /dev/full: write failed: {ENOSPC}$"):
        log.write(snapshot(0))
    log.close()


class Failing:
    def __init__(self, option: str, path: str, fail_from: int) -> None:
        self.option = option
        self.path = Path(path)
        self.fail_from = fail_from
        self.written: list[Snapshot] = []
        self.closed = 0

    def write(self, snapshot: Snapshot) -> None:
        if len(self.written) >= self.fail_from:
            raise CsvLogError(f"{self.option} {self.path}: write failed: {ENOSPC}")
        self.written.append(snapshot)

    def close(self) -> None:
        self.closed += 1


def test_a_failing_sink_stops_alone_and_is_reported_once() -> None:
    record = Failing("--record", "r.xml", fail_from=99)
    log = Failing("--log", "l.csv", fail_from=1)
    sinks = SnapshotSinks([record, log])
    assert sinks.write(snapshot(0)) == []
    assert sinks.write(snapshot(1)) == [f"--log l.csv: write failed: {ENOSPC}"]
    assert sinks.write(snapshot(2)) == []
    assert len(record.written) == 3 and len(log.written) == 1
    assert log.closed == 1  # released at once, not at the end
    assert sinks.states() == (
        SinkState("--record", Path("r.xml")),
        SinkState("--log", Path("l.csv"), f"--log l.csv: write failed: {ENOSPC}"),
    )
    assert sinks.failures == (f"--log l.csv: write failed: {ENOSPC}",)


class Counting:
    def __init__(self) -> None:
        self.polls = 0

    def poll(self) -> Snapshot:
        self.polls += 1
        return snapshot(self.polls)

    def close(self) -> None:
        pass


def test_the_pipeline_tells_every_tick_which_sinks_run_and_which_stopped() -> None:
    record = Failing("--record", "/data/r.xml", fail_from=99)
    log = Failing("--log", "/data/l.csv", fail_from=2)
    pipeline = Pipeline(LiveFeed(Counting()), recorder=SnapshotSinks([record, log]))
    first = pipeline.start()
    assert [(s.option, s.path, s.error) for s in first.sinks] == [
        ("--record", "/data/r.xml", None),
        ("--log", "/data/l.csv", None),
    ]
    pipeline.advance()
    failed = pipeline.advance()
    message = f"--log /data/l.csv: write failed: {ENOSPC}"
    assert failed.sinks[1].error == message and failed.sinks[0].error is None
    assert failed.notes == (f"{message} (stopped)",)
    later = pipeline.advance()
    assert later.notes == () and later.sinks[1].error == message  # stays, said once
    assert len(record.written) == 4


def test_headless_goes_on_says_it_once_and_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    log = Failing("--log", "l.csv", fail_from=1)
    monkeypatch.setattr(
        "gputop.cli.live.open_sinks", lambda options, machine=None: SnapshotSinks([log])
    )
    out, err = io.StringIO(), io.StringIO()
    code = run_live(
        Options(count=3, log=Path("l.csv")),
        open_source=Counting,
        environ={},
        stdout=out,
        stderr=err,
        sleep=lambda seconds: None,
        clock=lambda: 0.0,
    )
    assert code == 1
    assert out.getvalue().count("driver") == 3  # the summaries went on
    assert err.getvalue() == f"gputop: --log l.csv: write failed: {ENOSPC}\n"


def test_the_tui_ends_with_1_and_the_failure_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    log = Failing("--log", "l.csv", fail_from=0)
    monkeypatch.setattr(
        "gputop.cli.live.open_sinks", lambda options, machine=None: SnapshotSinks([log])
    )

    def run_tui(
        options: Options, source: Any = None, recorder: Any = None, in_view: Any = None
    ) -> int:
        Pipeline(source, recorder=recorder).start()
        return 0

    module = types.ModuleType("gputop.cli.tui")
    module.run_tui = run_tui  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gputop.cli.tui", module)
    err = io.StringIO()
    code = run_live(Options(log=Path("l.csv")), open_source=Counting, environ={}, stderr=err)
    assert code == 1
    assert err.getvalue() == f"gputop: --log l.csv: write failed: {ENOSPC}\n"
