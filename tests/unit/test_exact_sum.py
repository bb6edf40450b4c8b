"""The report's sums fed in runs (insight/steps.py's ``ExactSum``) give ``math.fsum`` of every
value fed, to the last bit, however the values are cut into runs."""

from __future__ import annotations

import itertools
import math

from hypothesis import example, given
from hypothesis import strategies as st

from gputop.insight.steps import ExactSum

# A tie of the final rounding broken only by the last value: 1 + 2**-53 lies halfway between
# two floats, 2**-200 takes it up. A remainder kept as one rounded float drops the 2**-200.
TIE = [1.0, 2.0**-53, 2.0**-200]


def _fed(values: list[float], cuts: list[int]) -> ExactSum:
    total = ExactSum()
    edges = sorted({0, len(values), *(cut for cut in cuts if cut < len(values))})
    for start, stop in itertools.pairwise(edges):
        total.add(values[start:stop])
    return total


def test_a_tie_broken_by_a_tiny_value_rounds_as_fsum_does() -> None:
    assert math.fsum(TIE) == 1.0 + 2.0**-52
    assert _fed(TIE, []).value == 1.0 + 2.0**-52
    assert _fed(TIE, [1]).value == 1.0 + 2.0**-52
    assert _fed(TIE, [2]).value == 1.0 + 2.0**-52


@given(
    values=st.lists(
        st.one_of(
            st.floats(-1e300, 1e300),
            st.sampled_from([1.0, 2.0**-53, 2.0**-200, 5e-324, 12.5125, 31.249999999999993]),
        ),
        max_size=40,
    ),
    cuts=st.lists(st.integers(1, 40), max_size=6),
)
@example(values=TIE, cuts=[])
@example(values=[0.0, 5.8715942823573254e-39, 12.5125, 31.249999999999993], cuts=[3])
def test_values_in_runs_add_up_to_their_fsum(values: list[float], cuts: list[int]) -> None:
    assert _fed(values, cuts).value == math.fsum(values)
