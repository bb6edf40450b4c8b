"""A modal listing every field of one process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputop.model.fields import PROCESS_FIELDS

_LABELS = {field.path: field.label for field in PROCESS_FIELDS}

RECORDED_ELSEWHERE = "n/a: recorded elsewhere"
"""What a replay says where a field would name something on this machine."""


def recorded_fields(fields: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``fields`` of a replayed process: its PID is the recorded machine's, so it names no
    process here, nor a PID namespace of this machine (what the live details work out)."""
    changed: list[tuple[str, str]] = []
    for label, value in fields:
        if label == _LABELS["pid"]:
            value = f"{value} (on the recorded machine)"
        elif label in (_LABELS["local_pid"], _LABELS["foreign"]):
            value = RECORDED_ELSEWHERE
        changed.append((label, value))
    return tuple(changed)


class ProcessDetails(ModalScreen[None]):
    """Shows (label, value) pairs, as made by ``process_rows.detail_fields``."""

    CSS_PATH = "process_details.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "dismiss", "Close"),
    ]

    def __init__(self, title: str, fields: Sequence[tuple[str, str]]) -> None:
        """Show ``fields`` under ``title``."""
        super().__init__()
        self.details_title = title
        self.fields = tuple(fields)
        """The (label, value) pairs shown, in order."""

    def compose(self) -> ComposeResult:
        """A bordered box with one line per field (long values wrap)."""
        # Replaying, the PIDs are the recorded machine's (the table's app says what plays).
        tick = getattr(self.app, "last_tick", None)
        if getattr(tick, "replay", None) is not None:
            self.fields = recorded_fields(self.fields)
        box = VerticalScroll(id="details-box")
        box.border_title = self.details_title
        box.border_subtitle = "Esc closes"
        with box:
            yield Static(self._grid(), id="details-fields")

    def _grid(self) -> Table:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in self.fields:
            grid.add_row(label, Text(value))
        return grid
