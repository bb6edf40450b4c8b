"""The one search of a text recording's timestamps, ordered or not."""

from __future__ import annotations

import math

from gputop.sources.recordings.stamps import last_at_or_before

NAN = math.nan


def test_ordered_stamps_are_bisected_to_the_last_at_or_before() -> None:
    stamps = [10.0, 20.0, 20.0, 30.0]
    assert last_at_or_before(stamps, 25.0, ordered=True) == 2
    assert last_at_or_before(stamps, 30.0, ordered=True) == 3
    assert last_at_or_before(stamps, 5.0, ordered=True) == 0


def test_unordered_stamps_give_the_latest_not_after_the_first_of_equals_and_skip_nan() -> None:
    stamps = [30.0, NAN, 10.0, 20.0, 20.0, 5.0]
    assert last_at_or_before(stamps, 25.0, ordered=False) == 3
    assert last_at_or_before(stamps, 9.0, ordered=False) == 5
    assert last_at_or_before(stamps, 1.0, ordered=False) == 0
    assert last_at_or_before([NAN, NAN], 1e9, ordered=False) == 0
