"""terminal_safe: nothing from outside reaches a terminal as an instruction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gputop.model.safe_text import terminal_safe


def test_escape_sequences_are_shown_not_obeyed() -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2JA100"
    assert terminal_safe(hostile) == "\\x1b]0;pwned\\x07\\x1b[2JA100"


def test_a_newline_cannot_forge_a_line() -> None:
    assert terminal_safe("pod\nGPU 1  99%") == "pod\\x0aGPU 1  99%"
    assert "\n" not in terminal_safe("a\r\nb\tc")


def test_eight_bit_csi_and_bidi_overrides_are_escaped() -> None:
    assert terminal_safe("x\x9b2Jy") == "x\\x9b2Jy"
    assert terminal_safe("evil\u202egpj.exe") == "evil\\u202egpj.exe"
    assert terminal_safe("\u2066a\u2069") == "\\u2066a\\u2069"


def test_printable_text_is_returned_untouched() -> None:
    for text in ("NVIDIA H200", "python train.py --lr 3e-4", "Grüße 日本 🚀", "[bold red]x[/]"):
        assert terminal_safe(text) is text


@given(st.text())
def test_no_control_survives(text: str) -> None:
    safe = terminal_safe(text)
    for char in safe:
        code = ord(char)
        assert code >= 0x20 and not 0x7F <= code <= 0x9F
        assert char not in "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
        assert char not in "\u2066\u2067\u2068\u2069"
