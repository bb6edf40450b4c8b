"""The replay player: position, pace, speed ladder, pause and seeks."""

from __future__ import annotations

from datetime import datetime, timedelta

from gputop.errors import BadCapture
from gputop.model import GpuSample, Snapshot, Utilization
from gputop.sources.playback.replay import (
    MIN_TICK,
    SPEEDS,
    ReplayPlayer,
    speed_label,
)

T0 = datetime(2024, 9, 18, 21, 34, 12)


class ListTimeline:
    """An in-memory recording with the Recording API the player uses."""

    def __init__(self, stamps: list[datetime | None], bad: frozenset[int] = frozenset()) -> None:
        self.stamps = stamps
        self.bad = bad
        self.warnings: list[str] = ["tail cut off"]
        self.closed = False
        self.parsed: list[int] = []

    def __len__(self) -> int:
        return len(self.stamps)

    def snapshot(self, index: int) -> Snapshot:
        if index in self.bad:
            raise BadCapture(f"document {index} is broken")
        self.parsed.append(index)
        gpu = GpuSample(index=0, uuid="GPU-a", utilization=Utilization(gpu=float(index)))
        return Snapshot(timestamp=self.stamps[index], gpus=(gpu,))

    def timestamp(self, index: int) -> datetime | None:
        return self.stamps[index]

    def index_at(self, moment: datetime) -> int:
        best = 0
        for number, stamp in enumerate(self.stamps):
            if stamp is not None and stamp <= moment:
                best = number
        return best

    def close(self) -> None:
        self.closed = True


def every_second(count: int) -> ListTimeline:
    return ListTimeline([T0 + timedelta(seconds=i) for i in range(count)])


def test_plays_one_document_per_recorded_second_at_1x() -> None:
    player = ReplayPlayer(every_second(5))
    assert player.next_delay() == 1.0
    assert player.advance() == [1]
    assert player.advance() == [2]
    status = player.status()
    assert (status.position, status.length, status.paused) == (2, 5, False)
    assert status.timestamp == T0 + timedelta(seconds=2)


def test_fast_play_skips_documents_to_keep_pace_at_the_tick_rate() -> None:
    player = ReplayPlayer(every_second(100), speed=8.0)
    assert player.next_delay() == MIN_TICK
    assert player.advance() == [1, 2]  # 0.25 s of wall time is 2 s of recording at 8x
    player.change_speed(+1)
    assert player.speed == 16.0
    assert player.advance() == [3, 4, 5, 6]


def test_slow_play_waits_longer_between_documents() -> None:
    player = ReplayPlayer(every_second(5), speed=0.25)
    assert player.next_delay() == 4.0
    assert player.advance() == [1]


def test_gaps_follow_the_timestamps_and_fall_back_to_the_interval() -> None:
    stamps: list[datetime | None] = [T0, T0 + timedelta(seconds=5), None, T0 + timedelta(hours=3)]
    player = ReplayPlayer(ListTimeline(stamps), interval=2.0)
    assert player.gap(0) == 5.0
    assert player.gap(1) == 2.0  # next document has no timestamp
    # A gap too long to wait out (a restart, another machine's capture) plays as one interval.
    assert ReplayPlayer(ListTimeline([T0, T0 + timedelta(hours=3)]), interval=2.0).gap(0) == 2.0


def test_reaching_the_end_pauses_and_space_starts_over() -> None:
    player = ReplayPlayer(every_second(3))
    player.advance()
    player.advance()
    status = player.status()
    assert status.at_end and status.paused and status.note == "end of recording"
    assert player.next_delay() is None and player.advance() == []
    assert player.toggle_pause() is True
    assert player.position == 0 and not player.paused


def test_toggle_pause_and_steps_pause_and_clamp() -> None:
    player = ReplayPlayer(every_second(10))
    assert player.toggle_pause() is False and player.paused
    assert player.next_delay() is None
    player.toggle_pause()
    assert not player.paused
    assert player.step(3) == 3 and player.paused
    assert player.step(-10) == 0
    assert player.step(+100) == 9


def test_seek_by_index_and_from_the_end() -> None:
    player = ReplayPlayer(every_second(10))
    assert player.seek(4) == 4
    assert player.seek(-1) == 9
    assert player.seek(-100) == 0
    assert player.seek(50) == 9


def test_seek_time_says_when_it_was_not_exact() -> None:
    player = ReplayPlayer(ListTimeline([T0 + timedelta(seconds=2 * i) for i in range(5)]))
    index, exact = player.seek_time(T0 + timedelta(seconds=4))
    assert (index, exact) == (2, True) and player.status().note is None
    index, exact = player.seek_time(T0 + timedelta(seconds=5))
    assert (index, exact) == (2, False)
    note = player.status().note
    assert note is not None and "closest before" in note and "21:34:16" in note


def test_seek_time_to_a_second_goes_to_that_seconds_document() -> None:
    """The go-to dialog's 21:34:15 is that second, as `--at` is."""
    player = ReplayPlayer(
        ListTimeline([T0 + timedelta(seconds=i, milliseconds=600) for i in range(5)])
    )
    index, exact = player.seek_time(T0 + timedelta(seconds=3), timedelta(seconds=1))
    assert (index, exact) == (3, True) and player.status().note is None
    index, exact = player.seek_time(T0 + timedelta(seconds=3))
    assert (index, exact) == (2, False)


def test_speed_ladder_is_clamped_and_labelled() -> None:
    player = ReplayPlayer(every_second(3), speed=3.0)
    assert player.speed in (2.0, 4.0)
    assert player.change_speed(-100) == SPEEDS[0]
    assert player.change_speed(+100) == SPEEDS[-1]
    assert speed_label(0.25) == "0.25x" and speed_label(16.0) == "16x"
    assert ReplayPlayer(every_second(3), speed=-1.0).speed == 1.0


def test_a_single_document_is_a_still() -> None:
    player = ReplayPlayer(every_second(1))
    status = player.status()
    assert status.still and status.paused
    assert player.toggle_pause() is False and player.paused
    assert player.next_delay() is None


def test_window_reads_the_preceding_documents_skipping_bad_ones() -> None:
    timeline = ListTimeline([T0 + timedelta(seconds=i) for i in range(10)], bad=frozenset({6}))
    player = ReplayPlayer(timeline)
    player.seek(8)
    window = player.window(4)
    assert [s.gpus[0].utilization.gpu for s in window] == [5.0, 7.0, 8.0]
    assert player.status().warnings == ("tail cut off",)
    player.close()
    assert timeline.closed
