"""The ring buffer under the history: bounded, ordered, gaps as NaN, float32 storage."""

from __future__ import annotations

import math

import pytest

from gputop.history.ring import Ring


def test_keeps_the_newest_values_in_order_once_full() -> None:
    ring = Ring(4)
    for value in range(1, 7):
        ring.append(float(value))
    assert len(ring) == 4
    assert list(ring.latest()) == [3.0, 4.0, 5.0, 6.0]
    assert list(ring.latest(2)) == [5.0, 6.0]
    assert ring.last() == 6.0


def test_latest_before_it_wraps_and_beyond_its_length() -> None:
    ring = Ring(5)
    ring.append(1.0)
    ring.append(2.0)
    assert list(ring.latest(10)) == [1.0, 2.0]
    assert list(ring.latest(0)) == []


def test_none_is_stored_as_a_gap() -> None:
    ring = Ring(3)
    ring.append(1.0)
    ring.append(None)
    values = list(ring.latest())
    assert values[0] == 1.0 and math.isnan(values[1])
    assert ring.last() is None


def test_storage_is_four_bytes_a_sample_and_fixed() -> None:
    ring = Ring(3600)
    for value in range(10_000):
        ring.append(float(value))
    assert ring.latest().itemsize == 4
    assert len(ring) == 3600
    assert ring.latest(1)[0] == 9999.0


def test_double_precision_keeps_epoch_seconds_exact() -> None:
    ring = Ring(2, "d")
    ring.append(1726695252.0)
    assert ring.last() == 1726695252.0


def test_drop_last_undoes_an_append_across_the_wrap() -> None:
    ring = Ring(3)
    for value in (1.0, 2.0, 3.0, 4.0):
        ring.append(value)
    ring.drop_last()
    assert list(ring.latest()) == [2.0, 3.0]
    ring.append(9.0)
    assert list(ring.latest()) == [2.0, 3.0, 9.0]


def test_starting_with_gaps_and_clearing() -> None:
    ring = Ring(4, gaps=6)
    assert len(ring) == 4
    assert all(math.isnan(v) for v in ring.latest())
    ring.append(5.0)
    assert ring.latest()[-1] == 5.0
    ring.clear()
    assert len(ring) == 0 and ring.last() is None


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Ring(0)


def test_the_buffer_grows_with_the_samples_then_stays_at_the_capacity() -> None:
    ring = Ring(100)
    assert ring.nbytes == 0
    for value in range(10):
        ring.append(float(value))
    assert ring.nbytes == 40
    ring.drop_last()
    ring.append(42.0)  # written over the dropped sample, not after it
    assert ring.nbytes == 40 and list(ring.latest(2)) == [8.0, 42.0]
    for value in range(250):
        ring.append(float(value))
    assert ring.nbytes == 400
    assert list(ring.latest(3)) == [247.0, 248.0, 249.0] and len(ring) == 100
    ring.clear()
    ring.append(1.0)
    assert list(ring.latest()) == [1.0] and ring.nbytes == 400
