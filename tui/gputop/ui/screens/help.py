"""The key help: every binding of the app, its screens and widgets, grouped."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

Row = tuple[str, str]
"""(keys, what they do)."""


def binding_rows(bindings: Iterable[BindingType], skip: Iterable[str] = ()) -> list[Row]:
    """(key, description) for each binding that has a description, same actions merged."""
    skipped = set(skip)
    by_key: dict[str, list[str]] = {}
    for item in bindings:
        binding = item if isinstance(item, Binding) else Binding(*item)
        if not binding.description or binding.action in skipped:
            continue
        key = binding.key_display or _KEY_NAMES.get(binding.key, binding.key)
        # One key with state-dependent actions (Space: pause, resume) is one row.
        descriptions = by_key.setdefault(key, [])
        if binding.description not in descriptions:
            descriptions.append(binding.description)
    return [(key, " / ".join(descriptions)) for key, descriptions in by_key.items()]


_KEY_NAMES = {
    "space": "Space",
    "home": "Home",
    "end": "End",
    "slash": "/",
    "plus": "+",
    "minus": "-",
    "escape": "Esc",
    "enter": "Enter",
    "question_mark": "?",
    "tab": "Tab",
}


def help_sections(app_bindings: Iterable[BindingType]) -> list[tuple[str, list[Row]]]:
    """The sections of the help, read from the classes' own ``BINDINGS`` (the app's given:
    the app opens this screen, so this screen does not import the app)."""
    from gputop.ui.screens.history import HistoryScreen
    from gputop.ui.screens.main import MainScreen
    from gputop.ui.widgets.gpu_panel import GpuPanel
    from gputop.ui.widgets.process_table import ProcessTable

    main = MainScreen.BINDINGS
    replay_actions = ("step(-1)", "step(1)", "speed(-1)", "speed(1)", "goto", "seek(0)", "seek(-1)")
    general = binding_rows(app_bindings) + binding_rows(
        main, skip=(*replay_actions, "interval(-1)", "interval(1)")
    )
    general.append(("Ctrl+P", "Command palette"))
    live = binding_rows(
        [b for b in main if isinstance(b, Binding) and b.action.startswith("interval")]
    )
    replay = binding_rows(
        [b for b in main if isinstance(b, Binding) and b.action in replay_actions]
    )
    panels = [("Tab", "Focus the next panel or table"), *binding_rows(GpuPanel.BINDINGS)]
    # Enter is DataTable's own row selection, which the table answers with the details.
    processes = [("Enter", "Details"), *binding_rows(ProcessTable.BINDINGS)]
    history = binding_rows(HistoryScreen.BINDINGS)
    return [
        ("General", general),
        ("Live", live),
        ("GPU panels", panels),
        ("History", history),
        ("Replay", replay),
        ("Processes", processes),
    ]


def balanced_split(heights: list[int]) -> int:
    """Where to cut the sections into two columns, in order, so the taller one is shortest."""
    return min(range(len(heights) + 1), key=lambda cut: max(sum(heights[:cut]), sum(heights[cut:])))


def _table(rows: list[Row]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", min_width=7)
    table.add_column()
    for keys, description in rows:
        table.add_row(Text(keys), Text(description))
    return table


class HelpScreen(ModalScreen[None]):
    """Every key, grouped; Esc, q or ? closes."""

    CSS_PATH = Path(__file__).parent / "dialogs.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close"),
    ]

    sections: list[tuple[str, list[Row]]]
    """What the screen lists (set when composed)."""

    def compose(self) -> ComposeResult:
        """A title, then the sections in two columns."""
        sections = self.sections = help_sections(self.app.BINDINGS)
        half = balanced_split([len(rows) + 2 for _, rows in sections])
        with VerticalScroll(id="help-box", classes="dialog"):
            yield Label("gputop keys", classes="dialog-title")
            with Horizontal(id="help-columns"):
                for column in (sections[:half], sections[half:]):
                    with Vertical(classes="help-column"):
                        for title, rows in column:
                            yield Label(title, classes="help-section")
                            yield Static(_table(rows), classes="help-table")
            yield Static(
                "Values a GPU does not report read n/a; its detail line says why. "
                "Tab moves focus; the mouse is optional.",
                classes="dialog-hint",
            )

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss(None)
