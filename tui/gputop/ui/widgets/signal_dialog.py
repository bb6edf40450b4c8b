"""A modal that asks before a signal is sent to a process."""

from __future__ import annotations

import signal
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class SignalDialog(ModalScreen[bool]):
    """Confirm sending ``signal`` to ``pid``; dismisses with True to send, False to cancel.

    Cancel has the focus, so an Enter pressed out of habit sends nothing.
    """

    CSS_PATH = "signal_dialog.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Send"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, pid: int, sig: signal.Signals, description: str) -> None:
        """Ask about ``sig`` for ``pid``; ``description`` says which process it is."""
        super().__init__()
        self.pid = pid
        """The PID the signal would go to (in this PID namespace)."""
        self.sig = sig
        """The signal to send."""
        self.description = description

    def compose(self) -> ComposeResult:
        """The question, the process, and Send / Cancel."""
        with Vertical(id="signal-box"):
            yield Static(f"Send {self.sig.name} to PID {self.pid}?", id="signal-question")
            yield Static(Text(self.description), id="signal-process")
            with Horizontal(id="signal-buttons"):
                yield Button(f"Send {self.sig.name} (y)", variant="error", id="signal-send")
                yield Button("Cancel (n)", variant="default", id="signal-cancel")

    def on_mount(self) -> None:
        """Start on Cancel."""
        self.query_one("#signal-cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Send answers True, Cancel False."""
        event.stop()
        self.dismiss(event.button.id == "signal-send")

    def action_answer(self, send: bool) -> None:
        """Close with ``send`` as the answer."""
        self.dismiss(send)
