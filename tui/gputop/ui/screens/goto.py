"""The replay "go to" dialog: an index or a time, checked before the dialog closes."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from gputop.sources.playback.replay import ReplayStatus
from gputop.sources.playback.seek import TargetError, TimeTarget, parse_target, time_examples


class GotoDialog(ModalScreen[int | TimeTarget | None]):
    """Ask where to go; dismisses with an index, a time, or None (cancelled)."""

    CSS_PATH = Path(__file__).parent / "dialogs.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, status: ReplayStatus) -> None:
        """Offer the range of ``status``'s recording."""
        super().__init__()
        self.status = status

    def compose(self) -> ComposeResult:
        """Title, hint, input, error line."""
        last = self.status.length - 1
        with Vertical(id="goto-box", classes="dialog"):
            yield Label("Go to", classes="dialog-title")
            span = self.status.span
            timed = f"; the recording {span.describe()}" if span.start is not None else ""
            yield Static(
                f"a document index 0..{last} (-1 is the last), or a time such as "
                f"{time_examples(self.status.timestamp)}{timed}",
                classes="dialog-hint",
            )
            yield Input(placeholder="index or time", id="goto-input")
            yield Static("", id="goto-error", classes="dialog-error")

    @on(Input.Submitted, "#goto-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            target = parse_target(event.value, self.status.span, self.status.timestamp)
        except TargetError as error:
            self.query_one("#goto-error", Static).update(Content(str(error)))  # not markup
            return
        self.dismiss(target)

    def action_cancel(self) -> None:
        """Close without moving."""
        self.dismiss(None)
