"""Replaying captures of several machines: said once, as `report` says it, and playback never
waits out the years between two machines' captures."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop.cli.main import main
from gputop.model import GpuSample, Snapshot
from gputop.sources.playback.replay import MAX_GAP, ReplayPlayer, machines_warning
from gputop.sources.smi.recording import Recording

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"
T0 = datetime(2019, 12, 3, 5, 27)


@pytest.mark.parametrize("mode", [["--once"], ["--json"], ["--json", "--count", "3"]])
def test_headless_replay_of_a_directory_of_machines_warns_with_their_number(
    capsys: pytest.CaptureFixture[str], mode: list[str]
) -> None:
    code = main(["--replay", str(SNAPSHOTS), *mode])
    captured = capsys.readouterr()
    assert code == 0 and captured.out
    warnings = [line for line in captured.err.splitlines() if "different machines" in line]
    assert len(warnings) == 1
    assert "holds captures of 11 different machines" in warnings[0]


def test_one_machine_gets_no_such_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--replay", str(SNAPSHOTS / "rtx3090x4-procs-v12.xml"), "--once"]) == 0
    assert "machines" not in capsys.readouterr().err


def test_the_warning_counts_the_machines_of_the_recording() -> None:
    with Recording.open(SNAPSHOTS) as recording:
        warning = machines_warning(recording, "snapshots")
    assert warning is not None and "11 different machines" in warning


class Stamps:
    """A recording of one GPU with these timestamps."""

    def __init__(self, stamps: list[datetime]) -> None:
        self.stamps = stamps
        self.warnings: list[str] = []

    def __len__(self) -> int:
        return len(self.stamps)

    def snapshot(self, index: int) -> Snapshot:
        return Snapshot(timestamp=self.stamps[index], gpus=(GpuSample(index=0, uuid="GPU-a"),))

    def timestamp(self, index: int) -> datetime | None:
        return self.stamps[index]

    def index_at(self, moment: datetime) -> int:
        return 0

    def close(self) -> None:
        pass


def test_playback_skips_a_long_gap_with_a_note_instead_of_waiting() -> None:
    years = timedelta(days=6 * 365 + 30)
    stamps = [T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=1) + years, T0 + years]
    player = ReplayPlayer(Stamps(stamps), interval=1.0)
    assert player.advance() == [1]
    assert player.status().note is None
    # The gap of six years plays as one interval, not MAX_GAP or more.
    assert player.next_delay() == 1.0 < MAX_GAP
    assert player.advance() == [2]
    assert player.status().note == "skipped a gap of 6y30d"
    delay = player.next_delay()
    assert delay is not None and delay <= MAX_GAP


def test_the_skip_note_stays_a_few_advances_to_be_read() -> None:
    later = T0 + timedelta(hours=2)
    stamps = [T0, later, *(later + timedelta(seconds=s) for s in range(1, 10))]
    player = ReplayPlayer(Stamps(stamps), interval=1.0)
    assert player.advance() == [1]
    notes = [player.status().note]
    for _ in range(6):
        player.advance()
        notes.append(player.status().note)
    assert notes[:5] == ["skipped a gap of 2h00m"] * 5
    assert notes[5:] == [None, None]


def test_the_tui_warns_of_the_machines_as_the_headless_replay_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gputop.cli.options import Options
    from gputop.cli.tui import run_tui
    from gputop.ui.app import GputopApp

    seen: list[tuple[str, ...]] = []

    def first_frame_only(self: GputopApp) -> None:
        tick = self.last_tick
        assert tick is not None and tick.replay is not None
        seen.append(tick.replay.warnings)

    monkeypatch.setattr(GputopApp, "run", first_frame_only)
    assert run_tui(Options(replay=SNAPSHOTS)) == 0
    assert run_tui(Options(replay=SNAPSHOTS / "tesla-t4-v11.xml")) == 0
    several, one = seen
    assert [w for w in several if "holds captures of 11 different machines" in w]
    assert not [w for w in one if "machines" in w]
