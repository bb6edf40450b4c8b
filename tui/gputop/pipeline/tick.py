"""What the pipeline hands to views (Tick); what views send back is in
``gputop.pipeline.commands``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop.history import EMPTY_READER, EMPTY_VIEW, HistoryReader, HistoryView, Metric
from gputop.insight.diagnosis import Finding
from gputop.model import Snapshot
from gputop.model.health import HealthEvent
from gputop.pipeline.in_view import InView

if TYPE_CHECKING:
    # Only a replay's ticks carry one: a live start does not load the replay module.
    from gputop.sources.playback.replay import ReplayStatus


@dataclass(frozen=True, slots=True)
class ViewSpec:
    """The series each tick carries (copies of the newest samples), as the views draw them."""

    metrics: tuple[Metric, ...] = ()
    """The metrics (the TUI: its panels' gauges, ``gputop.ui.render.panel_lines``)."""
    width: int = 0
    """Samples per series: as many as the widest sparkline."""


@dataclass(frozen=True, slots=True)
class SinkStatus:
    """A file live snapshots are written to (``--record``, ``--log``), as the header shows it."""

    option: str
    """``--record`` or ``--log``."""
    path: str
    """The file, as given on the command line."""
    error: str | None = None
    """Why the sink stopped (a failed write); None while it writes."""


@dataclass(frozen=True, slots=True)
class Tick:
    """Everything a screen shows at one moment; immutable, so it may cross threads."""

    seq: int
    """Counts ticks from 1; a screen can skip a tick it has already drawn."""
    snapshot: Snapshot
    history: HistoryView = EMPTY_VIEW
    """The newest samples of the series the panels draw (copies)."""
    archive: HistoryReader = EMPTY_READER
    """The whole history, for the history screen: read on demand, under the store's lock."""
    replay: ReplayStatus | None = None
    """Set when replaying: position, speed, paused."""
    window: tuple[Snapshot, ...] = ()
    """Recent snapshots, oldest first, ending with ``snapshot``."""
    interval: float = 1.0
    paused: bool = False
    """Live polling is paused (replay keeps its own flag in ``replay``)."""
    error: str | None = None
    """The last poll or recording failed: shown, and the data is stale."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """One-off messages for the user (recording stopped, GPU selection changed)."""
    findings: tuple[tuple[int, tuple[Finding, ...]], ...] = ()
    """(GPU index, findings worst first) from the diagnosis of ``window``."""
    sinks: tuple[SinkStatus, ...] = ()
    """Where live snapshots are being written, and which of those writes failed."""
    waiting: str | None = None
    """The source is not ready yet (a slow driver start): what it is waiting for."""
    events: tuple[HealthEvent, ...] = ()
    """The health events the history keeps (XID errors, ...), oldest first
    (``gputop.history.events``): the same tuple from tick to tick until one arrives."""
    alarms: tuple[tuple[int, str], ...] = ()
    """(GPU index, what to say) for each GPU with a critical health event or problem not
    acknowledged yet (``gputop.pipeline.health_alarm``): the panel's red line."""
    in_view: InView | None = None
    """Where a view says which processes it shows (live, with a host lookup that reads only
    those every tick); the same object in every tick of a run. None: nobody listens."""

    def findings_for(self, gpu_index: int) -> tuple[Finding, ...]:
        """What the diagnosis says of GPU ``gpu_index`` (empty when all is well)."""
        for index, findings in self.findings:
            if index == gpu_index:
                return findings
        return ()

    def alarm_for(self, gpu_index: int) -> str | None:
        """GPU ``gpu_index``'s health alarm, None when it has none (or it was acknowledged)."""
        for index, text in self.alarms:
            if index == gpu_index:
                return text
        return None

    @property
    def live(self) -> bool:
        """True unless replaying."""
        return self.replay is None
