"""The recordings read through an index (`--query-gpu` CSV, `nvidia-smi -q` text, dmon,
pmon, and `nvidia-smi -q -x` XML) share one base (``sources.indexed.IndexedLog``): counting,
negative indices, waiting, reading in order and closing behave alike in each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputop.sources.csvlog import CsvRecording
from gputop.sources.recordings.dmon import open_monitor_log
from gputop.sources.recordings.indexed import IndexedLog
from gputop.sources.smi.recording import Recording
from gputop.sources.smi.text import open_text

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"

OPENERS: dict[str, Callable[[Path], IndexedLog]] = {
    "csv-h100-590.csv": CsvRecording.open,
    "h100-mig-590-q-l.txt": open_text,
    "h100-590-dmon.txt": open_monitor_log,
    "h100-590-pmon.txt": open_monitor_log,
}


def _behaves_as_an_indexed_log(log: IndexedLog) -> None:
    assert isinstance(log, IndexedLog)
    count = len(log)
    assert count >= 2
    assert log.snapshot(-1) == log.snapshot(count - 1)
    assert log.snapshot(-count) == log.snapshot(0)
    with pytest.raises(IndexError, match=f"snapshot {count} is out of range"):
        log.snapshot(count)
    with pytest.raises(IndexError):
        log.snapshot(-count - 1)
    assert [s.timestamp for s in log] == [log.timestamp(i) for i in range(count)]
    assert log.wait_for(count - 1) and not log.wait_for(count, timeout=0.1)
    # A negative index counts from the end: one before the first does not exist.
    assert log.wait_for(-count) and not log.wait_for(-count - 1)
    assert not log.following
    middle = log.timestamp(count // 2)
    if middle is not None:  # dmon and pmon logs written without -o T have no time
        assert log.index_at(middle) <= count // 2
        assert log.timestamp(log.index_at(middle)) == middle


def test_the_xml_recording_behaves_as_one_indexed_log() -> None:
    """A real H200's `-q -x -l` stream, gzipped (so copied into a temporary file)."""
    with Recording.open(SNAPSHOTS / "h200-live" / "h200-train-stream.xml.gz") as log:
        _behaves_as_an_indexed_log(log)


@pytest.mark.parametrize("name", OPENERS)
def test_each_text_recording_behaves_as_one_indexed_log(name: str) -> None:
    with OPENERS[name](SNAPSHOTS / name) as log:
        _behaves_as_an_indexed_log(log)
    with pytest.raises((ValueError, OSError)):
        log.snapshot(0)  # closed on leaving the block
