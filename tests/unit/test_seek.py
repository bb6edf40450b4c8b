"""One parser for `--at` and the replay's "go to": indices, times, and both ends refused."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop.cli.main import main
from gputop.sources.playback.seek import (
    Span,
    TargetError,
    TimeTarget,
    parse_target,
    resolve_target,
    span_of,
)

T0 = datetime(2024, 9, 18, 21, 34, 12)
SECOND = timedelta(seconds=1)
SPAN = Span(100, T0, T0 + timedelta(seconds=99))


class Stamps:
    """A recording reduced to what the parser needs: timestamps."""

    def __init__(self, stamps: list[datetime | None]) -> None:
        self.stamps = stamps

    def __len__(self) -> int:
        return len(self.stamps)

    def timestamp(self, index: int) -> datetime | None:
        return self.stamps[index]

    def index_at(self, moment: datetime) -> int:
        best = 0
        for number, stamp in enumerate(self.stamps):
            if stamp is not None and stamp <= moment:
                best = number
        return best


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12", 12),
        ("-1", 99),
        ("0", 0),
        ("-100", 0),
        ("21:35", TimeTarget(datetime(2024, 9, 18, 21, 35), timedelta(minutes=1))),
        ("21:34:20", TimeTarget(datetime(2024, 9, 18, 21, 34, 20), timedelta(seconds=1))),
        ("2024-09-18 21:35:51", TimeTarget(datetime(2024, 9, 18, 21, 35, 51), SECOND)),
        ("2024-09-18T21:34:12", TimeTarget(T0, SECOND)),
        ("21:34:12.5", TimeTarget(T0 + timedelta(milliseconds=500))),
        ("2024-09-18", TimeTarget(datetime(2024, 9, 18), timedelta(days=1))),
    ],
)
def test_indices_and_times_inside_the_recording(text: str, expected: int | TimeTarget) -> None:
    """A time means as much as it says: the second, minute or day given, or an instant."""
    assert parse_target(text, SPAN, reference=T0) == expected


@pytest.mark.parametrize(
    ("text", "reference", "message"),
    [
        ("", T0, "type an index"),
        ("100", T0, "out of range: the recording has 100 snapshot"),
        ("-101", T0, "out of range"),
        ("yesterday", T0, "not an index or a time"),
        ("nan", T0, "not an index or a time"),
        ("inf", T0, "not an index or a time"),
        ("1.5", T0, "not an index or a time"),
        ("soon", datetime(2024, 9, 18, 21, 35, 5), r"try 12, -1, 21:35:05 or 2024-09-18 21:35:05"),
        ("2024-09-18T21:34:13+02:00", T0, "without a zone"),
    ],
)
def test_nonsense_is_refused_with_a_readable_message(
    text: str, reference: datetime | None, message: str
) -> None:
    with pytest.raises(TargetError, match=message):
        parse_target(text, SPAN, reference=reference)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("21:34:11", "before the recording starts"),
        ("2024-09-17 21:34:12", "before the recording starts"),
        ("21:35:52", "after the recording ends"),
        ("2024-09-18T22:00:00", "after the recording ends"),
        ("2030-01-01T00:00:00", "after the recording ends"),
    ],
)
def test_a_time_outside_the_recording_is_refused_at_either_end_with_its_span(
    text: str, where: str
) -> None:
    with pytest.raises(TargetError) as caught:
        parse_target(text, SPAN, reference=T0)
    message = str(caught.value)
    assert where in message
    assert "runs from 2024-09-18 21:34:12 to 21:35:51 (100 snapshots)" in message


def test_a_clock_time_is_placed_on_the_recorded_day_past_midnight() -> None:
    start = datetime(2024, 9, 18, 23, 59, 58)
    span = Span(6, start, start + timedelta(seconds=5))
    # From the start's date, 00:00:01 is the next day's; from a shown document after
    # midnight, 23:59:59 is the day before's.
    assert parse_target("00:00:01", span) == TimeTarget(datetime(2024, 9, 19, 0, 0, 1), SECOND)
    before = parse_target("23:59:59", span, reference=span.end)
    assert before == TimeTarget(datetime(2024, 9, 18, 23, 59, 59), SECOND)
    with pytest.raises(TargetError, match="after the recording ends"):
        parse_target("00:00:04", span)


def test_no_timestamps_asks_for_an_index() -> None:
    untimed = span_of(Stamps([None, None, None]))
    assert untimed == Span(3, None, None)
    assert parse_target("2", untimed) == 2
    for text in ("21:34:12", "2024-09-18T21:34:12"):
        with pytest.raises(TargetError, match="no timestamps: use an index"):
            parse_target(text, untimed)


def test_the_span_looks_past_untimed_documents_at_either_end() -> None:
    stamps = [None, T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=2), None]
    assert span_of(Stamps(stamps)) == Span(5, T0, T0 + timedelta(seconds=2))


def test_resolve_goes_to_the_last_document_at_or_before_a_time() -> None:
    timeline = Stamps([T0 + timedelta(seconds=2 * i) for i in range(5)])
    assert resolve_target(timeline, "21:34:15") == 1
    assert resolve_target(timeline, "21:34:20") == 4
    assert resolve_target(timeline, "-2") == 3
    with pytest.raises(TargetError, match="after the recording ends"):
        resolve_target(timeline, "21:34:21")


def test_a_time_given_to_the_second_means_that_second() -> None:
    """Issue 25: `--at 2026-01-03T15:36:59` on a log with a row at 15:36:59.525 showed the
    15:36:58 row. The second given is the second meant: its first document."""
    day = datetime(2026, 1, 3, 15, 36, 57)
    stamps = [day + timedelta(seconds=n, milliseconds=525) for n in range(4)]
    timeline = Stamps(list(stamps))
    assert resolve_target(timeline, "2026-01-03T15:36:59") == 2
    assert resolve_target(timeline, "15:36:59") == 2
    # An instant is an instant: 15:36:59.000 is before that row.
    assert resolve_target(timeline, "15:36:59.000") == 1
    # The first second of the recording, though its row is half a second in.
    assert resolve_target(timeline, "15:36:57") == 0
    # Several documents in a second: the first of them; a minute: its first.
    fast = Stamps([day + timedelta(milliseconds=250 * n) for n in range(12)])
    assert resolve_target(fast, "15:36:58") == 4
    assert resolve_target(fast, "15:36") == 0
    # A second with no document: the last one before it.
    gappy = Stamps([day, day + timedelta(seconds=3)])
    assert resolve_target(gappy, "15:36:59") == 0


def test_at_a_second_on_a_csv_log_shows_that_seconds_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "gpu.csv"
    rows = [f"2026/01/03 15:36:{second}.525, 0, {util} %" for second, util in
            ((57, 10), (58, 20), (59, 30))]  # fmt: skip
    log.write_text("timestamp, index, utilization.gpu [%]\n" + "\n".join(rows) + "\n")
    assert main(["--replay", str(log), "--at", "2026-01-03T15:36:59", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["timestamp"] == "2026-01-03T15:36:59.525000"
    assert shown["gpus"][0]["utilization_gpu"] == 30.0
