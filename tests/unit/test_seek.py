"""One parser for `--at` and the replay's "go to": indices, times, and both ends refused."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from gputop.sources.seek import Span, TargetError, parse_target, resolve_target, span_of

T0 = datetime(2024, 9, 18, 21, 34, 12)
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
        ("21:35", datetime(2024, 9, 18, 21, 35)),
        ("21:34:20", datetime(2024, 9, 18, 21, 34, 20)),
        ("2024-09-18 21:35:51", datetime(2024, 9, 18, 21, 35, 51)),
        ("2024-09-18T21:34:12", T0),
    ],
)
def test_indices_and_times_inside_the_recording(text: str, expected: int | datetime) -> None:
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
    assert parse_target("00:00:01", span) == datetime(2024, 9, 19, 0, 0, 1)
    assert parse_target("23:59:59", span, reference=span.end) == datetime(2024, 9, 18, 23, 59, 59)
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
