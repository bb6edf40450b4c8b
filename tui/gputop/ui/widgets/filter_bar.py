"""The filter the process table and the fleet table answer alike: ``/`` opens an input under
the table, typing filters as it goes, Enter keeps the filter and goes back to the table, Esc
clears it."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Input, Static

from gputop.ui.widgets.process_grid import ProcessGrid


class FilteredTable(Widget):
    """A table widget with a filter bar (``#<FILTER_ID>-bar``: a label and the input).

    The input is created the first time it is wanted: most runs never filter, and an Input
    costs first-frame time. A subclass names the input (``FILTER_ID``, its TCSS keys on it),
    says what can be typed (``FILTER_PLACEHOLDER``), and provides ``_table`` and ``_apply``
    (bring the table in line with ``filter_text``).
    """

    FILTER_ID: ClassVar[str]
    FILTER_PLACEHOLDER: ClassVar[str]
    filter_text: str

    @property
    def _table(self) -> ProcessGrid:
        raise NotImplementedError

    def _apply(self) -> None:
        raise NotImplementedError

    def _filter_field(self) -> Input | None:
        found = self.query(f"#{self.FILTER_ID}")
        return found.first(Input) if found else None

    async def action_open_filter(self) -> None:
        """Show the filter input and type into it."""
        field = self._filter_field()
        if field is None:
            field = Input(
                placeholder=self.FILTER_PLACEHOLDER,
                id=self.FILTER_ID,
                classes="table-filter",
                compact=True,
            )
            # No blinking cursor where animations are off (NO_COLOR-style quiet terminals,
            # screenshots).
            field.cursor_blink = self.app.animation_level != "none"
            label = Static("filter ", id=f"{self.FILTER_ID}-label")
            await self.mount(Horizontal(label, field, id=f"{self.FILTER_ID}-bar"))
        self.add_class("-filtering")
        field.focus()

    def action_clear_filter(self) -> None:
        """Drop the filter, hide its input and go back to the table."""
        field = self._filter_field()
        if field is not None:
            field.value = ""
        self.filter_text = ""
        self.remove_class("-filtering")
        self._table.focus()
        self._apply()

    def filter_to_clear(self) -> bool:
        """Whether Esc has a filter to clear (else it goes through: the screen's, the app's)."""
        return bool(self.filter_text) or self.has_class("-filtering")

    @on(Input.Changed, ".table-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != self.filter_text:
            self.filter_text = event.value
            self._apply()

    @on(Input.Submitted, ".table-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.filter_text:
            self.remove_class("-filtering")
        self._table.focus()
