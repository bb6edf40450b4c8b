"""A sparkline's means, tick after tick: the same as ``bucketed`` works out from scratch, at
the cost of the groups that changed (the newest), not of every cell of a full sparkline."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputop.ui.render import gauges
from gputop.ui.render.gauges import SPARK_TICKS, Buckets, bucketed, sparkline

SAMPLE = st.one_of(st.just(math.nan), st.floats(0, 500, allow_nan=False, width=32))
STEP = st.tuples(
    st.lists(SAMPLE, min_size=0, max_size=7),  # ticks that arrived since the last call
    st.booleans(),  # the history rebuilt under the same tick numbers (a replay's seek)
    st.sampled_from([1, 3, 10, 60]),  # groups wanted
)


def same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        x == y or (x != x and y != y) for x, y in zip(a, b, strict=True)
    )


@settings(deadline=None)
@given(
    capacity=st.sampled_from([4, 9, 40, 800]),
    size=st.sampled_from([1, 2, 5]),
    steps=st.lists(STEP, min_size=1, max_size=40),
)
def test_the_means_kept_from_tick_to_tick_are_the_means_from_scratch(
    capacity: int, size: int, steps: list[tuple[list[float], bool, int]]
) -> None:
    history: list[float] = []
    means = Buckets()
    for arrived, rebuilt, limit in steps:
        history += arrived
        if rebuilt:
            history = [value / 2 + 1 for value in history]
        values = array("f", history[-capacity:])
        assert same(
            means(values, size, len(history), limit), bucketed(values, size, len(history), limit)
        )


def test_a_tick_works_out_the_newest_mean_only(monkeypatch: pytest.MonkeyPatch) -> None:
    worked_out: list[int] = []
    group_mean = gauges._group_mean

    def counting(values: array[float], at: int, size: int) -> float:
        worked_out.append(at)
        return group_mean(values, at, size)

    monkeypatch.setattr(gauges, "_group_mean", counting)
    means = Buckets()
    history = [float(tick % 97) for tick in range(900)]
    means(array("f", history[-800:]), SPARK_TICKS, len(history), 60)
    assert len(worked_out) == 60
    for _ in range(12):
        history.append(float(len(history) % 89))
        values = array("f", history[-800:])
        expected = bucketed(values, SPARK_TICKS, len(history), 60)
        worked_out.clear()
        assert means(values, SPARK_TICKS, len(history), 60) == expected
        # The open group, and at most the one it closed: not the other 58 of a full line.
        assert 1 <= len(worked_out) <= 2


@pytest.mark.parametrize("stretch", [False, True])
def test_a_full_sparkline_draws_a_cell_a_sample_and_gaps(stretch: bool) -> None:
    values = [0.0, 12.5, 25.0, 37.5, 50.0, 62.5, 75.0, 87.5, 100.0, math.nan, 150.0, -3.0]
    assert sparkline(values, 12, 100.0, stretch=stretch) == "▁▂▃▄▅▆▇██ █▁"
    assert sparkline(values, 5, 100.0, stretch=stretch) == "██ █▁"
