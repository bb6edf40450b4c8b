"""The gputop Textual app: owns the tick loop's lifetime and hands each tick to the screen."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen

from gputop.errors import Fatal
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.loop import TickLoop
from gputop.pipeline.tick import Tick
from gputop.ui.compat import apply_patches, driver_class
from gputop.ui.focus import focus_if_nothing_is
from gputop.ui.messages import SourceFailed, TickArrived
from gputop.ui.safe_view import SafeView
from gputop.ui.screens.covered import follower
from gputop.ui.screens.main import MAIN_SCREEN_CSS, MainScreen
from gputop.ui.settings import UiSettings
from gputop.ui.toasts import toast

if TYPE_CHECKING:
    from gputop.pipeline.commands import Command


class GputopApp(App[int]):
    """Live or replayed GPU monitor.

    The app never polls: a ``TickLoop`` (a poller thread in real runs, a hand-driven loop in
    tests) produces immutable ticks, which arrive as ``TickArrived`` messages; user commands
    go back to the loop with ``submit``.
    """

    # The main screen's sheet is loaded with the app's: as the default screen it is not
    # pushed, and only pushed screens have their CSS_PATH read.
    CSS_PATH: ClassVar[list[str | PurePath]] = [Path(__file__).parent / "app.tcss", MAIN_SCREEN_CSS]
    TITLE = "gputop"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        # In a monitor Ctrl+C quits, as in top, htop and nvitop (Textual's own binding only
        # says which key would); with priority, even while the filter input has focus.
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("h", "help", "Help", show=False),
    ]

    def __init__(
        self,
        loop: TickLoop,
        settings: UiSettings | None = None,
        *,
        now: Callable[[], datetime] = datetime.now,
        first_tick: Tick | None = None,
        after_first_frame: Callable[[], None] | None = None,
    ) -> None:
        """Create the app around ``loop``; nothing runs until the app is mounted.

        Args:
            loop: produces the ticks and takes the user's commands.
            settings: presentation settings.
            now: wall-clock time (the history screen's "stale" rule); tests fix it.
            first_tick: a tick already taken, composed into the first frame; the loop
                then only produces the ticks after it.
            after_first_frame: called once the first frame is on screen (the command line
                gives garbage collection back then).
        """
        super().__init__()
        self._safe = SafeView()
        """Every tick's outside strings made safe to draw (``safe_view``), on the poller."""
        self.settings = self._safe(settings or UiSettings())
        self.loop = loop
        self.now = now
        self.last_tick: Tick | None = None if first_tick is None else self._safe(first_tick)
        self._after_first_frame = after_first_frame
        """The newest tick shown."""
        self.ticks_shown = 0
        """Ticks rendered (a lagging UI renders fewer than the loop produced)."""
        self.fatal: Fatal | None = None
        """The error that ended the app when the source could not start at all."""
        if not self.settings.animate:
            self.animation_level = "none"
        # Set before mounting: changing the theme later restyles every widget once more.
        self.theme = self.settings.textual_theme

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice, except that a Linux terminal gets the driver that does not poll,
        and repaints write only the spans that changed (``compat``: each patch that
        applies)."""
        apply_patches()
        return driver_class(super().get_driver_class())

    def get_default_screen(self) -> Screen[Any]:
        """The main screen is the bottom of the stack, not pushed over an empty default one.

        Pushing it from ``on_mount`` composed, styled and resumed two screens before the
        first frame.
        """
        return self.main_screen

    def on_app_focus(self) -> None:
        """A browser tab came back: make sure the keys reach a widget (``ui/focus.py``)."""
        self.call_after_refresh(focus_if_nothing_is, self)

    def on_mount(self) -> None:
        """Start the loop."""
        self.loop.start(self._deliver, self._failed)
        if self._after_first_frame is not None:
            self.call_after_refresh(self._after_first_frame)

    @property
    def main_screen(self) -> MainScreen:
        """The one main screen (created on first use)."""
        screen = getattr(self, "_main_screen", None)
        if screen is None:
            screen = MainScreen(self.settings, self.last_tick)
            self._main_screen = screen
        return screen

    def _deliver(self, tick: Tick) -> None:
        """Called by the loop, usually on the poller thread: post, never touch widgets."""
        self.post_message(TickArrived(self._safe(tick)))

    def _failed(self, error: BaseException) -> None:
        """Called on the poller thread when it dies."""
        self.post_message(SourceFailed(error))

    def on_source_failed(self, message: SourceFailed) -> None:
        """Say loudly that what is on screen is frozen, and why."""
        error = message.error
        if isinstance(error, Fatal):
            # Nothing to show, ever (the driver failed to start): end, and let the command
            # line say why in one line.
            self.fatal = error
            self.loop.stop(0.5)
            self.exit(error.exit_code, return_code=error.exit_code)
            return
        text = terminal_safe(f"updates stopped: {type(error).__name__}: {error}")
        toast(self, "source", text, title="gputop", severity="error", timeout=30)
        tick = self.last_tick
        if tick is not None:
            self.main_screen.show_tick(dataclasses.replace(tick, error=text, seq=tick.seq + 1))

    def on_tick_arrived(self, message: TickArrived) -> None:
        """Show the newest tick on the main screen (even while a dialog covers it)."""
        tick = message.tick
        previous = self.last_tick
        self.last_tick = tick
        self.ticks_shown += 1
        self.main_screen.show_tick(tick)
        if previous is not None and previous.snapshot is tick.snapshot:
            return
        append = follower(self.main_screen)
        if append is not None:
            # The history screen follows new snapshots while it is open.
            append(tick.snapshot, self.now() if tick.live else None)

    def submit(self, command: Command) -> None:
        """Send a user command to the loop; its answer arrives as a tick."""
        self.loop.submit(command)

    def action_help(self) -> None:
        """Open the key help."""
        # Deferred: the help screen, built on the first ? (a start does not draw it).
        from gputop.ui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        """Stop the loop, then exit with status 0."""
        self.loop.stop(0.5)
        self.exit(0)

    def on_unmount(self) -> None:
        """Make sure the poller stops whichever way the app ends."""
        self.loop.stop(0.5)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The palette: Textual's own entries plus gputop's actions."""
        yield from super().get_system_commands(screen)
        main = self.main_screen
        yield SystemCommand("Help", "Show every key", self.action_help)
        yield SystemCommand(
            "Toggle MIG tree", "Show or hide the MIG layout", main.action_toggle_mig
        )
        yield SystemCommand(
            "Filter processes", "Filter the process table by text", main.action_filter
        )
        yield SystemCommand("Pause / resume", "Stop or restart updates", main.action_toggle_pause)
        if self.last_tick is not None and self.last_tick.replay is not None:
            yield SystemCommand("Go to…", "Jump to a document index or time", main.action_goto)
            yield SystemCommand("Faster", "Replay faster", lambda: main.action_speed(1))
            yield SystemCommand("Slower", "Replay slower", lambda: main.action_speed(-1))
        else:
            yield SystemCommand(
                "Poll faster", "Shorten the interval", lambda: main.action_interval(-1)
            )
            yield SystemCommand(
                "Poll slower", "Lengthen the interval", lambda: main.action_interval(1)
            )
        dark = self.theme == "textual-dark"
        yield SystemCommand(
            "Light theme" if dark else "Dark theme",
            "Switch between the dark and light themes",
            self.action_toggle_dark_light,
        )

    def action_toggle_dark_light(self) -> None:
        """Swap the dark and light themes."""
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"
