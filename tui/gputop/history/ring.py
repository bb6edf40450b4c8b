"""A fixed-capacity ring of floats stored compactly (4 bytes a sample)."""

from __future__ import annotations

import math
from array import array
from typing import Literal

GAP = math.nan
"""How a missing sample is stored: NaN, so a gap costs no extra memory."""


class Ring:
    """The newest ``capacity`` samples of one series; appending past capacity drops the oldest.

    Values are float32 (``array('f')``): a sparkline cell has eight levels, so single
    precision loses nothing visible, and an hour at 1 s costs 14 KiB per series. The buffer
    grows with the samples up to the capacity (a short run costs little), then is cut to it
    exactly and written over.
    """

    __slots__ = ("_capacity", "_count", "_data", "_next")

    def __init__(self, capacity: int, typecode: Literal["f", "d"] = "f", *, gaps: int = 0) -> None:
        """Create an empty ring that holds at most ``capacity`` samples.

        Args:
            capacity: samples kept.
            typecode: ``"f"`` (float32) for metrics, ``"d"`` where precision matters
                (epoch timestamps need more than float32's 24 bits).
            gaps: start holding this many gap samples (a series that joins late).
        """
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._count = min(max(gaps, 0), capacity)
        self._data: array[float] = array(typecode, [GAP]) * self._count
        self._next = self._count % capacity

    @property
    def capacity(self) -> int:
        """How many samples the ring keeps."""
        return self._capacity

    @property
    def nbytes(self) -> int:
        """Bytes of the ring's buffer (at most 4 or 8 times its capacity)."""
        return self._data.itemsize * len(self._data)

    def __len__(self) -> int:
        return self._count

    def append(self, value: float | None) -> None:
        """Add the newest sample; None records a gap."""
        data = self._data
        if self._next < len(data):
            data[self._next] = GAP if value is None else value
        else:
            data.append(GAP if value is None else value)
            if len(data) == self._capacity:
                self._data = data[:]  # no room left over by the array's growth
        self._next = (self._next + 1) % self._capacity
        if self._count < self._capacity:
            self._count += 1

    def drop_last(self) -> None:
        """Forget the newest sample (stepping back in a replay); no-op when empty."""
        if self._count:
            self._next = (self._next - 1) % self._capacity
            self._count -= 1

    def clear(self) -> None:
        """Forget every sample (capacity is kept)."""
        self._next = 0
        self._count = 0

    def latest(self, n: int | None = None) -> array[float]:
        """A copy of the newest ``n`` samples (all when None), oldest first; NaN marks gaps."""
        count = self._count if n is None else max(0, min(n, self._count))
        if count == 0:
            return array("f")
        start = self._next - count
        if start >= 0:
            return self._data[start : self._next]
        return self._data[start:] + self._data[: self._next]

    def last(self) -> float | None:
        """The newest sample, or None when empty or a gap."""
        if self._count == 0:
            return None
        value = self._data[self._next - 1]
        return None if math.isnan(value) else value
