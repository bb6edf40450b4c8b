"""Screen 2 of ``gputop cluster``: one node, drawn by the single-box main screen.

The ticks come from that node's own pipeline (``gputop.pipeline.node_feed``: its recent past
from Prometheus, then each fleet refresh), so the panels, sparklines, MIG rows, history
screen and process table are the ones a local box has. What differs: nothing here can be
signalled, the refresh interval is the fleet's, pods stand in for processes where the
exporter's labels name them, and Esc goes back to the fleet.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Static

from gputop.model import Snapshot
from gputop.model.fleet import FleetSnapshot
from gputop.model.fleet_health import NodeHealth
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.tick import Tick
from gputop.ui.screens.covered import covered
from gputop.ui.screens.main import MainScreen
from gputop.ui.settings import UiSettings
from gputop.ui.toasts import toast
from gputop.ui.widgets.pods_table import PodsTable, pod_rows

NODE_SCREEN_CSS = Path(__file__).parent / "node.tcss"


HEALTH_LINES = 5
"""Lines of the node's health shown at most (the rest: "+N more")."""


def node_health_lines(fleet: FleetSnapshot | None, host: str) -> list[str]:
    """``XID`` and ``alert`` lines of ``host`` from the fleet's health, newest state."""
    if fleet is None or fleet.health is None:
        return []
    health = fleet.health.node(host)
    if health == NodeHealth(host):
        return []
    lines = [f"⚠ {xid.text()}" for xid in health.xids]
    lines += [f"⚠ alert {alert.text()}" for alert in health.alerts]
    if len(lines) > HEALTH_LINES:
        lines = [*lines[: HEALTH_LINES - 1], f"+{len(lines) - HEALTH_LINES + 1} more"]
    return [terminal_safe(line) for line in lines]


class NodeScreen(MainScreen):
    """One remote node: GPU panels, processes or pods, MIG tree, history."""

    # The main screen's sheet is the app's (``FleetApp.CSS_PATH``): a pushed screen reads
    # only its own class's CSS_PATH.
    CSS_PATH = NODE_SCREEN_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Fleet", key_display="Esc"),
    ]

    def __init__(self, settings: UiSettings, host: str, interval: float = 5.0) -> None:
        """The screen of ``host``; its ticks arrive through ``show_tick``.

        The header always names the node: it is the remote machine's name, not this one's.
        """
        # Until the node's history arrives (a query_range away) the header says what is
        # awaited, as it does for a driver still starting, instead of a blank screen.
        placeholder = Tick(
            seq=0,
            snapshot=Snapshot(timestamp=None, host=terminal_safe(host)),
            interval=interval,
            waiting=f"reading {terminal_safe(host)}'s recent samples…",
        )
        super().__init__(dataclasses.replace(settings, show_host=True), placeholder)
        self.host = host
        self.fleet: FleetSnapshot | None = None
        """The newest fleet answer: its health names this node's XIDs and firing alerts."""
        self._health_shown: list[str] | None = None
        """The health lines on screen (None: none drawn yet)."""

    def on_mount(self) -> None:
        """The pods table beside the processes (shown when the snapshot has pods), and the
        node's health above them (shown when it has XIDs or firing alerts)."""
        self.query_one("#lower").mount(PodsTable(id="pods"))
        self.mount(Static(id="node-health"), before="#lower")
        if self.tick is not None:
            self._show_pods(self.tick)
        self.show_health(self.fleet)

    def show_health(self, fleet: FleetSnapshot | None) -> None:
        """The node's XIDs and firing alerts (from the fleet's server), a line each."""
        self.fleet = fleet
        found = self.query("#node-health")
        if not found or covered(self):
            return  # not mounted yet, or under the history: on_mount or resume shows it
        lines = node_health_lines(fleet, self.host)
        if lines == self._health_shown:
            return  # an update lays the whole screen out again: every refresh, for nothing
        self._health_shown = lines
        self.set_class(bool(lines), "-health")
        found.first(Static).update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"))

    def show_tick(self, tick: Tick) -> None:
        """The main screen's drawing, plus the pods (under the history: when back)."""
        super().show_tick(tick)
        if self.is_mounted and not covered(self):
            self._show_pods(tick)

    def on_screen_resume(self) -> None:
        """Back from the history: the health that changed meanwhile (the main screen's
        handler, called too, shows the newest tick and its pods)."""
        self.show_health(self.fleet)

    def _show_pods(self, tick: Tick) -> None:
        snapshot = tick.snapshot
        pods = bool(pod_rows(snapshot))
        processes = any(gpu.processes for gpu in snapshot.gpus)
        self.set_class(pods, "-pods")
        self.set_class(pods and not processes, "-pods-only")
        found = self.query(PodsTable)
        if pods and found:
            found.first().show(snapshot)
        if self.has_class("-pods-only") and self._area_of_focus() == "processes":
            self.action_area("processes")

    def _lower_rows_wanted(self) -> int:
        """The pods table's rows where it stands beside the processes, or for them."""
        wanted = super()._lower_rows_wanted()
        found = self.query(PodsTable)
        if self.has_class("-pods") and found:
            pods = 2 + len(found.first().rows)  # its status line and column titles
            return pods if self.has_class("-pods-only") else max(wanted, pods)
        return wanted

    def action_area(self, name: str) -> None:
        """As on a local box, except that the pods stand in for hidden processes."""
        if name == "processes" and self.has_class("-pods-only"):
            found = self.query("#pods-data")
            if found:
                self.set_focus(found.first())
                return
        super().action_area(name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No interval keys: the fleet's refresh sets the pace; no process filter where
        pods stand in for the (hidden) process table."""
        if action == "interval":
            return False
        if action == "filter" and self.has_class("-pods-only"):
            return False
        return super().check_action(action, parameters)

    def action_back(self) -> None:
        """Back to the fleet."""
        close_node = getattr(self.app, "close_node", None)
        if callable(close_node):
            close_node()
        else:
            self.dismiss()

    def action_signal_refused(self, name: str) -> None:
        """Say why a signal key does nothing here."""
        toast(
            self.app,
            "signal",
            f"SIG{name}: a remote node's PIDs name no process on this machine",
            title="Signal not sent",
        )
