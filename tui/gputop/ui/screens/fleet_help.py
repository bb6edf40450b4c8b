"""The key help of ``gputop cluster``: the fleet's keys, then the node screen's."""

from __future__ import annotations

from collections.abc import Iterable

from textual.binding import Binding, BindingType

from gputop.ui.screens.help import Row, binding_rows, help_sections
from gputop.ui.screens.main import MainScreen
from gputop.ui.screens.node import NodeScreen
from gputop.ui.widgets.fleet_table import FleetTable

NODE_SECTIONS = ("GPU panels", "History", "Processes")
"""Sections of the single-box help that hold on a node screen as they are."""


def fleet_help_sections(app_bindings: Iterable[BindingType]) -> list[tuple[str, list[Row]]]:
    """General keys, the fleet table's, the node screen's, then the single-box sections a
    node screen shares."""
    general = [*binding_rows(app_bindings), ("Ctrl+P", "Command palette")]
    fleet = [
        ("↑ ↓", "Select a node"),
        ("Enter", "Open the node: its GPUs, history, processes or pods"),
        *binding_rows(FleetTable.BINDINGS),
    ]
    wanted = {"toggle_pause", "resume", "toggle_mig"}
    node = [
        *binding_rows(NodeScreen.BINDINGS),
        *binding_rows(
            b for b in MainScreen.BINDINGS if isinstance(b, Binding) and b.action in wanted
        ),
        ("Tab", "GPU panels, processes, MIG tree"),
    ]
    # A node screen is read-only and paced by the fleet's refresh: the single-box help's
    # served form is the one without signal and interval keys.
    sections = help_sections((), served=True)
    shared = [(title, rows) for title, rows in sections if title in NODE_SECTIONS]
    return [("General", general), ("Fleet", fleet), ("Node", node), *shared]
