"""Bounded history of GPU metrics: ring buffers per (GPU, metric), rebuilt on seeks."""

from __future__ import annotations

from gputop.history.metrics import Metric, gpu_key, metric_value
from gputop.history.ring import Ring
from gputop.history.store import EMPTY_VIEW, HistoryStore, HistoryView, Series

__all__ = [
    "EMPTY_VIEW",
    "HistoryStore",
    "HistoryView",
    "Metric",
    "Ring",
    "Series",
    "gpu_key",
    "metric_value",
]
