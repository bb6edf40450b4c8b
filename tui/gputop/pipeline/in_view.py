"""Which processes a view shows now: the one thing a view tells the sampler.

Views never call sources. The TUI's process table says which PIDs are on screen through an
:class:`InView` that the command line hands to both sides: the pipeline carries it in every
tick (``Tick.in_view``) for the UI thread to set, and the host lookup
(``gputop.sources.host.procinfo.ProcessEnricher``) reads it on the polling thread once a
tick, to read ``/proc`` every tick only for what is seen and now and then for the rest.
A hint, not a command: setting it starts no poll and what is read stays a complete
snapshot (the rest of the processes carry their facts of a few seconds ago).

The command line also says, once, which priced fields no view or sink of the run shows or
writes (``unshown``, see ``gputop.sources.nvml.prices``): the NVML source reads the clocks
among them on its slow cadence instead of every tick, and per-process utilization and MIG
activity not at all. The PIDs on screen tell it too which GPUs' per-process utilization the
view shows, and the view says whether it shows MIG instances' activity now (panels with
their MIG rows, or the MIG tree): measured through GPM at 1-2 ms an instance, it is read
only then.
"""

from __future__ import annotations

from collections.abc import Iterable


class InView:
    """The driver PIDs a view shows; None until a view says (or when it shows them all).

    Written by the UI thread, read by the polling thread: each write replaces one immutable
    value, so a reader sees the old set or the new one, never half of either.
    """

    __slots__ = ("_mig_activity", "_pids", "unshown")

    def __init__(self, *, unshown: frozenset[str] = frozenset()) -> None:
        self._pids: frozenset[int] | None = None
        self._mig_activity = True
        self.unshown = unshown
        """Priced field paths that nothing of this run shows or writes: read every few
        seconds or not at all (fixed for the run; see ``cli.live.unshown_fields``)."""

    def show(self, pids: Iterable[int] | None) -> None:
        """The PIDs on screen now; None: every process may be seen (e.g. the MIG tree)."""
        self._pids = None if pids is None else frozenset(pids)

    def pids(self) -> frozenset[int] | None:
        """What the view said last (None: read every process every tick)."""
        return self._pids

    def show_mig_activity(self, shown: bool) -> None:
        """Whether the view shows MIG instances' activity now (its MIG rows or tree)."""
        self._mig_activity = shown

    def mig_activity_shown(self) -> bool:
        """What the view said last (True until it says: every value may be seen)."""
        return self._mig_activity
