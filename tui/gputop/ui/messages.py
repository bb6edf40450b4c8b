"""Messages the app passes around: the poller's ticks, and requests between screens."""

from __future__ import annotations

from textual.message import Message

from gputop.pipeline.tick import Tick


class TickArrived(Message):
    """A new tick from the poller thread.

    Only the newest state matters: a queued tick is replaced by a newer one, so a UI that
    falls behind renders the latest tick once instead of working through a backlog.
    """

    def __init__(self, tick: Tick) -> None:
        """Carry ``tick`` (immutable) to the UI thread."""
        super().__init__()
        self.tick = tick

    def can_replace(self, message: Message) -> bool:
        """A newer tick supersedes any tick still waiting in the queue."""
        return isinstance(message, TickArrived)


class SourceFailed(Message):
    """The poller stopped on an unexpected error: the screen no longer updates."""

    def __init__(self, error: BaseException) -> None:
        """Carry the error to the UI thread."""
        super().__init__()
        self.error = error
