"""The ``gputop cluster`` app: the fleet screen, and a node's screen over it.

Like the single-box app it never polls: a ``FleetLoop`` (a thread in real runs, a hand in
tests) asks the fleet source for every node and, while a node screen is open, moves that
node's pipeline; answers and ticks arrive as messages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen

from gputop.model.fleet import FleetSnapshot
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.commands import Command
from gputop.pipeline.fleet_loop import DEFAULT_REFRESH, FleetLoop
from gputop.pipeline.tick import Tick
from gputop.ui.compat import apply_patches, driver_class
from gputop.ui.fleet_messages import FleetArrived, FleetFailed, NodeTickArrived
from gputop.ui.focus import focus_if_nothing_is
from gputop.ui.safe_view import SafeView
from gputop.ui.screens.covered import follower
from gputop.ui.screens.fleet import FLEET_SCREEN_CSS, FleetScreen
from gputop.ui.screens.main import MAIN_SCREEN_CSS
from gputop.ui.screens.node import NodeScreen
from gputop.ui.settings import UiSettings
from gputop.ui.toasts import toast


class FleetApp(App[int]):
    """Every node of a fleet; Enter opens one, Esc comes back."""

    CSS_PATH: ClassVar[list[str | PurePath]] = [
        Path(__file__).parent / "app.tcss",
        FLEET_SCREEN_CSS,
        # The node screen is a main screen: its sheet is read with the app's.
        MAIN_SCREEN_CSS,
    ]
    TITLE = "gputop cluster"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("h", "help", "Help", show=False),
    ]

    def __init__(
        self,
        loop: FleetLoop,
        settings: UiSettings | None = None,
        *,
        refresh: float = DEFAULT_REFRESH,
        now: Callable[[], datetime] = datetime.now,
    ) -> None:
        """Create the app around ``loop``; nothing runs until the app is mounted.

        Args:
            loop: asks the fleet source and follows a node.
            settings: presentation (``source_label``: the server, as the header says it);
                a node screen is always read-only.
            refresh: seconds between fleet refreshes, as the header says them.
            now: wall-clock time (the history screen's "stale" rule); tests fix it.
        """
        super().__init__()
        self._safe = SafeView()
        """Every answer's and node tick's outside strings made safe to draw (``safe_view``)."""
        given = settings or UiSettings()
        self.settings = self._safe(dataclasses.replace(given, readonly=True))
        self.loop = loop
        self.refresh_interval = refresh
        self.now = now
        self.fleet: FleetSnapshot | None = None
        """The newest answer shown."""
        self.node_ticks = 0
        """Node ticks shown (tests read it)."""
        if not self.settings.animate:
            self.animation_level = "none"
        self.theme = self.settings.textual_theme

    def get_driver_class(self) -> type[Driver]:
        """As the single-box app: a Linux terminal gets the driver that does not poll, and
        repaints write only the spans that changed (``compat``: each patch that applies)."""
        apply_patches()
        return driver_class(super().get_driver_class())

    @property
    def fleet_screen(self) -> FleetScreen:
        """The one fleet screen (created on first use)."""
        screen = getattr(self, "_fleet_screen", None)
        if screen is None:
            screen = FleetScreen(self.settings.source_label, self.refresh_interval)
            self._fleet_screen = screen
        return screen

    def get_default_screen(self) -> Screen[Any]:
        """The fleet is the bottom of the stack."""
        return self.fleet_screen

    def on_app_focus(self) -> None:
        """A browser tab came back: make sure the keys reach a widget (``ui/focus.py``)."""
        self.call_after_refresh(focus_if_nothing_is, self)

    def on_mount(self) -> None:
        """Start the loop."""
        self.loop.start(self._deliver_fleet, self._deliver_node, self._failed)

    # Called by the loop, usually on its thread: post, never touch widgets.

    def _deliver_fleet(self, fleet: FleetSnapshot) -> None:
        self.post_message(FleetArrived(self._safe(fleet)))

    def _deliver_node(self, host: str, tick: Tick) -> None:
        self.post_message(NodeTickArrived(host, self._safe(tick)))

    def _failed(self, error: BaseException) -> None:
        self.post_message(FleetFailed(error))

    # On the UI thread.

    def on_fleet_arrived(self, message: FleetArrived) -> None:
        """Show the newest answer on the fleet screen (even while a node covers it)."""
        self.fleet = message.fleet
        self.fleet_screen.show(message.fleet)
        node = self.node_screen()
        if node is not None:
            node.show_health(message.fleet)

    def node_screen(self) -> NodeScreen | None:
        """The node screen in the stack, if one is open (under a dialog or not)."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, NodeScreen):
                return screen
        return None

    def on_node_tick_arrived(self, message: NodeTickArrived) -> None:
        """Show the node's tick on its screen, if that node's screen is still open."""
        screen = self.node_screen()
        if screen is None or screen.host != message.host:
            return  # closed while the tick was on its way
        previous = screen.newest
        tick = message.tick
        screen.show_tick(tick)
        self.node_ticks += 1
        if previous is not None and previous.snapshot is tick.snapshot:
            return
        append = follower(screen)
        if append is not None:
            # The history screen follows new snapshots while it is open.
            append(tick.snapshot, self.now() if tick.live else None)

    def on_fleet_failed(self, message: FleetFailed) -> None:
        """Say loudly that nothing updates any more, and why."""
        error = message.error
        toast(
            self,
            "source",
            terminal_safe(f"updates stopped: {type(error).__name__}: {error}"),
            title="gputop",
            severity="error",
            timeout=30,
        )

    def open_node(self, host: str) -> None:
        """Open ``host``'s screen; its history and ticks come through the loop."""
        if self.node_screen() is not None:
            return
        screen = NodeScreen(self.settings, host, self.refresh_interval)
        screen.fleet = self.fleet
        self.push_screen(screen)
        self.loop.open_node(host)

    def close_node(self) -> None:
        """Back to the fleet."""
        self.loop.close_node()
        while self.node_screen() is not None and len(self.screen_stack) > 1:
            self.pop_screen()

    def submit(self, command: Command) -> None:
        """A node screen's command (pause), for the node's pipeline."""
        self.loop.submit(command)

    def action_help(self) -> None:
        """Open the key help."""
        # Deferred: the help screen, built on the first ? (a start does not draw it).
        from gputop.ui.screens.fleet_help import fleet_help_sections
        from gputop.ui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            sections = fleet_help_sections(self.BINDINGS)
            self.push_screen(HelpScreen(sections, title="gputop cluster keys"))

    async def action_quit(self) -> None:
        """Tell the loop to stop, then exit with status 0 (not waiting on the loop: a refresh
        stuck on the network must not hold the quit; whoever runs the app aborts it)."""
        self.loop.stop(0.0)
        self.exit(0)

    def on_unmount(self) -> None:
        """Make sure the loop is told to stop whichever way the app ends."""
        self.loop.stop(0.0)
