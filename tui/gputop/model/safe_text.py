"""Text from the outside world, made safe for a terminal: the one function every view uses.

GPU and process names, command lines, user, pod, container, job and host names, Prometheus
labels and a server's error text all reach gputop from someone else. Written raw, a control
character in one of them is an instruction to the terminal (``ESC ] 0 ;`` sets its title,
``ESC [ 2 J`` wipes it, a newline forges a line of ``--once`` output, U+009B is an 8-bit CSI)
and a bidirectional override reorders what follows it. Every view that writes such a string
as text (the TUI, ``--once``, ``report``, ``cluster``, error lines) passes it through
:func:`terminal_safe`; JSON keeps the true string and lets its encoder escape it.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "["
    "\x00-\x1f\x7f"  # C0 controls (tab and newline too: one name is one line) and DEL
    "\x80-\x9f"  # C1 controls: U+009B is CSI, U+009D OSC, on terminals that take 8-bit codes
    "\u061c\u200e\u200f"  # bidi marks
    "\u2028\u2029"  # line and paragraph separators
    "\u202a-\u202e\u2066-\u2069"  # bidi embeddings, overrides and isolates
    "]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control, separator and bidi character written as an escape.

    ``"\\x1b]0;pwned\\x07"`` becomes the visible ``\\x1b]0;pwned\\x07``; anything printable
    (accents, CJK, emoji) is left as it is, and a string with nothing to escape is returned
    as the same object. Rich markup is not this function's business: views that render markup
    print outside strings as literal text.
    """
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escaped, text)
