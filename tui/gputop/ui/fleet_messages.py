"""Messages of the fleet app: each fleet answer, and each tick of the node followed."""

from __future__ import annotations

from textual.message import Message

from gputop.model.fleet import FleetSnapshot
from gputop.pipeline.tick import Tick


class FleetArrived(Message):
    """A new fleet answer from the loop's thread; a queued one is replaced by a newer one."""

    def __init__(self, fleet: FleetSnapshot) -> None:
        """Carry ``fleet`` (immutable) to the UI thread."""
        super().__init__()
        self.fleet = fleet

    def can_replace(self, message: Message) -> bool:
        """Only the newest answer matters."""
        return isinstance(message, FleetArrived)


class NodeTickArrived(Message):
    """A tick of the followed node's pipeline."""

    def __init__(self, host: str, tick: Tick) -> None:
        """Carry ``host``'s ``tick`` to the UI thread."""
        super().__init__()
        self.host = host
        self.tick = tick

    def can_replace(self, message: Message) -> bool:
        """A newer tick of the same node supersedes one still queued."""
        return isinstance(message, NodeTickArrived) and message.host == self.host


class FleetFailed(Message):
    """The loop's thread died: the screens no longer update."""

    def __init__(self, error: BaseException) -> None:
        """Carry the error to the UI thread."""
        super().__init__()
        self.error = error
