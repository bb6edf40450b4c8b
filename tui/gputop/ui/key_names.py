"""The Unicode names of the keys Textual looks up, answered without ``unicodedata``.

Textual turns key names into characters and back by Unicode name: the footer shows ``/`` for
``slash`` after ``unicodedata.lookup("solidus")``, and every change of focus asks, for each
key bound above the focused widget, which character it types (``key_to_character``). Each
lookup of a name probes ``unicodedata``'s name tables, which live in the module's shared
library, and each page it touches is read in with its neighbours (64 KiB at a time): the
two dozen lookups of gputop's start (half of them of names that do not exist, such as ``t``
or ``home``) made the library 0.75 MiB of the process's RSS, against 0.1 MiB once imported.

``KeyNames`` answers those lookups from the table below, which holds every printable ASCII
character's name and the control keys Textual names, and says "no such name" for one
character and for the names of Textual's other keys; anything else goes to ``unicodedata``.
A test holds each answer to ``unicodedata``'s.
"""

from __future__ import annotations

import unicodedata
from typing import Any

NAMES: dict[str, str] = {
    "EXCLAMATION MARK": "!",
    "QUOTATION MARK": '"',
    "NUMBER SIGN": "#",
    "DOLLAR SIGN": "$",
    "PERCENT SIGN": "%",
    "AMPERSAND": "&",
    "APOSTROPHE": "'",
    "LEFT PARENTHESIS": "(",
    "RIGHT PARENTHESIS": ")",
    "ASTERISK": "*",
    "PLUS SIGN": "+",
    "COMMA": ",",
    "HYPHEN-MINUS": "-",
    "FULL STOP": ".",
    "SOLIDUS": "/",
    "COLON": ":",
    "SEMICOLON": ";",
    "LESS-THAN SIGN": "<",
    "EQUALS SIGN": "=",
    "GREATER-THAN SIGN": ">",
    "QUESTION MARK": "?",
    "COMMERCIAL AT": "@",
    "LEFT SQUARE BRACKET": "[",
    "REVERSE SOLIDUS": "\\",
    "RIGHT SQUARE BRACKET": "]",
    "CIRCUMFLEX ACCENT": "^",
    "LOW LINE": "_",
    "GRAVE ACCENT": "`",
    "LEFT CURLY BRACKET": "{",
    "VERTICAL LINE": "|",
    "RIGHT CURLY BRACKET": "}",
    "TILDE": "~",
    # Aliases Unicode gives control characters, which Textual's key names turn into.
    "SPACE": " ",
    "TAB": "\t",
    "ESCAPE": "\x1b",
    "BACKSPACE": "\x08",
    "DELETE": "\x7f",
}
"""Upper-case Unicode name (or alias) -> character."""

NOT_NAMES: frozenset[str] = frozenset(
    {
        *("UP", "DOWN", "LEFT", "RIGHT", "HOME", "END", "PAGEUP", "PAGEDOWN", "INSERT"),
        *("ENTER", "RETURN", "SLASH", "BACKSLASH", "PLUS", "MINUS", "AT", "UNDERSCORE"),
        *(f"F{number}" for number in range(1, 25)),
    }
)
"""Textual's names of keys that are no Unicode name (looked up all the same)."""


class KeyNames:
    """Stands in for the ``unicodedata`` module where Textual names keys."""

    def lookup(self, name: str) -> str:
        """``unicodedata.lookup``: the character named ``name`` (any case).

        Raises:
            KeyError: no character has that name.
        """
        upper = name.upper()
        found = NAMES.get(upper)
        if found is not None:
            return found
        # No character's name is a single character.
        if len(name) == 1 or upper in NOT_NAMES:
            raise KeyError(f"undefined character name '{name}'")
        return unicodedata.lookup(name)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(unicodedata, attribute)
