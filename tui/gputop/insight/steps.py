"""The time integrals of a report, added up exactly, a run of samples at a time.

Each interval between two consecutive samples of a GPU counts towards the state of its first
sample, or towards gaps when longer than the gap threshold, or towards nothing when it goes
back in time; energy integrates power over the counted intervals whose both ends report it.
Sums are taken with ``math.fsum`` (the correctly rounded sum, whatever the order), so a
recording added in runs of any length gives the very figures of one pass over it: each run
leaves its rounded sum and the rounding's remainder (exactly), and these are summed again at
the end.

The work on a run is done by C loops over whole lists (``map``, ``compress``), not a Python
statement per interval: a two-week log has ten million of them.
"""

from __future__ import annotations

import functools
import math
import struct
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, compress, islice, repeat
from operator import add, and_, eq, le, lt, mul, not_, or_, sub

_MAX_PARTS = 256


@functools.cache
def _only(code: int) -> bytes:
    """A ``bytes.translate`` table keeping 1 for ``code`` and 0 for every other byte."""
    return bytes(int(byte == code) for byte in range(256))


class ExactSum:
    """A sum of floats fed in parts: ``value`` is ``math.fsum`` of every value fed."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[float] = []

    def add(self, values: Iterable[float]) -> None:
        """Add ``values`` (kept as their rounded sum and what that rounding left out)."""
        self.add_parts(parts_of(values))

    def add_parts(self, parts: Sequence[float]) -> None:
        """Add what ``parts_of`` (or another sum's ``parts``) gave."""
        own = self._parts
        own.extend(parts)
        if len(own) > _MAX_PARTS:
            # Folded into one sum and its remainder again: fed a sample at a time, the
            # parts would otherwise grow with the recording.
            self._parts = list(parts_of(own))

    @property
    def parts(self) -> Sequence[float]:
        """What this sum holds, for another to add."""
        return self._parts

    @property
    def value(self) -> float:
        """The sum of everything added."""
        return math.fsum(self._parts)


def parts_of(values: Iterable[float]) -> tuple[float, ...]:
    """``values`` as their rounded sum and what that rounding left out."""
    listed = list(values)
    if not listed:
        return ()
    return _parts(listed, math.fsum(listed))


def _parts(listed: list[float], total: float) -> tuple[float, ...]:
    """``parts_of`` the values ``listed`` (appended to) whose ``math.fsum`` is ``total``:
    the sum, then what each rounding left out until nothing is, so that the parts add up to
    the values exactly. One remainder alone is rounded too where the values span more than
    two floats' bits (1 + 2**-53 + 2**-200), and the bit it drops can break a tie of the
    final rounding."""
    parts = [total]
    left = total
    while left and math.isfinite(left):
        listed.append(-left)
        left = math.fsum(listed)
        if left:
            parts.append(left)
    return tuple(parts)


class Intervals:
    """The intervals between consecutive times, worked out once for every GPU of a run."""

    __slots__ = ("backward", "counted", "forward", "gaps", "halves", "long", "steps")

    def __init__(self, times: Sequence[float], max_gap_s: float) -> None:
        steps = self.steps = list(map(sub, islice(times, 1, None), times))
        self.halves = list(map(mul, steps, repeat(0.5)))
        """Each interval halved: ``(a + b) * (step * 0.5)`` is ``(a + b) / 2 * step`` to the
        last bit (halving is exact in binary), one multiplication fewer per GPU."""
        self.counted: list[bool] | None = None
        """Which intervals count (None: all of them)."""
        self.backward = False
        self.gaps: tuple[float, ...] = ()
        self.long: list[int] = []
        """Where the intervals longer than ``max_gap_s`` are."""
        if steps and (min(steps) < 0.0 or max(steps) > max_gap_s):
            self.backward = min(steps) < 0.0
            longer = list(map(lt, repeat(max_gap_s), steps))
            # 0 <= step <= max_gap_s, in C loops: neither longer nor backward.
            self.counted = list(map(not_, map(or_, longer, map(lt, steps, repeat(0.0)))))
            self.long = list(compress(range(len(steps)), longer))
            self.gaps = parts_of(map(steps.__getitem__, self.long))
            self.forward = parts_of(map(max, steps, repeat(0.0)))
        else:
            self.forward = parts_of(steps)

    def __len__(self) -> int:
        return len(self.steps)


def extend_floats(floats: array[float], values: Sequence[float]) -> None:
    """``floats.extend(values)``, about 3x quicker for a list: ``array.extend`` parses each
    item of a list as a function argument, ``struct.pack`` converts them directly."""
    if isinstance(values, array):
        floats.extend(values)  # a copy of the bytes
    else:
        floats.frombytes(struct.pack(f"{len(values)}d", *values))


class Pending:
    """The intervals longer than the floor of a gap threshold not known yet, each kept
    (its length and the state it starts in; its energy, where power is known at both
    ends, with its length) until the threshold is known (``StepSums.settled``): in arrays,
    added to in C loops, about 25 bytes an interval."""

    __slots__ = ("energy_j", "energy_steps", "states", "steps")

    def __init__(self) -> None:
        self.steps = array("d")
        self.states = bytearray()
        self.energy_steps = array("d")
        self.energy_j = array("d")

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, intervals: Intervals, terms: Sequence[float], firsts: bytes) -> None:
        """The long intervals of a run; ``terms``: each interval's energy (NaN where power
        is not known at both ends), ``firsts``: the state each starts in."""
        long, steps = intervals.long, intervals.steps
        lengths = list(map(steps.__getitem__, long))
        extend_floats(self.steps, lengths)
        self.states.extend(map(firsts.__getitem__, long))
        energy = list(map(terms.__getitem__, long))
        known = list(map(eq, energy, energy))
        extend_floats(self.energy_steps, list(compress(lengths, known)))
        extend_floats(self.energy_j, list(compress(energy, known)))

    def merge(self, other: Pending) -> None:
        self.steps.extend(other.steps)
        self.states.extend(other.states)
        self.energy_steps.extend(other.energy_steps)
        self.energy_j.extend(other.energy_j)


class StepSums:
    """Time per state, in gaps, going forward, and energy, over consecutive samples.

    ``deferred``: the gap threshold is not known yet, only its floor (the ``max_gap_s``
    given to ``add``): the intervals longer than that are ``pending``, and ``settled``
    once the threshold is known gives the very sums a threshold known from the start would
    have."""

    __slots__ = ("backward", "energy_j", "forward_s", "gap_s", "pending", "per_state")

    def __init__(self, states: int, *, deferred: bool = False) -> None:
        self.per_state = [ExactSum() for _ in range(states)]
        self.gap_s = ExactSum()
        self.forward_s = ExactSum()
        """The sum of the intervals that went forward (gaps included)."""
        self.energy_j = ExactSum()
        self.backward = False
        self.pending = Pending() if deferred else None

    def add(
        self,
        times: Sequence[float],
        power: Sequence[float],
        states: Sequence[int],
        max_gap_s: float,
    ) -> None:
        """The intervals between consecutive entries of ``times`` (a run continuing the last
        one fed starts with that run's last sample). ``power`` is NaN where not reported;
        ``states`` holds the state number of each sample."""
        self.add_intervals(Intervals(times, max_gap_s), power, states)

    def add_intervals(
        self, intervals: Intervals, power: Sequence[float], states: Sequence[int]
    ) -> None:
        """As ``add``, the intervals worked out already."""
        count = len(intervals)
        if not count:
            return
        steps, counted = intervals.steps, intervals.counted
        self.backward = self.backward or intervals.backward
        firsts = bytes(islice(states, count))
        if self.pending is None:
            self.gap_s.add_parts(intervals.gaps)
        self.forward_s.add_parts(intervals.forward)
        if counted is None and firsts.count(firsts[0]) == count:
            # One state all along (the common case): its time is every interval.
            self.per_state[firsts[0]].add_parts(intervals.forward)
        else:
            for code in set(firsts):
                # 1 where the interval starts in this state: one C pass, not a call each.
                chosen: Iterable[int] = firsts.translate(_only(code))
                if counted is not None:
                    chosen = map(and_, chosen, counted)
                self.per_state[code].add(compress(steps, chosen))
        # The trapezoid (before + after) / 2 * step of every interval.
        terms = list(map(mul, map(add, power, islice(power, 1, None)), intervals.halves))
        if self.pending is not None and intervals.long:
            self.pending.add(intervals, terms, firsts)
        total = math.fsum(terms)
        if total != total:  # a NaN (power not reported): only intervals with it at both ends
            known = list(map(eq, power, power))
            both: Iterable[bool] = map(and_, known, islice(known, 1, None))
            if counted is not None:
                both = map(and_, both, counted)
            self.energy_j.add(compress(terms, both))
        elif counted is not None:
            self.energy_j.add(compress(terms, counted))
        else:
            self.energy_j.add_parts(_parts(terms, total))  # the sum taken once, not twice

    def merge(self, other: StepSums) -> None:
        """Add what ``other`` holds (the samples that come after this one's)."""
        if other.pending is not None:
            if self.pending is None:
                raise ValueError("a deferred sum merges only into a deferred one")
            self.pending.merge(other.pending)
        self._add_sums(other)

    def _add_sums(self, other: StepSums) -> None:
        for mine, theirs in zip(self.per_state, other.per_state, strict=True):
            mine.add_parts(theirs.parts)
        self.gap_s.add_parts(other.gap_s.parts)
        self.forward_s.add_parts(other.forward_s.parts)
        self.energy_j.add_parts(other.energy_j.parts)
        self.backward = self.backward or other.backward

    def settled(self, max_gap_s: float) -> StepSums:
        """These sums with the gap threshold ``max_gap_s`` (at least the floor they were
        added up with): the pending intervals counted in their state, or as gaps."""
        pending = self.pending
        if pending is None:
            return self
        sums = StepSums(len(self.per_state))
        sums._add_sums(self)
        steps = pending.steps
        counted = list(map(le, steps, repeat(max_gap_s)))
        for code in set(pending.states):
            chosen = map(and_, pending.states.translate(_only(code)), counted)
            sums.per_state[code].add(compress(steps, chosen))
        sums.gap_s.add(compress(steps, map(not_, counted)))
        energy_counted = map(le, pending.energy_steps, repeat(max_gap_s))
        sums.energy_j.add(compress(pending.energy_j, energy_counted))
        return sums


def count_stats(
    counts: Mapping[float, int],
) -> tuple[int, float | None, float | None, float | None]:
    """(how many, mean, p50, p95) of the values counted (NaN keys left out), as
    ``statistics.fmean`` and ``series.percentile`` give them over the sorted values."""
    items = sorted((value, n) for value, n in counts.items() if value == value and n > 0)
    total = sum(n for _, n in items)
    if not total:
        return 0, None, None, None
    mean = math.fsum(chain.from_iterable(map(repeat, (v for v, _ in items), (n for _, n in items))))
    return total, mean / total, _at(items, total, 0.50), _at(items, total, 0.95)


def _at(items: Sequence[tuple[float, int]], total: int, fraction: float) -> float:
    """``series.percentile`` of the values ``items`` counts, without listing them."""
    position = (total - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, total - 1)
    weight = position - low
    return ranked(items, low) * (1 - weight) + ranked(items, high) * weight


def ranked(items: Sequence[tuple[float, int]], rank: int) -> float:
    """The value of rank ``rank`` (from 0) among sorted (value, count) pairs."""
    seen = 0
    for value, n in items:
        seen += n
        if rank < seen:
            return value
    raise IndexError(rank)
