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
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in self.fields:
            grid.add_row(label, Text(value))
        box = VerticalScroll(id="details-box")
        box.border_title = self.details_title
        box.border_subtitle = "Esc closes"
        with box:
            yield Static(grid, id="details-fields")
