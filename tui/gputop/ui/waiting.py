"""A screen that says what gputop waits for before it has anything to show.

Run before the main app when the source is not ready (a pipe nobody has written to yet): it
shows the message and how long it has waited, quits on ``q`` or Ctrl+C, and ends by itself
once ``ready()`` says so. It is handed a callable, never the source: the UI does not read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import Static

from gputop.model.safe_text import terminal_safe

POLL_SECONDS = 0.1
"""How often ``ready`` is asked."""


class WaitingApp(App[bool]):
    """Shows ``message`` until ``ready()``; returns True then, False when the user quit."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "give_up", "quit"),
        Binding("ctrl+c", "give_up", "quit", priority=True),
    ]

    def __init__(self, message: str, ready: Callable[[], bool], *, theme: str = "dark") -> None:
        super().__init__()
        self._message = message
        self._is_ready = ready
        self._started = time.monotonic()
        self.theme = "textual-light" if theme == "light" else "textual-dark"

    def compose(self) -> ComposeResult:
        """The message, centred."""
        yield Static(self._text(), id="waiting")

    def on_mount(self) -> None:
        """Ask ``ready`` a few times a second."""
        self.set_interval(POLL_SECONDS, self._check)

    def _text(self) -> Content:
        waited = int(time.monotonic() - self._started)
        # Plain text, the message's file name made terminal-safe: it is the user's, or a pipe's.
        message = terminal_safe(self._message)
        return Content(f"gputop: {message}\n\nwaited {waited} s; q quits")

    def _check(self) -> None:
        if self._is_ready():
            self.exit(True)
            return
        self.query_one("#waiting", Static).update(self._text())

    def action_give_up(self) -> None:
        """Quit without waiting any longer."""
        self.exit(False)
