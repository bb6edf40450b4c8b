"""Which processes a view shows now: the one thing a view tells the sampler.

Views never call sources. The TUI's process table says which PIDs are on screen through an
:class:`InView` that the command line hands to both sides: the pipeline carries it in every
tick (``Tick.in_view``) for the UI thread to set, and the host lookup
(``gputop.sources.host.procinfo.ProcessEnricher``) reads it on the polling thread once a
tick, to read ``/proc`` every tick only for what is seen and now and then for the rest.
A hint, not a command: setting it starts no poll and what is read stays a complete
snapshot (the rest of the processes carry their facts of a few seconds ago).

The command line also says, once, which GPU fields no view of the run shows (``unshown``):
the NVML source reads those on its slow cadence instead of every tick.
"""

from __future__ import annotations

from collections.abc import Iterable


class InView:
    """The driver PIDs a view shows; None until a view says (or when it shows them all).

    Written by the UI thread, read by the polling thread: each write replaces one immutable
    value, so a reader sees the old set or the new one, never half of either.
    """

    __slots__ = ("_pids", "unshown")

    def __init__(self, *, unshown: frozenset[str] = frozenset()) -> None:
        self._pids: frozenset[int] | None = None
        self.unshown = unshown
        """GPU field paths that nothing of this run shows or writes: read every few seconds,
        not every tick (fixed for the run; empty for a headless run, which writes them)."""

    def show(self, pids: Iterable[int] | None) -> None:
        """The PIDs on screen now; None: every process may be seen (e.g. the MIG tree)."""
        self._pids = None if pids is None else frozenset(pids)

    def pids(self) -> frozenset[int] | None:
        """What the view said last (None: read every process every tick)."""
        return self._pids
