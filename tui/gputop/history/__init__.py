"""Bounded history of GPU metrics: two tiers of rings per (GPU, metric), rebuilt on seeks."""

from __future__ import annotations

from gputop.history.metrics import Metric, gpu_key
from gputop.history.ring import Ring
from gputop.history.store import (
    EMPTY_READER,
    EMPTY_VIEW,
    HistoryReader,
    HistoryStore,
    HistoryView,
    memory_bound,
)
from gputop.history.window import EMPTY_WINDOW, HistoryWindow, Series, Stats

__all__ = [
    "EMPTY_READER",
    "EMPTY_VIEW",
    "EMPTY_WINDOW",
    "HistoryReader",
    "HistoryStore",
    "HistoryView",
    "HistoryWindow",
    "Metric",
    "Ring",
    "Series",
    "Stats",
    "gpu_key",
    "memory_bound",
]
