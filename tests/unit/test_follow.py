"""Following a recording that is still being written: `--follow`, pipes and `--replay -`."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop.cli.main import main
from gputop.errors import BadCapture
from gputop.model import GpuSample, Snapshot, Utilization
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import ReplayFeed
from gputop.sources.playback.replay import (
    FOLLOW_CATCH_UP,
    FOLLOW_POLL,
    FOLLOW_POLL_PAUSED,
    ReplayPlayer,
)
from gputop.sources.smi.recording import Recording
from support.slow_writer import documents

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 9, 18, 21, 34, 12)
DOCS = documents(6)


# -- the reader ------------------------------------------------------------------------------


def test_a_growing_file_is_read_as_it_grows_and_a_half_written_document_is_no_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.xml"
    path.write_bytes(DOCS[0] + DOCS[1][:700])  # the writer is in the middle of document 1
    with Recording.open(path, follow=True) as recording:
        assert len(recording) == 1 and recording.following
        assert recording.warnings == []
        with path.open("ab") as out:
            out.write(DOCS[1][700:] + DOCS[2])
        assert len(recording) == 3
        assert recording.snapshot(2).timestamp == T0 + timedelta(seconds=2)
        assert recording.following and recording.warnings == []
    # Without --follow the same file is a recording that was cut off, as before.
    path.write_bytes(DOCS[0] + DOCS[1][:700])
    with Recording.open(path) as recording:
        assert len(recording) == 1 and not recording.following
        assert any(
            "cut off (if it is still being written, add --follow)" in warning
            for warning in recording.warnings
        )


def test_a_growing_gzip_file_is_inflated_as_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "run.xml.gz"
    first = gzip.compress(b"".join(DOCS[:2]))
    path.write_bytes(first[: len(first) // 2])  # `| gzip > run.xml.gz` mid-block

    def write_the_rest() -> None:
        with path.open("ab") as out:
            out.write(first[len(first) // 2 :])

    writer = threading.Timer(0.5, write_the_rest)
    writer.start()
    with Recording.open(path, follow=True) as recording:
        writer.join()
        assert recording.wait_for(1, timeout=5)
        with path.open("ab") as out:
            out.write(gzip.compress(DOCS[2]))
        assert recording.wait_for(2, timeout=5)
        assert recording.timestamp(2) == T0 + timedelta(seconds=2)
        assert recording.following and recording.warnings == []


@pytest.fixture
def pipe() -> Iterator[tuple[str, int]]:
    """A pipe: (the path its read end opens by, its write end)."""
    read, write = os.pipe()
    yield f"/dev/fd/{read}", write
    os.close(read)
    with contextlib.suppress(OSError):  # the feeder closed it already
        os.close(write)


def feed(write: int, chunks: list[bytes], every: float) -> threading.Thread:
    def run() -> None:
        for chunk in chunks:
            time.sleep(every)
            os.write(write, chunk)
        os.close(write)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_pipe_is_read_without_blocking_until_its_writer_closes_it(
    pipe: tuple[str, int], compress: bool
) -> None:
    path, write = pipe
    data = b"".join(DOCS[:4])
    if compress:
        # Two gzip members, as a writer restarted with `| gzip >>` leaves them.
        data = gzip.compress(b"".join(DOCS[:2])) + gzip.compress(b"".join(DOCS[2:4]))
    cut = [data[i : i + 1500] for i in range(0, len(data), 1500)]
    writer = feed(write, cut, 0.002)
    recording = Recording.open(path, follow=True)
    try:
        started = time.monotonic()
        len(recording)  # never waits for the writer, whatever the pipe holds
        assert time.monotonic() - started < 0.5
        stamps = []
        index = 0
        while recording.wait_for(index, timeout=10):
            stamps.append(recording.timestamp(index))
            index += 1
        assert stamps == [T0 + timedelta(seconds=n) for n in range(4)]
        assert not recording.following and recording.warnings == []
    finally:
        recording.close()
        writer.join()


def test_a_pipe_closed_mid_document_warns_that_it_was_cut_off(pipe: tuple[str, int]) -> None:
    path, write = pipe
    os.write(write, DOCS[0] + DOCS[1][:500])
    os.close(write)
    with Recording.open(path, follow=True) as recording:
        assert len(recording) == 1 and not recording.following
        assert any("cut off" in warning for warning in recording.warnings)
        assert not any("--follow" in warning for warning in recording.warnings)


def test_the_first_document_is_waited_for_and_waiting_is_said_once(tmp_path: Path) -> None:
    path = tmp_path / "soon.xml"
    path.write_bytes(b"")
    said: list[float] = []
    started = time.monotonic()

    def write_later() -> None:
        time.sleep(1.5)
        with path.open("ab") as out:
            out.write(DOCS[0])

    writer = threading.Thread(target=write_later)
    writer.start()
    with Recording.open(path, follow=True, waiting=lambda: said.append(time.monotonic())) as rec:
        assert rec.timestamp(0) == T0
    writer.join()
    assert len(said) == 1 and 0.9 < said[0] - started < 1.5


@pytest.mark.parametrize(
    ("head", "why"), [(b"\x7fELF\x02\x01", "not XML"), (b"<!DOCTYPE html><html>", "HTML")]
)
def test_following_what_is_no_capture_is_refused_without_waiting(
    tmp_path: Path, head: bytes, why: str
) -> None:
    path = tmp_path / "wrong"
    path.write_bytes(head)
    started = time.monotonic()
    with pytest.raises(BadCapture, match=why):
        Recording.open(path, follow=True)
    assert time.monotonic() - started < 2


def test_a_directory_cannot_be_followed(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_bytes(DOCS[0])
    with pytest.raises(BadCapture, match="directory cannot be followed"):
        Recording.open(tmp_path, follow=True)


# -- the player --------------------------------------------------------------------------


class GrowingTimeline:
    """An in-memory recording that a test appends to, with Recording's ``following``."""

    def __init__(self, count: int) -> None:
        self.stamps = [T0 + timedelta(seconds=i) for i in range(count)]
        self.warnings: list[str] = []
        self.following = True

    def append(self, count: int = 1) -> None:
        for _ in range(count):
            self.stamps.append(self.stamps[-1] + timedelta(seconds=1))

    def __len__(self) -> int:
        return len(self.stamps)

    def snapshot(self, index: int) -> Snapshot:
        gpu = GpuSample(index=0, uuid="GPU-a", utilization=Utilization(gpu=float(index)))
        return Snapshot(timestamp=self.stamps[index], gpus=(gpu,))

    def timestamp(self, index: int) -> datetime | None:
        return self.stamps[index]

    def index_at(self, moment: datetime) -> int:
        return max(i for i, stamp in enumerate(self.stamps) if stamp <= moment)

    def close(self) -> None:
        pass


def test_a_followed_recording_plays_like_live_at_its_end() -> None:
    timeline = GrowingTimeline(5)
    player = ReplayPlayer(timeline)
    # Starts on the newest document, playing, not a still even with one document.
    assert player.position == 4 and not player.paused
    status = player.status()
    assert status.following and not status.still and status.at_end
    assert player.next_delay() == FOLLOW_POLL
    assert player.advance() == []  # nothing new yet: no end, no pause
    assert not player.paused and player.status().note is None
    timeline.append(3)
    assert player.advance() == [5, 6, 7]  # every new document, for the history
    assert player.position == 7
    # Stepping back pauses; new documents are counted, the position stays.
    player.step(-2)
    assert player.paused and player.position == 5
    assert player.next_delay() == FOLLOW_POLL_PAUSED
    timeline.append(2)
    assert player.advance() == [] and player.position == 5
    assert player.status().length == 10
    # Space resumes from there; Home looks back and pauses; End follows the newest again.
    player.toggle_pause()
    assert not player.paused
    assert player.seek(0) == 0 and player.paused
    assert player.seek(-1) == 9 and not player.paused
    timeline.append()
    assert player.advance() == [10]
    # The writer closes the pipe: an ordinary recording from then on.
    timeline.following = False
    assert player.advance() == []
    status = player.status()
    assert not status.following and status.note == "the stream ended"
    assert player.next_delay() is None


def test_a_burst_of_new_documents_is_read_up_to_a_sparkline_s_worth() -> None:
    timeline = GrowingTimeline(2)
    player = ReplayPlayer(timeline)
    timeline.append(1000)
    crossed = player.advance()
    assert crossed == list(range(1002 - FOLLOW_CATCH_UP, 1002))
    assert player.position == 1001


def test_a_single_document_followed_is_not_a_still() -> None:
    timeline = GrowingTimeline(1)
    player = ReplayPlayer(timeline)
    assert not player.status().still and not player.paused
    timeline.append()
    assert player.advance() == [1]


def test_the_pipeline_files_each_new_document_into_history() -> None:
    timeline = GrowingTimeline(3)
    pipeline = Pipeline(ReplayFeed(ReplayPlayer(timeline)))
    first = pipeline.start()
    assert first.replay is not None and first.replay.position == 2
    assert first.window[-1].timestamp == T0 + timedelta(seconds=2)
    assert len(first.window) == 3  # the documents before the newest fill the history
    timeline.append(2)
    tick = pipeline.advance()
    assert tick.replay is not None and tick.replay.position == 4 and tick.replay.following
    assert [s.timestamp for s in tick.window][-2:] == [T0 + timedelta(seconds=n) for n in (3, 4)]
    assert pipeline.next_delay() == FOLLOW_POLL


# -- the command -------------------------------------------------------------------------


def gputop_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT / "tui")])}


def writer_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "support.slow_writer", *args]


def test_follow_count_prints_each_document_of_a_slowly_fed_pipe_as_it_comes() -> None:
    writer = subprocess.Popen(
        writer_command("--count", "4", "--every", "0.4"), stdout=subprocess.PIPE, env=gputop_env()
    )
    assert writer.stdout is not None
    started = time.monotonic()
    reader = subprocess.Popen(
        [sys.executable, "-m", "gputop", "--replay", "-", "--count", "3", "--json"],
        stdin=writer.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=gputop_env(),
    )
    writer.stdout.close()
    assert reader.stdout is not None
    lines = []
    arrivals = []
    for line in reader.stdout:
        lines.append(json.loads(line))
        arrivals.append(time.monotonic() - started)
    assert reader.wait(timeout=30) == 0
    assert reader.stderr is not None and "Traceback" not in reader.stderr.read()
    writer.wait(timeout=30)
    assert [doc["timestamp"] for doc in lines] == [
        "2024-09-18T21:34:12",
        "2024-09-18T21:34:13",
        "2024-09-18T21:34:14",
    ]
    # Printed one by one as the writer wrote them, not all at the end.
    assert arrivals[2] - arrivals[0] > 0.5


def test_follow_on_a_file_still_being_written_reads_past_its_length_at_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.xml"
    path.write_bytes(DOCS[0] + DOCS[1][:300])
    writer = subprocess.Popen(
        writer_command("--out", str(path), "--count", "3", "--every", "0.3", "--start", "2"),
        env=gputop_env(),
    )
    with path.open("ab") as out:
        out.write(DOCS[1][300:])
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "--replay", str(path), "--follow", "--count", "5"],
        capture_output=True,
        text=True,
        env=gputop_env(),
        timeout=60,
        check=False,
    )
    writer.wait(timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    stamps = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("2024")]
    assert stamps == [f"21:34:{12 + n}" for n in range(5)]


def test_at_from_the_end_of_a_pipe_is_its_last_document_once_it_stops_coming() -> None:
    # `cat run.xml | gputop --replay - --at -1`: the pipe is followed, yet -1 means the last.
    writer = subprocess.Popen(
        writer_command("--count", "5", "--every", "0.05"), stdout=subprocess.PIPE, env=gputop_env()
    )
    result = subprocess.run(
        [sys.executable, "-m", "gputop", "--replay", "-", "--at", "-1", "--json"],
        stdin=writer.stdout,
        capture_output=True,
        text=True,
        env=gputop_env(),
        timeout=60,
        check=False,
    )
    writer.wait(timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["timestamp"] == "2024-09-18T21:34:16"


def test_follow_needs_a_replay(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--follow", "--once"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--follow" in err and "--replay" in err


def test_replay_from_a_terminal_on_stdin_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    assert main(["--replay", "-", "--once"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "standard input is a terminal" in err
