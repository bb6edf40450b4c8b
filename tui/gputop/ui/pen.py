"""Colour changes only: the terminal codes between styled runs of a partial repaint.

Textual writes every styled run as ``ESC[<attributes;fg;bg>m text ESC[0m``: with 24-bit
colours about 40 bytes of codes around a 3-byte number, each tick, for each value that
moved. A curses program sends a colour only when it changes. The pen does the same within
one update: it remembers what the terminal is set to and sends only the difference (often
nothing: the runs of one panel share a background, most share a colour). Every cell still
gets exactly the style a full repaint gives it (a terminal keeps even a space's colour).
"""

from __future__ import annotations

from rich.color import ColorSystem
from rich.style import Style

ATTRIBUTES = (
    "bold",
    "dim",
    "italic",
    "underline",
    "blink",
    "blink2",
    "reverse",
    "conceal",
    "strike",
    "underline2",
    "frame",
    "encircle",
    "overline",
)
"""Rich's style attributes; a run's ink is read through their public properties (2.6 us a
run, against 0.14 us through Rich's private bits, at 10-42 runs a second on the benchmark's
boxes: benchmarks/README, "Rich's and plotext's private API")."""

SGR_CODES = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "21", "51", "52", "53")
"""The SGR code that turns each of ``ATTRIBUTES`` on (an ink's bit ``n`` is the ``n``-th)."""
SGR_OFF = ("22", "22", "23", "24", "25", "25", "27", "28", "29", "24", "54", "54", "55")
"""The code that turns each attribute off; some turn off two (22: bold and dim), so what
stays on of those is set again after."""

Ink = tuple[int, object, object]
"""What the terminal is set to: attribute bits, foreground, background (Rich colours)."""

RESET: Ink = (0, None, None)


def _sharing(off: int) -> int:
    """Attribute bits turned off along with ``off`` by the codes that turn ``off`` off."""
    codes = {SGR_OFF[bit] for bit in range(off.bit_length()) if off >> bit & 1}
    return sum(1 << bit for bit, code in enumerate(SGR_OFF) if code in codes)


_BITS = tuple((name, 1 << bit) for bit, name in enumerate(ATTRIBUTES))


def _ink(style: Style | None) -> Ink:
    if style is None:
        return RESET
    bits = sum(bit for name, bit in _BITS if getattr(style, name))
    return (bits, style.color, style.bgcolor)


class Pen:
    """The codes that take the terminal from its current style to the next run's."""

    def __init__(self, color_system: ColorSystem) -> None:
        """A pen whose terminal state is not known yet (the first run sets it in full)."""
        self._system = color_system
        self._ink: Ink | None = None

    @property
    def color_system(self) -> ColorSystem:
        """The terminal's colours, which each colour is brought down to."""
        return self._system

    def to(self, style: Style | None) -> str:
        """The codes to send before a run drawn in ``style`` (empty when none are due)."""
        new = _ink(style)
        old = self._ink
        if new == old:
            return ""
        self._ink = new
        if old is None:
            return "\x1b[" + ";".join(["0", *self._codes(new[0], new[1], new[2])]) + "m"
        off = old[0] & ~new[0]
        codes = list(
            dict.fromkeys(SGR_OFF[bit] for bit in range(off.bit_length()) if off >> bit & 1)
        )
        # An off code may have taken a second attribute with it: set again what stays on.
        stays = new[0] & old[0] & _sharing(off)
        codes += self._codes(
            (new[0] & ~old[0]) | stays,
            new[1] if new[1] != old[1] else None,
            new[2] if new[2] != old[2] else None,
        )
        if new[1] is None and old[1] is not None:
            codes.append("39")
        if new[2] is None and old[2] is not None:
            codes.append("49")
        return "\x1b[" + ";".join(codes) + "m"

    def _codes(self, bits: int, fg: object, bg: object) -> list[str]:
        codes = [code for bit, code in enumerate(SGR_CODES) if bits & (1 << bit)]
        if fg is not None:
            codes.extend(fg.downgrade(self._system).get_ansi_codes())  # type: ignore[attr-defined]
        if bg is not None:
            codes.extend(bg.downgrade(self._system).get_ansi_codes(False))  # type: ignore[attr-defined]
        return codes

    def reset(self) -> str:
        """What leaves the terminal in its default style (as every Textual write does)."""
        done = "" if self._ink in (None, RESET) else "\x1b[0m"
        self._ink = RESET
        return done

    def forget(self) -> None:
        """The terminal's style is no longer known (something else wrote codes)."""
        self._ink = None
