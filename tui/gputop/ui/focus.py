"""Focus after the browser gives it back (``gputop serve``).

A browser tab tells the app when it loses and regains focus (textual-serve's ``blur`` and
``focus``). Textual keeps the focused widget on blur and restores it on focus; but a blur
that comes before anything has focus (the page loading), or two blurs in a row, leave it
nothing to restore, and then the arrows and Enter reach no widget: the letters, which are the
app's bindings, work and the table keys do not. After each regained focus, a screen with
nothing focused gets its ``AUTO_FOCUS`` widget, as when it was first shown.
"""

from __future__ import annotations

from textual.app import App
from textual.css.query import NoMatches


def focus_if_nothing_is(app: App[object]) -> None:
    """Focus the screen's ``AUTO_FOCUS`` widget when no widget has focus, and have the
    footer drawn again: it skips redrawing while the app is blurred, so a page that loaded
    blurred kept an empty footer until the focus moved."""
    screen = app.screen
    screen.refresh_bindings()
    if screen.focused is not None or not screen.AUTO_FOCUS:
        return
    try:
        target = screen.query(screen.AUTO_FOCUS).first()
    except NoMatches:
        return
    if target.focusable:
        target.focus(scroll_visible=False)
