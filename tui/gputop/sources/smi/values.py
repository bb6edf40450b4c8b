"""The values of nvidia-smi XML element texts: numbers, sizes, flags, reasons.

Each reader takes the element holding a value (None when the document lacks it), the field's
dotted path and the list of (path, Reason) of the sample being built, and returns the value
or None after noting why in that list.

A recording repeats the same few texts thousands of times ("N/A", "0 %", "1980 MHz",
"Enabled"), so each conversion is remembered by its text: a dict lookup instead of a
``float()`` and a string split. The memos are bounded (emptied when full, short texts only),
and a conversion is a pure function of its text, so remembering one changes no result.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar, cast

from gputop.model import Reason

Element = ET.Element
Missing = list[tuple[str, Reason]]

_T = TypeVar("_T")

_MEMO_ENTRIES = 4096
"""Entries a memo holds before it is emptied: a few hundred KB at most."""
_MEMO_TEXT = 64
"""Longer texts are converted every time: they are not the repeated ones."""

_NOT_REPORTED = Reason.NOT_REPORTED
_ERROR = Reason.ERROR
_INVALID = Reason.INVALID

_REASONS_BY_TEXT = {
    "n/a": Reason.NOT_AVAILABLE,
    "[n/a]": Reason.NOT_AVAILABLE,
    "not supported": Reason.NOT_SUPPORTED,
    "[not supported]": Reason.NOT_SUPPORTED,
    "requested functionality has been deprecated": Reason.DEPRECATED,
    "[requested functionality has been deprecated]": Reason.DEPRECATED,
    "insufficient permissions": Reason.NO_PERMISSION,
    "[insufficient permissions]": Reason.NO_PERMISSION,
    "no permission": Reason.NO_PERMISSION,
    "[no permission]": Reason.NO_PERMISSION,
    "unknown error": Reason.ERROR,
    "[unknown error]": Reason.ERROR,
    "gpu is lost": Reason.GPU_LOST,
    "[gpu is lost]": Reason.GPU_LOST,
    "[invalid value]": Reason.INVALID,  # how gputop's --record writes one back
    "[not in this log]": Reason.NOT_IN_LOG,  # likewise, for a value a text log lacked
    "[not exported]": Reason.NOT_EXPORTED,  # likewise, for a remote exporter's gap
}

_MIB = 1024**2
_UNIT_BYTES = {
    "": _MIB,  # nvidia-smi's unit for sizes: a bare number is MiB
    "b": 1,
    "kib": 1024,
    "kb": 1024,
    "mib": _MIB,
    "mb": _MIB,
    "gib": 1024**3,
    "gb": 1024**3,
}
_NUMBER = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)\s*")
_TRUE = frozenset(("enabled", "yes", "active", "on"))
_FALSE = frozenset(("disabled", "no", "not active", "off"))


class _Memo(dict[str | None, _T]):
    """Conversions by text; ``__missing__`` converts and remembers a text not seen yet."""

    __slots__ = ("_convert",)

    def __init__(self, convert: Callable[[str | None], _T]) -> None:
        super().__init__()
        self._convert = convert

    def __missing__(self, text: str | None) -> _T:
        value = self._convert(text)
        if text is None or len(text) <= _MEMO_TEXT:
            if len(self) >= _MEMO_ENTRIES:
                self.clear()
            self[text] = value
        return value


def _reason_of(text: str | None) -> Reason:
    """Why an element with this text gave no value: N/A and the like, else an error."""
    return _REASONS_BY_TEXT.get((text or "").strip().lower(), _ERROR)


def _number_and_unit(text: str) -> tuple[float, str] | None:
    """``17.97 W`` as (17.97, "w"), or None when the text is not a number and a unit.

    The number may be inf or NaN ("1e400" reads as inf): that is for the range to refuse,
    never a reason to read a shorter number out of the text.
    """
    words = text.split()
    if 0 < len(words) <= 2:
        try:
            # float() of the first word is several times cheaper than a regex match.
            return float(words[0]), words[1].lower() if len(words) == 2 else ""
        except ValueError:
            pass
    match = _NUMBER.fullmatch(text)  # "12%", "12 %": odd spacing
    return None if match is None else (float(match.group(1)), match.group(2).lower())


_N = TypeVar("_N", int, float)


class _Range(Generic[_N]):
    """A field's units (lower case, each with its factor to the model's unit) and its
    physical range; a reading outside either is not a value but an invalid one."""

    __slots__ = ("high", "make", "units")

    def __init__(
        self, units: Mapping[str, float], high: float, make: Callable[[float], _N]
    ) -> None:
        self.units = units
        self.high = high
        self.make: Callable[[float], _N] = make

    def __call__(self, text: str | None) -> _N | Reason:
        found = None if text is None else _number_and_unit(text)
        if found is None:
            return _reason_of(text)
        number, unit = found
        factor = self.units.get(unit)
        if factor is None:
            return _INVALID  # "5 W" of memory: not this field's unit
        value = number * factor
        # NaN fails both comparisons.
        if not 0.0 <= value <= self.high:
            return _INVALID
        return self.make(value)


def _real(value: float) -> float:
    return value + 0.0  # "-0" is 0, not a negative reading


_PERCENT_ROUNDING = 0.5
"""How far above 100 % a percentage may read and still be 100 % rounded up."""

PERCENT = _Range({"": 1.0, "%": 1.0}, 100.0 + _PERCENT_ROUNDING, _real)
FAN_PERCENT = _Range({"": 1.0, "%": 1.0}, 200.0, _real)
"""NVML documents that a fan's speed (a percent of its rated speed) may exceed 100 %."""
CELSIUS = _Range({"": 1.0, "c": 1.0}, 200.0, _real)
"""Silicon does not survive 200 C; slowdown and shutdown thresholds are near 100 C."""
WATTS = _Range({"": 1.0, "w": 1.0}, 100_000.0, _real)
"""One GPU's draw or limit is a few hundred watts; 100 kW is a rack."""
MEGAHERTZ = _Range({"": 1.0, "mhz": 1.0}, 100_000.0, int)
BYTES = _Range(_UNIT_BYTES, float(2**50), int)
"""1 PiB: thousands of times the memory of the largest GPU made."""
COUNT = _Range({"": 1.0}, 1_000_000.0, int)
"""Multiprocessors of a GPU or MIG device: a few hundred."""
_PSTATE = re.compile(r"P(?:1[0-5]|[0-9])")


def _text_of(text: str | None) -> str | Reason:
    value = (text or "").strip()
    # An element with nothing in it is no value, not the value "".
    return _REASONS_BY_TEXT.get(value.lower(), value) if value else _INVALID


def _pstate_of(text: str | None) -> str | Reason:
    value = _text_of(text)
    if isinstance(value, Reason) or _PSTATE.fullmatch(value):
        return value
    # nvidia-smi's word for NVML_PSTATE_UNKNOWN; anything else is no P-state at all.
    return Reason.NOT_AVAILABLE if value.lower() == "unknown" else _INVALID


def _flag_of(text: str | None) -> bool | Reason:
    value = _text_of(text)
    if isinstance(value, Reason):
        return value
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return _ERROR


text_of = _Memo(_text_of)
"""A text without surrounding white space, or the Reason it names (N/A and the like)."""
flag_of = _Memo(_flag_of)
"""Enabled/Disabled (and the like) as a bool, or why it is neither."""
watts_of = _Memo(WATTS)
"""A text's power in watts, or why it has none."""


Reader = Callable[[Element | None, str, Missing], _T | None]
"""Takes the element holding a value, the field's path and the sample's missing list."""


def _reader(convert: Mapping[str | None, _T | Reason], kind: type[_T]) -> Reader[_T]:
    """A reader of ``kind`` values through the memo ``convert``."""

    def read(node: Element | None, path: str, missing: Missing) -> _T | None:
        if node is None:
            missing.append((path, _NOT_REPORTED))
            return None
        value = convert[node.text]
        # An exact class check: cheaper than isinstance, and a bool is not taken for an int.
        if value.__class__ is kind:
            return value
        missing.append((path, cast(Reason, value)))
        return None

    return read


percent: Reader[float] = _reader(_Memo(PERCENT), float)
"""A percentage, 0 to 100."""
fan_percent: Reader[float] = _reader(_Memo(FAN_PERCENT), float)
celsius: Reader[float] = _reader(_Memo(CELSIUS), float)
watts: Reader[float] = _reader(watts_of, float)
megahertz: Reader[int] = _reader(_Memo(MEGAHERTZ), int)
"""A clock, in whole MHz."""
size: Reader[int] = _reader(_Memo(BYTES), int)
"""A size in bytes (MiB when the text names no unit)."""
whole_count: Reader[int] = _reader(_Memo(COUNT), int)
"""A number of things with no unit, such as multiprocessors."""
text: Reader[str] = _reader(text_of, str)
"""The text without surrounding white space, never empty."""
pstate: Reader[str] = _reader(_Memo(_pstate_of), str)
"""A performance state, P0 to P15."""
flag: Reader[bool] = _reader(flag_of, bool)
"""Enabled/Disabled, Yes/No, Active/Not Active, On/Off."""


def count(text: str | None) -> int | None:
    """A plain decimal count (a PID, an index, an error counter), or None."""
    if text is None:
        return None
    text = text.strip()
    # ASCII only: str.isdigit() accepts "²", which int() refuses; 19 digits fit any counter.
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 else None
