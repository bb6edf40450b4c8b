"""`nvidia-smi --query-gpu=... --format=csv` logs read as recordings (``CsvRecording``)."""

from gputop.sources.csvlog.recording import CsvRecording
from gputop.sources.csvlog.sniff import (
    NOHEADER_HINT,
    looks_like,
    looks_like_noheader,
    query_schema,
)

__all__ = ["NOHEADER_HINT", "CsvRecording", "looks_like", "looks_like_noheader", "query_schema"]
