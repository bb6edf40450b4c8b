"""Screen 1 of ``gputop cluster``: the fleet, one row per node.

The top line answers "how many GPUs are idle or waiting right now, and where" and says how
fresh the data is; a failed refresh adds an error line and keeps the last good rows; Enter on
a node opens its screen (``NodeScreen``), which the app pushes.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen

from gputop.model.fleet import FleetSnapshot
from gputop.model.safe_text import terminal_safe
from gputop.ui.render.fleet_summary import freshness, summary
from gputop.ui.screens.covered import covered
from gputop.ui.widgets.fleet_table import FleetTable
from gputop.ui.widgets.footer import Footer
from gputop.ui.widgets.status_line import Bar, Segment

FLEET_SCREEN_CSS = Path(__file__).parent / "fleet.tcss"


class FleetHeader(Bar):
    """gputop · idle and waiting GPUs, where ......... data 14 s old, scrape 30 s."""

    def show(self, fleet: FleetSnapshot | None) -> None:
        """Describe ``fleet`` (None before the first answer)."""
        left: tuple[Segment, ...] = ((" gputop", "title"), *summary(fleet))
        fresh = None if fleet is None else freshness(fleet)
        right: tuple[Segment, ...] = () if fresh is None else ((fresh, "text"), (" ", "text"))
        self.set_segments(left, right)


class ErrorLine(Bar):
    """⚠ what went wrong with the last refresh, and how old the rows shown are."""

    def show(self, fleet: FleetSnapshot, last_good: datetime | None) -> None:
        """Say ``fleet.error`` (the screen hides this line when there is none)."""
        left: list[Segment] = [(" ⚠ ", "error"), (fleet.error or "", "error")]
        if fleet.nodes and last_good is not None:
            left += [("  ·  ", "dim"), (f"showing the answer of {last_good:%H:%M:%S}", "text")]
        elif fleet.nodes:
            left += [("  ·  ", "dim"), ("showing the last answer", "text")]
        self.set_segments(tuple(left), ())


class FleetScreen(Screen[None]):
    """The header, the error line (when a refresh failed), the nodes, the footer."""

    CSS_PATH = FLEET_SCREEN_CSS
    AUTO_FOCUS = "#fleet-data"

    def __init__(self, source_label: str = "", refresh: float = 5.0) -> None:
        """An empty fleet; ``show`` fills it."""
        super().__init__()
        self.source_label = source_label
        self.refresh_interval = refresh
        self.fleet: FleetSnapshot | None = None
        """The answer shown."""
        self.last_good: datetime | None = None
        """When the last answer without an error was taken."""
        self._drawn: FleetSnapshot | None = None
        """The answer on screen (``fleet`` waits while a node's screen covers this one)."""

    def compose(self) -> ComposeResult:
        """Header, error line, table, footer."""
        yield FleetHeader(id="fleet-header")
        yield ErrorLine(id="fleet-error")
        yield FleetTable(source_label=self.source_label, refresh=self.refresh_interval, id="fleet")
        yield Footer()

    def on_mount(self) -> None:
        """Draw what arrived before mounting (or the waiting line)."""
        self._draw()

    def show(self, fleet: FleetSnapshot) -> None:
        """Display ``fleet``."""
        self.fleet = fleet
        if fleet.error is None:
            self.last_good = fleet.taken_at
        for notice in fleet.notices:  # each comes once per run (two exporters of one name)
            self.app.notify(terminal_safe(notice), severity="warning", timeout=15)
        if self.is_mounted and not covered(self):
            self._draw()

    def on_screen_resume(self, _event: events.ScreenResume) -> None:
        """Back on top: draw the answer that came while a node's screen covered this one."""
        if self.fleet is not self._drawn:
            self._draw()

    def _draw(self) -> None:
        fleet = self.fleet
        self._drawn = fleet
        self.query_one(FleetHeader).show(fleet)
        failed = fleet is not None and fleet.error is not None
        self.set_class(failed, "-error")
        if fleet is None:
            return
        if failed:
            self.query_one(ErrorLine).show(fleet, self.last_good)
        self.query_one(FleetTable).show(fleet)

    def on_fleet_table_node_chosen(self, message: FleetTable.NodeChosen) -> None:
        """Enter on a node: the app opens its screen."""
        message.stop()
        open_node = getattr(self.app, "open_node", None)
        if callable(open_node):
            open_node(message.host)

    async def action_filter(self) -> None:
        """Filter the nodes (the table's own ``/``)."""
        await self.query_one(FleetTable).action_open_filter()
