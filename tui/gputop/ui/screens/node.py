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

from textual.binding import Binding, BindingType

from gputop.model import Snapshot
from gputop.pipeline.tick import Tick
from gputop.ui.screens.main import MainScreen
from gputop.ui.settings import UiSettings
from gputop.ui.toasts import toast
from gputop.ui.widgets.pods_table import PodsTable, pod_rows

NODE_SCREEN_CSS = Path(__file__).parent / "node.tcss"


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
            snapshot=Snapshot(timestamp=None, host=host),
            interval=interval,
            waiting=f"reading {host}'s recent samples…",
        )
        super().__init__(dataclasses.replace(settings, show_host=True), placeholder)
        self.host = host

    def on_mount(self) -> None:
        """The pods table beside the processes (shown when the snapshot has pods)."""
        self.query_one("#lower").mount(PodsTable(id="pods"))
        if self.tick is not None:
            self._show_pods(self.tick)

    def show_tick(self, tick: Tick) -> None:
        """The main screen's drawing, plus the pods."""
        super().show_tick(tick)
        if self.is_mounted:
            self._show_pods(tick)

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
