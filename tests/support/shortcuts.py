"""One-call conveniences the tests use and gputop itself does not: each is a line over the
classes gputop runs on, kept here so that the package holds no code only tests call."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gputop.insight.diagnosis import (
    DEFAULT_THRESHOLDS,
    DiagnosisThresholds,
    GpuState,
    gpu_state,
)
from gputop.insight.report import RecordingSummary, ReportBuilder
from gputop.model import Snapshot
from gputop.pipeline.gpu_select import GpuSelection
from gputop.sources.recordings.dmon import _is_pmon, first_header
from gputop.sources.smi.recording import Recording


def summarize(
    snapshots: Iterable[Snapshot],
    *,
    max_gap_s: float | None = None,
    thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS,
) -> RecordingSummary:
    """The summary of snapshots given in time order, as ``report`` builds it."""
    return ReportBuilder(max_gap_s=max_gap_s, thresholds=thresholds).add_all(snapshots).summary()


def gpu_states(
    snapshots: Iterable[Snapshot],
    gpu_index: int,
    thresholds: DiagnosisThresholds = DEFAULT_THRESHOLDS,
) -> list[GpuState]:
    """The state of GPU ``gpu_index`` in each snapshot, in order."""
    return [gpu_state(snapshot.gpu(gpu_index), thresholds) for snapshot in snapshots]


def select_gpus(snapshot: Snapshot, spec: str | None) -> Snapshot:
    """``GpuSelection.parse(spec).apply(snapshot)``; the snapshot itself when spec is None."""
    if spec is None:
        return snapshot
    return GpuSelection.parse(spec).apply(snapshot)


def looks_like_dmon(head: bytes) -> bool:
    """A dmon log (a ``# gpu`` header without a ``pid`` column)."""
    columns = first_header(head)
    return columns is not None and not _is_pmon(columns)


def looks_like_pmon(head: bytes) -> bool:
    """A pmon log (a ``# gpu pid …`` header)."""
    columns = first_header(head)
    return columns is not None and _is_pmon(columns)


def snapshot_from_path(path: Path | str) -> Snapshot:
    """The first document of a recording."""
    with Recording.open(Path(path)) as recording:
        return recording.snapshot(0)
