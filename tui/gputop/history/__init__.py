"""Bounded history of GPU metrics: two tiers of rings per (GPU, metric), rebuilt on seeks.

A window over a span of time (``history.window``: what the history screen charts) is loaded
when the first is read, not by every start.
"""

from __future__ import annotations

from gputop.history.metrics import Metric, Series, gpu_key
from gputop.history.ring import Ring
from gputop.history.store import (
    EMPTY_READER,
    EMPTY_VIEW,
    HistoryReader,
    HistoryStore,
    HistoryView,
    memory_bound,
)

__all__ = [
    "EMPTY_READER",
    "EMPTY_VIEW",
    "HistoryReader",
    "HistoryStore",
    "HistoryView",
    "Metric",
    "Ring",
    "Series",
    "gpu_key",
    "memory_bound",
]
