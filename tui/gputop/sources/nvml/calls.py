"""The one place NVML calls are made and their errors turned into reasons.

Every field is read on its own through :meth:`DeviceCalls.call`, so one unsupported counter never
hides the others. What each error means:

* NotSupported, FunctionNotFound, an entry point missing from pynvml or an argument-version
  mismatch: the value is ``Reason.NOT_SUPPORTED`` and the call is never made again for this
  device (each costs time on every tick and the answer will not change).
* NoPermission: ``Reason.NO_PERMISSION``, also remembered: permissions do not change while we run.
* GpuIsLost: raises :class:`GpuLost`; the whole GPU is then reported lost.
* anything else: ``Reason.ERROR`` for this tick only; the call is tried again next tick.

Values that never change (names, thresholds, limits' bounds) can be asked for ``static``: they
are read once and served from the cache afterwards. Values that change rarely (modes, ECC
counters, the enforced power limit, BAR1, a MIG device's UUID) can be asked for ``slow``: they
are read on the ticks a :class:`DeviceCalls` is told to ``refresh`` and reused in between; a
slow read that fails is not reused, so the next tick asks again. A value with a cadence of its
own (the energy counter, see :mod:`gputop.sources.nvml.prices`) is ``slow`` with its own
``due``: read when that says so, reused otherwise.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from gputop.model import Reason, Unavailable
from gputop.sources.nvml.api import NvmlApi

T = TypeVar("T")

Paths = tuple[str, ...]


read_number: Callable[[object, str], Any] = object.__getattribute__
"""Read a numeric field of a pynvml struct: ``read_number(memory, "used")``.

pynvml's structs run a Python hook on every attribute read, which only turns char arrays into
str; for a number the generic lookup gives the same value in a fraction of the time, which
counts on fields read for every MIG device on every tick."""


def same_objects(new: Sequence[object], old: Sequence[object]) -> bool:
    """The same objects, in the same order: how the sampling side tells that nothing changed
    since last tick (an unchanged row, list or tuple is last tick's object again)."""
    return len(new) == len(old) and all(map(operator.is_, new, old))


class GpuLost(Exception):
    """NVML said the GPU is gone (fell off the bus, or the handle stopped answering)."""


class CallMemo:
    """What one device's calls taught us, kept across ticks.

    Attributes:
        refused: call key -> its answer (a shared CallFailed), for calls that will not succeed
            on this device.
        static: call key -> value, for values read once.
        slow: call key -> value, for values re-read only on refresh ticks.
        decoded: call key -> (the struct's bytes, what they were decoded into) last time.
        notes: the missing values the last sample stored (``DeviceCalls.tick_notes``).
    """

    __slots__ = ("decoded", "notes", "refused", "slow", "static")

    def __init__(self) -> None:
        self.refused: dict[str, CallFailed] = {}
        self.static: dict[str, Any] = {}
        self.slow: dict[str, Any] = {}
        self.decoded: dict[str, tuple[bytes, Any]] = {}
        self.notes: Unavailable = ()

    def clear(self, *, keep: str | None = None) -> None:
        """Forget everything (the device changed mode, e.g. MIG was switched), except the
        slow value under ``keep`` (the reading that told us the device changed)."""
        kept = self.slow.get(keep) if keep is not None else None
        self.refused.clear()
        self.static.clear()
        self.slow.clear()
        self.decoded.clear()
        self.notes = ()
        if keep is not None and kept is not None:
            self.slow[keep] = kept


class ErrorCodes:
    """NVML return codes grouped by what they mean to gputop, read from the module once."""

    __slots__ = (
        "error_type",
        "gone",
        "lost",
        "mismatch_type",
        "not_found",
        "permission",
        "unsupported",
    )

    def __init__(self, nvml: NvmlApi) -> None:
        self.error_type = nvml.NVMLError
        self.mismatch_type = nvml.NVMLLibraryMismatchError
        self.unsupported = frozenset(
            {
                nvml.NVML_ERROR_NOT_SUPPORTED,
                nvml.NVML_ERROR_FUNCTION_NOT_FOUND,
                nvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
                nvml.NVML_ERROR_DEPRECATED,
            }
        )
        self.permission = nvml.NVML_ERROR_NO_PERMISSION
        self.lost = nvml.NVML_ERROR_GPU_IS_LOST
        self.not_found = nvml.NVML_ERROR_NOT_FOUND
        # What a call on a handle that no longer names a device answers (a destroyed MIG
        # instance).
        self.gone = frozenset({nvml.NVML_ERROR_INVALID_ARGUMENT, self.not_found})

    def reason(self, code: int) -> Reason:
        """The Reason for an NVML return code other than GPU-is-lost."""
        if code in self.unsupported:
            return Reason.NOT_SUPPORTED
        if code == self.permission:
            return Reason.NO_PERMISSION
        return Reason.ERROR


class CallFailed:
    """Why an :meth:`DeviceCalls.attempt` gave no value: the reason and NVML's code."""

    __slots__ = ("code", "reason")

    def __init__(self, reason: Reason, code: int | None) -> None:
        self.reason = reason
        self.code = code

    def __repr__(self) -> str:
        return f"CallFailed({self.reason.name}, {self.code})"


_MEMOIZED = frozenset({Reason.NOT_SUPPORTED, Reason.NO_PERMISSION})
_REFUSED = {reason: CallFailed(reason, None) for reason in _MEMOIZED}
"""One answer per memoized reason: a refused call costs no allocation per tick."""
_NOT_SUPPORTED = _REFUSED[Reason.NOT_SUPPORTED]


class DeviceCalls:
    """One tick's NVML calls for one device (a GPU or a MIG device).

    Attributes:
        missing: (field path, reason) for every value this tick could not read, in call order.
        refresh: this tick re-reads ``slow`` values (otherwise the last reading is reused).
        gone: some call failed with a code that says the handle names no device any more.
    """

    __slots__ = ("_codes", "_memo", "gone", "missing", "refresh")

    def __init__(self, codes: ErrorCodes, memo: CallMemo, refresh: bool = True) -> None:
        self._codes = codes
        self._memo = memo
        self.missing: list[tuple[str, Reason]] = []
        self.refresh = refresh
        self.gone = False

    def call(
        self,
        key: str,
        paths: Paths,
        fn: Callable[..., T] | None,
        *args: Any,
        static: bool = False,
        slow: bool = False,
        due: bool | None = None,
    ) -> T | None:
        """Call ``fn(*args)``; on failure note the reason for each of ``paths`` and return None.

        Args:
            key: names this call on this device (the memo key): the function and any
                argument that selects what it reads, e.g. ``"clock:1"``.
            paths: the model fields this call fills, noted as missing when it fails.
            fn: the pynvml function, or None where this pynvml lacks it.
            static: the value never changes: read it once and cache it.
            slow: the value changes rarely: read it on refresh ticks, reuse it in between.
            due: for a ``slow`` value on a cadence of its own, whether this tick reads it
                (None: on refresh ticks).

        Raises:
            GpuLost: NVML says the GPU is lost.
        """
        result = self._attempt(key, fn, args, static, slow, due)
        if isinstance(result, CallFailed):
            self.note(paths, result.reason)
            return None
        return result

    def attempt(
        self,
        key: str,
        fn: Callable[..., T] | None,
        *args: Any,
        static: bool = False,
        slow: bool = False,
        due: bool | None = None,
    ) -> T | CallFailed:
        """Like :meth:`call` but notes nothing: for fallbacks and calls with special codes."""
        return self._attempt(key, fn, args, static, slow, due)

    def _attempt(
        self,
        key: str,
        fn: Callable[..., T] | None,
        args: tuple[Any, ...],
        static: bool,
        slow: bool,
        due: bool | None = None,
    ) -> T | CallFailed:
        # Positional on purpose: this runs for every NVML call of every tick.
        memo = self._memo
        if memo.refused:
            refused = memo.refused.get(key)
            if refused is not None:
                return refused
        value: T
        if static:
            if key in memo.static:
                value = memo.static[key]
                return value
        elif slow and not (self.refresh if due is None else due) and key in memo.slow:
            value = memo.slow[key]
            return value
        if fn is None:
            memo.refused[key] = _NOT_SUPPORTED
            return _NOT_SUPPORTED
        codes = self._codes
        try:
            value = fn(*args)
        except codes.error_type as error:
            code: int = getattr(error, "value", -1)
            if code == codes.lost:
                raise GpuLost(str(error)) from error
            if code in codes.gone:
                self.gone = True
            reason = codes.reason(code)
            if reason in _MEMOIZED:
                memo.refused[key] = _REFUSED[reason]
            if slow:
                memo.slow.pop(key, None)  # not reused: the next tick asks again
            return CallFailed(reason, code)
        except codes.mismatch_type:
            # pynvml's unversioned wrappers raise this when the library lacks the entry point.
            memo.refused[key] = _NOT_SUPPORTED
            return _NOT_SUPPORTED
        if static:
            memo.static[key] = value
        elif slow:
            memo.slow[key] = value
        return value

    def decode(self, key: str, struct: Any, decode: Callable[[Any], T]) -> T:
        """``decode(struct)``, or what it gave last time when the struct (a ctypes one that
        the call with this key filled) holds the same bytes: a value that did not move costs
        no field reads and no new object."""
        raw = bytes(struct)
        seen = self._memo.decoded.get(key)
        if seen is not None and seen[0] == raw:
            value: T = seen[1]
            return value
        value = decode(struct)
        self._memo.decoded[key] = (raw, value)
        return value

    def refuse(self, key: str, paths: Paths, code: int) -> None:
        """Record a per-value return code (field values, GPM metrics) as if a call failed."""
        if code == self._codes.lost:
            raise GpuLost(f"NVML return code {code}")
        reason = self._codes.reason(code)
        if reason in _MEMOIZED:
            self._memo.refused[key] = _REFUSED[reason]
        self.note(paths, reason)

    def note(self, paths: Paths, reason: Reason) -> None:
        """Record that each of ``paths`` is missing for ``reason``."""
        self.missing.extend((path, reason) for path in paths)

    def relabel(self, paths: Paths, reason: Reason) -> None:
        """Change the reason already noted for ``paths`` (e.g. to UNDER_MIG)."""
        wanted = set(paths)
        self.missing = [(p, reason if p in wanted else r) for p, r in self.missing]

    def unavailable(self) -> Unavailable:
        """The missing values as the model stores them."""
        return tuple(self.missing)

    def tick_notes(self, before: Unavailable = ()) -> Unavailable:
        """What a tick's sample of the device stores as missing: ``before`` (notes of the
        slow values, read on an earlier tick), then this tick's. A device misses the same
        values tick after tick: then this is the tuple its last sample stored, and the recent
        snapshots each tick carries share it instead of holding one each (about 9 KB a
        snapshot on 8 GPUs with 7 MIG devices each)."""
        notes = before + tuple(self.missing)
        last = self._memo.notes
        if notes == last:
            return last
        self._memo.notes = notes
        return notes
