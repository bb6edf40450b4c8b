"""Start the fleet TUI of ``gputop cluster`` over a fleet source the command built."""

from __future__ import annotations

from gputop.cli.tui import tui_pipeline
from gputop.pipeline.core import Pipeline
from gputop.pipeline.feed import Feed
from gputop.pipeline.fleet_loop import (
    DEFAULT_NODE_HISTORY,
    DEFAULT_REFRESH,
    FleetDriver,
    FleetPollLoop,
)
from gputop.sources.fleet import FleetSource
from gputop.ui.fleet_app import FleetApp
from gputop.ui.settings import UiSettings


def fleet_driver(
    source: FleetSource, *, refresh: float = DEFAULT_REFRESH, history: float = DEFAULT_NODE_HISTORY
) -> FleetDriver:
    """The fleet refresh over ``source``; a node screen gets the TUI's own pipeline (the
    panels' series and the diagnosis), polled at the fleet's pace."""

    def node_pipeline(feed: Feed) -> Pipeline:
        return tui_pipeline(feed, interval=refresh)

    return FleetDriver(source, node_pipeline, node_history=history)


def run_fleet_tui(
    source: FleetSource,
    *,
    refresh: float = DEFAULT_REFRESH,
    history: float = DEFAULT_NODE_HISTORY,
    source_label: str = "",
    theme: str = "dark",
) -> int:
    """Run the fleet view until the user quits; returns the exit status.

    Args:
        source: the fleet (Prometheus, or exporters scraped directly); closed when the
            user quits (its owner may close it again).
        refresh: seconds between fleet refreshes.
        history: seconds of a node's past loaded when its screen opens.
        source_label: what the header calls the source (the server's address).
        theme: ``dark``, ``light`` or a Textual theme name.
    """
    loop = FleetPollLoop(fleet_driver(source, refresh=refresh, history=history), interval=refresh)
    settings = UiSettings(theme=theme, readonly=True, source_label=source_label)
    app = FleetApp(loop, settings, refresh=refresh)
    try:
        app.run()
    finally:
        stop_fleet(loop, source)
    return app.return_code if app.return_code is not None else 0


def stop_fleet(loop: FleetPollLoop, source: FleetSource) -> None:
    """End the refresh at once, whatever the network does: the loop is told to stop, the
    requests in flight are aborted (closing the source; its owner's close again is
    harmless), and the loop, unblocked, ends within moments."""
    loop.stop(0.0)
    source.close()
    loop.stop(0.5)
