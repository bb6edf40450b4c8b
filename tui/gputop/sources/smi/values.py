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
from typing import TypeVar, cast

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
}

_MIB = 1024**2
_UNIT_BYTES = {
    "MiB": _MIB,
    "KiB": 1024,
    "GiB": 1024**3,
    "b": 1,
    "kib": 1024,
    "kb": 1024,
    "mib": 1024**2,
    "mb": 1024**2,
    "gib": 1024**3,
    "gb": 1024**3,
}
_NUMBER = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)")
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


def _leading_number(text: str) -> float | None:
    """The number a value starts with (``17.97 W`` is 17.97), or None; never inf or NaN."""
    try:
        # float() of the first word is several times cheaper than a regex match.
        value = float(text.partition(" ")[0])
    except ValueError:
        match = _NUMBER.match(text)  # " 12 %", "12%": odd spacing
        if match is None:
            return None
        value = float(match.group(1))
    # A run of digits past 1e308 reads as inf: garbage, not a reading.
    return value if value - value == 0.0 else None


def _reason_of(text: str | None) -> Reason:
    """Why an element with this text gave no value: N/A and the like, else an error."""
    return _REASONS_BY_TEXT.get((text or "").strip().lower(), _ERROR)


def _number_of(text: str | None) -> float | Reason:
    value = None if text is None else _leading_number(text)
    return _reason_of(text) if value is None else value


def _size_of(text: str | None) -> int | Reason:
    if text is not None:
        words = text.split()
        if len(words) == 2 and words[1] in _UNIT_BYTES:  # "4095 MiB": the usual
            value = _leading_number(words[0])
            if value is not None:
                scaled = value * _UNIT_BYTES[words[1]]
                if scaled - scaled == 0.0:  # "1e300 GiB" overflows to inf
                    return int(scaled)
        match = _NUMBER.match(text)
        if match is not None:
            unit = match.group(2)
            scaled = float(match.group(1)) * _UNIT_BYTES.get(unit.lower(), _MIB)
            if scaled - scaled == 0.0:
                return int(scaled)
    return _reason_of(text)


def _text_of(text: str | None) -> str | Reason:
    value = (text or "").strip()
    return _REASONS_BY_TEXT.get(value.lower(), value)


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


number_of = _Memo(_number_of)
"""A text's leading number, or why it has none."""
size_of = _Memo(_size_of)
"""A text's size in bytes (MiB when it names no unit), or why it has none."""
text_of = _Memo(_text_of)
"""A text without surrounding white space, or the Reason it names (N/A and the like)."""
flag_of = _Memo(_flag_of)
"""Enabled/Disabled (and the like) as a bool, or why it is neither."""


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


number: Reader[float] = _reader(number_of, float)
"""The leading number of an element's text."""
size: Reader[int] = _reader(size_of, int)
"""A size in bytes."""
text: Reader[str] = _reader(text_of, str)
"""The text without surrounding white space (possibly empty)."""
flag: Reader[bool] = _reader(flag_of, bool)
"""Enabled/Disabled, Yes/No, Active/Not Active, On/Off."""


def integer(node: Element | None, path: str, missing: Missing) -> int | None:
    """The leading number of ``node``'s text, truncated to an int."""
    value = number(node, path, missing)
    return None if value is None else int(value)


def count(text: str | None) -> int | None:
    """A plain decimal count (a PID, an index, an error counter), or None."""
    if text is None:
        return None
    text = text.strip()
    # ASCII only: str.isdigit() accepts "²", which int() refuses; 19 digits fit any counter.
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 else None
