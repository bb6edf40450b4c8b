"""Which processes a view shows now: the one thing a view tells the sampler.

Views never call sources. The TUI's process table says which PIDs are on screen through an
:class:`InView` that the command line hands to both sides: the pipeline carries it in every
tick (``Tick.in_view``) for the UI thread to set, and the host lookup
(``gputop.sources.host.procinfo.ProcessEnricher``) reads it on the polling thread once a
tick, to read ``/proc`` every tick only for what is seen and now and then for the rest.
A hint, not a command: setting it starts no poll and what is read stays a complete
snapshot (the rest of the processes carry their facts of a few seconds ago).
"""

from __future__ import annotations

from collections.abc import Iterable


class InView:
    """The driver PIDs a view shows; None until a view says (or when it shows them all).

    Written by the UI thread, read by the polling thread: each write replaces one immutable
    value, so a reader sees the old set or the new one, never half of either.
    """

    __slots__ = ("_pids",)

    def __init__(self) -> None:
        self._pids: frozenset[int] | None = None

    def show(self, pids: Iterable[int] | None) -> None:
        """The PIDs on screen now; None: every process may be seen (e.g. the MIG tree)."""
        self._pids = None if pids is None else frozenset(pids)

    def pids(self) -> frozenset[int] | None:
        """What the view said last (None: read every process every tick)."""
        return self._pids
