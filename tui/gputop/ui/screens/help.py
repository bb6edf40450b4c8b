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

from gputop.ui.screens.history import HistoryScreen
from gputop.ui.screens.main import MainScreen
from gputop.ui.widgets.gpu_panel import GpuPanel
from gputop.ui.widgets.process_table import ProcessTable

Row = tuple[str, str]
"""(keys, what they do)."""


def binding_rows(bindings: Iterable[BindingType], skip: Iterable[str] = ()) -> list[Row]:
    """(keys, description) for each binding that has a description.

    One key with state-dependent actions (Space: pause, resume) is one row; so are several
    keys for one action (``?`` and ``h``: help), their keys joined.
    """
    skipped = set(skip)
    rows: list[tuple[list[str], list[str]]] = []
    """(keys, descriptions) in the order first seen."""
    by_key: dict[str, int] = {}
    by_action: dict[tuple[str, str], int] = {}
    for item in bindings:
        binding = item if isinstance(item, Binding) else Binding(*item)
        if not binding.description or binding.action in skipped:
            continue
        key = binding.key_display or _KEY_NAMES.get(binding.key, binding.key)
        action = (binding.action, binding.description)
        row = by_key.get(key, by_action.get(action))
        if row is None:
            row = len(rows)
            rows.append(([], []))
        keys, descriptions = rows[row]
        if key not in keys:
            keys.append(key)
        if binding.description not in descriptions:
            descriptions.append(binding.description)
        by_key[key] = by_action[action] = row
    return [(", ".join(keys), " / ".join(descriptions)) for keys, descriptions in rows]


_SIGNAL_ACTIONS = ("signal('TERM')", "signal('KILL')", "signal('INT')")

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
    "ctrl+c": "Ctrl+C",
}


def help_sections(
    app_bindings: Iterable[BindingType], *, served: bool = False
) -> list[tuple[str, list[Row]]]:
    """The sections of the help, read from the classes' own ``BINDINGS`` (the app's given:
    the app opens this screen, so this screen does not import the app). A served view
    (``gputop serve``) lists no signal keys and no interval keys: it has neither."""
    main = MainScreen.BINDINGS
    replay_actions = ("step(-1)", "step(1)", "speed(-1)", "speed(1)", "goto", "seek(0)", "seek(-1)")
    areas = ("area('gpus')", "area('processes')", "area('mig')", "area_back")
    general = binding_rows(app_bindings) + binding_rows(
        main, skip=(*replay_actions, *areas, "interval(-1)", "interval(1)")
    )
    general.append(("Ctrl+P", "Command palette"))
    general.append(("Tab", "GPU panels, processes, MIG tree"))
    live = binding_rows(
        [b for b in main if isinstance(b, Binding) and b.action.startswith("interval")]
    )
    replay = binding_rows(
        [b for b in main if isinstance(b, Binding) and b.action in replay_actions]
    )
    panels = binding_rows(GpuPanel.BINDINGS)
    # The table has the keys at start: the arrows select a process at once. Enter is
    # DataTable's own row selection, which the table answers with the details.
    processes = [
        ("↑ ↓", "Select a process"),
        ("Enter", "Details (a pod's line: expand)"),
        *binding_rows(
            ProcessTable.BINDINGS,
            skip=("screen.area('gpus')", *(_SIGNAL_ACTIONS if served else ())),
        ),
    ]
    history = binding_rows(HistoryScreen.BINDINGS)
    return [
        ("General", general),
        *([] if served else [("Live", live)]),
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
    """Every key, grouped; Esc, q, ? or h closes."""

    CSS_PATH = Path(__file__).parent / "dialogs.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,h", "close", "Close"),
    ]

    sections: list[tuple[str, list[Row]]]
    """What the screen lists (set when composed)."""

    def __init__(
        self, sections: list[tuple[str, list[Row]]] | None = None, title: str = "gputop keys"
    ) -> None:
        """The help of the single-box view, or ``sections`` (another view's keys)."""
        super().__init__()
        self._given = sections
        self._title = title

    def compose(self) -> ComposeResult:
        """A title, then the sections in two columns."""
        given = self._given
        if given is None:
            settings = getattr(self.app, "settings", None)
            served = bool(getattr(settings, "served", False))
            given = help_sections(self.app.BINDINGS, served=served)
        sections = self.sections = given
        half = balanced_split([len(rows) + 2 for _, rows in sections])
        with VerticalScroll(id="help-box", classes="dialog"):
            yield Label(self._title, classes="dialog-title")
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
