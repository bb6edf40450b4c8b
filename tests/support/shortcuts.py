"""One-call conveniences the tests use and gputop itself does not: each is a line over the
classes gputop runs on, kept here so that the package holds no code only tests call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gputop.insight.diagnosis import (
    DEFAULT_THRESHOLDS,
    DiagnosisThresholds,
    GpuState,
    gpu_state,
)
from gputop.insight.report import RecordingSummary, ReportBuilder
from gputop.model import Snapshot, ThrottleKind
from gputop.model.throttle import reasons_of_kind
from gputop.pipeline.gpu_select import GpuSelection
from gputop.sources.recordings.dmon import _is_pmon, first_header
from gputop.sources.smi.recording import Recording

if TYPE_CHECKING:
    from textual.widgets.tree import TreeNode

    from gputop.history.store import HistoryStore
    from gputop.sources.nvml.source import NvmlSource
    from gputop.ui.render.process_rows import ProcessRow
    from gputop.ui.widgets.mig_tree import MigTree, NodeKey
    from gputop.ui.widgets.process_table import ProcessTable


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


def limiting_reasons(reasons: Iterable[str] | None) -> tuple[str, ...]:
    """The active reasons that hold clocks below what the work asks for: power, heat and
    hardware slowdowns (not idle, application or display clocks, sync boost, nor unknown)."""
    return reasons_of_kind(reasons, ThrottleKind.POWER, ThrottleKind.THERMAL, ThrottleKind.HARDWARE)


def history_keys(store: HistoryStore) -> list[str]:
    """The GPU keys the store has history for, in first-seen order (through the view: a
    store that tracks no metric at all shows none)."""
    return list(dict.fromkeys(key for key, _ in store.view(width=1).series_by_key))


def events_status(source: NvmlSource) -> str | None:
    """Why the source does not watch health events (None while it does, or when not asked)."""
    watcher = source._events
    return None if watcher is None else watcher.status


def changed_span(
    old: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]], width: int
) -> tuple[int, int] | None:
    """The cells, (first, end), from the first change of line ``new`` drawn ``width`` wide
    against ``old`` to the last; None when they draw the same."""
    from gputop.ui.widgets.line_strip import changed_spans

    spans = changed_spans(old, new, width)
    return (spans[0][0], spans[-1][1]) if spans else None


def mig_node(tree: MigTree, key: NodeKey) -> TreeNode[NodeKey] | None:
    """The MIG tree's node for ``key``, if shown."""
    stack = list(tree.root.children)
    while stack:
        node = stack.pop()
        if node.data == key:
            return node
        stack.extend(node.children)
    return None


def highlighted_process(table: ProcessTable) -> ProcessRow | None:
    """The process under the table's cursor, if any (None on a group's line)."""
    from gputop.ui.render.process_rows import ProcessRow

    line = table.highlighted_line
    return line if isinstance(line, ProcessRow) else None
