"""What is above a screen in its app's stack: a full screen covering it, so that drawing on
it now is wasted, and the history screen that follows its snapshots.

Textual hands what a screen under others repaints to the screen on top, as regions for that
screen to repaint itself (so that a dialog's see-through background stays current). Under
a full screen those regions are the top screen's own content drawn again: each tick of the
main screen under the history screen, and each refresh of the fleet under a node's screen,
repainted the whole terminal (18 KB a refresh on 120x40, benchmarks/README). A screen
covered this way keeps what arrives and draws it when it is back on top; under a dialog
(a ``ModalScreen``) it draws as it comes, since it shows around the dialog.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import ModalScreen, Screen


def _above(screen: Screen[Any]) -> list[Screen[Any]]:
    """The screens above ``screen`` in its app's stack (none when it is not in it)."""
    stack = screen.app.screen_stack
    return stack[stack.index(screen) + 1 :] if screen in stack else []


def covered(screen: Screen[Any]) -> bool:
    """A full screen (not a dialog) is above ``screen`` in its app's stack."""
    return any(not isinstance(other, ModalScreen) for other in _above(screen))


def follower(screen: Screen[Any]) -> Callable[..., None] | None:
    """The ``append`` of the screen above ``screen`` that follows its snapshots (a GPU's
    history), under a dialog too (help or the command palette over it)."""
    for other in _above(screen):
        append = getattr(other, "append", None)
        if callable(append):
            return append  # type: ignore[no-any-return]
    return None
